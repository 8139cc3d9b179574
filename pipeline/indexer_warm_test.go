package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/pipeline/directory"
	"github.com/geoshard/geoshard/schema"
)

// checkDirectory fails t unless d holds exactly want: what Get, Lookup,
// All and Len say of it.
func checkDirectory(t *testing.T, d *directory.Directory, want map[string]directory.Entry) {
	t.Helper()
	live := int64(0)
	for id, w := range want {
		if !w.Deleted {
			live++
		}
		if e, ok := d.Get(id); !ok || e != w {
			t.Errorf("Get(%q) = %+v, %v; want %+v, true", id, e, ok, w)
		}
		if c, ok := d.Lookup(id); ok != !w.Deleted || ok && c != w.Cell {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", id, c, ok, w.Cell, !w.Deleted)
		}
	}
	if n := d.Len(); n != live {
		t.Errorf("Len() = %d, want %d", n, live)
	}
	got := maps.Collect(d.All())
	for id, e := range got {
		if w, ok := want[id]; !ok || e != w {
			t.Errorf("All() yields %q: %+v; want %+v, %v", id, e, w, ok)
		}
	}
	if len(got) != len(want) {
		t.Errorf("All() yields %d restaurants, want %d", len(got), len(want))
	}
	for _, id := range []string{"never-seen", "r", ""} {
		if _, ok := want[id]; ok {
			continue
		}
		if e, ok := d.Get(id); ok {
			t.Errorf("Get(%q) = %+v, true; want unknown", id, e)
		}
		if _, ok := d.Lookup(id); ok {
			t.Errorf("Lookup(%q) found a restaurant never set", id)
		}
	}
}

func liveEntry(c s2.CellID, v int64) directory.Entry { return directory.Entry{Cell: c, Version: v} }

func TestParseVersion(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want int64
		ok   bool
	}{
		{"7", 7, true},
		{"0", 0, true},
		{"-3", -3, true},
		{"9223372036854775807", 1<<63 - 1, true},
		{`"12"`, 12, true}, // a string that holds a number, as json.Number takes it
		{"9223372036854775808", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{`"abc"`, 0, false},
		{`""`, 0, false},
		{"null", 0, false},
		{"", 0, false}, // absent
		{"true", 0, false},
		{"{}", 0, false},
	} {
		v, err := parseVersion(json.RawMessage(tc.raw))
		if (err == nil) != tc.ok || tc.ok && v != tc.want {
			t.Errorf("parseVersion(%s) = %d, %v; want %d, ok %v", tc.raw, v, err, tc.want, tc.ok)
		}
	}
}

// TestWarmSkipsOnlyUnreadableDocuments: a restaurant document the warm
// cannot read, of another shape than ingest writes (its page is then
// decoded again hit by hit) or with a value it cannot take, is skipped,
// and only it: the rest of its page and the pages after it are read.
func TestWarmSkipsOnlyUnreadableDocuments(t *testing.T) {
	e := newEnv(t, envOptions{partitions: 1})
	p := offlinePipeline(t)
	p.ix.admin = e.admin
	p.ix.warmSize = 3 // pages of good and bad documents, and pages of good ones only
	tg := newTarget(testIndex, e.m, true)
	ctx := context.Background()
	lat, lon := 37.7749, -122.4194
	leaf := s2.CellIDFromLatLng(s2.LatLngFromDegrees(lat, lon))
	lvl := e.m.Level()
	shard, routing := tg.routing(leaf)
	token := leaf.Parent(lvl).ToToken()
	// doc is a restaurant's source with members in place of its location
	// and version.
	doc := func(id, members string) []byte {
		return []byte(`{"relation":"restaurant","geo_cell":"` + token + `","doc_id":"restaurant:` + id + `",` + members + `}`)
	}
	bodies := map[string][]byte{
		"r-array-location":  doc("r-array-location", fmt.Sprintf(`"version":3,"location":[%v,%v]`, lon, lat)),
		"r-string-location": doc("r-string-location", fmt.Sprintf(`"version":3,"location":"%v,%v"`, lat, lon)),
		"r-fraction":        doc("r-fraction", `"version":1.5`),
		"r-string-version":  doc("r-string-version", `"version":"12"`),
		"r-no-location":     doc("r-no-location", `"version":3`),
		"r-number-cell": []byte(fmt.Sprintf(`{"relation":"restaurant","geo_cell":123,"doc_id":"restaurant:r-number-cell","version":3,"location":{"lat":%v,"lon":%v}}`,
			lat, lon)),
	}
	want := map[string]directory.Entry{"r-string-version": liveEntry(leaf.Parent(lvl), 12), "r-no-location": liveEntry(leaf.Parent(lvl), 3)}
	for i := range 8 {
		id := fmt.Sprintf("r-%d", i)
		bodies[id] = restaurantBody(nil, id, 3, leaf, lat, lon, lvl)
		want[id] = liveEntry(leaf, 3)
	}
	w, err := bulk.New(e.client, bulk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for id, body := range bodies {
		err := w.Add(ctx, bulk.Item{Action: bulk.Index, Index: testIndex, ID: schema.RestaurantID(id), Routing: routing,
			Version: 3, VersionType: bulk.External, Shard: e.m.Shard(shard).Name, Body: body})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.OK != int64(len(bodies)) {
		t.Fatalf("%d of %d documents written", st.OK, len(bodies))
	}
	d := directory.New()
	ctx, cancel := context.WithTimeout(ctx, realenv.Slack(20*time.Second))
	defer cancel()
	if err := p.ix.warm(ctx, &tg, d); err != nil {
		t.Fatal(err)
	}
	checkDirectory(t, d, want)
}

// A new generation never reads the whole directory again: one that only
// lost partitions, or kept them all, keeps what it knows, and one that
// gained partitions marks them cold (their restaurants are looked up as
// they come, indexer_gained.go).
func TestNewGenerationReadsOnlyForGainedPartitions(t *testing.T) {
	e := newEnv(t, envOptions{partitions: 1})
	p := offlinePipeline(t)
	p.ix.admin = e.admin
	p.ix.targets = []target{newTarget(testIndex, e.m, true)}
	parts := func(ids ...int) map[partKey]bool {
		out := map[partKey]bool{}
		for _, id := range ids {
			out[partKey{"events", id}] = true
		}
		return out
	}
	p.loop.assigned = parts(0, 1, 2, 3)
	p.ix.dirGen = 1
	ctx := context.Background()
	gen := int64(1)
	for i, step := range []struct {
		owned []int
		read  bool
		cold  string // the cold partitions after it
		skip  int64  // generations passed unseen before it
	}{
		{[]int{2, 3}, false, "[]", 0},          // lost two
		{[]int{2, 3}, false, "[]", 0},          // kept both
		{[]int{1, 2, 3}, false, "[1]", 0},      // gained one
		{[]int{0, 1, 2, 3}, false, "[0 1]", 0}, // gained another
		{[]int{0, 2, 3}, false, "[0]", 0},      // lost one of them
		{[]int{3}, false, "[]", 0},             // lost two more
		{[]int{2, 3}, false, "[2 3]", 1},       // one unseen: 3 may have been another's meanwhile
	} {
		before := p.ix.warmStats.reads.Load()
		gen += 1 + step.skip
		if err := p.loop.enterGeneration(ctx, &generation{id: gen, owned: parts(step.owned...)}); err != nil {
			t.Fatal(err)
		}
		if read := p.ix.warmStats.reads.Load() > before; read != step.read {
			t.Errorf("step %d (owned %v): read the directory %v, want %v", i, step.owned, read, step.read)
		}
		if p.ix.dirGen != gen {
			t.Errorf("step %d: directory generation %d, want %d", i, p.ix.dirGen, gen)
		}
		if cold := fmt.Sprint(slices.Sorted(maps.Keys(p.ix.cold.parts))); cold != step.cold {
			t.Errorf("step %d (owned %v): cold partitions %s, want %s", i, step.owned, cold, step.cold)
		}
	}
}
