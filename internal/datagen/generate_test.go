package datagen

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/golang/geo/s2"
)

// usRestaurants generates DefaultUS once per test binary; tests must not
// modify the result.
var usRestaurants = sync.OnceValues(func() ([]Restaurant, error) {
	cities, err := embeddedCities()
	if err != nil {
		return nil, err
	}
	return Generate(cities, DefaultUS())
})

func mustUS(tb testing.TB) []Restaurant {
	tb.Helper()
	rs, err := usRestaurants()
	if err != nil {
		tb.Fatalf("Generate(DefaultUS()) error: %v", err)
	}
	return rs
}

// distanceKm is the great-circle distance between two points.
func distanceKm(lat1, lng1, lat2, lng2 float64) float64 {
	a := s2.LatLngFromDegrees(lat1, lng1)
	b := s2.LatLngFromDegrees(lat2, lng2)
	return a.Distance(b).Radians() * earthRadiusKm
}

func TestGenerateUS(t *testing.T) {
	cities := mustCities(t)
	rs := mustUS(t)
	cfg := DefaultUS()
	if len(rs) != cfg.Restaurants {
		t.Fatalf("len(Generate(DefaultUS())) = %d, want %d", len(rs), cfg.Restaurants)
	}
	var dishes int64
	perCity := map[int]int{}
	for i, r := range rs {
		if want := fmt.Sprintf("r%06d", i+1); r.ID != want {
			t.Fatalf("Generate(DefaultUS())[%d].ID = %q, want %q", i, r.ID, want)
		}
		c := cities[r.City]
		if c.Country != "US" {
			t.Fatalf("Generate(DefaultUS())[%d] is in %s (%s), want US", i, c.Name, c.Country)
		}
		if d, limit := distanceKm(r.Lat, r.Lng, c.Lat, c.Lng), 8*SigmaKm(c.Population); d > limit {
			t.Fatalf("Generate(DefaultUS())[%d] is %.1f km from %s, want < %.1f km (8 sigma)", i, d, c.Name, limit)
		}
		if r.Dishes < 1 || r.Dishes > MaxDishes {
			t.Fatalf("Generate(DefaultUS())[%d].Dishes = %d, want in [1, %d]", i, r.Dishes, MaxDishes)
		}
		dishes += int64(r.Dishes)
		perCity[r.City]++
	}
	if mean := float64(dishes) / float64(len(rs)); math.Abs(mean-85) > 3 {
		t.Errorf("Generate(DefaultUS()) mean dishes = %.2f, want 85 ± 3", mean)
	}
	// Apportionment: each city gets the floor or the ceiling of its quota.
	var usPop int64
	for _, c := range cities {
		if c.Country == "US" {
			usPop += c.Population
		}
	}
	for i, c := range cities {
		if c.Country != "US" {
			continue
		}
		quota := float64(cfg.Restaurants) * float64(c.Population) / float64(usPop)
		if got := float64(perCity[i]); got < math.Floor(quota)-1e-6 || got > math.Ceil(quota)+1e-6 {
			t.Errorf("Generate(DefaultUS()) gives %s %v restaurants, want floor or ceil of %.3f", c.Name, got, quota)
		}
	}
}

func TestGenerateDeterministic(t *testing.T) {
	cities := mustCities(t)
	us := DefaultUS()
	usSeed2 := DefaultUS()
	usSeed2.Seed = SeedUSHeldout
	small := Config{Countries: []string{"DE", "NA"}, Restaurants: 20_000, MedianDishes: 75, DishSigma: 0.5, Seed: 7}
	smallSwapped := small
	smallSwapped.Countries = []string{"NA", "DE", "NA"}
	smallSeed8 := small
	smallSeed8.Seed = 8

	tests := []struct {
		name      string
		a, b      Config
		wantEqual bool
	}{
		{"US same seed", us, us, true},
		{"US different seed", us, usSeed2, false},
		{"country order and duplicates", small, smallSwapped, true},
		{"small different seed", small, smallSeed8, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := Generate(cities, tc.a)
			if err != nil {
				t.Fatalf("Generate(%+v) error: %v", tc.a, err)
			}
			b, err := Generate(cities, tc.b)
			if err != nil {
				t.Fatalf("Generate(%+v) error: %v", tc.b, err)
			}
			if got := slices.Equal(a, b); got != tc.wantEqual {
				t.Errorf("Generate(%+v) == Generate(%+v) is %v, want %v", tc.a, tc.b, got, tc.wantEqual)
			}
		})
	}
}

func TestGenerateApportion(t *testing.T) {
	tests := []struct {
		name  string
		pops  []int64
		n     int
		wants []int // restaurants per city
	}{
		{"exact", []int64{300, 100}, 4, []int{3, 1}},
		{"ties go to earlier city", []int64{1, 1, 1}, 10, []int{4, 3, 3}},
		{"largest remainder", []int64{50, 30, 20}, 7, []int{4, 2, 1}}, // quotas 3.5, 2.1, 1.4
		{"zero population", []int64{0, 5}, 3, []int{0, 3}},
		{"fewer restaurants than cities", []int64{2, 1, 1}, 1, []int{1, 0, 0}},
		{"huge populations", []int64{math.MaxInt64 / 2, math.MaxInt64 / 2}, MaxRestaurants, []int{MaxRestaurants / 2, MaxRestaurants / 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cities := make([]City, len(tc.pops))
			sel := make([]int, len(tc.pops))
			for i, p := range tc.pops {
				cities[i] = City{Name: fmt.Sprint("c", i), Country: "XX", Population: p}
				sel[i] = i
			}
			got, err := apportion(cities, sel, tc.n)
			if err != nil || !slices.Equal(got, tc.wants) {
				t.Errorf("apportion(%v, %d) = %v, %v, want %v", tc.pops, tc.n, got, err, tc.wants)
			}
		})
	}
}

func TestGenerateEdges(t *testing.T) {
	tests := []struct {
		name      string
		city      City
		checkDist bool // false where the ±89.9° clamp itself moves points
	}{
		{"antimeridian east", City{"E", "XX", 10, 179.99, 20_000_000}, true},
		{"antimeridian west", City{"W", "XX", -10, -180, 20_000_000}, true},
		{"near north pole", City{"N", "XX", 89.8, 30, 20_000_000}, false},
		{"south pole", City{"S", "XX", -90, 0, 20_000}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{Restaurants: 5_000, MedianDishes: 10, DishSigma: 1, Seed: 1}
			rs, err := Generate([]City{tc.city}, cfg)
			if err != nil {
				t.Fatalf("Generate(%+v) error: %v", tc.city, err)
			}
			var east, west int
			for i, r := range rs {
				if !(r.Lat >= -maxAbsLat && r.Lat <= maxAbsLat && r.Lng >= -180 && r.Lng < 180) {
					t.Fatalf("Generate(%+v)[%d] = (%v, %v), want lat in ±89.9 and lng in [-180, 180)", tc.city, i, r.Lat, r.Lng)
				}
				if d, limit := distanceKm(r.Lat, r.Lng, tc.city.Lat, tc.city.Lng), 8*SigmaKm(tc.city.Population); tc.checkDist && d > limit {
					t.Fatalf("Generate(%+v)[%d] is %.1f km from the centre, want < %.1f km", tc.city, i, d, limit)
				}
				if r.Lng >= 0 {
					east++
				} else {
					west++
				}
			}
			if math.Abs(tc.city.Lng) > 179 && (east == 0 || west == 0) {
				t.Errorf("Generate(%+v) has %d restaurants east of 0° and %d west, want both > 0 (wrapped)", tc.city, east, west)
			}
		})
	}
}

func TestGenerateFixedDishes(t *testing.T) {
	cities := []City{{"A", "XX", 0, 0, 100}}
	cfg := Config{Restaurants: 100, MedianDishes: 7.4, DishSigma: 0, Seed: 3}
	rs, err := Generate(cities, cfg)
	if err != nil {
		t.Fatalf("Generate(%+v) error: %v", cfg, err)
	}
	for i, r := range rs {
		if r.Dishes != 7 {
			t.Fatalf("Generate(%+v)[%d].Dishes = %d, want 7", cfg, i, r.Dishes)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	with := func(f func(*Config)) Config {
		c := DefaultUS()
		f(&c)
		return c
	}
	tests := []struct {
		name    string
		cfg     Config
		wantErr string // substring; "" means valid
	}{
		{"DefaultUS", DefaultUS(), ""},
		{"DefaultWorld", DefaultWorld(), ""},
		{"zero sigma", with(func(c *Config) { c.DishSigma = 0 }), ""},
		{"zero restaurants", with(func(c *Config) { c.Restaurants = 0 }), "Config.Restaurants = 0"},
		{"negative restaurants", with(func(c *Config) { c.Restaurants = -5 }), "Config.Restaurants = -5"},
		{"too many restaurants", with(func(c *Config) { c.Restaurants = MaxRestaurants + 1 }), "Config.Restaurants"},
		{"zero median", with(func(c *Config) { c.MedianDishes = 0 }), "Config.MedianDishes = 0"},
		{"NaN median", with(func(c *Config) { c.MedianDishes = math.NaN() }), "Config.MedianDishes = NaN"},
		{"infinite median", with(func(c *Config) { c.MedianDishes = math.Inf(1) }), "Config.MedianDishes"},
		{"negative sigma", with(func(c *Config) { c.DishSigma = -0.5 }), "Config.DishSigma = -0.5"},
		{"NaN sigma", with(func(c *Config) { c.DishSigma = math.NaN() }), "Config.DishSigma = NaN"},
		{"huge sigma", with(func(c *Config) { c.DishSigma = 10 }), "Config.DishSigma = 10"},
		{"lower-case country", with(func(c *Config) { c.Countries = []string{"US", "de"} }), `Config.Countries[1] = "de"`},
		{"three-letter country", with(func(c *Config) { c.Countries = []string{"USA"} }), `Config.Countries[0] = "USA"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Validate(%+v) = %v, want nil", tc.cfg, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "datagen: ") {
				t.Errorf("Validate(%+v) = %v, want error containing %q", tc.cfg, err, tc.wantErr)
			}
			// Generate must refuse the same config.
			if _, gerr := Generate([]City{{"A", "US", 0, 0, 1}}, tc.cfg); gerr == nil {
				t.Errorf("Generate(%+v) error = nil, want %v", tc.cfg, err)
			}
		})
	}
}

func TestGenerateErrors(t *testing.T) {
	ok := City{"A", "US", 1, 2, 100}
	cfg := Config{Restaurants: 10, MedianDishes: 5, DishSigma: 0.5}
	zz := cfg
	zz.Countries = []string{"ZZ"}
	tests := []struct {
		name    string
		cities  []City
		cfg     Config
		wantErr string
	}{
		{"unknown country", []City{ok}, zz, `Config.Countries = ["ZZ"] matches none`},
		{"no cities", nil, cfg, "datagen: generate: no cities"},
		{"NaN latitude", []City{ok, {"B", "US", math.NaN(), 0, 5}}, cfg, "cities[1] (B)"},
		{"longitude out of range", []City{{"B", "US", 0, 200, 5}}, cfg, "cities[0] (B)"},
		{"negative population", []City{ok, {"B", "US", 0, 0, -1}}, cfg, "cities[1] (B) has population -1"},
		{"zero total population", []City{{"B", "US", 0, 0, 0}}, cfg, "zero total population"},
		{"population overflow", []City{{"B", "US", 0, 0, math.MaxInt64}, ok}, cfg, "overflows"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Generate(tc.cities, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Generate(%+v, %+v) = %d restaurants, %v, want error containing %q", tc.cities, tc.cfg, len(got), err, tc.wantErr)
			}
		})
	}
}

func TestSigmaKm(t *testing.T) {
	tests := []struct {
		pop      int64
		min, max float64
	}{
		{0, 0, 0},
		{-1, 0, 0},
		{15_000, 0.85, 0.95},
		{50_000, 1.5, 1.5},
		{8_175_133, 11, 12.5}, // New York City
	}
	for _, tc := range tests {
		if got := SigmaKm(tc.pop); got < tc.min || got > tc.max {
			t.Errorf("SigmaKm(%d) = %.3f, want in [%g, %g]", tc.pop, got, tc.min, tc.max)
		}
	}
}

func BenchmarkGenerateUS(b *testing.B) {
	cities := mustCities(b)
	cfg := DefaultUS()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Generate(cities, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
