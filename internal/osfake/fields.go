package osfake

import (
	"math"
	"strconv"
	"strings"
)

// Field access: a field name resolved against an index's mapping (its
// kind and how it compares), the values a document holds for it (through
// objects, arrays and dotted names), and matchers over their keys and
// numbers.

// Field kinds: how a mapped type compares.
const (
	kindNone    = iota // unmapped: matches nothing
	kindKeyword        // exact strings (also join names and unknown types)
	kindText           // analysed tokens
	kindNumber
	kindBool
	kindDate
	kindGeo
	kindObject
)

// fieldRef is a field resolved against one index's mapping.
type fieldRef struct {
	name    string
	typ     string
	kind    int
	integer bool     // an integer type: source values are truncated
	path    []string // where the value is in _source
	meta    string   // "_id", "_routing" or "_index"
	ix      *index
}

// resolveField finds a field's type and source path. A multi-field such as
// name.keyword reads its parent's source value.
func resolveField(ix *index, name string) fieldRef {
	f := fieldRef{name: name, ix: ix}
	switch name {
	case "_id", "_routing", "_index":
		f.meta, f.kind, f.typ = name, kindKeyword, "keyword"
		return f
	}
	f.typ = ix.mapping.fieldType(name)
	src := name
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		if pt := ix.mapping.fieldType(name[:i]); pt != "" && pt != "object" && pt != "nested" {
			src = name[:i]
		}
	}
	f.path = strings.Split(src, ".")
	f.kind, f.integer = typeKind(f.typ)
	return f
}

// typeKind is how values of a mapped type compare; integer types truncate
// their source values, as the server's coercion does.
func typeKind(typ string) (kind int, integer bool) {
	switch typ {
	case "":
		return kindNone, false
	case "text":
		return kindText, false
	case "long", "integer", "short", "byte":
		return kindNumber, true
	case "double", "float", "half_float", "scaled_float":
		return kindNumber, false
	case "boolean":
		return kindBool, false
	case "date":
		return kindDate, false
	case "geo_point":
		return kindGeo, false
	case "object", "nested":
		return kindObject, false
	}
	return kindKeyword, false
}

// each calls fn with every leaf value of the field in d (arrays
// flattened; a join value reduced to its relation name) until fn returns
// false.
func (f *fieldRef) each(d *doc, fn func(v any) bool) {
	switch f.meta {
	case "_id":
		fn(d.id)
		return
	case "_routing":
		if d.routing != "" {
			fn(d.routing)
		}
		return
	case "_index":
		fn(f.ix.name)
		return
	}
	isJoin := f.typ == "join"
	walkPath(d.fields, f.path, func(v any) bool { return eachLeaf(v, isJoin, fn) })
}

// eachLeaf flattens arrays and objects into their scalar leaves.
func eachLeaf(v any, join bool, fn func(v any) bool) bool {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if !eachLeaf(e, join, fn) {
				return false
			}
		}
		return true
	case map[string]any:
		if join {
			return fn(x["name"])
		}
		for _, k := range sortedNames(x) {
			if !eachLeaf(x[k], join, fn) {
				return false
			}
		}
		return true
	case nil:
		return true
	}
	return fn(v)
}

// walkPath calls fn with each raw value found at path in a source object,
// following arrays of objects and dotted keys ({"a.b": 1} is a.b), until
// fn returns false.
func walkPath(v any, path []string, fn func(v any) bool) bool {
	if len(path) == 0 {
		return fn(v)
	}
	switch x := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			if e, ok := x[path[0]]; ok {
				return fn(e)
			}
			return true
		}
		for j := 1; j <= len(path); j++ {
			key := path[0]
			if j > 1 {
				key = strings.Join(path[:j], ".")
			}
			if e, ok := x[key]; ok {
				if !walkPath(e, path[j:], fn) {
					return false
				}
			}
		}
	case []any:
		for _, e := range x {
			if !walkPath(e, path, fn) {
				return false
			}
		}
	}
	return true
}

// queryKey turns a query value into the key the field's documents are
// compared by (see docKeys). ok is false for a value that can never match,
// such as 5.5 on an integer field.
func (f *fieldRef) queryKey(v any) (string, bool) {
	switch f.kind {
	case kindNumber:
		n, ok := toNum(v)
		if !ok || f.integer && !n.isInt && n.f != math.Trunc(n.f) {
			return "", false
		}
		return n.key(), true
	case kindBool:
		b, ok := toBool(v)
		return strconv.FormatBool(b), ok
	}
	return toKeyword(v)
}

// eachKey calls fn with the comparison keys of the field's values in d:
// tokens for text, canonical numbers for numeric fields, the string for
// keyword, until fn returns false.
func (f *fieldRef) eachKey(d *doc, fn func(k string) bool) {
	var buf []string
	f.each(d, func(v any) bool {
		switch f.kind {
		case kindText:
			s, _ := toKeyword(v)
			buf = tokens(s, buf[:0])
			for _, t := range buf {
				if !fn(t) {
					return false
				}
			}
			return true
		case kindNumber:
			n, ok := toNum(v)
			if !ok {
				return true
			}
			if f.integer {
				n = n.truncate()
			}
			return fn(n.key())
		case kindBool:
			b, ok := toBool(v)
			return !ok || fn(strconv.FormatBool(b))
		}
		s, ok := toKeyword(v)
		return !ok || fn(s)
	})
}

func (f *fieldRef) keyMatcher(pred func(string) bool) matcher {
	return func(d *doc) bool {
		hit := false
		f.eachKey(d, func(k string) bool {
			hit = pred(k)
			return !hit
		})
		return hit
	}
}

// numMatcher matches documents with a numeric (number, date as epoch
// millis, boolean as 0/1) value satisfying pred.
func (f *fieldRef) numMatcher(pred func(num) bool) matcher {
	return func(d *doc) bool {
		hit := false
		f.each(d, func(v any) bool {
			n, ok := f.docNum(v)
			hit = ok && pred(n)
			return !hit
		})
		return hit
	}
}

func (f *fieldRef) docNum(v any) (num, bool) {
	switch f.kind {
	case kindDate:
		lo, _, ok := parseDate(v)
		return intNum(lo), ok
	case kindBool:
		b, ok := toBool(v)
		return boolNum(b), ok
	}
	n, ok := toNum(v)
	if ok && f.integer {
		n = n.truncate()
	}
	return n, ok
}
