package osfake

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
)

// A document's _source: decoded and checked against the mapping as
// DocumentParser does, and merged with an update's partial document.

// --- update merge ---------------------------------------------------------

// jsonField is one member of a JSON object, kept in document order.
type jsonField struct {
	key string
	val json.RawMessage
}

func objectFields(raw []byte) ([]jsonField, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var out []jsonField
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, jsonField{key: tok.(string), val: v})
	}
	return out, nil
}

func isObject(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// mergeSource is XContentHelper.update: changes are merged into the old
// source, objects recursively, everything else (arrays too) replaced; new
// keys go last. modified reports a change, compared by value when check
// is set (detect_noop). The result is compact JSON in document order, as
// the server re-serialises it.
func mergeSource(d *dialect, old, changes []byte, check bool) ([]byte, bool, *osError) {
	out, modified, err := mergeObjects(old, changes, check)
	if err != nil {
		return nil, false, mapperParsing(d.badJSON(err))
	}
	var b bytes.Buffer
	if err := json.Compact(&b, out); err != nil {
		return nil, false, mapperParsing(d.badJSON(err))
	}
	return b.Bytes(), modified, nil
}

func mergeObjects(old, changes []byte, check bool) ([]byte, bool, error) {
	of, err := objectFields(old)
	if err != nil {
		return nil, false, err
	}
	cf, err := objectFields(changes)
	if err != nil {
		return nil, false, err
	}
	modified := false
	for _, c := range cf {
		i := slicesIndex(of, c.key)
		if i < 0 {
			of = append(of, c)
			modified = true
			continue
		}
		if isObject(of[i].val) && isObject(c.val) {
			merged, m, err := mergeObjects(of[i].val, c.val, check && !modified)
			if err != nil {
				return nil, false, err
			}
			of[i].val = merged
			modified = modified || m
			continue
		}
		prev := of[i].val
		of[i].val = c.val
		if !modified {
			modified = !check || !jsonEqual(prev, c.val)
		}
	}
	b := []byte{'{'}
	for i, f := range of {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.key)
		b = append(b, ':')
		b = append(b, f.val...)
	}
	return append(b, '}'), modified, nil
}

func slicesIndex(fs []jsonField, key string) int {
	for i := range fs {
		if fs[i].key == key {
			return i
		}
	}
	return -1
}

// jsonEqual compares two JSON values the way Objects.equals compares the
// parsed maps: 1 and 1.0 differ.
func jsonEqual(a, b []byte) bool {
	var x, y any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// --- document parsing --------------------------------------------------

// mapperParsing is MapperParsingException("failed to parse", cause).
func mapperParsing(cause *osError) *osError {
	return &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "failed to parse", CausedBy: cause}
}

// decodeSource decodes a document source once, numbers as json.Number,
// the way DocumentParser reads it: it must be one JSON object with
// nothing after it.
func decodeSource(d *dialect, src []byte) (map[string]any, *osError) {
	start := bytes.TrimLeft(src, " \t\r\n")
	if len(start) == 0 || start[0] != '{' {
		// The server tells JSON by its opening brace; anything else is
		// no content type it knows.
		return nil, mapperParsing(&osError{Status: 400, Type: "not_x_content_exception",
			Reason: "Compressor detection can only be called on some xcontent bytes or compressed xcontent bytes"})
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var v any // decoding into an interface avoids reflection on the map
	if err := dec.Decode(&v); err != nil {
		return nil, mapperParsing(d.badJSON(err))
	}
	fields, _ := v.(map[string]any)
	tok, err := dec.Token()
	switch {
	case err == io.EOF:
		return fields, nil
	case err != nil:
		return nil, mapperParsing(d.badJSON(err))
	}
	return nil, mapperParsing(&osError{Type: "illegal_argument_exception", Reason: "Malformed content, found extra data after parsing: " + xToken(tok)})
}

func lookupPath(fields map[string]any, path string) (any, bool) {
	var cur any = fields
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// check is ParentJoinFieldMapper.parse: the value is a relation name or
// {"name":..., "parent":...}; a child needs a parent and routing.
func (j *joinField) check(v any, routing string) *osError {
	name, hasName, hasParent := "", false, false
	switch x := v.(type) {
	case string:
		name, hasName = x, true
	case map[string]any:
		for k, val := range x {
			switch val := val.(type) {
			case string:
				switch k {
				case "name":
					name, hasName = val, true
				case "parent":
					hasParent = true
				default:
					return illegalArgument("unknown field name [" + k + "] in join field [" + j.name + "]")
				}
			case json.Number:
				if k != "parent" {
					return illegalArgument("unknown field name [" + k + "] in join field [" + j.name + "]")
				}
				hasParent = true
			}
		}
	default:
		return &osError{Type: "illegal_state_exception", Reason: "[null] expected START_OBJECT or VALUE_STRING but was: " + xValueToken(v)}
	}
	if !hasName {
		name = "null"
	}
	if !j.known(name) {
		return illegalArgument("unknown join name [" + name + "] for field [" + j.name + "]")
	}
	if _, child := j.parentOf(name); child {
		if !hasParent {
			return illegalArgument("[parent] is missing for join field [" + j.name + "]")
		}
		if routing == "" {
			return illegalArgument("[routing] is missing for join field [" + j.name + "]")
		}
	}
	return nil
}

var numericTypes = map[string]bool{"long": true, "integer": true, "short": true, "byte": true,
	"double": true, "float": true, "half_float": true, "scaled_float": true}

// scalarRejected returns the cause when a type rejects a scalar value.
// Numbers accept numeric strings (coerce is on by default) within their
// range, integer types truncating fractions, and take "" for null;
// booleans accept "true", "false" and "" but no number.
func scalarRejected(d *dialect, typ string, v any) *osError {
	switch {
	case numericTypes[typ]:
		switch x := v.(type) {
		case string:
			if x == "" {
				return nil
			}
			return numericStringRejected(typ, x)
		case json.Number:
			return numberRejected(d, typ, x)
		case bool:
			return d.notNumeric(xValueToken(x))
		}
	case typ == "boolean":
		switch x := v.(type) {
		case string:
			if x != "true" && x != "false" && x != "" {
				return illegalArgument("Failed to parse value [" + x + "] as only [true] or [false] are allowed.")
			}
		case json.Number:
			token := "VALUE_NUMBER_FLOAT"
			if isIntegerLiteral(x) {
				token = "VALUE_NUMBER_INT"
			}
			return d.notBoolean(token)
		}
	}
	return nil
}
