package osfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"strings"
)

// Parsing a _bulk body, as BulkRequestParser does: action and metadata
// lines, source lines, and update bodies.

// bulkDefaults are the URL's defaults for every item.
type bulkDefaults struct {
	index, routing, pipeline string
	requireAlias             bool
}

// parseBulk reads action and source lines. Line numbers in errors count
// every line, blank ones included; a blank action line is skipped; a
// source line has a trailing '\r' trimmed; delete has no source line.
func parseBulk(d *dialect, body []byte, def bulkDefaults) ([]op, *osError) {
	ops := make([]op, 0, bytes.Count(body, []byte{'\n'})/2+1)
	line, from := 0, 0
	for {
		next, err := nextMarker(body, from)
		if err != nil {
			return nil, err
		}
		if next < 0 {
			break
		}
		line++
		action := body[from:next]
		from = next + 1
		o, skip, err := parseAction(d, action, line, def)
		if err != nil {
			return nil, err
		}
		if skip {
			continue
		}
		if o.kind != opDelete {
			if next, err = nextMarker(body, from); err != nil {
				return nil, err
			}
			if next < 0 {
				break // an action without its source line is dropped, as on the server
			}
			line++
			src := body[from:next]
			if len(src) > 0 && src[len(src)-1] == '\r' {
				src = src[:len(src)-1]
			}
			from = next + 1
			if o.kind == opUpdate {
				if o.version != versionMatchAny || o.vtype != versionInternal {
					return nil, illegalArgument("Update requests do not support versioning. Please use `if_seq_no` and `if_primary_term` instead")
				}
				if o.upd, err = parseUpdateBody(d, src); err != nil {
					return nil, err
				}
			} else {
				o.source = src
			}
		}
		ops = append(ops, o)
	}
	return ops, nil
}

func nextMarker(body []byte, from int) (int, *osError) {
	if i := bytes.IndexByte(body[from:], '\n'); i >= 0 {
		return from + i, nil
	}
	if from != len(body) {
		return -1, illegalArgument(`The bulk request must be terminated by a newline [\n]`)
	}
	return -1, nil
}

// parseAction parses {"<action>": {<metadata>}}. skip is set for a blank
// line. Ordinary lines take the fast path; anything it does not handle
// (escapes, objects, bad syntax) is parsed token by token, which reports
// errors the way the server does.
func parseAction(d *dialect, line []byte, n int, def bulkDefaults) (o op, skip bool, err *osError) {
	if o, skip, ok, err := parseActionFast(d, line, n, def); ok {
		return o, skip, err
	}
	return parseActionSlow(d, line, n, def)
}

// parseActionSlow parses an action line token by token.
func parseActionSlow(d *dialect, line []byte, n int, def bulkDefaults) (o op, skip bool, err *osError) {
	ln := strconv.Itoa(n)
	malformed := func(what string) *osError {
		return illegalArgument("Malformed action/metadata line [" + ln + "], " + what)
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	tok, jerr := dec.Token()
	if jerr == io.EOF {
		return o, true, nil
	}
	if jerr != nil {
		return o, false, d.badJSON(jerr)
	}
	if tok != json.Delim('{') {
		return o, false, malformed("expected START_OBJECT but found [" + xToken(tok) + "]")
	}
	if tok, jerr = dec.Token(); jerr != nil {
		return o, false, d.badJSON(jerr)
	}
	action, ok := tok.(string)
	if !ok {
		return o, false, malformed("expected FIELD_NAME but found [" + xToken(tok) + "]")
	}
	if o, ok = actionOp(action, def); !ok {
		return o, false, malformed("expected one of [create, delete, index, update] but found [" + action + "]")
	}
	if tok, jerr = dec.Token(); jerr != nil {
		return o, false, d.badJSON(jerr)
	}
	if tok == json.Delim('}') {
		return o, false, nil
	}
	if tok != json.Delim('{') {
		return o, false, malformed("expected START_OBJECT or END_OBJECT but found [" + xToken(tok) + "]")
	}
	var opType string
	for {
		if tok, jerr = dec.Token(); jerr != nil {
			return o, false, d.badJSON(jerr)
		}
		if tok == json.Delim('}') {
			break
		}
		key, _ := tok.(string)
		if tok, jerr = dec.Token(); jerr != nil {
			return o, false, d.badJSON(jerr)
		}
		switch tok {
		case nil:
			continue // a null value is ignored, even for an unknown key
		case json.Delim('['):
			return o, false, malformed("expected a simple value for field [" + key + "] but found [START_ARRAY]")
		case json.Delim('{'):
			if key != "_source" {
				return o, false, malformed("expected a simple value for field [" + key + "] but found [START_OBJECT]")
			}
			if jerr = skipValue(dec); jerr != nil {
				return o, false, d.badJSON(jerr)
			}
			continue
		}
		if err := o.setMeta(d, key, tok, ln, &opType); err != nil {
			return o, false, err
		}
	}
	if o.kind == opIndex && opType == "create" {
		o.kind = opCreate
	}
	return o, false, nil
}

// actionOp starts the op an action line names, with the request's
// defaults (index, routing, pipeline, require_alias) that the line's
// metadata may override. ok is false for a name that is not an action;
// the fast and the token-by-token parsers share it so that they cannot
// disagree on what an action is.
func actionOp(action string, def bulkDefaults) (o op, ok bool) {
	var kind opKind
	switch action {
	case "index":
		kind = opIndex
	case "create":
		kind = opCreate
	case "update":
		kind = opUpdate
	case "delete":
		kind = opDelete
	default:
		return o, false
	}
	o = newOp(kind)
	o.index, o.routing, o.pipeline, o.requireAlias = def.index, def.routing, def.pipeline, def.requireAlias
	return o, true
}

// setMeta applies one metadata key.
func (o *op) setMeta(d *dialect, key string, tok json.Token, line string, opType *string) *osError {
	var err *osError
	switch key {
	case "_index":
		o.index = tokenText(tok)
	case "_id":
		o.id, o.hasID = tokenText(tok), true
	case "routing":
		o.routing = tokenText(tok)
	case "op_type":
		*opType = tokenText(tok)
	case "version":
		o.version, err = tokenLong(d, tok)
	case "version_type":
		o.vtype, err = parseVersionType(tokenText(tok))
	case "if_seq_no":
		if o.ifSeqNo, err = tokenLong(d, tok); err == nil && o.ifSeqNo < 0 && o.ifSeqNo != unassignedSeqNo {
			err = illegalArgument("sequence numbers must be non negative. got [" + strconv.FormatInt(o.ifSeqNo, 10) + "].")
		}
	case "if_primary_term":
		if o.ifTerm, err = tokenLong(d, tok); err == nil && o.ifTerm < 0 {
			err = illegalArgument("primary term must be non negative. got [" + strconv.FormatInt(o.ifTerm, 10) + "]")
		}
	case "retry_on_conflict":
		var n int64
		n, err = tokenLong(d, tok)
		o.retryOnConflict = int(n)
	case "pipeline":
		o.pipeline = tokenText(tok)
	case "_source":
		// Selects the source an update item returns; not emulated.
	case "require_alias":
		o.requireAlias, err = strictBool(tokenText(tok))
	default:
		return illegalArgument("Action/metadata line [" + line + "] contains an unknown parameter [" + key + "]")
	}
	return err
}

// skipValue consumes the rest of an object or array whose opening
// delimiter was just read.
func skipValue(dec *json.Decoder) error {
	for depth := 1; depth > 0; {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// parseUpdateBody is UpdateRequest.fromXContent: doc, upsert,
// doc_as_upsert, detect_noop, script; other keys are ignored.
func parseUpdateBody(d *dialect, src []byte) (*updateSpec, *osError) {
	u := &updateSpec{detectNoop: true}
	if len(bytes.TrimSpace(src)) == 0 {
		return u, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(src, &m); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, xContentError("[UpdateRequest] Expected START_OBJECT but was: " + rawTokenName(src))
		}
		return nil, d.badJSON(err)
	}
	if m == nil {
		return nil, xContentError("[UpdateRequest] Expected START_OBJECT but was: VALUE_NULL")
	}
	for k, raw := range m {
		if string(raw) == "null" {
			continue
		}
		var err *osError
		switch k {
		case "doc", "upsert":
			if !isObject(raw) {
				return nil, unsupportedValue("UpdateRequest", k, rawToken(raw))
			}
			if k == "doc" {
				u.doc = raw
			} else {
				u.upsert = raw
			}
		case "doc_as_upsert":
			u.docAsUpsert, err = strictBool(strings.Trim(string(raw), `"`))
		case "detect_noop":
			u.detectNoop, err = strictBool(strings.Trim(string(raw), `"`))
		case "script":
			u.script = true
		}
		if err != nil {
			return nil, err
		}
	}
	return u, nil
}
