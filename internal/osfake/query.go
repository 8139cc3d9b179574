package osfake

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// The query DSL. A parsed query is index-independent; bind resolves it
// against one index's mapping (field types, the join field) once per
// request and index, and returns a matcher that tests a document. Errors
// found while binding are the server's shard-level errors (a field of the
// wrong type, a missing join field); errors found while parsing are the
// REST-level parsing_exception.
//
// Simplifications, listed in the package doc: text is analysed by
// lowercasing and splitting on anything that is not a letter or a digit
// (the standard analyzer's Unicode word rules and stop words are not
// emulated), and every query scores a constant (see score).

// query is a parsed query clause.
type query interface {
	bind(ix *index) (matcher, *osError)
	// score is the constant score of every matching document: the server
	// scores term and match queries with BM25, which the emulator does not.
	score() float64
}

// matcher tests one document of the index a query was bound to.
type matcher func(d *doc) bool

func parsingException(reason string) *osError {
	return &osError{Status: 400, Type: "parsing_exception", Reason: reason}
}

func queryShardException(reason string) *osError {
	return &osError{Status: 400, Type: "query_shard_exception", Reason: reason}
}

// notEmulatedQueries are real query types the emulator does not implement:
// they answer 501 rather than the parsing_exception an unknown name gets,
// so a test failure points at the emulator, not at the caller.
var notEmulatedQueries = map[string]bool{
	"prefix": true, "wildcard": true, "regexp": true, "fuzzy": true, "match_phrase": true,
	"match_phrase_prefix": true, "match_bool_prefix": true, "multi_match": true, "query_string": true,
	"simple_query_string": true, "nested": true, "has_child": true, "has_parent": true,
	"geo_bounding_box": true, "geo_polygon": true, "geo_shape": true, "script": true, "script_score": true,
	"function_score": true, "dis_max": true, "boosting": true, "more_like_this": true, "terms_set": true,
	"wrapper": true, "distance_feature": true, "rank_feature": true, "intervals": true, "pinned": true,
	"span_term": true, "span_near": true, "span_or": true, "span_not": true, "span_first": true,
	"span_multi": true, "span_containing": true, "span_within": true, "field_masking_span": true,
	"combined_fields": true, "percolate": true, "neural": true, "knn": true, "xy_shape": true,
}

// parseQuery parses one query clause: an object with exactly one key.
func parseQuery(v any) (query, *osError) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, parsingException("[_na] query malformed, must start with start_object")
	}
	if len(m) == 0 {
		return nil, parsingException("query malformed, empty clause found")
	}
	if len(m) > 1 {
		names := sortedNames(m)
		return nil, parsingException(fmt.Sprintf("[%s] malformed query, expected [END_OBJECT] but found [FIELD_NAME]", names[0]))
	}
	name := sortedNames(m)[0]
	body := m[name]
	switch name {
	case "match_all":
		return &matchAllQuery{boost: boostOf(body)}, nil
	case "match_none":
		return matchNoneQuery{}, nil
	case "term":
		return parseTerm(body)
	case "terms":
		return parseTerms(body)
	case "ids":
		return parseIDs(body)
	case "range":
		return parseRange(body)
	case "exists":
		b, _ := body.(map[string]any)
		f, ok := b["field"].(string)
		if !ok {
			return nil, parsingException("[exists] must be provided with a [field]")
		}
		return &existsQuery{field: f}, nil
	case "bool":
		return parseBool(body)
	case "constant_score":
		b, _ := body.(map[string]any)
		if b["filter"] == nil {
			return nil, parsingException("[constant_score] requires a 'filter' element")
		}
		inner, err := parseQuery(b["filter"])
		if err != nil {
			return nil, err
		}
		return &constantScoreQuery{filter: inner, boost: boostOf(body)}, nil
	case "match":
		return parseMatch(body)
	case "geo_distance":
		return parseGeoDistance(body)
	case "parent_id":
		return parseParentID(body)
	}
	if notEmulatedQueries[name] {
		return nil, &osError{Status: 501, Type: "osfake_not_implemented", Reason: "osfake does not emulate the [" + name + "] query"}
	}
	return nil, &osError{Status: 400, Type: "parsing_exception", Reason: "unknown query [" + name + "]",
		Extra: map[string]any{"caused_by": map[string]any{"type": "named_object_not_found_exception",
			"reason": "unknown field [" + name + "]"}}}
}

func sortedNames(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func boostOf(body any) float64 {
	if b, ok := body.(map[string]any); ok {
		if n, ok := toNum(b["boost"]); ok {
			return n.f
		}
	}
	return 1
}

// singleField reads the {"<field>": spec} body of term, range, match and
// the like, which name exactly one field.
func singleField(kind string, body any) (string, any, *osError) {
	m, ok := body.(map[string]any)
	if !ok {
		return "", nil, parsingException("[" + kind + "] query malformed, no start_object after query name")
	}
	var field string
	var spec any
	for _, k := range sortedNames(m) {
		if k == "boost" || k == "_name" {
			continue
		}
		if field != "" {
			return "", nil, parsingException(fmt.Sprintf("[%s] query doesn't support multiple fields, found [%s] and [%s]", kind, field, k))
		}
		field, spec = k, m[k]
	}
	if field == "" {
		return "", nil, parsingException("[" + kind + "] query malformed, no field specified")
	}
	return field, spec, nil
}

type matchAllQuery struct{ boost float64 }

func (q *matchAllQuery) bind(*index) (matcher, *osError) { return matchAll, nil }
func (q *matchAllQuery) score() float64                  { return q.boost }

type matchNoneQuery struct{}

func (matchNoneQuery) bind(*index) (matcher, *osError) { return matchNone, nil }
func (matchNoneQuery) score() float64                  { return 0 }

func matchAll(*doc) bool  { return true }
func matchNone(*doc) bool { return false }

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
		return nil, queryShardException("Geo fields do not support exact searching, use dedicated geo queries instead: [" + q.field + "]")
	case kindDate:
		// A date term is a range over the value's precision, as the
		// server's DateFieldType.termQuery.
		var ms []matcher
		for _, v := range q.values {
			lo, hi, ok := parseDate(v)
			if !ok {
				return nil, parseError(fmt.Sprintf("failed to parse date field [%v] with format [strict_date_optional_time||epoch_millis]", v))
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
				return num{}, parseError(fmt.Sprintf("failed to parse date field [%v] with format [strict_date_optional_time||epoch_millis]", v))
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

// --- exists, bool, constant_score --------------------------------------------

type existsQuery struct{ field string }

func (q *existsQuery) score() float64 { return 1 }

func (q *existsQuery) bind(ix *index) (matcher, *osError) {
	f := resolveField(ix, q.field)
	if f.kind == kindNone {
		return matchNone, nil
	}
	return func(d *doc) bool {
		found := false
		f.each(d, func(v any) bool {
			found = v != nil
			return !found
		})
		return found
	}, nil
}

type boolQuery struct {
	must, filter, should, mustNot []query
	msm                           *string // minimum_should_match as given
}

func parseBool(body any) (query, *osError) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, parsingException("[bool] query malformed, no start_object after query name")
	}
	q := &boolQuery{}
	for _, k := range sortedNames(m) {
		v := m[k]
		var dst *[]query
		switch k {
		case "must":
			dst = &q.must
		case "filter":
			dst = &q.filter
		case "should":
			dst = &q.should
		case "must_not", "mustNot":
			dst = &q.mustNot
		case "minimum_should_match":
			s := scalarString(v)
			q.msm = &s
			continue
		case "boost", "_name", "adjust_pure_negative":
			continue
		default:
			return nil, parsingException("[bool] query does not support [" + k + "]")
		}
		clauses, isArr := v.([]any)
		if !isArr {
			clauses = []any{v}
		}
		for _, c := range clauses {
			cq, err := parseQuery(c)
			if err != nil {
				return nil, err
			}
			*dst = append(*dst, cq)
		}
	}
	return q, nil
}

// minShould is the number of should clauses a document must match: the
// server's default is 1 when there is no must or filter clause, else 0;
// minimum_should_match follows Queries.calculateMinShouldMatch (an
// integer, a negative integer or a percentage, never below 0, and not
// capped: asking for more than there are matches nothing).
func (q *boolQuery) minShould() (int, *osError) {
	n := len(q.should)
	if q.msm == nil {
		if n > 0 && len(q.must) == 0 && len(q.filter) == 0 {
			return 1, nil
		}
		return 0, nil
	}
	spec := strings.TrimSpace(*q.msm)
	res := n
	if p, ok := strings.CutSuffix(spec, "%"); ok {
		pct, err := strconv.Atoi(p)
		if err != nil {
			return 0, illegalArgument("Unable to parse minimum_should_match [" + spec + "]")
		}
		calc := float64(n*pct) / 100
		if calc < 0 {
			res = n + int(calc)
		} else {
			res = int(calc)
		}
	} else {
		c, err := strconv.Atoi(spec)
		if err != nil {
			return 0, &osError{Status: 501, Type: "osfake_not_implemented", Reason: "osfake does not emulate minimum_should_match [" + spec + "]"}
		}
		if c < 0 {
			res = n + c
		} else {
			res = c
		}
	}
	return max(res, 0), nil
}

// score is 0 for a pure filter (only filter and must_not clauses), as on
// the server, where filters do not score.
func (q *boolQuery) score() float64 {
	if len(q.must) == 0 && len(q.should) == 0 {
		return 0
	}
	return 1
}

func (q *boolQuery) bind(ix *index) (matcher, *osError) {
	bindAll := func(qs []query) ([]matcher, *osError) {
		out := make([]matcher, len(qs))
		for i, c := range qs {
			m, err := c.bind(ix)
			if err != nil {
				return nil, err
			}
			out[i] = m
		}
		return out, nil
	}
	must, err := bindAll(append(append([]query{}, q.must...), q.filter...))
	if err != nil {
		return nil, err
	}
	should, err := bindAll(q.should)
	if err != nil {
		return nil, err
	}
	mustNot, err := bindAll(q.mustNot)
	if err != nil {
		return nil, err
	}
	minShould, err := q.minShould()
	if err != nil {
		return nil, err
	}
	return func(d *doc) bool {
		for _, m := range must {
			if !m(d) {
				return false
			}
		}
		for _, m := range mustNot {
			if m(d) {
				return false
			}
		}
		if minShould == 0 {
			return true
		}
		n := 0
		for _, m := range should {
			if m(d) {
				if n++; n >= minShould {
					return true
				}
			}
		}
		return false
	}, nil
}

type constantScoreQuery struct {
	filter query
	boost  float64
}

func (q *constantScoreQuery) bind(ix *index) (matcher, *osError) { return q.filter.bind(ix) }
func (q *constantScoreQuery) score() float64                     { return q.boost }

// --- match -------------------------------------------------------------------

// matchQuery is an analysed match: on a text field the query text is
// tokenised and a document matches if it holds any token (operator "or")
// or all of them ("and"); on other fields it is a term query.
type matchQuery struct {
	field string
	text  any
	and   bool
}

func parseMatch(body any) (query, *osError) {
	field, spec, err := singleField("match", body)
	if err != nil {
		return nil, err
	}
	q := &matchQuery{field: field, text: spec}
	if m, ok := spec.(map[string]any); ok {
		q.text = m["query"]
		if q.text == nil {
			return nil, parsingException("No text specified for text query")
		}
		if op, _ := m["operator"].(string); strings.EqualFold(op, "and") {
			q.and = true
		}
	}
	return q, nil
}

func (q *matchQuery) score() float64 { return 1 }

func (q *matchQuery) bind(ix *index) (matcher, *osError) {
	f := resolveField(ix, q.field)
	if f.kind != kindText {
		return (&termQuery{field: q.field, values: []any{q.text}, kind: "match"}).bind(ix)
	}
	s, _ := toKeyword(q.text)
	want := tokens(s, nil)
	if len(want) == 0 {
		return matchNone, nil
	}
	return func(d *doc) bool {
		seen := make(map[string]bool, len(want))
		f.eachKey(d, func(k string) bool {
			for _, w := range want {
				if k == w {
					seen[w] = true
				}
			}
			done := !q.and && len(seen) > 0 || len(seen) == len(want)
			return !done
		})
		if q.and {
			return len(seen) == len(want)
		}
		return len(seen) > 0
	}, nil
}

// tokens is the emulator's analyser: lowercase, split on every rune that
// is not a letter or a digit.
func tokens(s string, dst []string) []string {
	start := -1
	for i, r := range s {
		word := unicode.IsLetter(r) || unicode.IsDigit(r)
		if word && start < 0 {
			start = i
		}
		if !word && start >= 0 {
			dst = append(dst, strings.ToLower(s[start:i]))
			start = -1
		}
	}
	if start >= 0 {
		dst = append(dst, strings.ToLower(s[start:]))
	}
	return dst
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
		if q.ignoreUnmapped {
			return matchNone, nil
		}
		return nil, queryShardException("[parent_id] no join field has been configured")
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

// --- field access ------------------------------------------------------------

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

// --- scalar conversions ------------------------------------------------------

// num is a JSON number: exact when it is an integer, else a float.
type num struct {
	f     float64
	i     int64
	isInt bool
}

func intNum(i int64) num { return num{f: float64(i), i: i, isInt: true} }

func boolNum(b bool) num {
	if b {
		return intNum(1)
	}
	return intNum(0)
}

func (n num) truncate() num {
	if n.isInt || math.IsInf(n.f, 0) || math.IsNaN(n.f) || math.Abs(n.f) >= 1<<63 {
		return n
	}
	return intNum(int64(n.f))
}

// key is the canonical text of a number, equal for equal values.
func (n num) key() string {
	if n.isInt {
		return strconv.FormatInt(n.i, 10)
	}
	if n.f == math.Trunc(n.f) && math.Abs(n.f) < 1<<63 {
		return strconv.FormatInt(int64(n.f), 10)
	}
	return strconv.FormatFloat(n.f, 'g', -1, 64)
}

func cmpNum(a, b num) int {
	if a.isInt && b.isInt {
		switch {
		case a.i < b.i:
			return -1
		case a.i > b.i:
			return 1
		}
		return 0
	}
	switch {
	case a.f < b.f:
		return -1
	case a.f > b.f:
		return 1
	}
	return 0
}

func toNum(v any) (num, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	case float64:
		return num{f: x}, true
	case int:
		return intNum(int64(x)), true
	case int64:
		return intNum(x), true
	default:
		return num{}, false
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return intNum(i), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return num{}, false
	}
	return num{f: f}, true
}

func toKeyword(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case float64, int, int64:
		return fmt.Sprint(x), true
	}
	return "", false
}

func toBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		switch x {
		case "true":
			return true, true
		case "false", "":
			return false, true
		}
	}
	return false, false
}

// --- geo_distance --------------------------------------------------------------

// earthRadiusMeters is Lucene's GeoUtils.EARTH_MEAN_RADIUS, the sphere
// OpenSearch measures arc distances on.
const earthRadiusMeters = 6371008.7714

type geoPoint struct{ lat, lon float64 }

type geoDistanceQuery struct {
	field          string
	center         geoPoint
	meters         float64
	ignoreUnmapped bool
}

func parseGeoDistance(body any) (query, *osError) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, parsingException("[geo_distance] query malformed, no start_object after query name")
	}
	q := &geoDistanceQuery{meters: -1}
	for _, k := range sortedNames(m) {
		v := m[k]
		switch k {
		case "distance":
			d, err := parseDistance(v)
			if err != nil {
				return nil, err
			}
			q.meters = d
		case "ignore_unmapped":
			q.ignoreUnmapped = v == true
		case "distance_type", "validation_method", "_name", "boost", "unit":
		default:
			if q.field != "" {
				return nil, parsingException("[geo_distance] query doesn't support multiple fields, found [" + q.field + "] and [" + k + "]")
			}
			p, ok := parseGeoPoint(v)
			if !ok {
				return nil, parsingException("[geo_distance] failed to parse point of field [" + k + "]")
			}
			q.field, q.center = k, p
		}
	}
	if q.meters < 0 {
		return nil, parsingException("geo_distance requires 'distance' to be specified")
	}
	if q.field == "" {
		return nil, parsingException("no geo point specified in [geo_distance]")
	}
	return q, nil
}

// distanceUnits are OpenSearch's DistanceUnit names in its parse order
// ("km" is tried before "m", "nmi" before "mi").
var distanceUnits = []struct {
	names  []string
	meters float64
}{
	{[]string{"in", "inch"}, 0.0254}, {[]string{"yd", "yards"}, 0.9144}, {[]string{"ft", "feet"}, 0.3048},
	{[]string{"km", "kilometers"}, 1000}, {[]string{"NM", "nmi", "nauticalmiles"}, 1852},
	{[]string{"mm", "millimeters"}, 0.001}, {[]string{"cm", "centimeters"}, 0.01},
	{[]string{"mi", "miles"}, 1609.344}, {[]string{"m", "meters"}, 1},
}

// parseDistance reads "25mi", "10km", "500m" or a number of metres.
func parseDistance(v any) (float64, *osError) {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		if err == nil {
			return f, nil
		}
	}
	s, _ := v.(string)
	s = strings.TrimSpace(s)
	for _, u := range distanceUnits {
		for _, name := range u.names {
			if num, ok := strings.CutSuffix(s, name); ok {
				if f, err := strconv.ParseFloat(strings.TrimSpace(num), 64); err == nil {
					return f * u.meters, nil
				}
			}
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, nil
	}
	return 0, parseError(fmt.Sprintf("failed to parse distance [%v]", v))
}

func (q *geoDistanceQuery) score() float64 { return 1 }

func (q *geoDistanceQuery) bind(ix *index) (matcher, *osError) {
	f := resolveField(ix, q.field)
	switch {
	case f.kind == kindNone && q.ignoreUnmapped:
		return matchNone, nil
	case f.kind == kindNone:
		return nil, queryShardException("failed to find geo field [" + q.field + "]")
	case f.kind != kindGeo:
		return nil, queryShardException("field [" + q.field + "] is of type [" + f.typ + "], but only geo_point fields are supported by [geo_distance] query")
	}
	return func(d *doc) bool {
		hit := false
		walkPath(d.fields, f.path, func(v any) bool {
			eachGeoPoint(v, func(p geoPoint) bool {
				hit = arcDistance(q.center, p) <= q.meters
				return !hit
			})
			return !hit
		})
		return hit
	}, nil
}

// arcDistance is Lucene's SloppyMath.haversinMeters (with exact
// trigonometry): the great-circle distance in metres.
func arcDistance(a, b geoPoint) float64 {
	x1, x2 := a.lat*math.Pi/180, b.lat*math.Pi/180
	h1 := 1 - math.Cos(x1-x2)
	h2 := 1 - math.Cos((a.lon-b.lon)*math.Pi/180)
	h := h1 + math.Cos(x1)*math.Cos(x2)*h2
	return earthRadiusMeters * 2 * math.Asin(math.Min(1, math.Sqrt(h*0.5)))
}

// eachGeoPoint calls fn with each point of a geo_point field value: one
// point ({"lat","lon"}, "lat,lon", "POINT (lon lat)", a geohash, or
// [lon, lat]) or an array of them.
func eachGeoPoint(v any, fn func(geoPoint) bool) bool {
	if arr, ok := v.([]any); ok && !isLonLatArray(arr) {
		for _, e := range arr {
			if !eachGeoPoint(e, fn) {
				return false
			}
		}
		return true
	}
	if p, ok := parseGeoPoint(v); ok {
		return fn(p)
	}
	return true
}

func isLonLatArray(arr []any) bool {
	if len(arr) < 2 || len(arr) > 3 {
		return false
	}
	for _, e := range arr {
		if _, ok := e.(json.Number); !ok {
			return false
		}
	}
	return true
}

func parseGeoPoint(v any) (geoPoint, bool) {
	switch x := v.(type) {
	case map[string]any:
		lat, ok1 := toNum(x["lat"])
		lon, ok2 := toNum(x["lon"])
		return geoPoint{lat: lat.f, lon: lon.f}, ok1 && ok2
	case []any:
		if !isLonLatArray(x) {
			return geoPoint{}, false
		}
		lon, _ := toNum(x[0])
		lat, _ := toNum(x[1])
		return geoPoint{lat: lat.f, lon: lon.f}, true
	case string:
		s := strings.TrimSpace(x)
		if wkt, ok := strings.CutPrefix(strings.ToUpper(s), "POINT"); ok {
			parts := strings.Fields(strings.Trim(strings.TrimSpace(wkt), "()"))
			if len(parts) >= 2 {
				lon, err1 := strconv.ParseFloat(parts[0], 64)
				lat, err2 := strconv.ParseFloat(parts[1], 64)
				return geoPoint{lat: lat, lon: lon}, err1 == nil && err2 == nil
			}
			return geoPoint{}, false
		}
		if lat, lon, ok := strings.Cut(s, ","); ok {
			la, err1 := strconv.ParseFloat(strings.TrimSpace(lat), 64)
			lo, err2 := strconv.ParseFloat(strings.TrimSpace(lon), 64)
			return geoPoint{lat: la, lon: lo}, err1 == nil && err2 == nil
		}
		return decodeGeohash(s)
	}
	return geoPoint{}, false
}

// decodeGeohash returns the centre of a geohash cell.
func decodeGeohash(h string) (geoPoint, bool) {
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	if h == "" || len(h) > 12 {
		return geoPoint{}, false
	}
	latLo, latHi, lonLo, lonHi := -90.0, 90.0, -180.0, 180.0
	even := true
	for _, c := range strings.ToLower(h) {
		idx := strings.IndexRune(alphabet, c)
		if idx < 0 {
			return geoPoint{}, false
		}
		for bit := 4; bit >= 0; bit-- {
			on := idx>>bit&1 == 1
			if even {
				if mid := (lonLo + lonHi) / 2; on {
					lonLo = mid
				} else {
					lonHi = mid
				}
			} else {
				if mid := (latLo + latHi) / 2; on {
					latLo = mid
				} else {
					latHi = mid
				}
			}
			even = !even
		}
	}
	return geoPoint{lat: (latLo + latHi) / 2, lon: (lonLo + lonHi) / 2}, true
}

// --- dates ---------------------------------------------------------------------

// dateLayouts are the strict_date_optional_time forms the emulator reads,
// finest first, with the precision each leaves unspecified.
var dateLayouts = []struct {
	layout string
	unit   time.Duration // 0: a calendar month or year, see parseDate
}{
	{"2006-01-02T15:04:05.999999999Z07:00", time.Second},
	{"2006-01-02T15:04Z07:00", time.Minute},
	{"2006-01-02T15:04:05.999999999", time.Second},
	{"2006-01-02T15:04", time.Minute},
	{"2006-01-02T15", time.Hour},
	{"2006-01-02", 24 * time.Hour},
	{"2006-01", 0},
	{"2006", 0},
}

// parseDate reads a date (an ISO-8601 string in UTC unless it has a zone,
// or epoch milliseconds) as the first and last millisecond it denotes:
// "2024-01-01" is the whole day, which is how the server rounds date
// bounds and terms. Date math ("now-1d") is not emulated.
func parseDate(v any) (lo, hi int64, ok bool) {
	if n, isNum := v.(json.Number); isNum {
		x, ok := toNum(n)
		x = x.truncate()
		return x.i, x.i, ok && x.isInt
	}
	s, isStr := v.(string)
	if !isStr {
		return 0, 0, false
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil && len(s) > 4 {
		return i, i, true
	}
	for _, l := range dateLayouts {
		t, err := time.Parse(l.layout, s)
		if err != nil {
			continue
		}
		lo = t.UnixMilli()
		switch {
		case l.unit == time.Second && strings.Contains(s, "."):
			return lo, lo, true
		case l.unit > 0:
			return lo, lo + l.unit.Milliseconds() - 1, true
		case l.layout == "2006-01":
			return lo, t.AddDate(0, 1, 0).UnixMilli() - 1, true
		default:
			return lo, t.AddDate(1, 0, 0).UnixMilli() - 1, true
		}
	}
	return 0, 0, false
}
