package router

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/golang/geo/s2"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
)

const mile = 1609.344

// worldMap returns a valid map of n shards over the whole sphere, with
// starts spread evenly along the curve.
func worldMap(t testing.TB, n, rns int) *Map {
	t.Helper()
	shards := make([]Shard, n)
	total := numPos(DefaultLevel)
	if rns == 0 {
		rns = n
	}
	for i := range shards {
		name := ShardName(i)
		shards[i] = Shard{
			Name:    name,
			Start:   posCell(total*uint64(i)/uint64(n), DefaultLevel).ToToken(),
			Routing: RoutingKey(name, i, rns, n),
		}
	}
	m, err := New(DefaultLevel, rns, shards)
	if err != nil {
		t.Fatalf("worldMap(%d, %d): %v", n, rns, err)
	}
	return m
}

func TestSeedFigures(t *testing.T) {
	m := worldMap(t, 18, 0)
	cases := []struct {
		name      string
		lat, lng  float64
		radiusMi  float64
		wantCells int
	}{
		{"San Francisco 15 mi", 37.7749, -122.4194, 15, 40},
		{"San Francisco 25 mi", 37.7749, -122.4194, 25, 98},
		{"New York 15 mi", 40.7128, -74.0060, 15, 38},
		{"San Jose 15 mi", 37.3382, -121.8863, 15, 38},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cov, err := m.CoverCircle(tc.lat, tc.lng, tc.radiusMi*mile)
			if err != nil {
				t.Fatal(err)
			}
			if len(cov.Cells) != tc.wantCells {
				t.Errorf("CoverCircle(%v, %v, %v mi) = %d cells, want %d", tc.lat, tc.lng, tc.radiusMi, len(cov.Cells), tc.wantCells)
			}
			for _, c := range cov.Cells {
				if c.Level() != DefaultLevel {
					t.Errorf("cell %s at level %d, want %d", c.ToToken(), c.Level(), DefaultLevel)
				}
			}
		})
	}
	cell, err := m.Cell(37.7749, -122.4194)
	if err != nil || cell.ToToken() != "808581" {
		t.Errorf("Cell(San Francisco) = %v, %v, want 808581", cell.ToToken(), err)
	}
}

func TestCoverRect(t *testing.T) {
	m := worldMap(t, 18, 0)
	// A small box around downtown San Francisco lies in few cells, and the
	// centre's cell is among them.
	cov, err := m.CoverRect(37.70, -122.52, 37.83, -122.35)
	if err != nil {
		t.Fatal(err)
	}
	if len(cov.Cells) < 2 || len(cov.Cells) > 12 {
		t.Errorf("CoverRect(SF) = %d cells, want 2..12", len(cov.Cells))
	}
	found := false
	for _, c := range cov.Cells {
		found = found || c.ToToken() == "808581"
	}
	if !found {
		t.Errorf("CoverRect(SF) = %v, want it to include 808581", cov.Cells)
	}
	// A box across the antimeridian covers cells on both sides.
	cov, err = m.CoverRect(-17.5, 179.9, -17.4, -179.9)
	if err != nil {
		t.Fatal(err)
	}
	east, west := false, false
	for _, c := range cov.Cells {
		lng := c.LatLng().Lng.Degrees()
		east, west = east || lng > 0, west || lng < 0
	}
	if !east || !west || len(cov.Cells) > 12 {
		t.Errorf("CoverRect(antimeridian) = %d cells, east %v west %v; want a small covering on both sides", len(cov.Cells), east, west)
	}
	for _, bad := range [][4]float64{{10, 0, 5, 1}, {math.NaN(), 0, 1, 1}, {0, 0, 91, 1}} {
		if _, err := m.CoverRect(bad[0], bad[1], bad[2], bad[3]); !errors.Is(err, ErrBadCoordinate) {
			t.Errorf("CoverRect(%v) error = %v, want ErrBadCoordinate", bad, err)
		}
	}
}

func TestLocateRejectsBadCoordinates(t *testing.T) {
	m := worldMap(t, 12, 0)
	for _, c := range [][2]float64{
		{math.NaN(), 0}, {0, math.NaN()}, {math.Inf(1), 0}, {0, math.Inf(-1)},
		{90.0001, 0}, {-90.0001, 0}, {0, 180.0001}, {0, -180.0001},
	} {
		if _, err := m.Locate(c[0], c[1]); !errors.Is(err, ErrBadCoordinate) {
			t.Errorf("Locate(%v, %v) error = %v, want ErrBadCoordinate", c[0], c[1], err)
		}
	}
	for _, c := range [][2]float64{{90, 180}, {-90, -180}, {0, 0}} {
		if _, err := m.Locate(c[0], c[1]); err != nil {
			t.Errorf("Locate(%v, %v) error = %v, want nil", c[0], c[1], err)
		}
	}
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1), 3e7} {
		if _, err := m.CoverCircle(0, 0, r); !errors.Is(err, ErrBadRadius) {
			t.Errorf("CoverCircle(0, 0, %v) error = %v, want ErrBadRadius", r, err)
		}
	}
}

// Every cell belongs to exactly one shard: the shard LocateCell names owns
// the cell by its range, and the ranges tile the curve with no gap.
func TestEveryCellInExactlyOneShard(t *testing.T) {
	for _, n := range []int{1, 12, 18, 36} {
		m := worldMap(t, n, 0)
		var next uint64
		for i := 0; i < n; i++ {
			first, last := m.Range(i)
			if p := cellPos(first, m.level); p != next {
				t.Fatalf("%d shards: shard %d starts at position %d, want %d", n, i, p, next)
			}
			next = cellPos(last, m.level) + 1
			for _, c := range []s2.CellID{first, last, first.ChildBeginAtLevel(30), last.ChildEndAtLevel(30).Prev()} {
				if got := m.LocateCell(c); got != i {
					t.Errorf("%d shards: LocateCell(%s) = %d, want %d", n, c.ToToken(), got, i)
				}
			}
		}
		if next != numPos(m.level) {
			t.Errorf("%d shards: the last shard ends at position %d, want %d", n, next, numPos(m.level))
		}
	}
}

// Locate agrees with Cover at the centre: the shard of a location is among
// the shards of any circle around it, and owns the centre's cell.
func TestLocateAgreesWithCover(t *testing.T) {
	m := worldMap(t, 18, 0)
	for k := 0; k < 500; k++ {
		// A deterministic spread of points over the sphere.
		lat := math.Asin(2*math.Mod(float64(k)*0.618034, 1)-1) * 180 / math.Pi
		lng := math.Mod(float64(k)*137.508, 360) - 180
		i, err := m.Locate(lat, lng)
		if err != nil {
			t.Fatal(err)
		}
		cell, _ := m.Cell(lat, lng)
		cov, err := m.CoverCircle(lat, lng, 1000)
		if err != nil {
			t.Fatal(err)
		}
		hasCell, hasShard := false, false
		for _, c := range cov.Cells {
			hasCell = hasCell || c == cell
		}
		for _, s := range cov.Shards {
			hasShard = hasShard || s == i
		}
		if !hasCell || !hasShard || m.LocateCell(cell) != i {
			t.Errorf("Locate(%v, %v) = %d (cell %s), not in Cover = %v", lat, lng, i, cell.ToToken(), cov.Shards)
		}
	}
}

func TestRoutingKeysLandOnTheirShard(t *testing.T) {
	for _, n := range []int{1, 5, 12, 18, 24, 36, 64} {
		for _, rns := range []int{n, DefaultRoutingNumShards(n), 4 * n} {
			t.Run(fmt.Sprintf("%d/%d", n, rns), func(t *testing.T) {
				seen := make(map[string]bool)
				for i := 0; i < n; i++ {
					key := RoutingKey(ShardName(i), i, rns, n)
					if got := shardhash.ForRouting(key, rns, n); got != i {
						t.Errorf("RoutingKey(%q, %d) = %q lands on %d", ShardName(i), i, key, got)
					}
					if again := RoutingKey(ShardName(i), i, rns, n); again != key {
						t.Errorf("RoutingKey(%q, %d) not deterministic: %q then %q", ShardName(i), i, key, again)
					}
					if seen[key] {
						t.Errorf("RoutingKey %q repeats", key)
					}
					seen[key] = true
				}
			})
		}
	}
}

func TestDefaultRoutingNumShards(t *testing.T) {
	// Values pinned by OpenSearch's testCalculateNumRoutingShards and the
	// table derived from it.
	want := map[int]int{1: 1024, 2: 1024, 3: 768, 9: 576, 12: 768, 17: 544, 18: 576, 32: 1024, 33: 528, 36: 576, 512: 1024, 1024: 2048, 2048: 4096}
	for n, w := range want {
		if got := DefaultRoutingNumShards(n); got != w {
			t.Errorf("DefaultRoutingNumShards(%d) = %d, want %d", n, got, w)
		}
	}
}

func TestParseDistance(t *testing.T) {
	cases := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"25mi", 25 * mile, true}, {"10km", 10000, true}, {"500m", 500, true}, {"2.5 KM", 2500, true},
		{"25", 0, false}, {"mi", 0, false}, {"-3km", 0, false}, {"NaNkm", 0, false}, {"25 miles", 0, false}, {"1e9km", 0, false},
	}
	for _, tc := range cases {
		got, err := ParseDistance(tc.in)
		if (err == nil) != tc.ok || (tc.ok && math.Abs(got-tc.want) > 1e-9) {
			t.Errorf("ParseDistance(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// Random cells of every level from 10 to 30 under a planned map: the shard
// LocateCell names is the one and only shard whose range holds the cell's
// level-10 ancestor.
func TestRandomCellsLocateToTheirOwnRange(t *testing.T) {
	data, err := os.ReadFile("../testdata/maps/us-18.json")
	if err != nil {
		t.Fatal(err)
	}
	m, err := Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	checked := 0
	for k := 0; k < 20000; k++ {
		leaf := s2.CellID(rng.Uint64()>>3<<3 | 1) // faces 6 and 7 are invalid
		if !leaf.IsValid() {
			continue
		}
		checked++
		c := leaf.Parent(10 + rng.IntN(21))
		anc := c.Parent(m.Level())
		owners := 0
		for i := 0; i < m.NumShards(); i++ {
			if first, last := m.Range(i); first <= anc && anc <= last {
				owners++
				if got := m.LocateCell(c); got != i {
					t.Fatalf("LocateCell(%s) = %d, but shard %d's range holds it", c.ToToken(), got, i)
				}
			}
		}
		if owners != 1 {
			t.Fatalf("cell %s lies in %d shard ranges, want exactly 1", c.ToToken(), owners)
		}
	}
	if checked < 10000 {
		t.Errorf("checked only %d cells", checked)
	}
}

func TestLocateDoesNotAllocate(t *testing.T) {
	m := worldMap(t, 18, 0)
	allocs := testing.AllocsPerRun(1000, func() {
		if _, err := m.Locate(37.7749, -122.4194); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Locate allocates %v times per call, want 0", allocs)
	}
}
