package datagen

import (
	"strings"
	"sync"
	"testing"
)

// embeddedCities parses the embedded data once per test binary.
var embeddedCities = sync.OnceValues(Cities)

func mustCities(tb testing.TB) []City {
	tb.Helper()
	cities, err := embeddedCities()
	if err != nil {
		tb.Fatalf("Cities() error: %v", err)
	}
	return cities
}

func TestCitiesEmbedded(t *testing.T) {
	cities := mustCities(t)
	if got, want := len(cities), 24_323; got != want {
		t.Fatalf("len(Cities()) = %d, want %d", got, want)
	}
	byCountry := map[string]int{}
	for i, c := range cities {
		byCountry[c.Country]++
		if i > 0 && c.Population > cities[i-1].Population {
			t.Errorf("Cities()[%d] %s has population %d > previous %d, want sorted descending", i, c.Name, c.Population, cities[i-1].Population)
		}
		if c.Population < 15_000 {
			t.Errorf("Cities()[%d] %s has population %d, want >= 15000", i, c.Name, c.Population)
		}
	}
	counts := []struct {
		country string
		want    int
	}{
		{"US", 3_246},
		{"NA", 14},
	}
	for _, tc := range counts {
		if got := byCountry[tc.country]; got != tc.want {
			t.Errorf("Cities() has %d cities in %q, want %d", got, tc.country, tc.want)
		}
	}
	if got, want := len(byCountry), 209; got != want {
		t.Errorf("Cities() has %d countries, want %d", got, want)
	}

	find := func(name string) (City, bool) {
		for _, c := range cities {
			if c.Name == name {
				return c, true
			}
		}
		return City{}, false
	}
	named := []struct {
		name string
		want City
	}{
		{"Washington, D.C.", City{"Washington, D.C.", "US", 38.89511, -77.03637, 601_723}},
		{"Sant Pere, Santa Caterina i La Ribera", City{"Sant Pere, Santa Caterina i La Ribera", "ES", 41.3845, 2.18152, 22_856}},
		{"Windhoek", City{"Windhoek", "NA", -22.55941, 17.08323, 268_132}},
		{"São Paulo", City{"São Paulo", "BR", -23.5475, -46.63611, 10_021_295}},
	}
	for _, tc := range named {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := find(tc.name)
			if !ok {
				t.Fatalf("Cities() has no city named %q", tc.name)
			}
			if got != tc.want {
				t.Errorf("Cities() city %q = %+v, want %+v", tc.name, got, tc.want)
			}
		})
	}
}

func TestReadCities(t *testing.T) {
	const header = "name,country,lat,lng,population\n"
	tests := []struct {
		name    string
		in      string
		want    []City
		wantErr string // substring of the error; "" means success
	}{
		{
			name: "ok",
			in:   header + "\"A, B\",NA,-1.5,2.25,15000\nC,US,90,-180,0\n",
			want: []City{{"A, B", "NA", -1.5, 2.25, 15_000}, {"C", "US", 90, -180, 0}},
		},
		{name: "header only", in: header},
		{name: "bom header", in: "\ufeff" + header + "A,US,1,2,3\n", want: []City{{"A", "US", 1, 2, 3}}},
		{name: "empty", in: "", wantErr: "datagen: cities: empty input"},
		{name: "bad header", in: "name,cc,lat,lng,population\nA,US,1,2,3\n", wantErr: "cities line 1: header"},
		{name: "bad lat", in: header + "A,US,1,2,3\nB,US,x,2,3\n", wantErr: `datagen: cities line 3: bad lat "x"`},
		{name: "lat out of range", in: header + "A,US,90.5,2,3\n", wantErr: `cities line 2: bad lat "90.5": out of range`},
		{name: "lat NaN", in: header + "A,US,NaN,2,3\n", wantErr: `cities line 2: bad lat "NaN"`},
		{name: "lng out of range", in: header + "A,US,1,-180.01,3\n", wantErr: `cities line 2: bad lng "-180.01"`},
		{name: "bad population", in: header + "A,US,1,2,3.5\n", wantErr: `cities line 2: bad population "3.5"`},
		{name: "negative population", in: header + "A,US,1,2,-3\n", wantErr: `cities line 2: bad population "-3"`},
		{name: "short row", in: header + "A,US,1,2,3\nB,US,1,2\n", wantErr: "cities line 3: 4 columns, want 5"},
		{name: "long row", in: header + "A,US,1,2,3,4\n", wantErr: "cities line 2: 6 columns"},
		{name: "bad country", in: header + "A,usa,1,2,3\n", wantErr: `cities line 2: bad country "usa"`},
		{name: "empty name", in: header + ",US,1,2,3\n", wantErr: "cities line 2: empty name"},
		{name: "bad quoting", in: header + "A,US,1,2,3\n\"B,US,1,2,3\n", wantErr: "line 3"},
		{name: "multi-line field", in: header + "\"A\nB\",US,1,2,x\n", wantErr: `cities line 2: bad population "x"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadCities(strings.NewReader(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ReadCities(%q) error = %v, want error containing %q", tc.in, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ReadCities(%q) error = %v, want nil", tc.in, err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("ReadCities(%q) = %+v, want %+v", tc.in, got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("ReadCities(%q)[%d] = %+v, want %+v", tc.in, i, got[i], tc.want[i])
				}
			}
		})
	}
}
