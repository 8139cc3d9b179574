package migrate

import (
	"context"
	"math"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/router"
)

func TestCellLoads(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 300)
	ctx := context.Background()
	if err := e.admin.Refresh(ctx, e.alias); err != nil {
		t.Fatal(err)
	}
	live, index, loads, err := LiveLoads(ctx, e.admin, e.alias)
	if err != nil {
		t.Fatal(err)
	}
	if live.Hash() != e.src.Hash() || index != e.v1 {
		t.Errorf("LiveLoads map %s of %s, want %s of %s", live.ShortHash(), index, e.src.ShortHash(), e.v1)
	}
	want := map[s2.CellID]int64{}
	for _, d := range e.docs.all() {
		want[d.cell(10)]++
	}
	got := map[s2.CellID]int64{}
	for i, l := range loads {
		got[l.Cell] = l.Docs
		if i > 0 && loads[i-1].Cell >= l.Cell {
			t.Fatalf("loads not sorted by cell at %d", i)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("CellLoads: %d cells, want %d (%v vs %v)", len(got), len(want), got, want)
	}
}

func TestDiffMaps(t *testing.T) {
	realenv.Parallel(t)
	f, err := os.Open(testenv.Path(t, testenv.LoadsUS))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	loads, err := router.ReadLoads(f, 10)
	if err != nil {
		t.Fatal(err)
	}
	old, next := testenv.LoadMap(t, testenv.MapUS18), testenv.LoadMap(t, testenv.MapUS24)
	d := DiffMaps(old, next, loads)
	if !reflect.DeepEqual(d.Added, []string{"sol", "terra", "umbra", "vega", "wren", "xeno"}) || len(d.Removed) != 0 {
		t.Errorf("added %v, removed %v; want the 6 new names and none removed", d.Added, d.Removed)
	}
	if len(d.Resized)+len(d.Unchanged) != 18 || d.Docs != 55_884_144 || d.Moved <= 0 || d.Moved >= d.Docs {
		t.Errorf("diff %+v", d)
	}
	var oldSum, newSum int64
	for _, c := range d.Resized {
		oldSum += c.OldDocs
		newSum += c.NewDocs
	}
	if oldSum == 0 || newSum == 0 {
		t.Errorf("resized shards carry no documents: %+v", d.Resized)
	}
	// Against itself: nothing changes.
	same := DiffMaps(old, old, loads)
	if same.Moved != 0 || len(same.Unchanged) != 18 || len(same.Resized)+len(same.Added)+len(same.Removed) != 0 {
		t.Errorf("DiffMaps(m, m) = %+v", same)
	}
	// Another routing, same cells: the same shards by name.
	if r := DiffMaps(old, testenv.LoadMap(t, testenv.MapUS18RNS576), loads); r.Moved != 0 {
		t.Errorf("a map that only changes routing keys moves %d documents", r.Moved)
	}
}

// judgeCells are four level-10 cells in curve order, a to d.
func judgeCells(t *testing.T) []s2.CellID {
	t.Helper()
	var cells []s2.CellID
	for _, p := range [][2]float64{{37.7749, -122.4194}, {41.8781, -87.6298}, {25.7617, -80.1918}, {40.7128, -74.0060}} {
		cells = append(cells, s2.CellIDFromLatLng(s2.LatLngFromDegrees(p[0], p[1])).Parent(10))
	}
	slices.Sort(cells)
	if len(slices.Compact(slices.Clone(cells))) != 4 {
		t.Fatalf("judge cells are not four: %v", cells)
	}
	return cells
}

// twoShards is a map of two shards, the second starting at cell.
func twoShards(t *testing.T, cell s2.CellID) *router.Map {
	t.Helper()
	shards := []router.Shard{{Name: "ares", Start: s2.CellIDFromFace(0).ChildBeginAtLevel(10).ToToken()}, {Name: "bravo", Start: cell.ToToken()}}
	for i := range shards {
		shards[i].Routing = router.RoutingKey(shards[i].Name, i, 2, 2)
	}
	m, err := router.New(10, 0, shards)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestJudge(t *testing.T) {
	realenv.Parallel(t)
	cells := judgeCells(t)
	atC, atD := twoShards(t, cells[2]), twoShards(t, cells[3]) // {a,b},{c,d} and {a,b,c},{d}
	loads := func(docs ...int64) []router.CellLoad {
		out := make([]router.CellLoad, len(docs))
		for i, d := range docs {
			out[i] = router.CellLoad{Cell: cells[i], Docs: d}
		}
		return out
	}
	for _, tc := range []struct {
		name       string
		live, next *router.Map
		loads      []router.CellLoad
		now, prop  float64 // max/mean
		moved      int64
		worth      bool
		reason     string
	}{
		// 20 and 20 documents: nothing to gain.
		{"balanced", atC, atC, loads(10, 10, 10, 10), 1, 1, 0, false,
			"not worth a migration: max/mean 1.00 → 1.00 is within the alert threshold 1.50 and drops by less than 0.20; fan-out 0.00 → 0.00 drops by less than 0.10"},
		// 20 and 60, mean 40: 1.5, not above the alert; {30, 50}: 1.25,
		// a drop of 0.25. c's 10 documents move.
		{"drop", atC, atD, loads(10, 10, 10, 50), 1.5, 1.25, 10, true,
			"worth a migration: max/mean drops from 1.50 to 1.25, by at least 0.20; 10 of 80 documents change shard"},
		// 20 and 100, mean 60: 1.67, above the alert; {30, 90}: 1.5.
		{"above the alert", atC, atD, loads(10, 10, 10, 90), 100.0 / 60, 1.5, 10, true,
			"worth a migration: max/mean 1.67 is above the alert threshold 1.50 and the new map brings it to 1.50; 10 of 120 documents change shard"},
		// 20 and 30, mean 25: 1.2; {34, 16}: 1.36, worse.
		{"worse", atC, atD, loads(10, 10, 14, 16), 1.2, 1.36, 14, false,
			"not worth a migration: max/mean 1.20 → 1.36 is within the alert threshold 1.50 and drops by less than 0.20; fan-out 0.00 → 0.00 drops by less than 0.10"},
		// 20 and 80, mean 50: 1.6 above the alert; the same map again.
		{"above the alert, no better", atC, atC, loads(10, 10, 10, 70), 1.6, 1.6, 0, false,
			"not worth a migration: max/mean 1.60 is above the alert threshold 1.50 but the new map does not lower it (1.60); plan with another shard count or --max-imbalance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := Judge(tc.live, tc.next, tc.loads, nil)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(v.Now.Imbalance-tc.now) > 1e-12 || math.Abs(v.Proposed.Imbalance-tc.prop) > 1e-12 || v.Moved != tc.moved || v.Worth != tc.worth {
				t.Errorf("Judge = now %v, new %v, moved %d, worth %v; want %v, %v, %d, %v", v.Now.Imbalance, v.Proposed.Imbalance, v.Moved, v.Worth, tc.now, tc.prop, tc.moved, tc.worth)
			}
			if v.Reason != tc.reason {
				t.Errorf("Judge reason\n %q, want\n %q", v.Reason, tc.reason)
			}
		})
	}
}

// On the US fixture and the held-out searches: the 18-shard map against
// itself moves nothing and is not worth a migration; against the 24-shard
// map, the fan-out and moves are the evaluation's own.
func TestJudgeUS(t *testing.T) {
	realenv.Parallel(t)
	f, err := os.Open(testenv.Path(t, testenv.LoadsUS))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	loads, err := router.ReadLoads(f, 10)
	if err != nil {
		t.Fatal(err)
	}
	work, err := router.DeriveWorkload(loads, 10, 200)
	if err != nil {
		t.Fatal(err)
	}
	us18, us24 := testenv.LoadMap(t, testenv.MapUS18), testenv.LoadMap(t, testenv.MapUS24)
	same, err := Judge(us18, us18, loads, work)
	if err != nil {
		t.Fatal(err)
	}
	met, _ := router.Evaluate(us18, loads, work)
	if same.Worth || same.Moved != 0 || same.Now != same.Proposed || same.Now.Fanout != met.Fanout || same.Now.Imbalance != met.MaxOverMean {
		t.Errorf("Judge(us18, us18) = %+v; want no move, not worth, the figures of Evaluate %+v", same, met)
	}
	next, err := Judge(us18, us24, loads, work)
	if err != nil {
		t.Fatal(err)
	}
	if next.Moved <= 0 || next.Moved >= next.Docs || next.Docs != 55_884_144 || next.Proposed.Fanout <= next.Now.Fanout {
		t.Errorf("Judge(us18, us24) = %+v; want some documents moved and more shards per search", next)
	}
}
