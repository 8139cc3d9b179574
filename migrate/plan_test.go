package migrate

import (
	"context"
	"os"
	"reflect"
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
