package osfake

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
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
	"simple_query_string": true, "nested": true,
	"geo_polygon": true, "geo_shape": true, "script": true, "script_score": true,
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
	case "has_parent":
		return parseHasParent(body)
	case "has_child":
		return parseHasChild(body)
	case "geo_bounding_box":
		return parseGeoBox(body)
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
		if _, isObj := v.(map[string]any); !isArr && !isObj {
			return nil, xContentError("[bool] " + k + " doesn't support values of type: " + tokenName(v))
		}
		if !isArr {
			clauses = []any{v}
		}
		for _, c := range clauses {
			cq, err := parseQuery(c)
			if err != nil {
				// The clause's parser fails inside the bool's.
				if err.Status == 400 {
					err = &osError{Status: 400, Type: "x_content_parse_exception", Reason: "[bool] failed to parse field [" + k + "]", CausedBy: err}
				}
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
