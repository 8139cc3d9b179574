package datagen

import (
	"cmp"
	"slices"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/router"
)

// CellLevel is the S2 level at which geoshard places documents (cells of
// roughly 80 km², about 9 km across). The fixtures are aggregated at it.
const CellLevel = router.DefaultLevel

// Loads aggregates restaurants into S2 cells at the given level. A
// restaurant at (lat, lng) with d dishes adds 1+d documents (the restaurant
// plus one per dish) to s2.CellIDFromLatLng(lat, lng).Parent(level).
//
// The result is sorted by ascending cell ID, holds each cell once, lists
// only cells with at least one restaurant, and its Docs sum to
// len(rs) + Σ Dishes. It is nil if rs is empty or level is outside
// [0, s2.MaxLevel]. router.WriteLoads renders it as a loads CSV.
func Loads(rs []Restaurant, level int) []router.CellLoad {
	if len(rs) == 0 || level < 0 || level > s2.MaxLevel {
		return nil
	}
	docs := make(map[s2.CellID]int64, len(rs)/16)
	for _, r := range rs {
		cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(r.Lat, r.Lng)).Parent(level)
		docs[cell] += 1 + int64(r.Dishes)
	}
	out := make([]router.CellLoad, 0, len(docs))
	for cell, d := range docs {
		out = append(out, router.CellLoad{Cell: cell, Docs: d})
	}
	slices.SortFunc(out, func(a, b router.CellLoad) int { return cmp.Compare(a.Cell, b.Cell) })
	return out
}

// TotalDocs returns the sum of Docs over loads.
func TotalDocs(loads []router.CellLoad) int64 {
	var n int64
	for _, l := range loads {
		n += l.Docs
	}
	return n
}
