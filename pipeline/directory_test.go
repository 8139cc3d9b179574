package pipeline

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	"github.com/golang/geo/s2"
)

func TestDirectory(t *testing.T) {
	d := newDirectory()
	sf := s2.CellIDFromLatLng(s2.LatLngFromDegrees(37.77, -122.42))
	ny := s2.CellIDFromLatLng(s2.LatLngFromDegrees(40.71, -74.0))
	if _, ok := d.lookup("r1"); ok {
		t.Fatal("lookup of an unknown restaurant succeeded")
	}
	if !d.set("r1", sf, 5) || d.size() != 1 {
		t.Fatalf("set r1 v5: size %d", d.size())
	}
	if d.set("r1", ny, 5) || d.set("r1", ny, 4) {
		t.Error("set with an equal or older version changed the entry")
	}
	if c, ok := d.lookup("r1"); !ok || c != sf {
		t.Errorf("lookup(r1) = %v, %v; want the SF cell", c, ok)
	}
	if !d.set("r1", ny, 6) {
		t.Error("set with a newer version was refused")
	}
	if d.remove("r1", 6) {
		t.Error("remove with an equal version changed the entry")
	}
	if !d.remove("r1", 7) || d.size() != 0 {
		t.Fatalf("remove r1 v7: size %d, want 0", d.size())
	}
	if _, ok := d.lookup("r1"); ok {
		t.Error("lookup of a deleted restaurant succeeded")
	}
	e, ok := d.get("r1")
	if !ok || !e.deleted || e.version != 7 || e.cell != ny {
		t.Errorf("get(r1) = %+v, want deleted at v7, last cell kept", e)
	}
	if d.set("r1", sf, 7) {
		t.Error("an upsert replayed at the deleted version was accepted")
	}
	if !d.set("r1", sf, 8) || d.size() != 1 {
		t.Errorf("re-creating r1 at v8: size %d, want 1", d.size())
	}
	// Unknown deletes are remembered, live count unchanged.
	if !d.remove("r2", 3) || d.size() != 1 {
		t.Errorf("remove of unknown r2: size %d, want 1", d.size())
	}
	// Two copies seen while warming resolve to the higher version.
	d.warm("r3", ny.Parent(10), 9)
	d.warm("r3", sf.Parent(10), 4)
	if c, _ := d.lookup("r3"); c != ny.Parent(10) {
		t.Errorf("warm kept %v, want the version 9 copy's cell", c)
	}
}

// A new generation never reads the whole directory again while the
// member's assignment can be read: one that only lost partitions, or kept
// them all, keeps what it knows, and one that gained partitions marks them
// cold (their restaurants are looked up as they come, gained.go). An
// assignment that cannot be read makes it read the directory again.
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
	var next map[partKey]bool
	p.describeGroup = func(context.Context) (map[partKey]bool, bool, error) {
		if next == nil {
			return nil, false, nil
		}
		return next, true, nil
	}
	p.assigned = parts(0, 1, 2, 3)
	p.ix.dirGen = 1
	ctx := context.Background()
	gen := int64(1)
	for i, step := range []struct {
		owned []int // nil: the assignment cannot be read
		read  bool
		cold  string // the cold partitions after it
		skip  int64  // generations passed unseen before it
	}{
		{[]int{2, 3}, false, "[]", 0},          // lost two
		{[]int{2, 3}, false, "[]", 0},          // kept both
		{[]int{1, 2, 3}, false, "[1]", 0},      // gained one
		{[]int{0, 1, 2, 3}, false, "[0 1]", 0}, // gained another
		{[]int{0, 2, 3}, false, "[0]", 0},      // lost one of them
		{nil, true, "[]", 0},                   // unknown
		{[]int{3}, true, "[]", 0},              // nothing to compare with after an unknown
		{[]int{3}, false, "[]", 0},
		{[]int{2, 3}, false, "[2 3]", 1}, // one unseen: 3 may have been another's meanwhile
	} {
		next = nil
		if step.owned != nil {
			next = parts(step.owned...)
		}
		before := p.ix.warmStats.reads.Load()
		gen += 1 + step.skip
		if err := p.newGeneration(ctx, gen); err != nil {
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
