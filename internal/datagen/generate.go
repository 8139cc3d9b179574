package datagen

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
)

const (
	// MaxRestaurants bounds Config.Restaurants so a typo cannot exhaust
	// memory (each Restaurant costs about 50 bytes).
	MaxRestaurants = 50_000_000
	// MaxDishes caps the dishes of a single restaurant; the log-normal tail
	// is clamped to it.
	MaxDishes = 1_000_000
	// maxDishSigma bounds Config.DishSigma; beyond it the distribution is
	// dominated by the clamps rather than by the log-normal shape.
	maxDishSigma = 4

	// earthRadiusKm is the mean Earth radius (IUGG), used to turn
	// kilometres into degrees.
	earthRadiusKm = 6371.0088
	// kmPerDegree is the length of one degree of latitude, and of one
	// degree of longitude at the equator.
	kmPerDegree = earthRadiusKm * math.Pi / 180
	// maxAbsLat is where generated latitudes are clamped, keeping points
	// off the poles where longitude is meaningless.
	maxAbsLat = 89.9

	// Stream selectors for the PCG source: the same seed drives unrelated
	// sequences in Generate and Queries.
	generateStream = 0x67656f7368617264 // "geoshard"
	queriesStream  = 0x7175657269657321 // "queries!"
)

// Config controls Generate. The zero value is invalid; start from DefaultUS
// or DefaultWorld.
type Config struct {
	// Countries lists ISO 3166-1 alpha-2 codes (e.g. "US", "NA") whose
	// cities receive restaurants; order and repeats do not matter. Empty
	// means the whole world. Each code must be two upper-case letters, and
	// together they must match at least one city.
	Countries []string
	// Restaurants is the exact number of restaurants generated, in
	// [1, MaxRestaurants].
	Restaurants int
	// MedianDishes is the median of the log-normal dishes-per-restaurant
	// distribution, in (0, MaxDishes].
	MedianDishes float64
	// DishSigma is the standard deviation of log(dishes), in [0, 4]. The
	// mean number of dishes is MedianDishes·exp(DishSigma²/2); 0 gives every
	// restaurant MedianDishes (rounded) dishes.
	DishSigma float64
	// Seed selects the pseudo-random sequence. Equal configs and equal city
	// slices always give bit-for-bit identical output.
	Seed uint64
}

// DefaultUS is the US planning configuration: the 3,246 US cities, 650,000
// restaurants, and log-normal dishes with median 75 and sigma 0.5 (mean
// 75·e^0.125 ≈ 85 dishes, so ≈ 86 documents per restaurant and ≈ 56
// million documents in total). Seed is SeedUSPlanning.
func DefaultUS() Config {
	return Config{
		Countries:    []string{"US"},
		Restaurants:  650_000,
		MedianDishes: 75,
		DishSigma:    0.5,
		Seed:         SeedUSPlanning,
	}
}

// DefaultWorld is the worldwide configuration: all 24,323 cities (209
// countries), 5,000,000 restaurants and the same dish distribution as
// DefaultUS (≈ 430 million documents in ≈ 67,500 non-empty level-10 cells;
// the world loads fixture is ≈ 0.8 MB, so the count needs no reduction).
// Seed is SeedWorld.
func DefaultWorld() Config {
	return Config{
		Restaurants:  5_000_000,
		MedianDishes: 75,
		DishSigma:    0.5,
		Seed:         SeedWorld,
	}
}

// Validate reports the first field of c that is out of range. It checks the
// config alone; Generate additionally rejects a Countries list that matches
// no city.
func (c Config) Validate() error {
	if c.Restaurants < 1 || c.Restaurants > MaxRestaurants {
		return fmt.Errorf("datagen: Config.Restaurants = %d, want in [1, %d]", c.Restaurants, MaxRestaurants)
	}
	if !(c.MedianDishes > 0 && c.MedianDishes <= MaxDishes) { // also rejects NaN
		return fmt.Errorf("datagen: Config.MedianDishes = %g, want in (0, %d]", c.MedianDishes, MaxDishes)
	}
	if !(c.DishSigma >= 0 && c.DishSigma <= maxDishSigma) {
		return fmt.Errorf("datagen: Config.DishSigma = %g, want in [0, %d]", c.DishSigma, maxDishSigma)
	}
	for i, cc := range c.Countries {
		if !isCountryCode(cc) {
			return fmt.Errorf("datagen: Config.Countries[%d] = %q, want two upper-case letters", i, cc)
		}
	}
	return nil
}

// Restaurant is one generated restaurant.
//
// Invariants for Generate's output: ID is "r" followed by the 1-based
// position, zero-padded to a common width of at least 6 digits (r000001),
// so IDs are unique and sort in slice order; Lat is in [-89.9, 89.9]; Lng is
// in [-180, 180); Dishes is in [1, MaxDishes]; City indexes the cities slice
// passed to Generate.
type Restaurant struct {
	ID       string
	Lat, Lng float64
	Dishes   int
	City     int
}

// SigmaKm is the standard deviation, in kilometres along each axis, of a
// restaurant's offset from the centre of a city of the given population:
// 1.5·(pop/50,000)^0.4, so a 15,000 town spreads ≈ 0.9 km and New York
// (8.2 million) ≈ 11.5 km. It is 0 for pop <= 0.
func SigmaKm(pop int64) float64 {
	if pop <= 0 {
		return 0
	}
	return 1.5 * math.Pow(float64(pop)/50_000, 0.4)
}

// Generate creates exactly cfg.Restaurants restaurants in the cities of
// cfg.Countries.
//
// Restaurants are apportioned to the selected cities in proportion to
// population by the largest-remainder method (ties go to the earlier city),
// so the counts sum to cfg.Restaurants exactly. They are emitted city by
// city in the order of cities. Each lies at a 2-D Gaussian offset of SigmaKm
// per axis from its city centre (in the local east/north plane; latitude
// clamped to ±89.9°, longitude wrapped) and has log-normal dishes (see
// Config). The output depends only on cities and cfg.
func Generate(cities []City, cfg Config) ([]Restaurant, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sel, err := selectCities(cities, cfg.Countries)
	if err != nil {
		return nil, err
	}
	counts, err := apportion(cities, sel, cfg.Restaurants)
	if err != nil {
		return nil, err
	}

	ids := newIDs(cfg.Restaurants)
	rng := rand.New(rand.NewPCG(cfg.Seed, generateStream))
	logMedian := math.Log(cfg.MedianDishes)
	out := make([]Restaurant, 0, cfg.Restaurants)
	for k, ci := range sel {
		c := cities[ci]
		sigma := SigmaKm(c.Population)
		for range counts[k] {
			// Fixed draw order per restaurant: north, east, dishes.
			north := sigma * rng.NormFloat64()
			east := sigma * rng.NormFloat64()
			lat, lng := offsetKm(c.Lat, c.Lng, north, east)
			dishes := math.Round(math.Exp(logMedian + cfg.DishSigma*rng.NormFloat64()))
			out = append(out, Restaurant{
				ID:     ids.at(len(out)),
				Lat:    lat,
				Lng:    lng,
				Dishes: int(min(max(dishes, 1), MaxDishes)),
				City:   ci,
			})
		}
	}
	return out, nil
}

// selectCities returns, in ascending order, the indexes of the cities whose
// country is listed (all cities if countries is empty). It checks the
// coordinates and population of every selected city.
func selectCities(cities []City, countries []string) ([]int, error) {
	want := make(map[string]bool, len(countries))
	for _, cc := range countries {
		want[cc] = true
	}
	var sel []int
	for i, c := range cities {
		if len(want) > 0 && !want[c.Country] {
			continue
		}
		if !(c.Lat >= -90 && c.Lat <= 90 && c.Lng >= -180 && c.Lng <= 180) {
			return nil, fmt.Errorf("datagen: generate: cities[%d] (%s) at (%g, %g) is out of range", i, c.Name, c.Lat, c.Lng)
		}
		if c.Population < 0 {
			return nil, fmt.Errorf("datagen: generate: cities[%d] (%s) has population %d", i, c.Name, c.Population)
		}
		sel = append(sel, i)
	}
	if len(sel) == 0 {
		if len(countries) == 0 {
			return nil, errors.New("datagen: generate: no cities")
		}
		return nil, fmt.Errorf("datagen: Config.Countries = %q matches none of %d cities", countries, len(cities))
	}
	return sel, nil
}

// apportion splits n among the selected cities in proportion to population
// using the largest-remainder method with exact integer arithmetic. The
// result is parallel to sel and sums to n.
func apportion(cities []City, sel []int, n int) ([]int, error) {
	var total uint64
	for _, ci := range sel {
		p := uint64(cities[ci].Population)
		if total+p < total || total+p > math.MaxInt64 {
			return nil, errors.New("datagen: generate: total population overflows int64")
		}
		total += p
	}
	if total == 0 {
		return nil, errors.New("datagen: generate: selected cities have zero total population")
	}
	counts := make([]int, len(sel))
	rems := make([]uint64, len(sel))
	given := 0
	for k, ci := range sel {
		// n·pop/total without overflow; the quotient is <= n because
		// pop <= total, so hi < total as Div64 requires.
		hi, lo := bits.Mul64(uint64(n), uint64(cities[ci].Population))
		q, r := bits.Div64(hi, lo, total)
		counts[k], rems[k] = int(q), r
		given += int(q)
	}
	order := make([]int, len(sel))
	for k := range order {
		order[k] = k
	}
	// Remainders share the denominator total, so comparing them compares
	// the fractional parts of the quotas. The sort is stable: ties keep city
	// order.
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(rems[b], rems[a]) })
	for _, k := range order[:n-given] {
		counts[k]++
	}
	return counts, nil
}

// offsetKm moves (lat, lng) by north and east kilometres in the local
// tangent plane, clamping latitude to ±maxAbsLat and wrapping longitude
// into [-180, 180).
func offsetKm(lat, lng, north, east float64) (float64, float64) {
	cosLat := max(math.Cos(lat*math.Pi/180), math.Cos(maxAbsLat*math.Pi/180))
	lat += north / kmPerDegree
	lng += east / (kmPerDegree * cosLat)
	return min(max(lat, -maxAbsLat), maxAbsLat), wrapLng(lng)
}

// wrapLng maps any finite longitude into [-180, 180).
func wrapLng(lng float64) float64 {
	if lng >= -180 && lng < 180 {
		return lng
	}
	lng = math.Mod(lng+180, 360)
	if lng < 0 {
		lng += 360
	}
	return lng - 180
}

// ids hands out fixed-width restaurant IDs as substrings of one shared
// string, so n IDs cost one allocation instead of n.
type ids struct {
	all   string
	width int
}

func newIDs(n int) ids {
	width := 1 + max(6, len(strconv.Itoa(n)))
	buf := make([]byte, n*width)
	for i := range n {
		b := buf[i*width : (i+1)*width]
		b[0] = 'r'
		for j, v := width-1, i+1; j > 0; j, v = j-1, v/10 {
			b[j] = byte('0' + v%10)
		}
	}
	return ids{all: string(buf), width: width}
}

// at returns the ID of the restaurant at 0-based position i.
func (d ids) at(i int) string { return d.all[i*d.width : (i+1)*d.width] }
