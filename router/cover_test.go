package router

import (
	"os"
	"testing"
)

// A region of more cells than MaxCoverCells is covered coarsely: no cell
// list, and a superset of the shards the exact covering names; the whole
// sphere names every shard, at once.
func TestCoverLargeRegionsCoarsely(t *testing.T) {
	m := loadUS18(t)
	whole, err := m.CoverCircle(40, -100, 20_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if whole.Cells != nil || whole.NumCells <= MaxCoverCells || len(whole.Shards) != m.NumShards() {
		t.Errorf("20,000 km: %d cells listed, %d counted, %d shards; want none listed, over %d counted, all %d shards",
			len(whole.Cells), whole.NumCells, len(whole.Shards), MaxCoverCells, m.NumShards())
	}
	c, err := Circle(40, -100, 2_500_000)
	if err != nil {
		t.Fatal(err)
	}
	exact := m.Cover(c)
	coarse, ok := m.coverCoarsely(c)
	if !ok {
		t.Fatalf("2,500 km (%d cells) was not covered coarsely", exact.NumCells)
	}
	have := map[int]bool{}
	for _, s := range coarse.Shards {
		have[s] = true
	}
	for _, s := range exact.Shards {
		if !have[s] {
			t.Errorf("the coarse covering misses shard %d of the exact one %v (coarse %v)", s, exact.Shards, coarse.Shards)
		}
	}
}

func loadUS18(t *testing.T) *Map {
	t.Helper()
	data, err := os.ReadFile("../testdata/maps/us-18.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
