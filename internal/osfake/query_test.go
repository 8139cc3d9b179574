package osfake

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// queryMapping maps every field type the query DSL distinguishes,
// including a multi-field and a join.
const queryMapping = `{"settings":{"number_of_shards":3,"number_of_replicas":0},
	"mappings":{"properties":{
		"name":{"type":"text","fields":{"keyword":{"type":"keyword"}}},
		"geo_cell":{"type":"keyword"},"price_cents":{"type":"long"},"rating":{"type":"double"},
		"open":{"type":"boolean"},"tags":{"type":"keyword"},"opened":{"type":"date"},
		"location":{"type":"geo_point"},
		"relation":{"type":"join","relations":{"restaurant":"dish"}}}}}`

// queryDocs: restaurants in San Francisco, Oakland and San Jose, two due
// north of San Francisco at 14.9 and 15.1 miles, and dishes routed with
// their restaurant. Geo points come in every accepted form.
var queryDocs = []seedDoc{
	{"restaurant:1", "", `{"name":"Golden Gate Pizza","geo_cell":"c1","price_cents":1200,"rating":4.5,"open":true,
		"tags":["pizza","italian"],"opened":"2020-05-01","location":{"lat":37.7749,"lon":-122.4194},"relation":"restaurant"}`},
	{"restaurant:2", "", `{"name":"Oakland Tacos","geo_cell":"c2","price_cents":800,"rating":3.9,"open":false,
		"tags":["mexican"],"opened":"2021-01-15","location":"37.8044,-122.2712","relation":"restaurant"}`},
	{"restaurant:3", "", `{"name":"San Jose Sushi","geo_cell":"c3","price_cents":2500,"rating":4.8,"open":true,
		"tags":["japanese","sushi"],"opened":"2019-11-30","location":[-121.8863,37.3382],"relation":"restaurant"}`},
	{"restaurant:4", "", `{"name":"North Inside Grill","geo_cell":"c1","rating":4.0,"tags":[],
		"location":{"lat":37.990549,"lon":-122.4194},"relation":"restaurant"}`},
	{"restaurant:5", "", `{"name":"North Outside Grill","geo_cell":"c2","tags":["grill"],
		"location":"POINT (-122.4194 37.993444)","relation":"restaurant"}`},
	{"dish:1", "restaurant:1", `{"name":"Margherita Pizza","relation":{"name":"dish","parent":"restaurant:1"}}`},
	{"dish:2", "restaurant:1", `{"name":"Tiramisu","relation":{"name":"dish","parent":"restaurant:1"}}`},
	{"dish:3", "restaurant:2", `{"name":"Carnitas Taco","relation":{"name":"dish","parent":"restaurant:2"}}`},
}

func TestQueryTypes(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "queries", queryMapping, queryDocs...)
	all := []string{"dish:1", "dish:2", "dish:3", "restaurant:1", "restaurant:2", "restaurant:3", "restaurant:4", "restaurant:5"}
	const sf = `{"lat":37.7749,"lon":-122.4194}`
	cases := []struct {
		name  string
		query string
		want  []string
	}{
		{"match_all", `{"match_all":{}}`, all},
		{"match_none", `{"match_none":{}}`, nil},
		{"term keyword", `{"term":{"geo_cell":"c1"}}`, []string{"restaurant:1", "restaurant:4"}},
		{"term value form", `{"term":{"geo_cell":{"value":"c1","boost":2}}}`, []string{"restaurant:1", "restaurant:4"}},
		{"term multi-field keyword", `{"term":{"name.keyword":"Oakland Tacos"}}`, []string{"restaurant:2"}},
		{"term text matches a token", `{"term":{"name":"pizza"}}`, []string{"dish:1", "restaurant:1"}},
		{"term text is not analysed", `{"term":{"name":"Pizza"}}`, nil},
		{"term in array", `{"term":{"tags":"sushi"}}`, []string{"restaurant:3"}},
		{"term long", `{"term":{"price_cents":800}}`, []string{"restaurant:2"}},
		{"term long as string", `{"term":{"price_cents":"800"}}`, []string{"restaurant:2"}},
		{"term long with decimals", `{"term":{"price_cents":800.5}}`, nil},
		{"term boolean", `{"term":{"open":true}}`, []string{"restaurant:1", "restaurant:3"}},
		{"term join relation", `{"term":{"relation":"dish"}}`, []string{"dish:1", "dish:2", "dish:3"}},
		{"term unmapped field", `{"term":{"nope":"c1"}}`, nil},
		{"terms", `{"terms":{"geo_cell":["c2","c3"]}}`, []string{"restaurant:2", "restaurant:3", "restaurant:5"}},
		{"terms on _id", `{"terms":{"_id":["dish:2","restaurant:5"]}}`, []string{"dish:2", "restaurant:5"}},
		{"ids", `{"ids":{"values":["restaurant:1","dish:3","nope"]}}`, []string{"dish:3", "restaurant:1"}},
		{"range long", `{"range":{"price_cents":{"gte":800,"lt":2500}}}`, []string{"restaurant:1", "restaurant:2"}},
		{"range keyword lexicographic", `{"range":{"geo_cell":{"gt":"c1","lte":"c3"}}}`, []string{"restaurant:2", "restaurant:3", "restaurant:5"}},
		{"range double gt", `{"range":{"rating":{"gt":4.5}}}`, []string{"restaurant:3"}},
		{"range double gte", `{"range":{"rating":{"gte":4.5}}}`, []string{"restaurant:1", "restaurant:3"}},
		{"range date gte", `{"range":{"opened":{"gte":"2020-05-01"}}}`, []string{"restaurant:1", "restaurant:2"}},
		{"range date gt rounds up", `{"range":{"opened":{"gt":"2020-05-01"}}}`, []string{"restaurant:2"}},
		{"exists", `{"exists":{"field":"price_cents"}}`, []string{"restaurant:1", "restaurant:2", "restaurant:3"}},
		{"exists empty array is missing", `{"exists":{"field":"tags"}}`, []string{"restaurant:1", "restaurant:2", "restaurant:3", "restaurant:5"}},
		{"bool must and must_not", `{"bool":{"must":{"term":{"geo_cell":"c1"}},"must_not":[{"term":{"open":false}}]}}`,
			[]string{"restaurant:1", "restaurant:4"}},
		{"bool must_not only", `{"bool":{"must_not":{"term":{"open":true}},"filter":{"exists":{"field":"location"}}}}`,
			[]string{"restaurant:2", "restaurant:4", "restaurant:5"}},
		{"bool should alone needs one", `{"bool":{"should":[{"term":{"geo_cell":"c2"}},{"term":{"geo_cell":"c3"}}]}}`,
			[]string{"restaurant:2", "restaurant:3", "restaurant:5"}},
		{"bool should with filter needs none", `{"bool":{"filter":[{"term":{"geo_cell":"c1"}}],"should":[{"term":{"open":true}}]}}`,
			[]string{"restaurant:1", "restaurant:4"}},
		{"bool minimum_should_match", `{"bool":{"should":[{"term":{"geo_cell":"c1"}},{"term":{"open":true}},{"term":{"tags":"pizza"}}],"minimum_should_match":2}}`,
			[]string{"restaurant:1"}},
		{"bool minimum_should_match above clauses", `{"bool":{"should":[{"term":{"geo_cell":"c1"}}],"minimum_should_match":2}}`, nil},
		{"bool minimum_should_match percent", `{"bool":{"should":[{"term":{"geo_cell":"c1"}},{"term":{"open":true}}],"minimum_should_match":"100%"}}`,
			[]string{"restaurant:1"}},
		{"geo_distance 15mi", `{"geo_distance":{"distance":"15mi","location":` + sf + `}}`,
			[]string{"restaurant:1", "restaurant:2", "restaurant:4"}},
		{"geo_distance 25km", `{"geo_distance":{"distance":"25km","location":"37.7749,-122.4194"}}`,
			[]string{"restaurant:1", "restaurant:2", "restaurant:4", "restaurant:5"}},
		{"geo_distance metres", `{"geo_distance":{"distance":24000,"location":[-122.4194,37.7749]}}`,
			[]string{"restaurant:1", "restaurant:2", "restaurant:4"}},
		{"geo_distance 500m", `{"geo_distance":{"distance":"500m","location":` + sf + `}}`, []string{"restaurant:1"}},
		{"parent_id", `{"parent_id":{"type":"dish","id":"restaurant:1"}}`, []string{"dish:1", "dish:2"}},
		{"match or", `{"match":{"name":"golden TACOS"}}`, []string{"restaurant:1", "restaurant:2"}},
		{"match and", `{"match":{"name":{"query":"pizza gate","operator":"and"}}}`, []string{"restaurant:1"}},
		{"match keyword is exact", `{"match":{"geo_cell":"c1"}}`, []string{"restaurant:1", "restaurant:4"}},
		{"constant_score", `{"constant_score":{"filter":{"term":{"geo_cell":"c3"}}}}`, []string{"restaurant:3"}},
		{"has_parent", `{"has_parent":{"parent_type":"restaurant","query":{"term":{"tags":"pizza"}}}}`, []string{"dish:1", "dish:2"}},
		{"has_parent geo_distance", `{"has_parent":{"parent_type":"restaurant","query":{"geo_distance":{"distance":"15mi","location":` + sf + `}}}}`,
			[]string{"dish:1", "dish:2", "dish:3"}},
		{"has_parent no parent matches", `{"has_parent":{"parent_type":"restaurant","query":{"term":{"tags":"sushi"}}}}`, nil},
		{"has_parent in bool with a child filter", `{"bool":{"filter":[{"has_parent":{"parent_type":"restaurant","query":{"match_all":{}}}},
			{"match":{"name":"taco"}}]}}`, []string{"dish:3"}},
		{"has_child", `{"has_child":{"type":"dish","query":{"match":{"name":"tiramisu"}}}}`, []string{"restaurant:1"}},
		{"has_child any", `{"has_child":{"type":"dish","query":{"match_all":{}}}}`, []string{"restaurant:1", "restaurant:2"}},
		{"has_child min_children", `{"has_child":{"type":"dish","query":{"match_all":{}},"min_children":2}}`, []string{"restaurant:1"}},
		{"has_child max_children", `{"has_child":{"type":"dish","query":{"match_all":{}},"max_children":1}}`, []string{"restaurant:2"}},
		{"geo_bounding_box", `{"geo_bounding_box":{"location":{"top_left":{"lat":37.9,"lon":-122.5},"bottom_right":{"lat":37.7,"lon":-122.2}}}}`,
			[]string{"restaurant:1", "restaurant:2"}},
		// Points exactly on an edge are left to chance by the server's
		// quantised coordinates, so the edges here clear every point.
		{"geo_bounding_box edges", `{"geo_bounding_box":{"location":{"top":37.991,"left":-122.42,"bottom":37.338,"right":-121.886}}}`,
			[]string{"restaurant:1", "restaurant:2", "restaurant:3", "restaurant:4"}},
		{"geo_bounding_box strings", `{"geo_bounding_box":{"location":{"top_left":"38.0,-122.5","bottom_right":"37.3,-121.8"}}}`,
			[]string{"restaurant:1", "restaurant:2", "restaurant:3", "restaurant:4", "restaurant:5"}},
		{"geo_bounding_box across the antimeridian", `{"geo_bounding_box":{"location":{"top_left":{"lat":40,"lon":170},"bottom_right":{"lat":30,"lon":-122.3}}}}`,
			[]string{"restaurant:1", "restaurant:4", "restaurant:5"}},
		{"nested bool", `{"bool":{"filter":[{"bool":{"should":[{"term":{"relation":"dish"}},{"term":{"tags":"grill"}}]}}],
			"must_not":[{"parent_id":{"type":"dish","id":"restaurant:2"}}]}}`, []string{"dish:1", "dish:2", "restaurant:5"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"size":100,"query":`+tc.query+`}`)
			got := hitIDs(out)
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("query %s = %v, want %v", tc.query, got, tc.want)
			}
			if total := str(dig(out, "hits", "total", "value")); total != itoa(len(tc.want)) {
				t.Errorf("query %s: hits.total.value = %s, want %d", tc.query, total, len(tc.want))
			}
		})
	}
}

func itoa(n int) string { return str(n) }

func TestQueryErrors(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "qerr", queryMapping, queryDocs...)
	plain := tg.name("plain")
	tg.mustDo(200, "PUT", "/"+plain, `{"settings":{"number_of_replicas":0}}`)
	// Shard failures carry the phase they happened in: a search whose
	// primary sort is a field and that spans several shards builds its
	// sort in the can_match phase, before the query.
	cases := []struct {
		name, index, body string
		status            int
		typ, rootType     string
		reason            string // a prefix of the root cause's reason
		phase             string // of a search_phase_execution_exception
		onIndex           bool   // the root cause names the index
	}{
		{"unknown query", name, `{"query":{"frobnicate":{}}}`, 400, "parsing_exception", "parsing_exception", "unknown query [frobnicate]", "", false},
		{"two queries in one clause", name, `{"query":{"term":{"geo_cell":"c1"},"match_all":{}}}`, 400, "parsing_exception", "parsing_exception", "", "", false},
		{"unknown search key", name, `{"frobnicate":1}`, 400, "parsing_exception", "parsing_exception", "Unknown key for a VALUE_NUMBER in [frobnicate]", "", false},
		{"term on geo_point", name, `{"query":{"term":{"location":"x"}}}`, 400, "search_phase_execution_exception", "query_shard_exception",
			"Geometry fields do not support exact searching, use dedicated geometry queries instead: [location]", "query", true},
		{"parent_id without join", plain, `{"query":{"parent_id":{"type":"dish","id":"1"}}}`, 400, "search_phase_execution_exception",
			"query_shard_exception", "[parent_id] no join field found for index [" + plain + "]", "query", true},
		{"parent_id unknown child", name, `{"query":{"parent_id":{"type":"menu","id":"1"}}}`, 400, "search_phase_execution_exception",
			"query_shard_exception", "[parent_id] no relation found for child [menu]", "query", true},
		{"term on a date that does not parse", name, `{"query":{"term":{"opened":"abc"}}}`, 400, "search_phase_execution_exception", "parse_exception",
			"failed to parse date field [abc] with format [strict_date_optional_time||epoch_millis]: [failed to parse date field [abc]", "query", false},
		{"range on a date that does not parse", name, `{"query":{"range":{"opened":{"gt":"abc"}}}}`, 400, "search_phase_execution_exception", "parse_exception",
			"failed to parse date field [abc] with format [strict_date_optional_time||epoch_millis]: [failed to parse date field [abc]", "query", false},
		{"sort on text", name, `{"sort":["name"]}`, 400, "search_phase_execution_exception", "illegal_argument_exception",
			"Text fields are not optimised", "can_match", false},
		{"sort on unmapped", name, `{"sort":["nope"]}`, 400, "search_phase_execution_exception", "query_shard_exception",
			"No mapping found for [nope] in order to sort on", "can_match", true},
		{"sort on unmapped after a field", name, `{"sort":["geo_cell","nope"]}`, 400, "search_phase_execution_exception", "query_shard_exception",
			"No mapping found for [nope] in order to sort on", "can_match", true},
		{"sort on unmapped after _score", name, `{"sort":["_score","nope"]}`, 400, "search_phase_execution_exception", "query_shard_exception",
			"No mapping found for [nope] in order to sort on", "query", true},
		{"sort on unmapped, one shard", plain, `{"sort":["nope"]}`, 400, "search_phase_execution_exception", "query_shard_exception",
			"No mapping found for [nope] in order to sort on", "query", true},
		{"can_match sort before the query", name, `{"query":{"term":{"location":"x"}},"sort":["nope"]}`, 400, "search_phase_execution_exception",
			"query_shard_exception", "No mapping found for [nope] in order to sort on", "can_match", true},
		{"bool clause not a query", name, `{"query":{"bool":{"must":"x"}}}`, 400, "x_content_parse_exception", "x_content_parse_exception",
			"[bool] must doesn't support values of type: VALUE_STRING", "", false},
		{"bad query inside bool", name, `{"query":{"bool":{"should":[{"frob":{}}]}}}`, 400, "x_content_parse_exception", "parsing_exception",
			"unknown query [frob]", "", false},
		{"bad clause inside nested bool", name, `{"query":{"bool":{"must":{"bool":{"must":1}}}}}`, 400, "x_content_parse_exception", "x_content_parse_exception",
			"[bool] must doesn't support values of type: VALUE_NUMBER", "", false},
		{"query before a sort without can_match", name, `{"query":{"term":{"location":"x"}},"sort":["_score","nope"]}`, 400, "search_phase_execution_exception",
			"query_shard_exception", "Geometry fields do not support exact searching", "query", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, out := tg.do("POST", "/"+tc.index+"/_search", tc.body)
			if status != tc.status || str(dig(out, "error", "type")) != tc.typ || str(dig(out, "error", "root_cause", 0, "type")) != tc.rootType {
				t.Fatalf("search %s = %d %v, want %d %s caused by %s", tc.body, status, out, tc.status, tc.typ, tc.rootType)
			}
			if reason := strings.TrimPrefix(firstRootCause(out), tc.rootType+": "); !strings.HasPrefix(reason, tc.reason) {
				t.Errorf("search %s: reason %q, want prefix %q", tc.body, reason, tc.reason)
			}
			if phase := str(dig(out, "error", "phase")); phase != tc.phase {
				t.Errorf("search %s: phase %q, want %q", tc.body, phase, tc.phase)
			}
			if got := str(dig(out, "error", "root_cause", 0, "index")); (got == tc.index) != tc.onIndex || (dig(out, "error", "root_cause", 0, "index_uuid") != nil) != tc.onIndex {
				t.Errorf("search %s: root cause %v, want the index named: %v", tc.body, dig(out, "error", "root_cause", 0), tc.onIndex)
			}
		})
	}
}

func TestQueryPartialShardFailure(t *testing.T) {
	tg := newTarget(t)
	withJoin := seedIndex(tg, "pf-join", queryMapping, queryDocs...)
	plain := seedIndex(tg, "pf-plain", `{"settings":{"number_of_shards":2,"number_of_replicas":0}}`,
		seedDoc{id: "x", source: `{"a":1}`})
	out := tg.mustDo(200, "POST", "/"+withJoin+","+plain+"/_search", `{"query":{"parent_id":{"type":"dish","id":"restaurant:2"}}}`)
	if got := hitIDs(out); !slices.Equal(got, []string{"dish:3"}) {
		t.Errorf("hits = %v, want [dish:3]", got)
	}
	sh := dig(out, "_shards")
	if str(dig(sh, "total")) != "5" || str(dig(sh, "successful")) != "3" || str(dig(sh, "failed")) != "2" ||
		str(dig(sh, "failures", 0, "index")) != plain || str(dig(sh, "failures", 0, "reason", "type")) != "query_shard_exception" {
		t.Errorf("_shards = %v, want 5 total, 3 successful, 2 failed in %s", sh, plain)
	}
}

func TestTokens(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Golden Gate Pizza", []string{"golden", "gate", "pizza"}},
		{"  Café-Crème, 24/7!", []string{"café", "crème", "24", "7"}},
		{"", nil},
	}
	for _, tc := range cases {
		if got := tokens(tc.in, nil); !slices.Equal(got, tc.want) {
			t.Errorf("tokens(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestParseDistanceAndDates(t *testing.T) {
	for _, tc := range []struct {
		in   any
		want float64
	}{{"25mi", 25 * 1609.344}, {"10km", 10000}, {"500m", 500}, {"1.5nmi", 2778}, {"3ft", 0.9144}} {
		if got, err := parseDistance(tc.in); err != nil || got < tc.want-1e-6 || got > tc.want+1e-6 {
			t.Errorf("parseDistance(%v) = %v, %v, want %v", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct {
		in     string
		lo, hi int64
	}{
		{"2024-01-01", 1704067200000, 1704153599999},
		{"2024-01", 1704067200000, 1706745599999},
		{"2024-01-01T10:00:00Z", 1704103200000, 1704103200999},
		{"2024-01-01T10:00:00.250Z", 1704103200250, 1704103200250},
	} {
		if lo, hi, ok := parseDate(tc.in); !ok || lo != tc.lo || hi != tc.hi {
			t.Errorf("parseDate(%q) = %d, %d, %v, want %d, %d", tc.in, lo, hi, ok, tc.lo, tc.hi)
		}
	}
	if p, ok := decodeGeohash("9q8yy"); !ok || p.lat < 37.7 || p.lat > 37.8 || p.lon < -122.5 || p.lon > -122.4 {
		t.Errorf("decodeGeohash(9q8yy) = %v, %v, want San Francisco", p, ok)
	}
}

// Fields inside objects, arrays of objects and dotted keys, and arrays of
// geo points.
func TestQueryObjectPaths(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "objects", `{"settings":{"number_of_shards":2,"number_of_replicas":0},
		"mappings":{"properties":{"address":{"properties":{"city":{"type":"keyword"}}},
		"menu":{"properties":{"dish":{"type":"keyword"},"price":{"type":"long"}}},"stops":{"type":"geo_point"}}}}`,
		seedDoc{id: "o1", source: `{"address":{"city":"San Francisco"},"menu":[{"dish":"pizza","price":10},{"dish":"pasta","price":12}],
			"stops":[[-121.8863,37.3382],[-122.4194,37.7749]]}`},
		seedDoc{id: "o2", source: `{"address.city":"Oakland","menu":{"dish":"taco","price":3},"stops":["37.3382,-121.8863","9q9p3"]}`},
		seedDoc{id: "o3", source: `{"address":[{"city":"San Jose"},{"city":"Oakland"}],"stops":[{"lat":37.3382,"lon":-121.8863}]}`},
	)
	cases := []struct {
		query string
		want  []string
	}{
		{`{"term":{"address.city":"Oakland"}}`, []string{"o2", "o3"}},
		{`{"term":{"menu.dish":"pasta"}}`, []string{"o1"}},
		{`{"range":{"menu.price":{"gte":11}}}`, []string{"o1"}},
		{`{"term":{"menu.price":3}}`, []string{"o2"}},
		{`{"exists":{"field":"menu"}}`, []string{"o1", "o2"}},
		{`{"geo_distance":{"distance":"15mi","stops":{"lat":37.7749,"lon":-122.4194}}}`, []string{"o1", "o2"}},
		{`{"geo_distance":{"distance":"1km","stops":{"lat":37.3382,"lon":-121.8863}}}`, []string{"o1", "o2", "o3"}},
	}
	for _, tc := range cases {
		out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"query":`+tc.query+`}`)
		got := hitIDs(out)
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("query %s = %v, want %v", tc.query, got, tc.want)
		}
	}
}

func TestQueryDateTermIsTheWholeDay(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "dates", `{"settings":{"number_of_replicas":0},"mappings":{"properties":{"opened":{"type":"date"}}}}`,
		seedDoc{id: "morning", source: `{"opened":"2020-05-01T08:00:00Z"}`},
		seedDoc{id: "evening", source: `{"opened":"2020-05-01T23:59:59.999Z"}`},
		seedDoc{id: "next", source: `{"opened":1588377600000}`}, // 2020-05-02T00:00:00Z
	)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{`{"term":{"opened":"2020-05-01"}}`, []string{"evening", "morning"}},
		{`{"terms":{"opened":["2020-05-02","2020-05-01T08:00:00Z"]}}`, []string{"morning", "next"}},
		{`{"range":{"opened":{"lt":"2020-05-02"}}}`, []string{"evening", "morning"}},
		{`{"range":{"opened":{"gte":1588377600000}}}`, []string{"next"}},
	} {
		got := hitIDs(tg.mustDo(200, "POST", "/"+name+"/_search", `{"query":`+tc.query+`}`))
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("query %s = %v, want %v", tc.query, got, tc.want)
		}
	}
}

func TestNotEmulatedQueryTermCaseInsensitive(t *testing.T) {
	tg := newTarget(t)
	tg.needFake() // the server implements case_insensitive
	name := seedIndex(tg, "ci", `{"settings":{"number_of_replicas":0}}`, seedDoc{id: "1", source: `{"a":"b"}`})
	status, _ := tg.do("POST", "/"+name+"/_search", `{"query":{"term":{"a.keyword":{"value":"B","case_insensitive":true}}}}`)
	if status != 501 {
		t.Errorf("case_insensitive term = %d, want 501", status)
	}
}

// TestQueryBoostNotValidated pins a known difference: the emulator reads
// a boost it can parse and ignores one it cannot, where the server fails
// each query type in its own way (number_format_exception from a term's
// boost "z", "[match_all] failed to parse field [boost]", …).
func TestQueryBoostNotValidated(t *testing.T) {
	tg := newTarget(t)
	tg.emulatorOnly("a real node rejects a boost that is not a number")
	name := seedIndex(tg, "boost", queryMapping, queryDocs...)
	for _, q := range []string{`{"term":{"geo_cell":{"value":"c1","boost":"z"}}}`, `{"match_all":{"boost":"z"}}`} {
		tg.mustDo(200, "POST", "/"+name+"/_search", `{"query":`+q+`}`)
	}
}

// A _geo_distance sort orders by the arc distance from a point, in the
// unit asked for; a document without a point is infinitely far.
func TestGeoDistanceSort(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "geosort", queryMapping, queryDocs...)
	out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"size":10,"_source":false,"query":{"term":{"relation":"restaurant"}},
		"sort":[{"_geo_distance":{"location":{"lat":37.7749,"lon":-122.4194},"order":"asc","unit":"km"}}]}`)
	got := hitIDs(out)
	want := []string{"restaurant:1", "restaurant:2", "restaurant:4", "restaurant:5", "restaurant:3"}
	if !slices.Equal(got, want) {
		t.Errorf("nearest first = %v, want %v", got, want)
	}
	hits, _ := dig(out, "hits", "hits").([]any)
	if len(hits) == len(want) {
		if d := str(dig(hits[0], "sort", 0)); d != "0.0" {
			t.Errorf("distance of the point itself = %s km, want 0.0", d)
		}
		d, _ := strconv.ParseFloat(str(dig(hits[4], "sort", 0)), 64)
		if d < 67 || d > 69 {
			t.Errorf("San Jose from San Francisco = %v km, want about 68", d)
		}
	}
	out = tg.mustDo(200, "POST", "/"+name+"/_search", `{"size":10,"_source":false,"query":{"match_all":{}},
		"sort":[{"_geo_distance":{"location":"37.3382,-121.8863","order":"desc"}}]}`)
	// Without a location a document is infinitely far: first, descending.
	if got := hitIDs(out); len(got) != 8 || !strings.HasPrefix(got[0], "dish:") || !strings.HasPrefix(got[2], "dish:") || got[3] != "restaurant:5" || got[7] != "restaurant:3" {
		t.Errorf("farthest first = %v, want the dishes (no location), then restaurant:5 ... restaurant:3", got)
	}
}
