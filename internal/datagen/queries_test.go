package datagen

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/router"
)

func TestQueries(t *testing.T) {
	rs := mustUS(t)
	const n = 20_000
	qs := Queries(rs, n, SeedHeldoutQueries)
	if len(qs) != n {
		t.Fatalf("len(Queries(%d restaurants, %d, %d)) = %d, want %d", len(rs), n, SeedHeldoutQueries, len(qs), n)
	}
	radii := map[float64]int{}
	for _, m := range QueryRadiiMiles {
		radii[m*MetersPerMile] = 0
	}
	// Searches follow the documents: nearly every centre (at most 1 km from
	// a restaurant) falls in a cell that holds restaurants.
	occupied := map[s2.CellID]bool{}
	for _, l := range Loads(rs, CellLevel) {
		occupied[l.Cell] = true
	}
	inOccupied := 0
	for i, q := range qs {
		if occupied[s2.CellIDFromLatLng(s2.LatLngFromDegrees(q.Lat, q.Lng)).Parent(CellLevel)] {
			inOccupied++
		}
		if _, ok := radii[q.RadiusM]; !ok {
			t.Fatalf("Queries(...)[%d].RadiusM = %v, want one of %v miles", i, q.RadiusM, QueryRadiiMiles)
		}
		radii[q.RadiusM]++
		if !(q.Lat >= -maxAbsLat && q.Lat <= maxAbsLat && q.Lng >= -180 && q.Lng < 180) {
			t.Fatalf("Queries(...)[%d] = (%v, %v), want a valid position", i, q.Lat, q.Lng)
		}
	}
	if frac := float64(inOccupied) / n; frac < 0.95 {
		t.Errorf("Queries(...) has %.3f of centres in cells with restaurants, want >= 0.95", frac)
	}
	for r, count := range radii {
		if want := n / len(QueryRadiiMiles); math.Abs(float64(count-want)) > 0.1*float64(want) {
			t.Errorf("Queries(...) has %d queries of radius %.1f m, want %d ± 10%%", count, r, want)
		}
	}

	tests := []struct {
		name      string
		a, b      []router.Query
		wantEqual bool
	}{
		{"same seed", qs, Queries(rs, n, SeedHeldoutQueries), true},
		{"different seed", qs, Queries(rs, n, SeedHeldoutQueries+1), false},
		{"prefix", qs[:100], Queries(rs, 100, SeedHeldoutQueries), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := slices.Equal(tc.a, tc.b); got != tc.wantEqual {
				t.Errorf("Queries equal = %v, want %v", got, tc.wantEqual)
			}
		})
	}
}

func TestQueriesJitter(t *testing.T) {
	tests := []struct {
		name string
		r    Restaurant
	}{
		{"equator", Restaurant{Lat: 0, Lng: 10}},
		{"antimeridian", Restaurant{Lat: 60, Lng: 179.999}},
		{"far north", Restaurant{Lat: 78.2, Lng: 15.6}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			qs := Queries([]Restaurant{tc.r}, 2_000, 9)
			var farthest float64
			for i, q := range qs {
				d := distanceKm(q.Lat, q.Lng, tc.r.Lat, tc.r.Lng)
				if d > QueryJitterKm*1.001 {
					t.Fatalf("Queries(%+v)[%d] is %.4f km from the restaurant, want <= %g", tc.r, i, d, QueryJitterKm)
				}
				farthest = max(farthest, d)
			}
			if farthest < 0.9*QueryJitterKm {
				t.Errorf("Queries(%+v) farthest centre is %.3f km away, want close to %g (uniform disc)", tc.r, farthest, QueryJitterKm)
			}
		})
	}
}

func TestQueriesEmpty(t *testing.T) {
	rs := []Restaurant{{Lat: 1, Lng: 2}}
	tests := []struct {
		name string
		rs   []Restaurant
		n    int
	}{
		{"no restaurants", nil, 10},
		{"zero queries", rs, 0},
		{"negative queries", rs, -3},
	}
	for _, tc := range tests {
		if got := Queries(tc.rs, tc.n, 1); got != nil {
			t.Errorf("Queries(%v, %d, 1) = %v, want nil", tc.rs, tc.n, got)
		}
	}
}

func TestWriteReadQueries(t *testing.T) {
	qs := []router.Query{
		{Lat: 40.712345678, Lng: -74.000004, RadiusM: 5 * MetersPerMile},
		{Lat: -0.000001, Lng: 179.999999, RadiusM: 50 * MetersPerMile},
	}
	const want = "lat,lng,radius_m\n40.71235,-74.00000,8046.7\n0.00000,180.00000,80467.2\n"
	var buf bytes.Buffer
	if err := router.WriteQueries(&buf, qs); err != nil {
		t.Fatalf("router.WriteQueries(%v) error: %v", qs, err)
	}
	if got := buf.String(); got != want {
		t.Fatalf("router.WriteQueries(%v) = %q, want %q", qs, got, want)
	}
	got, err := router.ReadQueries(&buf)
	if err != nil {
		t.Fatalf("router.ReadQueries(%q) error: %v", want, err)
	}
	// Queries leaves Weight zero; without a weight column it reads back as 1.
	wantQs := []router.Query{
		{Lat: 40.71235, Lng: -74, RadiusM: 8046.7, Weight: 1},
		{Lat: 0, Lng: 180, RadiusM: 80467.2, Weight: 1},
	}
	if !slices.Equal(got, wantQs) {
		t.Errorf("router.ReadQueries(%q) = %v, want %v", want, got, wantQs)
	}
}

// TestQueriesRoundTrip checks that generated queries survive
// router.WriteQueries and router.ReadQueries to within the written
// precision, with every weight read as 1.
func TestQueriesRoundTrip(t *testing.T) {
	qs := Queries(mustUS(t), 2_000, SeedHeldoutQueries)
	var buf bytes.Buffer
	if err := router.WriteQueries(&buf, qs); err != nil {
		t.Fatalf("router.WriteQueries() error: %v", err)
	}
	got, err := router.ReadQueries(&buf)
	if err != nil {
		t.Fatalf("router.ReadQueries(router.WriteQueries(qs)) error: %v", err)
	}
	if len(got) != len(qs) {
		t.Fatalf("router.ReadQueries(router.WriteQueries(qs)) has %d queries, want %d", len(got), len(qs))
	}
	for i, q := range qs {
		g := got[i]
		if math.Abs(g.Lat-q.Lat) > 5e-6 || math.Abs(g.Lng-q.Lng) > 5e-6 || math.Abs(g.RadiusM-q.RadiusM) > 0.05 || g.Weight != 1 {
			t.Fatalf("query %d read back as %+v, want about %+v with Weight 1", i, g, q)
		}
	}
}
