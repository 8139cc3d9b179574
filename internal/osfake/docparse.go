package osfake

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
)

// Document parsing, as DocumentParser does it on the primary: every value
// is checked against its field's mapping — an object against an object
// mapping, a concrete value against a field mapper — and a field the
// mapping lacks is checked against the mapper dynamic mapping creates for
// that one value (a template's, or the default). Each value of a new field
// gets a mapper of its own, so an array whose values map differently
// ([1, "a"], [4, 4.5]) conflicts; the new mappers are merged as
// createDynamicUpdate merges them, after the whole document has parsed.
// The server fails on the first bad value in document order; the emulator,
// which decodes sources into maps, reports the one with the smallest path.

// dynMapper is a mapper dynamic mapping created for one value.
type dynMapper struct {
	path string
	typ  string         // "object" or "nested" for an object mapper
	spec map[string]any // the mapping to add
}

type pathError struct {
	path string
	err  *osError
}

type docParser struct {
	d   *dialect
	m   *mapping
	id  string
	src []byte // the source as given, for the key order of previews
	bad []pathError
	dyn []dynMapper
}

func (p *docParser) fail(path string, err *osError) { p.bad = append(p.bad, pathError{path, err}) }

func isObjectType(typ string) bool { return typ == "object" || typ == "nested" }

// parseDoc parses a decoded source against the index's mapping and, if
// it parses, adds the fields it maps dynamically.
func (ix *index) parseDoc(src []byte, fields map[string]any, id, routing string) *osError {
	m := &ix.mapping
	if j := m.join; j != nil {
		if v, ok := lookupPath(fields, j.name); ok && v != nil {
			if err := j.check(v, routing); err != nil {
				return mapperParsing(err)
			}
		}
	}
	p := &docParser{d: ix.dialect, m: m, id: id, src: src}
	rootDynamic := m.dynamic
	if rootDynamic == "" {
		rootDynamic = "true"
	}
	p.object("", rootDynamic, fields)
	if len(p.bad) > 0 {
		sort.SliceStable(p.bad, func(i, j int) bool { return p.bad[i].path < p.bad[j].path })
		return p.bad[0].err
	}
	if len(p.dyn) == 0 {
		return nil
	}
	update, err := mergeDynamic(p.dyn)
	if err != nil {
		return err
	}
	if m.properties == nil {
		m.properties = map[string]any{}
	}
	for _, d := range update {
		m.insert(d.path, d.spec)
	}
	m.reindexFields()
	return nil
}

// object parses the fields of an object at path parent ("" for the
// document), whose dynamic setting is dynamic.
func (p *docParser) object(parent, dynamic string, obj map[string]any) {
	for _, key := range sortedNames(obj) {
		p.field(parent, dynamic, key, obj[key])
	}
}

func childPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// splitName splits a dotted field name into the objects it stands for:
// {"a.b": 1} is {"a": {"b": 1}}. A name with an empty part is kept whole.
func splitName(key string) []string {
	parts := strings.Split(key, ".")
	for _, s := range parts {
		if s == "" {
			return []string{key}
		}
	}
	return parts
}

// field parses one key of an object and its value.
func (p *docParser) field(parent, dynamic, key string, val any) {
	names := splitName(key)
	for _, name := range names[:len(names)-1] {
		path := childPath(parent, name)
		switch typ := p.m.fieldType(path); {
		case typ == "":
			if p.refusesNew(dynamic, path, name, parent) {
				return
			}
			spec, typ, err := p.m.dynamicMapping(path, name, map[string]any{})
			if err != nil {
				p.fail(path, err)
				return
			}
			if !isObjectType(typ) {
				spec, typ = map[string]any{"type": "object"}, "object"
			}
			p.dyn = append(p.dyn, dynMapper{path: path, typ: typ, spec: spec})
			if d, ok := spec["dynamic"]; ok {
				dynamic = scalarString(d)
			}
		case isObjectType(typ):
			if d, ok := p.m.objectDynamic[path]; ok {
				dynamic = d
			}
		default:
			full := childPath(parent, key)
			p.fail(full, &osError{Status: 400, Type: "mapper_parsing_exception",
				Reason: "Could not dynamically add mapping for field [" + full + "]. Existing mapping for [" + path + "] must be of type object but found [" + typ + "]."})
			return
		}
		parent = path
	}
	name := names[len(names)-1]
	path := childPath(parent, name)
	if j := p.m.join; j != nil && path == j.name {
		return // checked by joinField.check
	}
	switch typ := p.m.fieldType(path); {
	case typ == "":
		p.unmapped(path, parent, name, key, dynamic, val)
	case isObjectType(typ):
		if d, ok := p.m.objectDynamic[path]; ok {
			dynamic = d
		}
		p.objectValue(path, key, dynamic, val)
	default:
		p.leafValue(path, typ, val)
	}
}

// eachValue calls fn with each value of a field: the value itself, or
// the values of an array, nested arrays flattened, until fn returns
// false.
func eachValue(v any, fn func(any) bool) bool {
	arr, ok := v.([]any)
	if !ok {
		return fn(v)
	}
	for _, e := range arr {
		if !eachValue(e, fn) {
			return false
		}
	}
	return true
}

// objectValue parses the value of an object field: objects (or arrays of
// them) and nulls; a concrete value is an error naming the key it came
// under, or null inside an array.
func (p *docParser) objectValue(path, key, dynamic string, val any) {
	_, inArray := val.([]any)
	eachValue(val, func(e any) bool {
		switch x := e.(type) {
		case nil:
		case map[string]any:
			p.object(path, dynamic, x)
		default:
			name := key
			if inArray {
				name = "null"
			}
			p.fail(path, &osError{Status: 400, Type: "mapper_parsing_exception",
				Reason: "object mapping for [" + path + "] tried to parse field [" + name + "] as object, but found a concrete value"})
			return false
		}
		return true
	})
}

// leafValue checks the values of a field mapped as typ.
func (p *docParser) leafValue(path, typ string, val any) {
	if typ == "geo_point" {
		if cause := geoPointRejected(p.d, path, val); cause != nil {
			p.fail(path, &osError{Status: 400, Type: "mapper_parsing_exception",
				Reason: "failed to parse field [" + path + "] of type [geo_point]", CausedBy: cause})
		}
		return
	}
	eachValue(val, func(e any) bool {
		var err *osError
		switch x := e.(type) {
		case nil:
		case map[string]any:
			err = p.fieldError(path, typ, p.preview(path, x), objectRejected(p.d, typ))
		default:
			if cause := scalarRejected(p.d, typ, x); cause != nil {
				preview := scalarString(x)
				if n, ok := x.(json.Number); ok {
					preview = numberPreview(typ, n)
				}
				err = p.fieldError(path, typ, preview, cause)
			}
		}
		if err != nil {
			p.fail(path, err)
			return false
		}
		return true
	})
}

// fieldError is the MapperParsingException FieldMapper.parse raises
// around a field mapper's failure, with a preview of the value.
func (p *docParser) fieldError(path, typ, preview string, cause *osError) *osError {
	return &osError{Status: 400, Type: "mapper_parsing_exception",
		Reason:   "failed to parse field [" + path + "] of type [" + typ + "] in document with id '" + p.id + "'. Preview of field's value: '" + preview + "'",
		CausedBy: cause}
}

// objectRejected is how a field mapper of type typ fails on an object:
// the parser's complaint about the START_OBJECT token where it expected
// a number, a boolean or text. The server adds the token's position.
func objectRejected(d *dialect, typ string) *osError {
	switch {
	case numericTypes[typ]:
		return d.notNumeric("START_OBJECT")
	case typ == "boolean":
		return d.notBoolean("START_OBJECT")
	}
	return &osError{Type: "illegal_state_exception", Reason: "Can't get text on a START_OBJECT"}
}

// refusesNew applies the dynamic setting of parent to name, which the
// mapping lacks: under false the name is dropped, under strict the
// document fails. It reports whether the caller must leave the name
// unmapped; otherwise dynamic mapping may create a mapper for it.
func (p *docParser) refusesNew(dynamic, path, name, parent string) bool {
	switch dynamic {
	case "false":
		return true
	case "strict":
		p.fail(path, strictError(name, parent))
		return true
	}
	return false
}

// unmapped parses a field the mapping lacks: ignored under dynamic
// false, an error under strict (null and [] included), else each value
// gets the mapper dynamic mapping creates for it and is checked against
// it.
func (p *docParser) unmapped(path, parent, name, key, dynamic string, val any) {
	if p.refusesNew(dynamic, path, name, parent) {
		return
	}
	eachValue(val, func(e any) bool {
		if e == nil {
			return true
		}
		spec, typ, err := p.m.dynamicMapping(path, name, e)
		if err != nil {
			p.fail(path, err)
			return false
		}
		p.dyn = append(p.dyn, dynMapper{path: path, typ: typ, spec: spec})
		if !isObjectType(typ) {
			p.leafValue(path, typ, e)
			return true
		}
		obj, ok := e.(map[string]any)
		if !ok {
			p.objectValue(path, key, "true", e)
			return false
		}
		childDynamic := "true"
		if d, ok := spec["dynamic"]; ok {
			childDynamic = scalarString(d)
		}
		p.object(path, childDynamic, obj)
		return true
	})
}

// strictError is StrictDynamicMappingException: the field's own name and
// the path of the object it is in ("_doc" for the document).
func strictError(name, parent string) *osError {
	if parent == "" {
		parent = "_doc"
	}
	return &osError{Status: 400, Type: "strict_dynamic_mapping_exception",
		Reason: "mapping set to strict, dynamic introduction of [" + name + "] within [" + parent + "] is not allowed"}
}

// mergeDynamic is createDynamicUpdate: the new mappers sorted by path
// (stably, so values of one path stay in document order), then merged.
// A mapper whose path repeats its predecessor's is merged with the last
// distinct one before it (mapper.merge(previous)), except right after the
// first mapper, where the second is merged into the update the first
// started. It returns one mapper per path, parents first.
func mergeDynamic(ms []dynMapper) ([]dynMapper, *osError) {
	sort.SliceStable(ms, func(i, j int) bool { return ms[i].path < ms[j].path })
	out := []dynMapper{ms[0]}
	prev := -1
	for i := 1; i < len(ms); i++ {
		d := ms[i]
		if prev >= 0 && d.path == ms[prev].path {
			if err := d.mergeFrom(ms[prev]); err != nil {
				return nil, err
			}
			continue
		}
		prev = i
		if first := out[len(out)-1]; first.path == d.path {
			if err := first.mergeInto(d); err != nil {
				return nil, err
			}
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// mergeFrom is d.merge(other) for two mappers of one path.
func (d dynMapper) mergeFrom(other dynMapper) *osError {
	switch dObj, oObj := isObjectType(d.typ), isObjectType(other.typ); {
	case dObj && oObj:
		return nil
	case dObj:
		return illegalArgument("can't merge a non object mapping [" + d.path + "] with an object mapping")
	case oObj:
		return illegalArgument("mapper [" + d.path + "] cannot be changed from type [" + d.typ + "] to [ObjectMapper]")
	case d.typ != other.typ:
		return illegalArgument("mapper [" + d.path + "] cannot be changed from type [" + d.typ + "] to [" + other.typ + "]")
	}
	return nil
}

// mergeInto merges d, the second mapper of the first path, into the
// update the first mapper started.
func (first dynMapper) mergeInto(d dynMapper) *osError {
	switch fObj, dObj := isObjectType(first.typ), isObjectType(d.typ); {
	case fObj && dObj:
		return nil
	case fObj || dObj:
		return illegalArgument("can't merge a non object mapping [" + d.path + "] with an object mapping")
	case first.typ != d.typ:
		return illegalArgument("mapper [" + d.path + "] cannot be changed from type [" + first.typ + "] to [" + d.typ + "]")
	}
	return nil
}

// insert adds spec at a dotted path whose parents are mapped objects; an
// object mapped without properties ({"type":"object"}) gets them.
func (m *mapping) insert(path string, spec map[string]any) {
	props := m.properties
	names := strings.Split(path, ".")
	for _, name := range names[:len(names)-1] {
		parent, _ := props[name].(map[string]any)
		if parent == nil {
			return
		}
		sub, ok := parent["properties"].(map[string]any)
		if !ok {
			sub = map[string]any{}
			parent["properties"] = sub
			if parent["type"] == "object" {
				delete(parent, "type")
			}
		}
		props = sub
	}
	last := names[len(names)-1]
	if _, exists := props[last]; !exists {
		props[last] = spec
	}
}

// preview is an object value as the server previews it: the parser
// reads it into HashMaps and ArrayLists and prints it with toString. A
// HashMap's order depends on the order of insertion for keys that share
// a bucket, so the object is read again from the source, in document
// order.
func (p *docParser) preview(path string, obj map[string]any) string {
	dec := json.NewDecoder(bytes.NewReader(p.src))
	dec.UseNumber()
	if doc, err := decodeOrdered(dec); err == nil {
		var found any
		findOrdered(doc, "", path, func(v any) bool {
			if o, ok := v.(*orderedObject); ok && reflect.DeepEqual(o.plain(), obj) {
				found = o
				return false
			}
			return true
		})
		if found != nil {
			return javaString(found)
		}
	}
	return javaString(obj)
}

// orderedObject is a JSON object with its keys in document order.
type orderedObject struct {
	keys []string
	vals []any
}

func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := &orderedObject{}
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			o.keys = append(o.keys, k.(string))
			o.vals = append(o.vals, v)
		}
		_, err = dec.Token()
		return o, err
	case json.Delim('['):
		arr := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err = dec.Token()
		return arr, err
	}
	return tok, nil
}

// plain is the object as decodeSource decodes it.
func (o *orderedObject) plain() map[string]any {
	m := make(map[string]any, len(o.keys))
	for i, k := range o.keys {
		m[k] = plainValue(o.vals[i])
	}
	return m
}

func plainValue(v any) any {
	switch x := v.(type) {
	case *orderedObject:
		return x.plain()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plainValue(e)
		}
		return out
	}
	return v
}

// findOrdered calls fn with each value at a dotted path (through arrays
// and dotted keys) until fn returns false.
func findOrdered(v any, at, path string, fn func(any) bool) bool {
	if at == path {
		if arr, ok := v.([]any); ok {
			return eachValue(arr, fn)
		}
		return fn(v)
	}
	switch x := v.(type) {
	case *orderedObject:
		for i, k := range x.keys {
			next := childPath(at, k)
			if (next == path || strings.HasPrefix(path, next+".")) && !findOrdered(x.vals[i], next, path, fn) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !findOrdered(e, at, path, fn) {
				return false
			}
		}
	}
	return true
}

// javaString is a JSON value as toString prints what the parser reads
// it into: HashMaps, ArrayLists, and numbers as Integer, Long, BigInteger
// or Double.
func javaString(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case json.Number:
		if isIntegerLiteral(x) {
			if i, err := strconv.ParseInt(x.String(), 10, 64); err == nil {
				return strconv.FormatInt(i, 10)
			}
			return x.String()
		}
		f, _ := strconv.ParseFloat(x.String(), 64)
		return javaDouble(f)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = javaString(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := hashMapOrder(sortedNames(x))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + javaString(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case *orderedObject:
		vals := make(map[string]any, len(x.keys))
		var keys []string
		for i, k := range x.keys {
			if _, dup := vals[k]; !dup {
				keys = append(keys, k)
			}
			vals[k] = x.vals[i]
		}
		keys = hashMapOrder(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = k + "=" + javaString(vals[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return scalarString(v)
}

// hashMapOrder is the iteration order of a java.util.HashMap holding keys
// inserted in the given order: by bucket (the spread String.hashCode
// masked by the table size, which doubles past 3/4 full from 16), and in
// a bucket by insertion.
func hashMapOrder(keys []string) []string {
	size := 16
	for len(keys) > size*3/4 {
		size *= 2
	}
	bucket := make(map[string]uint32, len(keys))
	for _, k := range keys {
		var h int32
		for _, u := range utf16.Encode([]rune(k)) {
			h = 31*h + int32(u)
		}
		spread := uint32(h) ^ uint32(h)>>16
		bucket[k] = spread & uint32(size-1)
	}
	out := append([]string(nil), keys...)
	sort.SliceStable(out, func(i, j int) bool { return bucket[out[i]] < bucket[out[j]] })
	return out
}
