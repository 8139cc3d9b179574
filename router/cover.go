package router

import (
	"fmt"
	"math"
	"strings"

	"github.com/golang/geo/earth"
	"github.com/golang/geo/r1"
	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// maxRadiusM is half the Earth's circumference: a cap of that radius is the
// whole sphere.
var maxRadiusM = math.Pi * earth.Radius.Meters()

// Coverage is what a search area asks of a map.
type Coverage struct {
	// Cells are the cells at the map's level that intersect the area, in
	// curve (cell ID) order.
	Cells []s2.CellID
	// Shards are the distinct shards owning those cells, ascending.
	Shards []int
}

// Circle returns the spherical cap of the given radius in metres around a
// location, on a sphere of radius earth.Radius (6371.01 km).
func Circle(lat, lng, radiusM float64) (s2.Cap, error) {
	if err := CheckLatLng(lat, lng); err != nil {
		return s2.Cap{}, err
	}
	if !(radiusM > 0 && radiusM <= maxRadiusM) {
		return s2.Cap{}, fmt.Errorf("router: radius %v m: %w (want more than 0 and at most %.0f m)", radiusM, ErrBadRadius, maxRadiusM)
	}
	center := s2.PointFromLatLng(s2.LatLngFromDegrees(lat, lng))
	return s2.CapFromCenterAngle(center, s1.Angle(radiusM/earth.Radius.Meters())), nil
}

// Rect returns the lat/lng rectangle with the given corners in degrees. A
// west edge east of the east edge wraps across the antimeridian.
func Rect(south, west, north, east float64) (s2.Rect, error) {
	if err := CheckLatLng(south, west); err != nil {
		return s2.Rect{}, err
	}
	if err := CheckLatLng(north, east); err != nil {
		return s2.Rect{}, err
	}
	if south > north {
		return s2.Rect{}, fmt.Errorf("router: rectangle south %v is north of north %v: %w", south, north, ErrBadCoordinate)
	}
	d := math.Pi / 180
	return s2.Rect{
		Lat: r1.Interval{Lo: south * d, Hi: north * d},
		Lng: s1.IntervalFromEndpoints(west*d, east*d),
	}, nil
}

// CoverCells returns the cells at the given level that intersect a region:
// s2.RegionCoverer with MinLevel = MaxLevel = level and no cap on the number
// of cells, so the covering is exactly the set of level cells the region
// touches.
func CoverCells(region s2.Region, level int) []s2.CellID {
	rc := s2.RegionCoverer{MinLevel: level, MaxLevel: level, LevelMod: 1, MaxCells: math.MaxInt32}
	return rc.Covering(region)
}

// Cover returns the cells and distinct shards of a region.
func (m *Map) Cover(region s2.Region) Coverage {
	cells := CoverCells(region, m.level)
	var shards []int
	for _, c := range cells {
		// Cells come in ID order and shards own ascending ranges, so a
		// shard's cells are consecutive and a change of shard is a new one.
		if i := m.LocateCell(c); len(shards) == 0 || shards[len(shards)-1] != i {
			shards = append(shards, i)
		}
	}
	return Coverage{Cells: cells, Shards: shards}
}

// CoverCircle covers a circle of radiusM metres around a location.
func (m *Map) CoverCircle(lat, lng, radiusM float64) (Coverage, error) {
	c, err := Circle(lat, lng, radiusM)
	if err != nil {
		return Coverage{}, err
	}
	return m.Cover(c), nil
}

// CoverRect covers a lat/lng rectangle given by its south, west, north and
// east edges in degrees.
func (m *Map) CoverRect(south, west, north, east float64) (Coverage, error) {
	r, err := Rect(south, west, north, east)
	if err != nil {
		return Coverage{}, err
	}
	return m.Cover(r), nil
}

// Routing returns the routing parameter for a search of the given shards:
// their routing keys joined with commas.
func (m *Map) Routing(shards []int) string {
	var b strings.Builder
	for k, i := range shards {
		if k > 0 {
			b.WriteByte(',')
		}
		b.WriteString(m.shards[i].Routing)
	}
	return b.String()
}

// Names returns the names of the given shards.
func (m *Map) Names(shards []int) []string {
	out := make([]string, len(shards))
	for k, i := range shards {
		out[k] = m.shards[i].Name
	}
	return out
}
