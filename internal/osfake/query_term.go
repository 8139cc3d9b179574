package osfake

import (
	"fmt"
	"strings"
)

// Term-level queries: term, terms and ids, range, and parent_id. Each
// compares values the way the field's mapped type does (fields.go).

// --- term, terms, ids ----------------------------------------------------

// termQuery matches documents whose field holds one of values exactly (as
// the field's type compares them; on a text field, one of its tokens).
type termQuery struct {
	field  string
	values []any
	kind   string // "term" or "terms", for messages
}

func parseTerm(body any) (query, *osError) {
	field, spec, err := singleField("term", body)
	if err != nil {
		return nil, err
	}
	if m, ok := spec.(map[string]any); ok {
		if m["case_insensitive"] == true {
			return nil, &osError{Status: 501, Type: "osfake_not_implemented", Reason: "osfake does not emulate case_insensitive term queries"}
		}
		v, ok := m["value"]
		if !ok {
			return nil, parsingException("[term] query does not support [" + strings.Join(sortedNames(m), ",") + "]")
		}
		spec = v
	}
	if spec == nil {
		return nil, illegalArgument("value cannot be null")
	}
	return &termQuery{field: field, values: []any{spec}, kind: "term"}, nil
}

func parseTerms(body any) (query, *osError) {
	field, spec, err := singleField("terms", body)
	if err != nil {
		return nil, err
	}
	vals, ok := spec.([]any)
	if !ok {
		if _, lookup := spec.(map[string]any); lookup {
			return nil, &osError{Status: 501, Type: "osfake_not_implemented", Reason: "osfake does not emulate terms lookup"}
		}
		return nil, parsingException("[terms] query does not support [" + field + "]")
	}
	return &termQuery{field: field, values: vals, kind: "terms"}, nil
}

func parseIDs(body any) (query, *osError) {
	m, _ := body.(map[string]any)
	vals, ok := m["values"].([]any)
	if !ok {
		return nil, parsingException("[ids] query malformed, [values] must be an array")
	}
	return &termQuery{field: "_id", values: vals, kind: "ids"}, nil
}

func (q *termQuery) score() float64 { return 1 }

func (q *termQuery) bind(ix *index) (matcher, *osError) {
	f := resolveField(ix, q.field)
	switch f.kind {
	case kindNone, kindObject:
		return matchNone, nil
	case kindGeo:
		return nil, queryShardException("Geometry fields do not support exact searching, use dedicated geometry queries instead: [" + q.field + "]")
	case kindDate:
		// A date term is a range over the value's precision, as the
		// server's DateFieldType.termQuery.
		var ms []matcher
		for _, v := range q.values {
			lo, hi, ok := parseDate(v)
			if !ok {
				return nil, dateParseFailure(scalarString(v), dateFormat(ix, q.field))
			}
			ms = append(ms, f.numMatcher(func(n num) bool { return n.i >= lo && n.i <= hi }))
		}
		return anyOf(ms), nil
	}
	keys := make(map[string]struct{}, len(q.values))
	for _, v := range q.values {
		if k, ok := f.queryKey(v); ok {
			keys[k] = struct{}{}
		}
	}
	if len(keys) == 0 {
		return matchNone, nil
	}
	return f.keyMatcher(func(k string) bool { _, ok := keys[k]; return ok }), nil
}

func anyOf(ms []matcher) matcher {
	if len(ms) == 1 {
		return ms[0]
	}
	return func(d *doc) bool {
		for _, m := range ms {
			if m(d) {
				return true
			}
		}
		return false
	}
}

// --- range -----------------------------------------------------------------

type rangeQuery struct {
	field            string
	gt, gte, lt, lte any
}

func parseRange(body any) (query, *osError) {
	field, spec, err := singleField("range", body)
	if err != nil {
		return nil, err
	}
	m, ok := spec.(map[string]any)
	if !ok {
		return nil, parsingException("[range] query malformed, after field missing start object")
	}
	q := &rangeQuery{field: field}
	inclLower, inclUpper := true, true
	var from, to any
	for k, v := range m {
		switch k {
		case "gt":
			q.gt = v
		case "gte":
			q.gte = v
		case "lt":
			q.lt = v
		case "lte":
			q.lte = v
		case "from":
			from = v
		case "to":
			to = v
		case "include_lower":
			inclLower = v == true
		case "include_upper":
			inclUpper = v == true
		case "boost", "_name", "format", "time_zone", "relation":
		default:
			return nil, parsingException("[range] query does not support [" + k + "]")
		}
	}
	if from != nil {
		if inclLower {
			q.gte = from
		} else {
			q.gt = from
		}
	}
	if to != nil {
		if inclUpper {
			q.lte = to
		} else {
			q.lt = to
		}
	}
	return q, nil
}

func (q *rangeQuery) score() float64 { return 1 }

func (q *rangeQuery) bind(ix *index) (matcher, *osError) {
	f := resolveField(ix, q.field)
	switch f.kind {
	case kindNone, kindObject:
		return matchNone, nil
	case kindGeo:
		return nil, queryShardException("Field [" + q.field + "] of type [geo_point] does not support range queries")
	case kindKeyword, kindText:
		var lo, hi *string
		loIncl, hiIncl := true, true
		for _, b := range []struct {
			v    any
			low  bool
			incl bool
		}{{q.gt, true, false}, {q.gte, true, true}, {q.lt, false, false}, {q.lte, false, true}} {
			if b.v == nil {
				continue
			}
			s, _ := toKeyword(b.v)
			if b.low {
				lo, loIncl = &s, b.incl
			} else {
				hi, hiIncl = &s, b.incl
			}
		}
		return f.keyMatcher(func(k string) bool {
			if lo != nil && (k < *lo || (!loIncl && k == *lo)) {
				return false
			}
			return hi == nil || k < *hi || (hiIncl && k == *hi)
		}), nil
	}
	// Numbers, booleans and dates compare as numbers. A date bound is
	// rounded as the server rounds it: gt and lte use the end of the
	// bound's precision ("2024-01-01" ends at 23:59:59.999).
	type bound struct {
		n    num
		incl bool
		set  bool
	}
	var lo, hi bound
	conv := func(v any, roundUp bool) (num, *osError) {
		if f.kind == kindDate {
			l, h, ok := parseDate(v)
			if !ok {
				return num{}, dateParseFailure(scalarString(v), dateFormat(ix, q.field))
			}
			if roundUp {
				return intNum(h), nil
			}
			return intNum(l), nil
		}
		if f.kind == kindBool {
			if b, ok := toBool(v); ok {
				return boolNum(b), nil
			}
		}
		n, ok := toNum(v)
		if !ok {
			return num{}, &osError{Status: 400, Type: "number_format_exception", Reason: fmt.Sprintf("For input string: \"%v\"", v)}
		}
		return n, nil
	}
	var err *osError
	if q.gte != nil {
		lo.n, err = conv(q.gte, false)
		lo.incl, lo.set = true, true
	}
	if q.gt != nil && err == nil {
		lo.n, err = conv(q.gt, true)
		lo.incl, lo.set = false, true
	}
	if q.lte != nil && err == nil {
		hi.n, err = conv(q.lte, true)
		hi.incl, hi.set = true, true
	}
	if q.lt != nil && err == nil {
		hi.n, err = conv(q.lt, false)
		hi.incl, hi.set = false, true
	}
	if err != nil {
		return nil, err
	}
	return f.numMatcher(func(n num) bool {
		if lo.set {
			c := cmpNum(n, lo.n)
			if c < 0 || (c == 0 && !lo.incl) {
				return false
			}
		}
		if hi.set {
			c := cmpNum(n, hi.n)
			if c > 0 || (c == 0 && !hi.incl) {
				return false
			}
		}
		return true
	}), nil
}

// --- parent_id ---------------------------------------------------------------

type parentIDQuery struct {
	child, id      string
	ignoreUnmapped bool
}

func parseParentID(body any) (query, *osError) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, parsingException("[parent_id] query malformed, no start_object after query name")
	}
	q := &parentIDQuery{ignoreUnmapped: m["ignore_unmapped"] == true}
	q.child, _ = m["type"].(string)
	q.id = scalarString(m["id"])
	if q.child == "" || m["id"] == nil {
		return nil, parsingException("[parent_id] requires 'type' and 'id' fields")
	}
	return q, nil
}

func (q *parentIDQuery) score() float64 { return 1 }

func (q *parentIDQuery) bind(ix *index) (matcher, *osError) {
	j := ix.mapping.join
	if j == nil {
		return unmappedJoin(q.ignoreUnmapped, "[parent_id] no join field found for index ["+ix.name+"]")
	}
	if _, ok := j.parentOf(q.child); !ok {
		return nil, queryShardException("[parent_id] no relation found for child [" + q.child + "]")
	}
	path := strings.Split(j.name, ".")
	return func(d *doc) bool {
		ok := false
		walkPath(d.fields, path, func(v any) bool {
			m, isMap := v.(map[string]any)
			ok = isMap && m["name"] == q.child && scalarString(m["parent"]) == q.id
			return !ok
		})
		return ok
	}, nil
}
