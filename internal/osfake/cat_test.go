package osfake

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// getRaw sends a GET and returns the status, Content-Type and body.
func getRaw(tg *target, path string) (int, string, string) {
	tg.t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), "GET", tg.url+path, nil)
	if err != nil {
		tg.t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tg.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b)
}

// catRows fetches a _cat endpoint as JSON and checks that every value is
// a string or null, as RestTable renders them.
func catRows(tg *target, path string) []map[string]any {
	tg.t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	status, _, body := getRaw(tg, path+sep+"format=json")
	if status != 200 {
		tg.t.Fatalf("GET %s = %d %s", path, status, body)
	}
	var rows []map[string]any
	if err := json.Unmarshal([]byte(body), &rows); err != nil {
		tg.t.Fatalf("GET %s: %v in %s", path, err, body)
	}
	for _, r := range rows {
		for k, v := range r {
			if _, ok := v.(string); !ok && v != nil {
				tg.t.Errorf("GET %s: %s = %#v, want a string or null", path, k, v)
			}
		}
	}
	return rows
}

// putDocs stores documents straight into the shards the server would
// place them on, bypassing the document API.
func putDocs(tg *target, indexName string, ids ...string) {
	tg.t.Helper()
	s := tg.fake.Server
	s.mu.Lock()
	defer s.mu.Unlock()
	ix := s.indices[indexName]
	for _, id := range ids {
		ix.shards[ix.shardFor("", id)].put(&doc{id: id, source: json.RawMessage(`{"n":1}`), version: 1})
	}
}

func TestCatIndices(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("ci")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":2,"number_of_replicas":0}}`)
	resp, err := tg.client.Cat.Indices(context.Background(), &opensearchapi.CatIndicesReq{Indices: []string{name}})
	if err != nil {
		t.Fatalf("Cat.Indices = %v", err)
	}
	if len(resp.Indices) != 1 {
		t.Fatalf("Cat.Indices = %+v, want one row", resp.Indices)
	}
	r := resp.Indices[0]
	if r.Index != name || r.Health != "green" || r.Status != "open" || r.UUID == "" ||
		r.Primary == nil || *r.Primary != 2 || r.Replica == nil || *r.Replica != 0 ||
		r.DocsCount == nil || *r.DocsCount != 0 || r.StoreSize == nil || r.PrimaryStoreSize == nil {
		t.Errorf("Cat.Indices row = %+v, want %s green open with 2 primaries, 0 replicas, 0 docs", r, name)
	}
	rows := catRows(tg, "/_cat/indices/"+name)
	want := []string{"health", "status", "index", "uuid", "pri", "rep", "docs.count", "docs.deleted", "store.size", "pri.store.size"}
	for _, k := range want {
		if _, ok := rows[0][k]; !ok {
			t.Errorf("default columns %v lack %s", rows[0], k)
		}
	}
	if len(rows[0]) != len(want) {
		t.Errorf("default columns = %v, want exactly %v", rows[0], want)
	}

	status, _, body := getRaw(tg, "/_cat/indices/"+tg.name("none")+"?format=json")
	if status != 404 || !strings.Contains(body, "index_not_found_exception") {
		t.Errorf("_cat/indices of a missing index = %d %s, want 404 index_not_found_exception", status, body)
	}
}

func TestCatIndicesDocsAfterRefresh(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	name := tg.name("docs")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":3}}`)
	putDocs(tg, name, "a", "b", "c", "d")
	docs := func() string { return str(catRows(tg, "/_cat/indices/"+name+"?h=docs.count")[0]["docs.count"]) }
	if got := docs(); got != "0" {
		t.Errorf("docs.count before the refresh interval = %s, want 0", got)
	}
	tg.clock.Advance(time.Second)
	if got := docs(); got != "4" {
		t.Errorf("docs.count after the refresh interval = %s, want 4", got)
	}
}

func TestCatShards(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("cs")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":3,"number_of_replicas":1}}`)
	// A replica is started where there is a second node, else unassigned;
	// on a real cluster it is INITIALIZING for a while after the create.
	replica := "STARTED"
	if tg.dataNodes() < 2 {
		replica = "UNASSIGNED"
	}
	tg.settled(name)
	resp, err := tg.client.Cat.Shards(context.Background(), &opensearchapi.CatShardsReq{Indices: []string{name}})
	if err != nil {
		t.Fatalf("Cat.Shards = %v", err)
	}
	if len(resp.Shards) != 6 {
		t.Fatalf("Cat.Shards = %d rows, want 6 (3 primaries, 3 replicas)", len(resp.Shards))
	}
	prim := map[int]bool{}
	for i, r := range resp.Shards {
		if r.Index != name || (r.Prirep != "p" && r.Prirep != "r") {
			t.Errorf("row %d = %+v", i, r)
		}
		if r.Prirep == "p" {
			prim[r.Shard] = true
			if r.State != "STARTED" {
				t.Errorf("primary row %d state = %q, want STARTED", i, r.State)
			}
		} else if r.State != replica {
			t.Errorf("replica row %d state = %q, want %s on %d data nodes", i, r.State, replica, tg.dataNodes())
		}
		switch r.State {
		case "STARTED":
			if r.Docs == nil || *r.Docs != "0" || r.Node == nil || r.IP == nil {
				t.Errorf("started row %d = %+v, want docs 0, ip and node", i, r)
			}
		case "UNASSIGNED":
			if r.Docs != nil || r.Node != nil || r.IP != nil || r.Prirep != "r" {
				t.Errorf("unassigned row %d = %+v, want a replica with null docs, ip and node", i, r)
			}
		default:
			t.Errorf("row %d state = %q", i, r.State)
		}
	}
	if len(prim) != 3 {
		t.Errorf("primaries of shards %v, want 0, 1 and 2", prim)
	}
	catRows(tg, "/_cat/shards/"+name) // every value a string or null
}

func TestCatShardsCopiesAndDocs(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	name := tg.name("copies")
	// Three replicas on three pretend nodes: two replicas fit, one does not.
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":2,"number_of_replicas":3,"refresh_interval":"-1"}}`)
	ids := []string{"a", "b", "c", "d", "e", "f", "g"}
	putDocs(tg, name, ids...)
	want := map[string]int{}
	s := tg.fake.Server
	for _, id := range ids {
		want[str(s.indices[name].shardFor("", id))]++
	}
	tg.mustDo(200, "POST", "/"+name+"/_refresh", "")

	rows := catRows(tg, "/_cat/shards/"+name+"?h=index,shard,prirep,state,docs,node&s=shard,prirep")
	if len(rows) != 8 {
		t.Fatalf("rows = %v, want 8 (2 shards × 4 copies)", rows)
	}
	count := map[string]int{}
	for _, r := range rows {
		key := str(r["prirep"]) + " " + str(r["state"])
		count[key]++
		if r["state"] == "STARTED" && str(r["docs"]) != str(want[str(r["shard"])]) {
			t.Errorf("shard %s %s docs = %v, want %d", r["shard"], r["prirep"], r["docs"], want[str(r["shard"])])
		}
	}
	wantCount := map[string]int{"p STARTED": 2, "r STARTED": 4, "r UNASSIGNED": 2}
	if mustJSON(count) != mustJSON(wantCount) {
		t.Errorf("copies by role and state = %v, want %v", count, wantCount)
	}
	if rows[0]["shard"] != "0" || rows[0]["prirep"] != "p" || rows[7]["shard"] != "1" {
		t.Errorf("s=shard,prirep order: first %v, last %v", rows[0], rows[7])
	}
}

func TestCatAliases(t *testing.T) {
	tg := newTarget(t)
	i1, i2, a, b := tg.name("i1"), tg.name("i2"), tg.name("a"), tg.name("b")
	tg.mustDo(200, "PUT", "/"+i1, `{"aliases":{"`+a+`":{"index_routing":"1","search_routing":"1,2","filter":{"term":{"x":"y"}},"is_write_index":true}}}`)
	tg.mustDo(200, "PUT", "/"+i2, `{"aliases":{"`+a+`":{},"`+b+`":{}}}`)
	resp, err := tg.client.Cat.Aliases(context.Background(), &opensearchapi.CatAliasesReq{Aliases: []string{a}})
	if err != nil {
		t.Fatalf("Cat.Aliases = %v", err)
	}
	byIndex := map[string]opensearchapi.CatAliasResp{}
	for _, r := range resp.Aliases {
		byIndex[r.Index] = r
	}
	want := map[string]opensearchapi.CatAliasResp{
		i1: {Alias: a, Index: i1, Filter: "*", RoutingIndex: "1", RoutingSearch: "1,2", IsWriteIndex: "true"},
		i2: {Alias: a, Index: i2, Filter: "-", RoutingIndex: "-", RoutingSearch: "-", IsWriteIndex: "-"},
	}
	if len(resp.Aliases) != 2 || byIndex[i1] != want[i1] || byIndex[i2] != want[i2] {
		t.Errorf("Cat.Aliases(%s) = %+v, want %+v", a, resp.Aliases, want)
	}
	rows := catRows(tg, "/_cat/aliases/"+tg.name("*")+"?h=a,i")
	if len(rows) != 3 || rows[0]["a"] == nil || rows[0]["i"] == nil || len(rows[0]) != 2 {
		t.Errorf("_cat/aliases?h=a,i = %v, want 3 rows keyed by the names asked for", rows)
	}
}

func TestCatCount(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("cc")
	tg.mustDo(200, "PUT", "/"+name, "")
	resp, err := tg.client.Cat.Count(context.Background(), &opensearchapi.CatCountReq{Indices: []string{name}})
	if err != nil {
		t.Fatalf("Cat.Count = %v", err)
	}
	if len(resp.Counts) != 1 || resp.Counts[0].Count != 0 || resp.Counts[0].Epoch == 0 || len(resp.Counts[0].Timestamp) != 8 {
		t.Errorf("Cat.Count = %+v, want one row with count 0, an epoch and HH:MM:SS", resp.Counts)
	}
}

func TestCatCountSearchableDocs(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	i1, i2, a := tg.name("i1"), tg.name("i2"), tg.name("a")
	tg.mustDo(200, "PUT", "/"+i1, `{"settings":{"number_of_shards":2},"aliases":{"`+a+`":{}}}`)
	tg.mustDo(200, "PUT", "/"+i2, `{"aliases":{"`+a+`":{}}}`)
	putDocs(tg, i1, "1", "2", "3")
	putDocs(tg, i2, "4")
	count := func(expr string) string { return str(catRows(tg, "/_cat/count/"+expr)[0]["count"]) }
	if got := count(a); got != "0" {
		t.Errorf("count before refresh = %s, want 0", got)
	}
	tg.clock.Advance(time.Second)
	for expr, want := range map[string]string{a: "4", i1: "3", i1 + "," + i2: "4"} {
		if got := count(expr); got != want {
			t.Errorf("_cat/count/%s = %s, want %s", expr, got, want)
		}
	}
	row := catRows(tg, "/_cat/count/"+i2)[0]
	if row["epoch"] != "1767225601" || row["timestamp"] != "00:00:01" {
		t.Errorf("_cat/count time columns = %v, want the emulator clock (2026-01-01 00:00:01)", row)
	}
}

func TestCatTextTable(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("txt")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":12,"number_of_replicas":0}}`)
	pad := strings.Repeat(" ", len(name)-len("index"))
	cases := []struct{ query, want string }{
		{"?v&h=index,pri,rep", "index" + pad + " pri rep\n" + name + "  12   0\n"},
		{"?h=index,pri", name + " 12\n"},
		{"?h=i,p&v=true", "i" + strings.Repeat(" ", len(name)-1) + "  p\n" + name + " 12\n"},
	}
	for _, tc := range cases {
		status, ctype, body := getRaw(tg, "/_cat/indices/"+name+tc.query)
		if status != 200 || !strings.HasPrefix(ctype, "text/plain") || body != tc.want {
			t.Errorf("_cat/indices%s = %d %s %q, want text %q", tc.query, status, ctype, body, tc.want)
		}
	}
}

func TestCatSortAndHeaders(t *testing.T) {
	tg := newTarget(t)
	names := []string{tg.name("s-b"), tg.name("s-a"), tg.name("s-c")}
	for i, n := range names {
		tg.mustDo(200, "PUT", "/"+n, `{"settings":{"number_of_shards":`+str(3-i)+`,"number_of_replicas":0}}`)
	}
	expr := tg.name("s-*")
	cases := []struct{ query, key, want string }{
		{"?s=index", "index", names[1] + "," + names[0] + "," + names[2]},
		{"?s=index:desc", "index", names[2] + "," + names[0] + "," + names[1]},
		{"?s=pri&h=i,pri", "i", names[2] + "," + names[1] + "," + names[0]},
	}
	for _, tc := range cases {
		var got []string
		for _, r := range catRows(tg, "/_cat/indices/"+expr+tc.query) {
			got = append(got, str(r[tc.key]))
		}
		if strings.Join(got, ",") != tc.want {
			t.Errorf("_cat/indices%s = %v, want %s", tc.query, got, tc.want)
		}
	}
	rows := catRows(tg, "/_cat/indices/"+names[0]+"?h=docs*")
	if len(rows[0]) != 2 || rows[0]["docs.count"] == nil || rows[0]["docs.deleted"] == nil {
		t.Errorf("h=docs* = %v, want docs.count and docs.deleted", rows[0])
	}
}

func TestFormatBytes(t *testing.T) {
	cases := []struct {
		n    int64
		unit string
		want string
	}{
		{208, "", "208b"},
		{1023, "", "1023b"},
		{1024, "", "1kb"},
		{1300, "", "1.2kb"}, // 1.269…: truncated, not rounded
		{5 << 20, "", "5mb"},
		{3 << 30, "", "3gb"},
		{5000, "b", "5000"},
		{5000, "kb", "4"},
	}
	for _, tc := range cases {
		if got := formatBytes(tc.n, tc.unit); got != tc.want {
			t.Errorf("formatBytes(%d, %q) = %q, want %q", tc.n, tc.unit, got, tc.want)
		}
	}
}

func TestCatFormatFromAcceptHeader(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("accept")
	tg.mustDo(200, "PUT", "/"+name, "")
	req, _ := http.NewRequestWithContext(context.Background(), "GET", tg.url+"/_cat/count/"+name, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rows []map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&rows); err != nil || len(rows) != 1 || rows[0]["count"] != "0" {
		t.Errorf("_cat/count with Accept: application/json = %v, %v, want one JSON row with count \"0\"", rows, err)
	}
}

// TestCatCountsWrittenDocuments writes through the real client's bulk API
// and reads the counts back from every _cat endpoint that shows them.
func TestCatCountsWrittenDocuments(t *testing.T) {
	tg := newTarget(t)
	ctx := context.Background()
	name := tg.name("written")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":3,"number_of_replicas":0}}`)
	var nd strings.Builder
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		nd.WriteString(`{"index":{"_index":"` + name + `","_id":"` + id + `"}}` + "\n" + `{"n":1}` + "\n")
	}
	resp, err := tg.client.Bulk(ctx, opensearchapi.BulkReq{Body: strings.NewReader(nd.String()),
		Params: opensearchapi.BulkParams{Refresh: "true"}})
	if err != nil || resp.Errors {
		t.Fatalf("Bulk = %+v, %v", resp, err)
	}
	shards, err := tg.client.Cat.Shards(ctx, &opensearchapi.CatShardsReq{Indices: []string{name}})
	if err != nil {
		t.Fatalf("Cat.Shards = %v", err)
	}
	sum := 0
	for _, r := range shards.Shards {
		if r.Prirep == "p" && r.Docs != nil {
			n, err := strconv.Atoi(*r.Docs)
			if err != nil {
				t.Errorf("docs of shard %d = %q, want a number", r.Shard, *r.Docs)
			}
			sum += n
		}
	}
	if sum != 5 {
		t.Errorf("docs over the primaries in _cat/shards = %d, want 5", sum)
	}
	count, err := tg.client.Cat.Count(ctx, &opensearchapi.CatCountReq{Indices: []string{name}})
	if err != nil || len(count.Counts) != 1 || count.Counts[0].Count != 5 {
		t.Errorf("Cat.Count = %+v, %v, want 5", count, err)
	}
	ixs, err := tg.client.Cat.Indices(ctx, &opensearchapi.CatIndicesReq{Indices: []string{name}})
	if err != nil || len(ixs.Indices) != 1 || ixs.Indices[0].DocsCount == nil || *ixs.Indices[0].DocsCount != 5 {
		t.Errorf("Cat.Indices = %+v, %v, want docs.count 5", ixs, err)
	}
}
