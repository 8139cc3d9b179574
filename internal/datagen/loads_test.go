package datagen

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/router"
)

func TestLoads(t *testing.T) {
	us := mustUS(t)
	small := []Restaurant{
		{ID: "a", Lat: 40.7, Lng: -74, Dishes: 3},
		{ID: "b", Lat: 40.7, Lng: -74, Dishes: 4},
		{ID: "c", Lat: -33.9, Lng: 151.2, Dishes: 1},
		{ID: "d", Lat: 0, Lng: -180, Dishes: 10},
	}
	tests := []struct {
		name      string
		rs        []Restaurant
		level     int
		wantCells int // -1: don't check
	}{
		{"US level 10", us, CellLevel, -1},
		{"US level 0", us, 0, -1},
		{"small level 10", small, CellLevel, 3},
		{"small leaf level", small, s2.MaxLevel, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			loads := Loads(tc.rs, tc.level)
			var want int64
			for _, r := range tc.rs {
				want += 1 + int64(r.Dishes)
			}
			if got := TotalDocs(loads); got != want {
				t.Errorf("TotalDocs(Loads(%d restaurants, %d)) = %d, want %d", len(tc.rs), tc.level, got, want)
			}
			if tc.wantCells >= 0 && len(loads) != tc.wantCells {
				t.Errorf("len(Loads(%d restaurants, %d)) = %d, want %d", len(tc.rs), tc.level, len(loads), tc.wantCells)
			}
			for i, l := range loads {
				if !l.Cell.IsValid() || l.Cell.Level() != tc.level {
					t.Fatalf("Loads(..., %d)[%d].Cell = %v (level %d), want a valid level-%d cell", tc.level, i, l.Cell, l.Cell.Level(), tc.level)
				}
				if l.Docs < 2 {
					t.Fatalf("Loads(..., %d)[%d].Docs = %d, want >= 2 (a restaurant and a dish)", tc.level, i, l.Docs)
				}
				if i > 0 && loads[i-1].Cell >= l.Cell {
					t.Fatalf("Loads(..., %d)[%d].Cell = %v after %v, want strictly ascending", tc.level, i, l.Cell, loads[i-1].Cell)
				}
				if got := s2.CellIDFromToken(l.Cell.ToToken()); got != l.Cell {
					t.Fatalf("CellIDFromToken(%q) = %v, want %v", l.Cell.ToToken(), got, l.Cell)
				}
			}
		})
	}
}

func TestLoadsEmpty(t *testing.T) {
	rs := []Restaurant{{Lat: 1, Lng: 2, Dishes: 3}}
	tests := []struct {
		name  string
		rs    []Restaurant
		level int
	}{
		{"no restaurants", nil, CellLevel},
		{"negative level", rs, -1},
		{"level too deep", rs, s2.MaxLevel + 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Loads(tc.rs, tc.level); got != nil {
				t.Errorf("Loads(%v, %d) = %v, want nil", tc.rs, tc.level, got)
			}
		})
	}
}

func TestLoadsSmallCells(t *testing.T) {
	nyc := s2.CellIDFromLatLng(s2.LatLngFromDegrees(40.7, -74)).Parent(CellLevel)
	rs := []Restaurant{{Lat: 40.7, Lng: -74, Dishes: 3}, {Lat: 40.7, Lng: -74, Dishes: 4}}
	want := []router.CellLoad{{Cell: nyc, Docs: 9}}
	if got := Loads(rs, CellLevel); !slices.Equal(got, want) {
		t.Errorf("Loads(%v, %d) = %v, want %v", rs, CellLevel, got, want)
	}
}

func TestWriteReadLoads(t *testing.T) {
	loads := Loads(mustUS(t), CellLevel)
	var buf bytes.Buffer
	if err := router.WriteLoads(&buf, loads); err != nil {
		t.Fatalf("router.WriteLoads() error: %v", err)
	}
	text := buf.String()
	if !strings.HasPrefix(text, "cell,docs\n") || !strings.HasSuffix(text, "\n") {
		t.Errorf("router.WriteLoads() output starts %.20q and ends %q, want header cell,docs and a final newline", text, text[len(text)-1:])
	}
	if got, want := strings.Count(text, "\n"), len(loads)+1; got != want {
		t.Errorf("router.WriteLoads() wrote %d lines, want %d", got, want)
	}
	got, err := router.ReadLoads(&buf, CellLevel)
	if err != nil {
		t.Fatalf("router.ReadLoads(router.WriteLoads(loads), %d) error: %v", CellLevel, err)
	}
	if !slices.Equal(got, loads) {
		t.Errorf("router.ReadLoads(router.WriteLoads(loads), %d) differs from loads (%d vs %d cells)", CellLevel, len(got), len(loads))
	}
}
