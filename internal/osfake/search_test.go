package osfake

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
)

func TestSearchAndCountDecodeInTheClient(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "client", fmt.Sprintf(cellMapping, 2), cellDocs(20, 4)...)
	ctx := context.Background()
	resp, err := tg.client.Search(ctx, &opensearchapi.SearchReq{Indices: []string{name},
		Body: strings.NewReader(`{"query":{"term":{"geo_cell":"cell-01"}},"sort":[{"doc_id":"desc"}],"size":2}`)})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Hits.Total.Value != 5 || resp.Hits.Total.Relation != "eq" || len(resp.Hits.Hits) != 2 || resp.Shards.Total != 2 {
		t.Fatalf("Search = total %+v, %d hits, shards %+v; want 5 eq, 2 hits, 2 shards", resp.Hits.Total, len(resp.Hits.Hits), resp.Shards)
	}
	if h := resp.Hits.Hits[0]; h.ID != "r00017" || h.Index != name || len(h.Sort) != 1 || h.Sort[0] != "r00017" {
		t.Errorf("first hit = %+v, want r00017 sorted by doc_id", h)
	}
	var src map[string]any
	if err := json.Unmarshal(resp.Hits.Hits[0].Source, &src); err != nil || src["geo_cell"] != "cell-01" {
		t.Errorf("first hit _source = %s, %v", resp.Hits.Hits[0].Source, err)
	}
	count, err := tg.client.Indices.Count(ctx, &opensearchapi.IndicesCountReq{Indices: []string{name},
		Body: strings.NewReader(`{"query":{"term":{"open":true}}}`)})
	if err != nil {
		t.Fatal(err)
	}
	if count.Count != 10 || count.Shards.Total != 2 || count.Shards.Successful != 2 {
		t.Errorf("Count = %d, shards %+v; want 10 over 2 shards", count.Count, count.Shards)
	}
	status, out := tg.do("POST", "/"+name+"/_count", `{"size":1}`)
	if status != 400 || str(dig(out, "error", "type")) != "parsing_exception" || str(dig(out, "error", "reason")) != "request does not support [size]" {
		t.Errorf("count with size = %d %v, want 400 parsing_exception", status, out)
	}
}

func TestSearchIndexExpressions(t *testing.T) {
	tg := newTarget(t)
	a := seedIndex(tg, "expr-a", fmt.Sprintf(cellMapping, 1), cellDocs(3, 3)...)
	b := seedIndex(tg, "expr-b", fmt.Sprintf(cellMapping, 2), cellDocs(5, 3)...)
	cases := []struct {
		path          string
		status, count int
		shards        int
	}{
		{"/" + a + "/_count", 200, 3, 1},
		{"/" + a + "," + b + "/_count", 200, 8, 3},
		{"/" + tg.name("expr-*") + "/_count", 200, 8, 3},
		{"/" + tg.name("nomatch-*") + "/_count", 200, 0, 0},
		{"/" + tg.name("missing") + "/_count", 404, 0, 0},
		{"/" + a + "," + tg.name("missing") + "/_count?ignore_unavailable=true", 200, 3, 1},
	}
	for _, tc := range cases {
		status, out := tg.do("GET", tc.path, "")
		if status != tc.status {
			t.Errorf("GET %s = %d %v, want %d", tc.path, status, out, tc.status)
			continue
		}
		if status == 404 {
			if str(dig(out, "error", "type")) != "index_not_found_exception" {
				t.Errorf("GET %s = %v, want index_not_found_exception", tc.path, out)
			}
			continue
		}
		if str(out["count"]) != itoa(tc.count) || str(dig(out, "_shards", "total")) != itoa(tc.shards) {
			t.Errorf("GET %s = %v, want count %d over %d shards", tc.path, out, tc.count, tc.shards)
		}
	}
}

// shardOf asks the target which shard a routing value maps to.
func shardOf(tg *target, index, routing string) int {
	tg.t.Helper()
	out := tg.mustDo(200, "GET", "/"+index+"/_search_shards?routing="+routing, "")
	shards, _ := out["shards"].([]any)
	if len(shards) != 1 {
		tg.t.Fatalf("_search_shards?routing=%s = %v, want one shard", routing, out)
	}
	var n int
	fmt.Sscan(str(dig(shards[0], 0, "shard")), &n)
	return n
}

func TestRoutingAndPreference(t *testing.T) {
	tg := newTarget(t)
	routings := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	var docs []seedDoc
	for _, r := range routings {
		for i := range 10 {
			docs = append(docs, seedDoc{id: fmt.Sprintf("%s-%d", r, i), routing: r, source: `{"geo_cell":"x"}`})
		}
	}
	name := seedIndex(tg, "routing", `{"settings":{"number_of_shards":6,"number_of_replicas":0}}`, docs...)
	shardOfR := map[string]int{}
	for _, r := range routings {
		shardOfR[r] = shardOf(tg, name, r)
	}
	docsOn := func(shards ...int) int {
		n := 0
		for _, r := range routings {
			if slices.Contains(shards, shardOfR[r]) {
				n += 10
			}
		}
		return n
	}
	sa, sb := shardOfR["a"], shardOfR["b"]
	other := (sa + 1) % 6
	distinctAB := 2
	if sa == sb {
		distinctAB = 1
	}
	cases := []struct {
		name          string
		params        string
		shards, count int
	}{
		{"all shards", "", 6, 80},
		{"one routing value", "routing=a", 1, docsOn(sa)},
		{"two routing values", "routing=a,b", distinctAB, docsOn(sa, sb)},
		{"preference shards", fmt.Sprintf("preference=_shards:%d", sa), 1, docsOn(sa)},
		{"preference with a second preference", "preference=_shards:0,1|_local", 2, docsOn(0, 1)},
		{"routing within preference", fmt.Sprintf("routing=a&preference=_shards:%d", sa), 1, docsOn(sa)},
		{"routing outside preference", fmt.Sprintf("routing=a&preference=_shards:%d", other), 0, 0},
		{"routing values cut by preference", fmt.Sprintf("routing=a,b&preference=_shards:%d", sa), 1, docsOn(sa)},
		{"custom preference string", "preference=session-42", 6, 80},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := tg.mustDo(200, "GET", "/"+name+"/_count?"+tc.params, "")
			if str(out["count"]) != itoa(tc.count) || str(dig(out, "_shards", "total")) != itoa(tc.shards) ||
				str(dig(out, "_shards", "successful")) != itoa(tc.shards) || str(dig(out, "_shards", "skipped")) != "0" {
				t.Errorf("_count?%s = %v, want %d docs over %d shards", tc.params, out, tc.count, tc.shards)
			}
			out = tg.mustDo(200, "POST", "/"+name+"/_search?size=0&"+tc.params, "")
			if str(dig(out, "hits", "total", "value")) != itoa(tc.count) || str(dig(out, "_shards", "total")) != itoa(tc.shards) {
				t.Errorf("_search?%s = %v, want %d hits over %d shards", tc.params, out, tc.count, tc.shards)
			}
		})
	}
	status, out := tg.do("GET", "/"+name+"/_count?preference=_nonsense", "")
	if status != 400 || !strings.Contains(str(dig(out, "error", "reason")), "no Preference for [_nonsense]") {
		t.Errorf("_count?preference=_nonsense = %d %v, want 400 no Preference", status, out)
	}
}

func TestSearchShardsMatchesTheRoutingHash(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("ss")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":18,"number_of_replicas":0}}`)
	rns := defaultRoutingNumShards(18)
	for _, r := range []string{"restaurant:1", "9q8yy", "nova", "0"} {
		resp, err := tg.client.SearchShards(context.Background(), &opensearchapi.SearchShardsReq{Indices: []string{name},
			Params: opensearchapi.SearchShardsParams{Routing: r}})
		if err != nil {
			t.Fatal(err)
		}
		want := shardhash.ForRouting(r, rns, 18)
		if len(resp.Shards) != 1 || len(resp.Shards[0]) == 0 {
			t.Fatalf("SearchShards(routing=%s) = %+v, want one shard", r, resp.Shards)
		}
		c := resp.Shards[0][0]
		if c.Shard != want || c.Index != name || !c.Primary || c.State != "STARTED" {
			t.Errorf("SearchShards(routing=%s) = %+v, want primary of shard %d STARTED", r, c, want)
		}
		if _, ok := resp.Nodes[c.Node]; !ok {
			t.Errorf("SearchShards(routing=%s): node %q not in nodes %v", r, c.Node, resp.Nodes)
		}
	}
	out := tg.mustDo(200, "GET", "/"+name+"/_search_shards?preference=_shards:3,5", "")
	if shards, _ := out["shards"].([]any); len(shards) != 2 || str(dig(shards[0], 0, "shard")) != "3" || str(dig(shards[1], 0, "shard")) != "5" {
		t.Errorf("_search_shards?preference=_shards:3,5 = %v", out["shards"])
	}
}

// countOf is the _count of an index expression.
func countOf(tg *target, expr string) string {
	tg.t.Helper()
	return str(tg.mustDo(200, "GET", "/"+expr+"/_count", "")["count"])
}

// With periodic refresh off, writes and deletes sent without refresh stay
// invisible to search until an explicit _refresh.
func TestRefreshVisibility(t *testing.T) {
	tg := newTarget(t)
	manual := tg.name("manual")
	tg.mustDo(200, "PUT", "/"+manual, `{"settings":{"number_of_shards":2,"refresh_interval":"-1"}}`)
	seed(tg, manual, "", cellDocs(10, 3)...)
	if got := countOf(tg, manual); got != "0" {
		t.Errorf("count of a bulk without refresh = %s, want 0", got)
	}
	if tg.clock != nil {
		tg.clock.Advance(time.Hour)
		if got := countOf(tg, manual); got != "0" {
			t.Errorf("count with refresh_interval -1 after an hour = %s, want 0", got)
		}
	}
	tg.mustDo(200, "POST", "/"+manual+"/_refresh", "")
	if got := countOf(tg, manual); got != "10" {
		t.Errorf("count after _refresh = %s, want 10", got)
	}
	// A delete is invisible until the next refresh, too.
	unseed(tg, manual, "", "", "r00000", "r00001")
	if got := countOf(tg, manual); got != "10" {
		t.Errorf("count after unrefreshed deletes = %s, want 10", got)
	}
	tg.mustDo(200, "POST", "/"+manual+"/_refresh", "")
	if got := countOf(tg, manual); got != "8" {
		t.Errorf("count after deletes and _refresh = %s, want 8", got)
	}
}

// Periodic refresh makes writes visible once index.refresh_interval has
// passed on the emulator's clock.
func TestPeriodicRefreshVisibility(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	periodic := tg.name("periodic")
	tg.mustDo(200, "PUT", "/"+periodic, `{"settings":{"number_of_shards":2,"refresh_interval":"1s"}}`)
	seed(tg, periodic, "", cellDocs(10, 3)...)
	if got := countOf(tg, periodic); got != "0" {
		t.Errorf("count before refresh = %s, want 0", got)
	}
	tg.clock.Advance(999 * time.Millisecond)
	if got := countOf(tg, periodic); got != "0" {
		t.Errorf("count 999ms after write = %s, want 0", got)
	}
	tg.clock.Advance(time.Millisecond)
	if got := countOf(tg, periodic); got != "10" {
		t.Errorf("count once refresh_interval elapsed = %s, want 10", got)
	}
}

func TestAliasFilterAndSearchRouting(t *testing.T) {
	tg := newTarget(t)
	var docs []seedDoc
	for i := range 40 {
		docs = append(docs, seedDoc{id: fmt.Sprintf("d%02d", i), routing: fmt.Sprintf("r%d", i%4),
			source: fmt.Sprintf(`{"geo_cell":"cell-%d"}`, i%4)})
	}
	name := seedIndex(tg, "aliased", `{"settings":{"number_of_shards":5,"number_of_replicas":0},
		"mappings":{"properties":{"geo_cell":{"type":"keyword"}}}}`, docs...)
	filtered, routed := tg.name("only-cell-1"), tg.name("routed")
	tg.mustDo(200, "POST", "/_aliases", fmt.Sprintf(`{"actions":[
		{"add":{"index":%q,"alias":%q,"filter":{"term":{"geo_cell":"cell-1"}}}},
		{"add":{"index":%q,"alias":%q,"search_routing":"r2"}}]}`, name, filtered, name, routed))
	onR2 := shardOf(tg, name, "r2")
	cases := []struct {
		name, path    string
		count, shards int
	}{
		{"filtered alias", "/" + filtered + "/_count", 10, 5},
		{"index named too: no filter", "/" + name + "," + filtered + "/_count", 40, 5},
		{"wildcard on the alias", "/" + tg.name("only-*") + "/_count", 10, 5},
		{"routing alias", "/" + routed + "/_count?preference=_shards:" + itoa(onR2), -1, 1},
		{"routing alias shards", "/" + routed + "/_count", -1, 1},
		{"routing alias and routing param", "/" + routed + "/_count?routing=r2,r3", -1, 1},
	}
	for _, tc := range cases {
		out := tg.mustDo(200, "GET", tc.path, "")
		if tc.count >= 0 && str(out["count"]) != itoa(tc.count) || str(dig(out, "_shards", "total")) != itoa(tc.shards) {
			t.Errorf("%s: GET %s = %v, want count %d over %d shards", tc.name, tc.path, out, tc.count, tc.shards)
		}
	}
	out := tg.mustDo(200, "POST", "/"+filtered+"/_search", `{"size":100,"query":{"term":{"geo_cell":"cell-2"}}}`)
	if n := len(hitIDs(out)); n != 0 {
		t.Errorf("search through the filtered alias for another cell = %d hits, want 0", n)
	}
	// A point in time opened through an alias keeps its filter and its
	// search routing.
	for _, tc := range []struct {
		alias         string
		count, shards int
	}{{filtered, 10, 5}, {routed, -1, 1}} {
		resp, err := tg.client.PointInTime.Create(context.Background(), opensearchapi.PointInTimeCreateReq{
			Indices: []string{tc.alias}, Params: opensearchapi.PointInTimeCreateParams{KeepAlive: time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		out := tg.mustDo(200, "POST", "/_search", `{"size":0,"pit":{"id":"`+resp.PitID+`"}}`)
		if resp.Shards.Total != tc.shards || tc.count >= 0 && str(dig(out, "hits", "total", "value")) != itoa(tc.count) {
			t.Errorf("PIT through %s: %d shards, %v hits; want %d shards, %d hits", tc.alias, resp.Shards.Total, dig(out, "hits", "total"), tc.shards, tc.count)
		}
		tg.client.PointInTime.Delete(context.Background(), opensearchapi.PointInTimeDeleteReq{PitID: []string{resp.PitID}})
	}
}

func TestSortAndSearchAfterVisitEveryDocOnce(t *testing.T) {
	tg := newTarget(t)
	const n = 1000
	name := seedIndex(tg, "paging", fmt.Sprintf(cellMapping, 4), cellDocs(n, 37)...)
	cases := []struct {
		name string
		sort string
		less func(a, b []any) bool // the order the sort values must follow
	}{
		{"cell then id", `[{"geo_cell":"asc"},{"doc_id":"asc"}]`, func(a, b []any) bool {
			return str(a[0]) < str(b[0]) || str(a[0]) == str(b[0]) && str(a[1]) < str(b[1])
		}},
		{"price desc then id", `[{"price_cents":{"order":"desc"}},"doc_id"]`, func(a, b []any) bool {
			var x, y int
			fmt.Sscan(str(a[0]), &x)
			fmt.Sscan(str(b[0]), &y)
			return x > y || x == y && str(a[1]) < str(b[1])
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]int{}
			var after string
			var last []any
			for page := 0; page < 100; page++ {
				body := `{"size":37,"sort":` + tc.sort + after + `}`
				out := tg.mustDo(200, "POST", "/"+name+"/_search", body)
				hits, _ := dig(out, "hits", "hits").([]any)
				if len(hits) == 0 {
					break
				}
				if dig(out, "hits", "max_score") != nil || dig(hits[0], "_score") != nil {
					t.Fatalf("sorted search: max_score %v, _score %v, want null", dig(out, "hits", "max_score"), dig(hits[0], "_score"))
				}
				for _, h := range hits {
					seen[str(dig(h, "_id"))]++
					sv, _ := dig(h, "sort").([]any)
					if last != nil && !tc.less(last, sv) {
						t.Fatalf("sort values %v then %v: out of order", last, sv)
					}
					last = sv
				}
				b, _ := json.Marshal(last)
				after = `,"search_after":` + string(b)
			}
			if len(seen) != n {
				t.Errorf("paging visited %d distinct docs, want %d", len(seen), n)
			}
			for id, c := range seen {
				if c != 1 {
					t.Errorf("doc %s visited %d times", id, c)
				}
			}
		})
	}
}

func TestSortMissingValues(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "missing", `{"settings":{"number_of_shards":2,"number_of_replicas":0},
		"mappings":{"properties":{"doc_id":{"type":"keyword"},"price_cents":{"type":"long"},"label":{"type":"keyword"},"rating":{"type":"double"}}}}`,
		seedDoc{id: "a", source: `{"doc_id":"a","price_cents":300,"label":"z","rating":4.5}`},
		seedDoc{id: "b", source: `{"doc_id":"b"}`},
		seedDoc{id: "c", source: `{"doc_id":"c","price_cents":[100,500],"label":["x","y"],"rating":[3.9,4.8]}`},
	)
	cases := []struct {
		sort     string
		ids      string
		firstKey string // the sort value of the first hit
		lastKey  string // and of the last
	}{
		{`[{"price_cents":"asc"}]`, "c,a,b", "100", "9223372036854775807"},
		{`[{"price_cents":"desc"}]`, "c,a,b", "500", "-9223372036854775808"},
		{`[{"price_cents":{"order":"asc","missing":"_first"}}]`, "b,c,a", "-9223372036854775808", "300"},
		{`[{"price_cents":{"order":"asc","missing":200}}]`, "c,b,a", "100", "300"},
		{`[{"price_cents":{"order":"asc","mode":"max"}}]`, "a,c,b", "300", "9223372036854775807"},
		{`[{"label":"asc"}]`, "c,a,b", "x", ""},
		{`[{"label":{"order":"desc","missing":"_first"}}]`, "b,a,c", "", "y"},
		{`[{"nope":{"unmapped_type":"long"}},{"doc_id":"desc"}]`, "c,b,a", "9223372036854775807", "9223372036854775807"},
		{`[{"rating":"asc"}]`, "c,a,b", "3.9", "Infinity"},
		{`[{"rating":"desc"}]`, "c,a,b", "4.8", "-Infinity"},
		{`?sort=price_cents:desc`, "c,a,b", "500", "-9223372036854775808"},
	}
	for _, tc := range cases {
		path, body := "/"+name+"/_search", `{"sort":`+tc.sort+`}`
		if strings.HasPrefix(tc.sort, "?") {
			path, body = path+tc.sort, ""
		}
		out := tg.mustDo(200, "POST", path, body)
		ids := strings.Join(hitIDs(out), ",")
		first, last := str(dig(out, "hits", "hits", 0, "sort", 0)), str(dig(out, "hits", "hits", 2, "sort", 0))
		if ids != tc.ids || first != tc.firstKey || last != tc.lastKey {
			t.Errorf("sort %s = %s with sort values %s..%s, want %s with %s..%s", tc.sort, ids, first, last, tc.ids, tc.firstKey, tc.lastKey)
		}
	}
}

func TestTrackTotalHits(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "total", fmt.Sprintf(cellMapping, 2), cellDocs(10001, 37)...)
	cases := []struct {
		params, body string
		want         string // total as JSON; "" when absent
	}{
		{"", `{"size":0}`, `{"relation":"gte","value":10000}`},
		{"", `{"size":0,"track_total_hits":true}`, `{"relation":"eq","value":10001}`},
		{"", `{"size":0,"track_total_hits":false}`, ``},
		{"", `{"size":0,"track_total_hits":50}`, `{"relation":"gte","value":50}`},
		{"", `{"size":0,"track_total_hits":20000}`, `{"relation":"eq","value":10001}`},
		{"?track_total_hits=true", `{"size":0}`, `{"relation":"eq","value":10001}`},
		{"?rest_total_hits_as_int=true", `{"size":0}`, `10001`},
		{"", `{"size":0,"query":{"term":{"geo_cell":"cell-15"}}}`, `{"relation":"eq","value":270}`},
	}
	for _, tc := range cases {
		out := tg.mustDo(200, "POST", "/"+name+"/_search"+tc.params, tc.body)
		got := ""
		if v, ok := dig(out, "hits").(map[string]any)["total"]; ok {
			got = mustJSON(v)
		}
		if got != tc.want {
			t.Errorf("search%s %s: hits.total = %s, want %s", tc.params, tc.body, got, tc.want)
		}
	}
}

func TestSourceFiltering(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "source", `{"settings":{"number_of_replicas":0}}`, seedDoc{id: "1",
		source: `{"name":"Golden Gate Pizza","address":{"city":"San Francisco","zip":"94103"},"tags":["pizza"],"rating":4.50}`})
	cases := []struct {
		params, source string
		want           string // "" for no _source
	}{
		{"", `true`, `{"name":"Golden Gate Pizza","address":{"city":"San Francisco","zip":"94103"},"tags":["pizza"],"rating":4.50}`},
		{"", `false`, ``},
		{"", `"name"`, `{"name":"Golden Gate Pizza"}`},
		{"", `["address.city","rating"]`, `{"address":{"city":"San Francisco"},"rating":4.50}`},
		{"", `{"includes":["addr*"],"excludes":["address.zip"]}`, `{"address":{"city":"San Francisco"}}`},
		{"", `{"excludes":["address","tags"]}`, `{"name":"Golden Gate Pizza","rating":4.50}`},
		{"?_source_includes=tags", `true`, `{"tags":["pizza"]}`},
		{"?_source=false", `true`, ``},
	}
	for _, tc := range cases {
		out := tg.mustDo(200, "POST", "/"+name+"/_search"+tc.params, `{"_source":`+tc.source+`}`)
		h, _ := dig(out, "hits", "hits", 0).(map[string]any)
		src, has := h["_source"]
		got := ""
		if has {
			got = mustJSON(src)
		}
		want := tc.want
		if want != "" {
			var v any
			dec := json.NewDecoder(strings.NewReader(want))
			dec.UseNumber()
			dec.Decode(&v)
			want = mustJSON(v)
		}
		if tc.source != "true" {
			// A filtered source is re-encoded, and the server respells
			// its numbers (4.50 becomes 4.5): compare them by value.
			got, want = byValue(got), byValue(want)
		}
		if got != want {
			t.Errorf("_source %s%s = %s, want %s", tc.source, tc.params, got, want)
		}
	}
}

// byValue re-encodes a JSON text with its numbers read as float64, so
// that 4.50 and 4.5 compare equal.
func byValue(text string) string {
	if text == "" {
		return ""
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return text
	}
	return mustJSON(v)
}

func TestResultWindowAndPagingValidation(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "window", fmt.Sprintf(cellMapping, 1), cellDocs(5, 2)...)
	small := seedIndex(tg, "window-small", `{"settings":{"number_of_replicas":0,"index.max_result_window":20}}`, cellDocs(5, 2)...)
	window := "Result window is too large, from + size must be less than or equal to: [%d] but was [%d]. See the scroll api"
	// Every check fails the shards, not the request: the status is the
	// shard failure's (500 for a SearchException), and a plain Java
	// exception shows as the cause of itself.
	cases := []struct {
		index, body    string
		status         int
		rootType       string
		reasonContains string
		wrapped        bool // caused_by has a caused_by of the same type
	}{
		{name, `{"size":10001}`, 400, "illegal_argument_exception", fmt.Sprintf(window, 10000, 10001), true},
		{name, `{"from":9995,"size":10}`, 400, "illegal_argument_exception", fmt.Sprintf(window, 10000, 10005), true},
		{small, `{"size":21}`, 400, "illegal_argument_exception", fmt.Sprintf(window, 20, 21), true},
		{name, `{"from":1,"sort":["doc_id"],"search_after":["r00001"]}`, 500, "search_exception",
			"`from` parameter must be set to 0 when `search_after` is used.", false},
		{name, `{"sort":["doc_id"],"search_after":["r00001",1]}`, 400, "illegal_argument_exception",
			"search_after has 2 value(s) but sort has 1.", true},
		{name, `{"slice":{"id":0,"max":2}}`, 500, "search_exception",
			"`slice` cannot be used outside of a scroll context or PIT context", false},
	}
	for _, tc := range cases {
		status, out := tg.do("POST", "/"+tc.index+"/_search", tc.body)
		if status != tc.status || str(dig(out, "error", "type")) != "search_phase_execution_exception" ||
			str(dig(out, "error", "root_cause", 0, "type")) != tc.rootType ||
			!strings.Contains(str(dig(out, "error", "root_cause", 0, "reason")), tc.reasonContains) {
			t.Errorf("search %s = %d %v, want %d search_phase_execution_exception (%s: %s)", tc.body, status, out, tc.status, tc.rootType, tc.reasonContains)
			continue
		}
		if got := str(dig(out, "error", "caused_by", "caused_by", "type")); (got == tc.rootType) != tc.wrapped {
			t.Errorf("search %s: caused_by = %v, want wrapped %v", tc.body, dig(out, "error", "caused_by"), tc.wrapped)
		}
	}
	out := tg.mustDo(200, "POST", "/"+small+"/_search", `{"size":20,"from":0}`)
	if n := len(hitIDs(out)); n != 5 {
		t.Errorf("search at the window = %d hits, want 5", n)
	}
}

// search_after is read twice: its shape when the body is parsed (a
// whole-request error), its values by every shard against its sort
// types. With a field as the primary sort and several shards the server
// checks the values in its can_match phase, before the query phase.
func TestSearchAfterValidation(t *testing.T) {
	tg := newTarget(t)
	one := seedIndex(tg, "after-one", fmt.Sprintf(cellMapping, 1), cellDocs(5, 2)...)
	three := seedIndex(tg, "after-three", queryMapping, queryDocs...)
	whole := []struct{ body, want string }{
		{`{"search_after":[]}`, "400 illegal_argument_exception: Values must contains at least one value."},
		{`{"search_after":"x"}`, "400 parsing_exception: Unknown key for a VALUE_STRING in [search_after]."},
		{`{"search_after":[{}]}`, "400 parsing_exception: Expected [VALUE_STRING] or [VALUE_NUMBER] or [VALUE_BOOLEAN] or [VALUE_NULL] but found [START_OBJECT] inside search_after."},
	}
	for _, tc := range whole {
		status, out := tg.do("POST", "/"+one+"/_search", tc.body)
		if got := fmt.Sprintf("%d %s", status, firstRootCause(out)); got != tc.want || str(dig(out, "error", "type")) != str(dig(out, "error", "root_cause", 0, "type")) {
			t.Errorf("search %s = %s (%v), want %s as the top-level error", tc.body, got, out, tc.want)
		}
	}
	shard := []struct {
		index, body, phase, root, cause string
	}{
		{one, `{"search_after":[1]}`, "query", "illegal_argument_exception: Sort must contain at least one field.", ""},
		{three, `{"search_after":[1]}`, "query", "illegal_argument_exception: Sort must contain at least one field.", ""},
		{three, `{"sort":["price_cents"],"search_after":[1,2]}`, "can_match", "illegal_argument_exception: search_after has 2 value(s) but sort has 1.", ""},
		{three, `{"sort":["price_cents"],"search_after":["abc"]}`, "can_match", "illegal_argument_exception: Failed to parse search_after value for field [price_cents].",
			`number_format_exception: For input string: "abc"`},
		{three, `{"sort":["open"],"search_after":[true]}`, "can_match", "illegal_argument_exception: Failed to parse search_after value for field [open].",
			`number_format_exception: For input string: "true"`},
		{three, `{"sort":["_doc"],"search_after":["x"]}`, "can_match", "illegal_argument_exception: Failed to parse search_after value for field [null].",
			`number_format_exception: For input string: "x"`},
		{three, `{"sort":["_score","price_cents"],"search_after":[1,"x"]}`, "query", "illegal_argument_exception: Failed to parse search_after value for field [price_cents].",
			`number_format_exception: For input string: "x"`},
		{three, `{"sort":["opened"],"search_after":["abc"]}`, "can_match",
			"parse_exception: failed to parse date field [abc] with format [strict_date_optional_time||epoch_millis]: [failed to parse date field [abc] with format [strict_date_optional_time||epoch_millis]]",
			"illegal_argument_exception: failed to parse date field [abc] with format [strict_date_optional_time||epoch_millis]"},
		{three, `{"from":2,"sort":["price_cents"],"search_after":[1]}`, "query", "search_exception: `from` parameter must be set to 0 when `search_after` is used.", ""},
		// A null value for a numeric sort passes the checks and trips the
		// collector, with HTTP 500.
		{three, `{"sort":["price_cents"],"search_after":[null]}`, "query", `null_pointer_exception: Cannot invoke "java.lang.Long.longValue()" because "value" is null`, ""},
		{three, `{"sort":["rating"],"search_after":[null]}`, "query", `null_pointer_exception: Cannot invoke "java.lang.Double.doubleValue()" because "value" is null`, ""},
		{three, `{"sort":["open"],"search_after":[null]}`, "query", `null_pointer_exception: Cannot invoke "java.lang.Integer.intValue()" because "value" is null`, ""},
		{three, `{"sort":["_score","geo_cell"],"search_after":[null,"a"]}`, "query", `null_pointer_exception: Cannot invoke "java.lang.Float.floatValue()" because "value" is null`, ""},
	}
	for _, tc := range shard {
		status, out := tg.do("POST", "/"+tc.index+"/_search", tc.body)
		if status >= 200 && status < 300 || str(dig(out, "error", "phase")) != tc.phase || firstRootCause(out) != tc.root {
			t.Errorf("search %s on %s = %d %v, want phase %s, root cause %s", tc.body, tc.index, status, out, tc.phase, tc.root)
			continue
		}
		reason := dig(out, "error", "failed_shards", 0, "reason")
		if got := str(dig(reason, "caused_by", "type")) + ": " + str(dig(reason, "caused_by", "reason")); tc.cause != "" && got != tc.cause {
			t.Errorf("search %s: shard failure %v, want caused by %s", tc.body, reason, tc.cause)
		}
	}
	// Values that do convert.
	for _, body := range []string{
		`{"size":0,"sort":["price_cents"],"search_after":[null]}`, `{"sort":["geo_cell"],"search_after":[null]}`,
		`{"sort":["price_cents"],"search_after":["1.5"]}`, `{"sort":["geo_cell"],"search_after":[true]}`, `{"sort":["opened"],"search_after":["2020-01-01"]}`,
		`{"sort":["open"],"search_after":["1"]}`,
	} {
		tg.mustDo(200, "POST", "/"+three+"/_search", body)
	}
	// A date sort pages after a date given as text.
	out := tg.mustDo(200, "POST", "/"+three+"/_search", `{"sort":["opened"],"search_after":["2020-01-01"],"_source":false}`)
	if got := strings.Join(hitIDs(out), ","); !strings.HasPrefix(got, "restaurant:1,restaurant:2") {
		t.Errorf("search after 2020-01-01 by opened = %s, want restaurant:1, restaurant:2 first", got)
	}
}

func TestAggregationsOverManyCells(t *testing.T) {
	tg := newTarget(t)
	const n, cells = 1000, 37
	name := seedIndex(tg, "aggs", fmt.Sprintf(cellMapping, 3), cellDocs(n, cells)...)
	wantCount := func(cell int) int {
		if cell == 0 {
			return 28 // 1000 = 37·27 + 1: cell-00 has the extra doc
		}
		return 27
	}

	t.Run("terms", func(t *testing.T) {
		out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"size":0,"aggs":{"cells":{"terms":{"field":"geo_cell","size":50}}}}`)
		if hits, _ := dig(out, "hits", "hits").([]any); len(hits) != 0 || str(dig(out, "hits", "total", "value")) != "1000" {
			t.Errorf("size 0 search: hits %v, total %v; want none, 1000", hits, dig(out, "hits", "total"))
		}
		agg := dig(out, "aggregations", "cells")
		buckets, _ := dig(agg, "buckets").([]any)
		if len(buckets) != cells || str(dig(agg, "sum_other_doc_count")) != "0" || str(dig(agg, "doc_count_error_upper_bound")) != "0" {
			t.Fatalf("terms = %d buckets, %v; want %d, no others", len(buckets), agg, cells)
		}
		// doc_count descending, then key ascending.
		for i, b := range buckets {
			if key, count := str(dig(b, "key")), str(dig(b, "doc_count")); key != fmt.Sprintf("cell-%02d", i) || count != itoa(wantCount(i)) {
				t.Errorf("bucket %d = %s:%s, want cell-%02d:%d", i, key, count, i, wantCount(i))
			}
		}
		out = tg.mustDo(200, "POST", "/"+name+"/_search", `{"size":0,"aggs":{"cells":{"terms":{"field":"geo_cell","shard_size":100}}}}`)
		agg = dig(out, "aggregations", "cells")
		if buckets, _ := dig(agg, "buckets").([]any); len(buckets) != 10 || str(dig(agg, "sum_other_doc_count")) != itoa(n-28-9*27) {
			t.Errorf("terms size 10 = %d buckets, sum_other_doc_count %v; want 10, %d", len(buckets), dig(agg, "sum_other_doc_count"), n-28-9*27)
		}
		out = tg.mustDo(200, "POST", "/"+name+"/_search", `{"size":0,"query":{"term":{"open":true}},
			"aggs":{"cells":{"terms":{"field":"geo_cell","size":2,"order":{"_key":"desc"}}}}}`)
		if got := mustJSON(dig(out, "aggregations", "cells", "buckets")); got != `[{"doc_count":14,"key":"cell-36"},{"doc_count":13,"key":"cell-35"}]` {
			t.Errorf("terms by key desc over open = %s", got)
		}
	})

	t.Run("composite paging", func(t *testing.T) {
		seen := map[string]int{}
		after, prev := "", ""
		pages := 0
		for ; pages < 20; pages++ {
			out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"size":0,"aggs":{"c":{"composite":{"size":5,
				"sources":[{"cell":{"terms":{"field":"geo_cell"}}}]`+after+`}}}}`)
			agg := dig(out, "aggregations", "c")
			buckets, _ := dig(agg, "buckets").([]any)
			if len(buckets) == 0 {
				if _, has := agg.(map[string]any)["after_key"]; has {
					t.Errorf("empty last page has after_key: %v", agg)
				}
				break
			}
			for _, b := range buckets {
				key := str(dig(b, "key", "cell"))
				if key <= prev {
					t.Fatalf("composite keys out of order: %s after %s", key, prev)
				}
				prev = key
				var cell int
				fmt.Sscanf(key, "cell-%d", &cell)
				if got := str(dig(b, "doc_count")); got != itoa(wantCount(cell)) {
					t.Errorf("composite %s doc_count = %s, want %d", key, got, wantCount(cell))
				}
				seen[key]++
			}
			if ak := str(dig(agg, "after_key", "cell")); ak != prev {
				t.Errorf("after_key = %s, want the last bucket %s", ak, prev)
			}
			after = `,"after":` + mustJSON(dig(agg, "after_key"))
		}
		if len(seen) != cells || pages != 8 {
			t.Errorf("composite paging saw %d keys in %d pages, want %d in 8", len(seen), pages, cells)
		}
		for k, c := range seen {
			if c != 1 {
				t.Errorf("key %s seen %d times", k, c)
			}
		}
	})

	t.Run("composite two sources", func(t *testing.T) {
		total, combos := 0, map[string]bool{}
		after := ""
		for range 20 {
			out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"size":0,"aggs":{"c":{"composite":{"size":7,
				"sources":[{"cell":{"terms":{"field":"geo_cell"}}},{"open":{"terms":{"field":"open","order":"desc"}}}]`+after+`}}}}`)
			agg := dig(out, "aggregations", "c")
			buckets, _ := dig(agg, "buckets").([]any)
			if len(buckets) == 0 {
				break
			}
			for _, b := range buckets {
				k := str(dig(b, "key", "cell")) + "/" + str(dig(b, "key", "open"))
				if combos[k] {
					t.Errorf("combination %s seen twice", k)
				}
				combos[k] = true
				var c int
				fmt.Sscan(str(dig(b, "doc_count")), &c)
				total += c
			}
			if first := str(dig(buckets, 0, "key", "open")); len(combos) <= 7 && first != "true" {
				t.Errorf("open order desc: first bucket open = %s, want true", first)
			}
			after = `,"after":` + mustJSON(dig(agg, "after_key"))
		}
		if len(combos) != 2*cells || total != n {
			t.Errorf("composite (cell, open) = %d combinations over %d docs, want %d over %d", len(combos), total, 2*cells, n)
		}
	})

	t.Run("errors", func(t *testing.T) {
		status, out := tg.do("POST", "/"+name+"/_search", `{"aggs":{"x":{"frobnicate":{"field":"geo_cell"}}}}`)
		if status != 400 || str(dig(out, "error", "type")) != "parsing_exception" {
			t.Errorf("unknown aggregation = %d %v, want 400 parsing_exception", status, out)
		}
		status, out = tg.do("POST", "/"+name+"/_search", `{"aggs":{"x":{"terms":{"field":"geo_cell"},"aggs":{"y":{"composite":{"sources":[{"a":{"terms":{"field":"doc_id"}}}]}}}}}}`)
		if status != 400 {
			t.Errorf("composite under terms = %d %v, want 400", status, out)
		}
	})
}

func TestSearchLatencyFault(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	name := seedIndex(tg, "slow", fmt.Sprintf(cellMapping, 4), cellDocs(40, 5)...)
	const delay = 60 * time.Millisecond
	if err := tg.fake.SetFaults(Faults{ShardLatency: []ShardLatency{{Index: name, Shard: 2, Delay: Duration(delay)}}}); err != nil {
		t.Fatal(err)
	}
	// The emulator reports the injected delay as took.
	out := tg.mustDo(200, "GET", "/"+name+"/_search?size=0", "")
	if str(out["took"]) != itoa(int(delay.Milliseconds())) || tg.fake.FaultStats().DelayedRequests != 1 {
		t.Errorf("search over a slow shard reported took %v, %d requests delayed; want %v and 1", out["took"], tg.fake.FaultStats().DelayedRequests, delay)
	}
	out = tg.mustDo(200, "GET", "/"+name+"/_count?preference=_shards:0,1,3", "")
	if str(out["count"]) == "" || str(dig(out, "_shards", "total")) != "3" || tg.fake.FaultStats().DelayedRequests != 1 {
		t.Errorf("count avoiding the slow shard = %v, %d requests delayed; want 3 shards and still 1", out, tg.fake.FaultStats().DelayedRequests)
	}
}

// BenchmarkCountWithRouting measures a routed _count over a 100,000-doc
// index: the emulator's hot read path, without the network.
func BenchmarkCountWithRouting(b *testing.B) {
	s := New(Options{})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("PUT", "/bench", strings.NewReader(`{"settings":{"number_of_shards":18},
		"mappings":{"properties":{"geo_cell":{"type":"keyword"}}}}`)))
	if rec.Code != 200 {
		b.Fatal(rec.Body.String())
	}
	docs := make([]seedDoc, 100_000)
	for i := range docs {
		docs[i] = seedDoc{id: fmt.Sprintf("d%06d", i), routing: fmt.Sprintf("cell-%d", i%500), source: fmt.Sprintf(`{"geo_cell":"cell-%d"}`, i%500)}
	}
	body, err := bulkBody(docs)
	if err != nil {
		b.Fatal(err)
	}
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("POST", "/bench/_bulk?refresh=true", strings.NewReader(body)))
	if rec.Code != 200 || strings.Contains(rec.Body.String(), `"errors":true`) {
		b.Fatalf("seeding _bulk = %d %.300s", rec.Code, rec.Body.String())
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/bench/_count?routing=cell-%d", i%500), nil)
		s.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatal(rec.Body.String())
		}
	}
}

// floatOf reads a decoded JSON number as a float, whatever its spelling
// (the server writes scores as 1.0, the emulator as 1); anything else is
// NaN.
func floatOf(v any) float64 {
	n, ok := v.(json.Number)
	if !ok {
		return math.NaN()
	}
	f, err := n.Float64()
	if err != nil {
		return math.NaN()
	}
	return f
}

func TestHitShape(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "shape", fmt.Sprintf(cellMapping, 2),
		seedDoc{id: "dish:1", routing: "restaurant:1", source: `{"doc_id":"dish:1","geo_cell":"c1"}`})
	out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"version":true,"seq_no_primary_term":true}`)
	h, _ := dig(out, "hits", "hits", 0).(map[string]any)
	if h["_index"] != name || h["_id"] != "dish:1" || h["_routing"] != "restaurant:1" || str(h["_version"]) != "1" ||
		str(h["_primary_term"]) != "1" || h["_seq_no"] == nil || floatOf(h["_score"]) != 1 || floatOf(dig(out, "hits", "max_score")) != 1 {
		t.Errorf("hit = %v, max_score %v; want _index, _id, _routing, _version 1, _seq_no, _primary_term 1, _score 1", h, dig(out, "hits", "max_score"))
	}
	if _, has := h["sort"]; has {
		t.Errorf("unsorted hit has sort values: %v", h)
	}
	// Filters do not score.
	out = tg.mustDo(200, "POST", "/"+name+"/_search", `{"query":{"bool":{"filter":{"term":{"geo_cell":"c1"}}}}}`)
	if floatOf(dig(out, "hits", "max_score")) != 0 || floatOf(dig(out, "hits", "hits", 0, "_score")) != 0 {
		t.Errorf("filter-only search: max_score %v, _score %v; want 0", dig(out, "hits", "max_score"), dig(out, "hits", "hits", 0, "_score"))
	}
	// No hits: max_score is null.
	out = tg.mustDo(200, "POST", "/"+name+"/_search", `{"query":{"term":{"geo_cell":"none"}}}`)
	if m, _ := dig(out, "hits").(map[string]any); m["max_score"] != nil || len(m["hits"].([]any)) != 0 {
		t.Errorf("empty search hits = %v, want [] and max_score null", m)
	}
}

// What the emulator does not implement it says so with 501, rather than
// answer differently from the server.
func TestNotEmulatedAnswers501(t *testing.T) {
	tg := newTarget(t)
	tg.needFake() // the server implements all of these
	name := seedIndex(tg, "gaps", fmt.Sprintf(cellMapping, 1), cellDocs(3, 2)...)
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/" + name + "/_search?scroll=1m", ""},
		{"POST", "/" + name + "/_search", `{"query":{"prefix":{"geo_cell":"c"}}}`},
		{"POST", "/" + name + "/_search", `{"aggs":{"a":{"avg":{"field":"price_cents"}}}}`},
		{"POST", "/" + name + "/_search", `{"highlight":{"fields":{"geo_cell":{}}}}`},
		{"POST", "/" + name + "/_search", `{"sort":[{"_script":{"type":"number","script":"1"}}]}`},
		{"GET", "/" + name + "/_count?q=geo_cell:c", ""},
	} {
		status, out := tg.do(tc.method, tc.path, tc.body)
		if status != 501 || str(dig(out, "error", "type")) != "osfake_not_implemented" {
			t.Errorf("%s %s %s = %d %v, want 501 osfake_not_implemented", tc.method, tc.path, tc.body, status, out)
		}
	}
}

func TestSortOnDoc(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "docsort", fmt.Sprintf(cellMapping, 3), cellDocs(30, 3)...)
	out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"size":100,"sort":["_doc"]}`)
	hits, _ := dig(out, "hits", "hits").([]any)
	if len(hits) != 30 {
		t.Fatalf("_doc sort = %d hits, want 30", len(hits))
	}
	prev := int64(-1)
	for _, h := range hits {
		n, err := dig(h, "sort", 0).(json.Number).Int64()
		if err != nil || n < prev {
			t.Fatalf("_doc sort values not ascending integers: %v after %d", dig(h, "sort"), prev)
		}
		prev = n
	}
}

// Bucket keys of numeric, boolean and date fields, and a terms missing
// value.
func TestAggregationKeysByFieldType(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "aggkeys", queryMapping, queryDocs...)
	cases := []struct {
		name, aggs, path, want string
	}{
		{"terms long with missing", `{"a":{"terms":{"field":"price_cents","missing":0}}}`, "a",
			`{"buckets":[{"doc_count":5,"key":0},{"doc_count":1,"key":800},{"doc_count":1,"key":1200},{"doc_count":1,"key":2500}],"doc_count_error_upper_bound":0,"sum_other_doc_count":0}`},
		{"terms boolean", `{"a":{"terms":{"field":"open"}}}`, "a",
			`{"buckets":[{"doc_count":2,"key":1,"key_as_string":"true"},{"doc_count":1,"key":0,"key_as_string":"false"}],"doc_count_error_upper_bound":0,"sum_other_doc_count":0}`},
		{"terms date", `{"a":{"terms":{"field":"opened","size":1,"order":{"_key":"asc"}}}}`, "a",
			`{"buckets":[{"doc_count":1,"key":1575072000000,"key_as_string":"2019-11-30T00:00:00.000Z"}],"doc_count_error_upper_bound":0,"sum_other_doc_count":2}`},
		{"composite long after", `{"a":{"composite":{"sources":[{"p":{"terms":{"field":"price_cents"}}}],"after":{"p":800}}}}`, "a",
			`{"after_key":{"p":2500},"buckets":[{"doc_count":1,"key":{"p":1200}},{"doc_count":1,"key":{"p":2500}}]}`},
		{"composite missing bucket first", `{"a":{"composite":{"size":2,"sources":[{"p":{"terms":{"field":"price_cents","missing_bucket":true}}}]}}}`, "a",
			`{"after_key":{"p":800},"buckets":[{"doc_count":5,"key":{"p":null}},{"doc_count":1,"key":{"p":800}}]}`},
		// Composite keys of a boolean are true and false; of a date, its
		// epoch milliseconds (a terms source has no format).
		{"composite boolean and date", `{"a":{"composite":{"sources":[{"o":{"terms":{"field":"open"}}},{"d":{"terms":{"field":"opened"}}}]}}}`, "a",
			`{"after_key":{"d":1588291200000,"o":true},"buckets":[{"doc_count":1,"key":{"d":1610668800000,"o":false}},{"doc_count":1,"key":{"d":1575072000000,"o":true}},{"doc_count":1,"key":{"d":1588291200000,"o":true}}]}`},
		{"composite boolean and date after", `{"a":{"composite":{"sources":[{"o":{"terms":{"field":"open"}}},{"d":{"terms":{"field":"opened"}}}],
			"after":{"o":false,"d":1610668800000}}}}`, "a",
			`{"after_key":{"d":1588291200000,"o":true},"buckets":[{"doc_count":1,"key":{"d":1575072000000,"o":true}},{"doc_count":1,"key":{"d":1588291200000,"o":true}}]}`},
		{"composite after as text", `{"a":{"composite":{"sources":[{"o":{"terms":{"field":"open"}}},{"d":{"terms":{"field":"opened"}}}],
			"after":{"o":"false","d":"1610668800000"}}}}`, "a",
			`{"after_key":{"d":1588291200000,"o":true},"buckets":[{"doc_count":1,"key":{"d":1575072000000,"o":true}},{"doc_count":1,"key":{"d":1588291200000,"o":true}}]}`},
		{"range", `{"a":{"range":{"field":"price_cents","ranges":[{"from":2000},{"to":1000},{"from":1000,"to":2000}]}}}`, "a",
			`{"buckets":[{"doc_count":1,"key":"*-1000.0","to":1000.0},{"doc_count":1,"from":1000.0,"key":"1000.0-2000.0","to":2000.0},{"doc_count":1,"from":2000.0,"key":"2000.0-*"}]}`},
		{"range keyed with keys and a sub-aggregation", `{"a":{"range":{"field":"price_cents","keyed":true,"ranges":[{"key":"cheap","to":1000},{"key":"dear","from":1000}]},
			"aggs":{"c":{"terms":{"field":"geo_cell"}}}}}`, "a",
			`{"buckets":{"cheap":{"c":{"buckets":[{"doc_count":1,"key":"c2"}],"doc_count_error_upper_bound":0,"sum_other_doc_count":0},"doc_count":1,"to":1000.0},` +
				`"dear":{"c":{"buckets":[{"doc_count":1,"key":"c1"},{"doc_count":1,"key":"c3"}],"doc_count_error_upper_bound":0,"sum_other_doc_count":0},"doc_count":2,"from":1000.0}}}`},
		{"terms with a sub-aggregation", `{"a":{"terms":{"field":"open"},"aggs":{"c":{"terms":{"field":"geo_cell"}}}}}`, "a",
			`{"buckets":[{"c":{"buckets":[{"doc_count":1,"key":"c1"},{"doc_count":1,"key":"c3"}],"doc_count_error_upper_bound":0,"sum_other_doc_count":0},"doc_count":2,"key":1,"key_as_string":"true"},` +
				`{"c":{"buckets":[{"doc_count":1,"key":"c2"}],"doc_count_error_upper_bound":0,"sum_other_doc_count":0},"doc_count":1,"key":0,"key_as_string":"false"}],"doc_count_error_upper_bound":0,"sum_other_doc_count":0}`},
	}
	for _, tc := range cases {
		out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"size":0,"aggs":`+tc.aggs+`}`)
		if got := mustJSON(dig(out, "aggregations", tc.path)); got != tc.want {
			t.Errorf("%s: aggregation = %s, want %s", tc.name, got, tc.want)
		}
	}
}

// A composite after key is converted to each source's type by every
// shard: a date is its epoch milliseconds, not a date string.
func TestCompositeAfterConversion(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "aggafter", queryMapping, queryDocs...)
	composite := func(field, after string) string {
		return `{"size":0,"aggs":{"a":{"composite":{"sources":[{"k":{"terms":{"field":"` + field + `"}}}],"after":{"k":` + after + `}}}}}`
	}
	cases := []struct{ body, root string }{
		{composite("opened", `"2021-01-15T00:00:00.000Z"`), `number_format_exception: For input string: "2021-01-15T00:00:00.000Z"`},
		{composite("opened", `true`), `number_format_exception: For input string: "true"`},
		{composite("price_cents", `"x"`), `number_format_exception: For input string: "x"`},
		{composite("rating", `"x"`), `number_format_exception: For input string: "x"`},
		{composite("open", `"yes"`), "illegal_argument_exception: Cannot parse boolean [yes], expected either [true] or [false]"},
		{composite("open", `1`), "illegal_argument_exception: Cannot parse boolean [1], expected either [true] or [false]"},
	}
	for _, tc := range cases {
		status, out := tg.do("POST", "/"+name+"/_search", tc.body)
		if status != 400 || str(dig(out, "error", "type")) != "search_phase_execution_exception" || firstRootCause(out) != tc.root ||
			str(dig(out, "error", "caused_by", "caused_by", "type")) != str(dig(out, "error", "caused_by", "type")) {
			t.Errorf("search %s = %d %v, want 400 search_phase_execution_exception caused by %s (wrapped)", tc.body, status, out, tc.root)
		}
	}
	// The terms source has no format.
	status, out := tg.do("POST", "/"+name+"/_search", `{"size":0,"aggs":{"a":{"composite":{"sources":[{"d":{"terms":{"field":"opened","format":"yyyy-MM-dd"}}}]}}}}`)
	if status != 400 || firstRootCause(out) != "x_content_parse_exception: [terms] unknown field [format]" ||
		!strings.HasSuffix(str(dig(out, "error", "reason")), "[composite] failed to parse field [sources]") {
		t.Errorf("composite terms with a format = %d %v, want 400 [terms] unknown field [format]", status, out)
	}
}

// On 3.x a search of size 0 with aggregations stops collecting on each
// shard that holds documents and says so (terminated_early: true),
// whether or not its query matches; 2.19 does not. A search with hits,
// one without aggregations and one of shards without documents say
// nothing on either line.
func TestSizeZeroAggregationsTerminateEarly(t *testing.T) {
	eachLine(t, testSizeZeroAggregationsTerminateEarly)
}

func testSizeZeroAggregationsTerminateEarly(t *testing.T, tg *target) {
	name := seedIndex(tg, "early", fmt.Sprintf(cellMapping, 2), cellDocs(10, 3)...)
	one := seedIndex(tg, "early-one", fmt.Sprintf(cellMapping, 4), cellDocs(1, 1)...)
	const terms = `"aggs":{"c":{"terms":{"field":"geo_cell"}}}`
	type search struct {
		index, params, body string
		early               bool
	}
	cases := []search{
		{name, "", `{"size":0,` + terms + `}`, byLine(tg, false, true)},
		{name, "", `{"size":0,"query":{"term":{"geo_cell":"none"}},` + terms + `}`, byLine(tg, false, true)},
		{name, "", `{"size":0,"aggs":{"c":{"composite":{"sources":[{"cell":{"terms":{"field":"geo_cell"}}}]}}}}`, byLine(tg, false, true)},
		{name, "", `{"size":0,"track_total_hits":false,` + terms + `}`, byLine(tg, false, true)},
		{name, "?size=0", `{` + terms + `}`, byLine(tg, false, true)},
		{name, "", `{"size":0}`, false},
		{name, "", `{"size":1,` + terms + `}`, false},
		{one, "", `{"size":0,` + terms + `}`, byLine(tg, false, true)},
	}
	// Each shard of the index of one document alone: only the shard that
	// holds it says so.
	for shard := range 4 {
		pref := fmt.Sprintf("?preference=_shards:%d", shard)
		holds := str(tg.mustDo(200, "GET", "/"+one+"/_count"+pref, "")["count"]) != "0"
		cases = append(cases, search{one, pref, `{"size":0,` + terms + `}`, holds && byLine(tg, false, true)})
	}
	for _, tc := range cases {
		out := tg.mustDo(200, "POST", "/"+tc.index+"/_search"+tc.params, tc.body)
		if got, has := out["terminated_early"]; tc.early && got != true || !tc.early && has {
			t.Errorf("POST %s/_search%s %s: terminated_early = %v, want %v", tc.index, tc.params, tc.body, got, tc.early)
		}
	}
}

// _search_shards describes each copy of a shard as the cluster state's
// shard routing does; 3.x's has a searchOnly flag (search replicas,
// which neither the emulator nor these tests have).
func TestSearchShardsCopyFields(t *testing.T) { eachLine(t, testSearchShardsCopyFields) }

func testSearchShardsCopyFields(t *testing.T, tg *target) {
	name := tg.name("copies")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":2,"number_of_replicas":0}}`)
	tg.settled(name)
	out := tg.mustDo(200, "GET", "/"+name+"/_search_shards", "")
	want := []string{"allocation_id", "index", "node", "primary", "relocating_node", "shard", "state"}
	if byLine(tg, false, true) {
		want = append(want, "searchOnly")
		sort.Strings(want)
	}
	for _, group := range dig(out, "shards").([]any) {
		c, _ := dig(group, 0).(map[string]any)
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if !slices.Equal(keys, want) || c["searchOnly"] != nil && c["searchOnly"] != false {
			t.Errorf("_search_shards copy = %v, want the fields %v (searchOnly false)", c, want)
		}
	}
}

func TestSearchShardsReplicasAndAliasFilter(t *testing.T) {
	tg := newTarget(t)
	tg.needFake() // a real cluster places copies on its own nodes
	name := tg.name("ss-replicas")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":2,"number_of_replicas":3},
		"aliases":{"ss-filtered":{"filter":{"term":{"geo_cell":"c1"}}}}}`)
	out := tg.mustDo(200, "GET", "/ss-filtered/_search_shards", "")
	if got := mustJSON(dig(out, "indices", name)); got != `{"aliases":["ss-filtered"],"filter":{"term":{"geo_cell":"c1"}}}` {
		t.Errorf("indices entry through a filtered alias = %s", got)
	}
	group, _ := dig(out, "shards", 1).([]any)
	if len(group) != 4 || dig(group[0], "primary") != true || dig(group[1], "primary") != false ||
		str(dig(group[1], "node")) != "osfake-node-2" || str(dig(group[3], "state")) != "UNASSIGNED" {
		t.Errorf("shard 1 copies = %v, want a primary, two assigned replicas and one unassigned", group)
	}
	out = tg.mustDo(200, "POST", "/"+name+"/_search_shards", `{"slice":{"id":1,"max":2}}`)
	if shards, _ := out["shards"].([]any); len(shards) != 1 || str(dig(shards[0], 0, "shard")) != "1" {
		t.Errorf("_search_shards with slice 1 of 2 = %v, want shard 1", out["shards"])
	}
}

// stored_fields _none_ leaves out what only the stored fields hold (_id,
// _routing, _source); the version and the sort values come from doc
// values, and docvalue_fields reads a keyword field's distinct values,
// sorted, leaving out a document without it.
func TestStoredFieldsNoneAndDocValueFields(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "docvalues", fmt.Sprintf(cellMapping, 2),
		seedDoc{id: "a", routing: "r1", source: `{"doc_id":"a","geo_cell":"c2"}`},
		seedDoc{id: "b", routing: "r2", source: `{"doc_id":"b","geo_cell":["c3","c1","c3"]}`},
		seedDoc{id: "c", routing: "r1", source: `{"doc_id":"c","price_cents":5}`})
	out := tg.mustDo(200, "POST", "/"+name+"/_search",
		`{"stored_fields":"_none_","version":true,"docvalue_fields":["geo_cell","unmapped"],"sort":[{"doc_id":"asc"}]}`)
	hits, _ := dig(out, "hits", "hits").([]any)
	if len(hits) != 3 {
		t.Fatalf("hits = %v, want 3", hits)
	}
	want := []string{`["c2"]`, `["c1","c3"]`, ``}
	for i, x := range hits {
		h := x.(map[string]any)
		for _, key := range []string{"_id", "_routing", "_source"} {
			if _, has := h[key]; has {
				t.Errorf("hit %d has %s with stored_fields _none_: %v", i, key, h)
			}
		}
		if h["_index"] != name || str(h["_version"]) != "1" || mustJSON(h["sort"]) != mustJSON([]string{[]string{"a", "b", "c"}[i]}) {
			t.Errorf("hit %d = %v, want _index, _version 1 and its sort value", i, h)
		}
		got := ""
		if f, has := h["fields"]; has {
			got = mustJSON(dig(f, "geo_cell"))
			if _, has := f.(map[string]any)["unmapped"]; has {
				t.Errorf("hit %d has a value of an unmapped field: %v", i, h)
			}
		}
		if got != want[i] {
			t.Errorf("hit %d: fields.geo_cell = %s, want %s", i, got, want[i])
		}
	}
}
