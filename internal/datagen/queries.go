package datagen

import (
	"math"
	"math/rand/v2"

	"github.com/geoshard/geoshard/router"
)

const (
	// MetersPerMile is the international mile.
	MetersPerMile = 1609.344
	// QueryJitterKm is the largest distance between a query centre and the
	// restaurant it was drawn from.
	QueryJitterKm = 1.0
)

// QueryRadiiMiles are the search radii a query can have, each equally
// likely.
var QueryRadiiMiles = [...]float64{5, 10, 15, 25, 50}

// Queries draws n radius searches that follow where documents are: each
// centre is a uniformly chosen restaurant of rs moved uniformly within a
// disc of QueryJitterKm (latitude clamped to ±89.9°, longitude wrapped into
// [-180, 180)), and each radius is one of QueryRadiiMiles converted to
// metres. Weight is left zero, which router reads as 1. The result depends
// only on rs, n and seed; it is nil if rs is empty or n <= 0.
// router.WriteQueries renders it as a queries CSV.
func Queries(rs []Restaurant, n int, seed uint64) []router.Query {
	if len(rs) == 0 || n <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, queriesStream))
	out := make([]router.Query, n)
	for i := range out {
		// Fixed draw order per query: restaurant, distance, bearing, radius.
		r := rs[rng.IntN(len(rs))]
		d := QueryJitterKm * math.Sqrt(rng.Float64()) // uniform over the disc
		theta := 2 * math.Pi * rng.Float64()
		lat, lng := offsetKm(r.Lat, r.Lng, d*math.Cos(theta), d*math.Sin(theta))
		radius := QueryRadiiMiles[rng.IntN(len(QueryRadiiMiles))] * MetersPerMile
		out[i] = router.Query{Lat: lat, Lng: lng, RadiusM: radius}
	}
	return out
}
