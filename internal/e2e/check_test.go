package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// storedDoc is a document read back from an index.
type storedDoc struct {
	shard   int // the physical shard it was read from
	routing string
	source  map[string]any
}

const scanPage = 2000

// scanShards refreshes index and reads every document of each of its n
// shards with preference=_shards:i, in doc_id order. A document found on
// two shards is an error.
func (e *env) scanShards(t testing.TB, index string, n int) map[string]storedDoc {
	t.Helper()
	if err := e.admin.Refresh(context.Background(), index); err != nil {
		t.Fatal(err)
	}
	out := map[string]storedDoc{}
	for i := range n {
		testenv.ScanDocs(t, e.admin, index, bulk.SearchParams{Preference: testenv.ShardPreference(i)}, scanPage, func(h bulk.Hit) {
			var src map[string]any
			if err := json.Unmarshal(h.Source, &src); err != nil {
				t.Fatalf("%s/%s: %v", index, h.ID, err)
			}
			if prev, dup := out[h.ID]; dup {
				t.Errorf("%s: %s is stored twice: on shard %d (routing %q, version %v) and on shard %d (routing %q, version %v)",
					index, h.ID, prev.shard, prev.routing, prev.source[schema.FieldVersion], i, h.Routing, src[schema.FieldVersion])
			}
			out[h.ID] = storedDoc{shard: i, routing: h.Routing, source: src}
		})
	}
	return out
}

// checkIndex compares index, built with map mp, with the documents the
// model predicts: the same ids, each with the predicted source (version,
// body, geo_cell) and routing, on the physical shard the map gives its
// cell; the per-shard counts; and every dish on its restaurant's shard.
// It returns the ids of the documents that differ.
func (e *env) checkIndex(t testing.TB, index string, mp *router.Map, want map[string]expectedDoc) []string {
	t.Helper()
	got := e.scanShards(t, index, mp.NumShards())
	var problems []string
	var ids []string
	report := func(format string, args ...any) {
		problems = append(problems, fmt.Sprintf(format, args...))
		if len(args) > 0 {
			if id, ok := args[0].(string); ok && (len(ids) == 0 || ids[len(ids)-1] != id) {
				ids = append(ids, id)
			}
		}
	}
	for _, id := range testenv.SortedKeys(want) {
		w := want[id]
		g, ok := got[id]
		switch {
		case !ok:
			report("%s missing (want version %v on shard %d %s, geo_cell %v)", id, w.source[schema.FieldVersion], w.shard, mp.Shard(w.shard).Name, w.source[schema.FieldGeoCell])
		case g.shard != w.shard || g.routing != w.routing:
			report("%s on shard %d with routing %q (version %v, geo_cell %v), want shard %d with routing %q (version %v, geo_cell %v)",
				id, g.shard, g.routing, g.source[schema.FieldVersion], g.source[schema.FieldGeoCell], w.shard, w.routing, w.source[schema.FieldVersion], w.source[schema.FieldGeoCell])
		case !reflect.DeepEqual(g.source, w.source):
			report("%s source = %v\n\twant %v", id, g.source, w.source)
		}
	}
	for _, id := range testenv.SortedKeys(got) {
		if _, ok := want[id]; !ok {
			g := got[id]
			report("%s should not be there: found on shard %d (routing %q) at version %v, geo_cell %v", id, g.shard, g.routing, g.source[schema.FieldVersion], g.source[schema.FieldGeoCell])
		}
	}
	// A dish shares its restaurant's shard, read from the index itself.
	for _, id := range testenv.SortedKeys(got) {
		g := got[id]
		rid, _ := g.source[schema.FieldRestaurantID].(string)
		if rid == "" {
			continue
		}
		r, ok := got[schema.RestaurantID(rid)]
		switch {
		case !ok:
			report("%s (shard %d): its restaurant %s is not in the index", id, g.shard, rid)
		case r.shard != g.shard:
			report("%s is on shard %d, its restaurant %s on shard %d", id, g.shard, rid, r.shard)
		}
	}
	wantCounts := perShard(want, mp.NumShards())
	if gotCounts := testenv.ShardCounts(t, e.admin, index, mp.NumShards()); !reflect.DeepEqual(gotCounts, wantCounts) {
		report("documents per shard (preference=_shards:i) = %v, want %v", gotCounts, wantCounts)
	}
	for i, p := range problems {
		if i == 20 {
			t.Errorf("%s: … %d differences in all", index, len(problems))
			break
		}
		t.Errorf("%s: %s", index, p)
	}
	if len(problems) == 0 {
		t.Logf("%s equals the model: %s on %d shards", index, summary(want), mp.NumShards())
	}
	return ids
}

// deadLetters sums the pipeline's dead letters by reason.
func deadLetters[K ~string](m map[K]int64) (int64, string) {
	var n int64
	var parts []string
	for _, k := range testenv.SortedKeys(m) {
		n += m[k]
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return n, strings.Join(parts, " ")
}
