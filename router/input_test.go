package router

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"
)

func TestReadLoadsErrors(t *testing.T) {
	cases := []struct {
		name, in string
		line     int
		want     string
	}{
		{"empty", "", 1, "empty input"},
		{"header only", "cell,docs\n", 1, "no cells"},
		{"bad header", "cell,count\n808581,1\n", 1, `header "cell,count"`},
		{"bad token", "cell,docs\n808581,1\nxyz,2\n", 3, `cell "xyz"`},
		{"upper-case token", "cell,docs\n808581,1\n8085A1,2\n", 3, "write it as"},
		{"wrong level", "cell,docs\n808584,1\n", 2, "level 9, want level 10"},
		{"negative docs", "cell,docs\n808581,-1\n", 2, `docs "-1"`},
		{"fractional docs", "cell,docs\n808581,1.5\n", 2, `docs "1.5"`},
		{"duplicate", "cell,docs\n808581,1\n808583,1\n808581,2\n", 4, "already given on line 2"},
		{"short row", "cell,docs\n808581\n", 2, "1 fields, want 2"},
		{"bad quoting", "cell,docs\n\"808581,1\n", 2, "quote"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadLoads(strings.NewReader(tc.in), DefaultLevel)
			var ie *InputError
			if !errors.As(err, &ie) || ie.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadLoads(%q) error = %v, want line %d and %q", tc.in, err, tc.line, tc.want)
			}
		})
	}
}

func TestReadQueriesErrors(t *testing.T) {
	cases := []struct {
		name, in string
		line     int
		want     string
	}{
		{"bad header", "lat,lon,radius_m\n1,2,3\n", 1, "header"},
		{"NaN", "lat,lng,radius_m\nNaN,2,3\n", 2, "finite number"},
		{"lat range", "lat,lng,radius_m\n95,2,3\n", 2, "coordinate out of range"},
		{"zero radius", "lat,lng,radius_m\n1,2,0\n", 2, "radius out of range"},
		{"huge radius", "lat,lng,radius_m\n1,2,1e9\n", 2, "radius out of range"},
		{"bad weight", "lat,lng,radius_m,weight\n1,2,3,0\n", 2, "weight 0"},
		{"not a number", "lat,lng,radius_m\n1,two,3\n", 2, `column 2 "two"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadQueries(strings.NewReader(tc.in))
			var ie *InputError
			if !errors.As(err, &ie) || ie.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ReadQueries(%q) error = %v, want line %d and %q", tc.in, err, tc.line, tc.want)
			}
		})
	}
}

func TestLoadsAndQueriesRoundTrip(t *testing.T) {
	loads := []CellLoad{{posCell(10, DefaultLevel), 5}, {posCell(3_000_000, DefaultLevel), 0}, {posCell(7, DefaultLevel), 1 << 40}}
	var b bytes.Buffer
	if err := WriteLoads(&b, loads); err != nil {
		t.Fatal(err)
	}
	got, err := ReadLoads(&b, DefaultLevel)
	if err != nil || len(got) != len(loads) {
		t.Fatalf("ReadLoads(WriteLoads) = %v, %v", got, err)
	}
	for i := range loads {
		if got[i] != loads[i] {
			t.Errorf("load %d = %v, want %v", i, got[i], loads[i])
		}
	}
	for _, qs := range [][]Query{
		{{Lat: 40.71234567, Lng: -74, RadiusM: 8046.72}, {Lat: -0.000001, Lng: 180, RadiusM: 1}},
		{{Lat: 1, Lng: 2, RadiusM: 3, Weight: 2.5}, {Lat: 4, Lng: 5, RadiusM: 6}},
	} {
		b.Reset()
		if err := WriteQueries(&b, qs); err != nil {
			t.Fatal(err)
		}
		back, err := ReadQueries(&b)
		if err != nil || len(back) != len(qs) {
			t.Fatalf("ReadQueries(WriteQueries) = %v, %v", back, err)
		}
		for i, q := range qs {
			r := back[i]
			if math.Abs(r.Lat-q.Lat) > 5e-6 || math.Abs(r.Lng-q.Lng) > 5e-6 || math.Abs(r.RadiusM-q.RadiusM) > 0.05 || r.weight() != q.weight() {
				t.Errorf("query %d = %+v, want %+v", i, r, q)
			}
		}
	}
}

func FuzzReadLoads(f *testing.F) {
	f.Add("cell,docs\n808581,10\n808583,3\n")
	f.Add("cell,docs\n\"808581\",1\n")
	f.Add("cell,docs\n8085,1\n")
	f.Fuzz(func(t *testing.T, in string) {
		loads, err := ReadLoads(strings.NewReader(in), DefaultLevel)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) && !strings.HasPrefix(err.Error(), "router: read") {
				t.Fatalf("ReadLoads error %v does not name a line", err)
			}
			return
		}
		seen := map[uint64]bool{}
		for _, l := range loads {
			if !l.Cell.IsValid() || l.Cell.Level() != DefaultLevel || l.Docs < 0 || seen[uint64(l.Cell)] {
				t.Fatalf("ReadLoads accepted %v", l)
			}
			seen[uint64(l.Cell)] = true
		}
	})
}
