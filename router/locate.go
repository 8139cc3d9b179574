package router

import (
	"fmt"
	"math"

	"github.com/golang/geo/s2"
)

// CheckLatLng reports whether lat and lng are finite degrees within
// [-90, 90] and [-180, 180].
func CheckLatLng(lat, lng float64) error {
	if math.IsNaN(lat) || math.IsNaN(lng) || lat < -90 || lat > 90 || lng < -180 || lng > 180 {
		// The comparisons are false for NaN, hence the explicit test; ±Inf
		// fails the range test.
		return fmt.Errorf("router: lat %v, lng %v: %w (want lat within [-90, 90] and lng within [-180, 180] degrees)", lat, lng, ErrBadCoordinate)
	}
	return nil
}

// Cell returns the cell at the map's level that contains the location.
func (m *Map) Cell(lat, lng float64) (s2.CellID, error) {
	if err := CheckLatLng(lat, lng); err != nil {
		return 0, err
	}
	return s2.CellIDFromLatLng(s2.LatLngFromDegrees(lat, lng)).Parent(m.level), nil
}

// Locate returns the index of the shard that owns the location. It does not
// allocate.
func (m *Map) Locate(lat, lng float64) (int, error) {
	if err := CheckLatLng(lat, lng); err != nil {
		return 0, err
	}
	return m.LocateCell(s2.CellIDFromLatLng(s2.LatLngFromDegrees(lat, lng))), nil
}

// LocateCell returns the index of the shard that owns a valid cell at the
// map's level or finer. (A coarser cell may span several shards; it is
// placed by its first leaf.)
func (m *Map) LocateCell(id s2.CellID) int {
	x := uint64(id.RangeMin())
	// Binary search for the last i with lo[i] <= x; lo[0] is the first leaf
	// of face 0, so i >= 0 for every valid cell.
	lo, hi := 0, len(m.lo)
	for hi-lo > 1 {
		mid := int(uint(lo+hi) >> 1)
		if m.lo[mid] <= x {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
