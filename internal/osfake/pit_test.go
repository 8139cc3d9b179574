package osfake

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// openPIT opens a point in time through the client and returns its id.
func openPIT(tg *target, index string, keepAlive time.Duration, params opensearchapi.PointInTimeCreateParams) string {
	tg.t.Helper()
	params.KeepAlive = keepAlive
	resp, err := tg.client.PointInTime.Create(context.Background(), opensearchapi.PointInTimeCreateReq{Indices: []string{index}, Params: params})
	if err != nil {
		tg.t.Fatalf("create PIT on %s: %v", index, err)
	}
	if resp.PitID == "" || resp.Shards.Failed != 0 || resp.Shards.Total == 0 || resp.CreationTime == 0 {
		tg.t.Fatalf("create PIT = %+v", resp)
	}
	return resp.PitID
}

// pitSearch searches a PIT; extra is more of the body, starting with a comma.
func pitSearch(tg *target, id, extra string) map[string]any {
	tg.t.Helper()
	return tg.mustDo(200, "POST", "/_search", `{"pit":{"id":"`+id+`"}`+extra+`}`)
}

// pitIDs pages through a PIT sorted on doc_id and returns every _id seen,
// in order.
func pitIDs(tg *target, id, extra string) []string {
	tg.t.Helper()
	var ids []string
	after := ""
	for range 1000 {
		out := pitSearch(tg, id, `,"size":7,"sort":[{"doc_id":"asc"}]`+extra+after)
		if str(out["pit_id"]) != id {
			tg.t.Fatalf("PIT search response pit_id = %v, want %s", out["pit_id"], id)
		}
		page := hitIDs(out)
		if len(page) == 0 {
			return ids
		}
		ids = append(ids, page...)
		after = `,"search_after":` + mustJSON(dig(out, "hits", "hits", len(page)-1, "sort"))
	}
	tg.t.Fatal("PIT paging did not end")
	return nil
}

func TestPITSnapshotIsolation(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "pit-iso", fmt.Sprintf(cellMapping, 3), cellDocs(30, 4)...)
	id := openPIT(tg, name, time.Minute, opensearchapi.PointInTimeCreateParams{})
	// Writes, deletes and refreshes after opening do not show through it.
	more := cellDocs(35, 4)[30:]
	seed(tg, name, "", more...)
	unseed(tg, name, "", "", "r00003", "r00004")
	seed(tg, name, "", seedDoc{id: "r00005", source: `{"doc_id":"r00005","geo_cell":"moved"}`})
	tg.mustDo(200, "POST", "/"+name+"/_refresh", "")
	if tg.clock != nil {
		tg.clock.Advance(5 * time.Second) // periodic refreshes too
	}

	live := tg.mustDo(200, "GET", "/"+name+"/_count", "")
	if str(live["count"]) != "33" {
		t.Errorf("live count = %v, want 33", live["count"])
	}
	out := pitSearch(tg, id, `,"size":0,"query":{"term":{"geo_cell":"cell-01"}}`)
	if got := str(dig(out, "hits", "total", "value")); got != "8" {
		t.Errorf("PIT count of cell-01 = %s, want 8 (r00005 still there, nothing new)", got)
	}
	ids := pitIDs(tg, id, "")
	want := make([]string, 30)
	for i := range want {
		want[i] = fmt.Sprintf("r%05d", i)
	}
	if !slices.Equal(ids, want) {
		t.Errorf("PIT paging = %v, want the 30 documents as of opening, each once", ids)
	}
}

func TestPITSlicesPartitionTheDocuments(t *testing.T) {
	tg := newTarget(t)
	const n = 200
	name := seedIndex(tg, "pit-slices", fmt.Sprintf(cellMapping, 4), cellDocs(n, 9)...)
	full := openPIT(tg, name, time.Minute, opensearchapi.PointInTimeCreateParams{})
	restricted := openPIT(tg, name, time.Minute, opensearchapi.PointInTimeCreateParams{Preference: "_shards:0,2"})
	var restrictedCount int
	fmt.Sscan(str(tg.mustDo(200, "GET", "/"+name+"/_count?preference=_shards:0,2", "")["count"]), &restrictedCount)
	cases := []struct {
		name string
		pit  string
		max  int
		want int
	}{
		{"fewer slices than shards", full, 2, n},
		{"as many slices as shards", full, 4, n},
		{"more slices than shards", full, 7, n},
		{"many more slices than shards", full, 9, n},
		{"restricted PIT, more slices than its shards", restricted, 3, restrictedCount},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seen := map[string]int{}
			for id := range tc.max {
				for _, doc := range pitIDs(tg, tc.pit, fmt.Sprintf(`,"slice":{"id":%d,"max":%d}`, id, tc.max)) {
					seen[doc]++
				}
			}
			if len(seen) != tc.want {
				t.Errorf("slices of max %d cover %d documents, want %d", tc.max, len(seen), tc.want)
			}
			for doc, c := range seen {
				if c != 1 {
					t.Errorf("max %d: %s read by %d slices", tc.max, doc, c)
				}
			}
		})
	}
	status, out := tg.do("POST", "/_search", `{"pit":{"id":"`+full+`"},"slice":{"id":3,"max":3}}`)
	if status != 400 {
		t.Errorf("slice id == max = %d %v, want 400", status, out)
	}
}

func TestSliceReadsRenumberShardsByPosition(t *testing.T) {
	// search_shards/20_slice.yml: 7 shards, _shards:0,2,4,6, max 3 gives
	// slice 0 → {0,6}, slice 1 → {2}, slice 2 → {4}.
	reads := []shardRead{{shard: 0}, {shard: 2}, {shard: 4}, {shard: 6}}
	for id, want := range [][]int{{0, 6}, {2}, {4}} {
		var got []int
		for _, r := range sliceReads(reads, &sliceSpec{id: id, max: 3}) {
			got = append(got, r.shard)
		}
		if !slices.Equal(got, want) {
			t.Errorf("slice %d of 3 over shards 0,2,4,6 reads %v, want %v", id, got, want)
		}
	}
	// More slices than shards: slice 5 of 6 over 4 shards reads shard
	// position 1, second of its two slices; a search still asks the
	// other shards, which match nothing.
	got := sliceFilter(reads, &sliceSpec{id: 5, max: 6})
	if len(got) != 4 || got[1].shard != 2 || got[1].sliceNone || got[1].sliceMod != 2 || got[1].sliceRem != 1 ||
		!got[0].sliceNone || !got[2].sliceNone || !got[3].sliceNone {
		t.Errorf("slice 5 of 6 = %+v, want shard 2 split in 2, part 1, and the others asked for nothing", got)
	}
}

func TestPITKeepAliveExpiry(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	name := seedIndex(tg, "pit-ttl", fmt.Sprintf(cellMapping, 1), cellDocs(5, 2)...)
	id := openPIT(tg, name, time.Minute, opensearchapi.PointInTimeCreateParams{})
	tg.clock.Advance(59 * time.Second)
	pitSearch(tg, id, "") // each use restarts the keep-alive
	tg.clock.Advance(59 * time.Second)
	pitSearch(tg, id, "")
	tg.clock.Advance(61 * time.Second)
	status, out := tg.do("POST", "/_search", `{"pit":{"id":"`+id+`"}}`)
	if status != 404 || str(dig(out, "error", "type")) != "search_phase_execution_exception" ||
		str(dig(out, "error", "root_cause", 0, "type")) != "search_context_missing_exception" ||
		!strings.HasPrefix(str(dig(out, "error", "root_cause", 0, "reason")), "No search context found for id [") {
		t.Errorf("search on an expired PIT = %d %v, want 404 search_context_missing_exception", status, out)
	}

	// A search's keep_alive lengthens the PIT; a shorter one does not
	// shorten it.
	id = openPIT(tg, name, time.Minute, opensearchapi.PointInTimeCreateParams{})
	pitSearch(tg, id, `,"size":0`)
	tg.mustDo(200, "POST", "/_search", `{"pit":{"id":"`+id+`","keep_alive":"5m"}}`)
	tg.mustDo(200, "POST", "/_search", `{"pit":{"id":"`+id+`","keep_alive":"10s"}}`)
	tg.clock.Advance(4 * time.Minute)
	pitSearch(tg, id, "")
	list := tg.mustDo(200, "GET", "/_search/point_in_time/_all", "")
	if got := str(dig(list, "pits", 0, "keep_alive")); got != "300000" {
		t.Errorf("listed keep_alive = %s, want 300000 (ms)", got)
	}
	tg.clock.Advance(5*time.Minute + time.Second)
	if list := tg.mustDo(200, "GET", "/_search/point_in_time/_all", ""); len(dig(list, "pits").([]any)) != 0 {
		t.Errorf("expired PITs are still listed: %v", list)
	}
}

func TestPITDeleteAndList(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "pit-del", fmt.Sprintf(cellMapping, 2), cellDocs(5, 2)...)
	ctx := context.Background()
	a := openPIT(tg, name, time.Minute, opensearchapi.PointInTimeCreateParams{})
	b := openPIT(tg, name, 2*time.Minute, opensearchapi.PointInTimeCreateParams{})
	listed := func() map[string]int64 {
		resp, err := tg.client.PointInTime.Get(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int64{}
		for _, p := range resp.Pits {
			if p.PitID == a || p.PitID == b {
				out[p.PitID] = p.KeepAlive
			}
		}
		return out
	}
	if got := listed(); got[a] != 60000 || got[b] != 120000 {
		t.Errorf("listed PITs = %v, want %s: 60000 and %s: 120000", got, a, b)
	}
	del, err := tg.client.PointInTime.Delete(ctx, opensearchapi.PointInTimeDeleteReq{PitID: []string{a}})
	if err != nil {
		t.Fatal(err)
	}
	if len(del.Pits) != 1 || del.Pits[0].PitID != a || !del.Pits[0].Successful {
		t.Errorf("delete = %+v, want %s successful", del.Pits, a)
	}
	if got := listed(); len(got) != 1 || got[b] == 0 {
		t.Errorf("listed after delete = %v, want only %s", got, b)
	}
	status, out := tg.do("POST", "/_search", `{"pit":{"id":"`+a+`"}}`)
	if status != 404 || str(dig(out, "error", "root_cause", 0, "type")) != "search_context_missing_exception" {
		t.Errorf("search on a deleted PIT = %d %v, want 404", status, out)
	}
	// Deleting again is not an error.
	out = tg.mustDo(200, "DELETE", "/_search/point_in_time", `{"pit_id":["`+a+`"]}`)
	if dig(out, "pits", 0, "successful") != true {
		t.Errorf("deleting a deleted PIT = %v, want successful", out)
	}
	status, out = tg.do("DELETE", "/_search/point_in_time", `{"pit_id":[]}`)
	if status != 400 || !strings.Contains(str(dig(out, "error", "reason")), "no pit ids specified") {
		t.Errorf("delete with no ids = %d %v, want 400", status, out)
	}

	t.Run("delete all", func(t *testing.T) {
		if tg.fake == nil { // tg.needFake would skip the parent test
			t.Skip("on a shared cluster this would close other users' PITs")
		}
		out := tg.mustDo(200, "DELETE", "/_search/point_in_time/_all", "")
		if str(dig(out, "pits", 0, "pit_id")) != b || dig(out, "pits", 0, "successful") != true {
			t.Errorf("delete all = %v, want %s successful", out, b)
		}
		if out := tg.mustDo(200, "DELETE", "/_search/point_in_time/_all", ""); mustJSON(out) != `{"pits":[]}` {
			t.Errorf("delete all again = %v, want no pits", out)
		}
	})
}

func TestPITRequestErrors(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "pit-err", fmt.Sprintf(cellMapping, 2), cellDocs(5, 2)...)
	id := openPIT(tg, name, time.Minute, opensearchapi.PointInTimeCreateParams{})
	cases := []struct {
		name, method, path, body string
		status                   int
		typ, reason              string
	}{
		{"no keep_alive", "POST", "/" + name + "/_search/point_in_time", "", 400, "action_request_validation_exception", "keep alive not specified"},
		{"keep_alive above the limit", "POST", "/" + name + "/_search/point_in_time?keep_alive=2d", "", 400, "illegal_argument_exception",
			"Keep alive for request (2d) is too large. It must be less than (1d)."},
		{"missing index", "POST", "/" + tg.name("nope") + "/_search/point_in_time?keep_alive=1m", "", 404, "index_not_found_exception", "no such index"},
		{"index in the search URL", "POST", "/" + name + "/_search", `{"pit":{"id":"` + id + `"}}`, 400, "action_request_validation_exception",
			"[indices] cannot be used with point in time"},
		{"routing with a PIT", "POST", "/_search?routing=x", `{"pit":{"id":"` + id + `"}}`, 400, "action_request_validation_exception",
			"[routing] cannot be used with point in time"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, out := tg.do(tc.method, tc.path, tc.body)
			if status != tc.status || str(dig(out, "error", "type")) != tc.typ || !strings.Contains(str(dig(out, "error", "reason")), tc.reason) {
				t.Errorf("%s %s = %d %v, want %d %s: %s", tc.method, tc.path, status, out, tc.status, tc.typ, tc.reason)
			}
		})
	}
}

// A PIT whose index was deleted has lost its search contexts.
func TestPITOnDeletedIndex(t *testing.T) {
	tg := newTarget(t)
	// The emulator's answer: the server may fail such a search before it
	// reaches a shard (the PIT names the old index's uuid), which has not
	// been checked against a real cluster.
	tg.needFake()
	name := seedIndex(tg, "pit-gone", fmt.Sprintf(cellMapping, 2), cellDocs(5, 2)...)
	id := openPIT(tg, name, time.Minute, opensearchapi.PointInTimeCreateParams{})
	tg.mustDo(200, "DELETE", "/"+name, "")
	tg.mustDo(200, "PUT", "/"+name, "")
	status, out := tg.do("POST", "/_search", `{"pit":{"id":"`+id+`"}}`)
	if status != 404 || str(dig(out, "error", "root_cause", 0, "type")) != "search_context_missing_exception" {
		t.Errorf("search on a PIT of a deleted index = %d %v, want 404 search_context_missing_exception", status, out)
	}
}
