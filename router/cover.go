package router

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/golang/geo/earth"
	"github.com/golang/geo/r1"
	"github.com/golang/geo/s1"
	"github.com/golang/geo/s2"
)

// MaxRadiusM is half the Earth's circumference: a cap of that radius is the
// whole sphere.
var MaxRadiusM = math.Pi * earth.Radius.Meters()

// Coverage is what a search area asks of a map.
type Coverage struct {
	// Cells are the cells at the map's level that intersect the area, in
	// curve (cell ID) order; nil for an area of more than MaxCoverCells
	// of them (see Cover).
	Cells []s2.CellID
	// NumCells is the number of those cells: len(Cells), or for a larger
	// area the cells at the map's level of a coarser covering.
	NumCells int64
	// Shards are the distinct shards owning those cells, ascending.
	Shards []int
}

// MaxCoverCells bounds the cells Cover lists: a region that spans more
// (a continent at level 10 is millions) is covered coarsely instead.
const MaxCoverCells = 1 << 17

// Circle returns the spherical cap of the given radius in metres around a
// location, on a sphere of radius earth.Radius (6371.01 km).
func Circle(lat, lng, radiusM float64) (s2.Cap, error) {
	if err := CheckLatLng(lat, lng); err != nil {
		return s2.Cap{}, err
	}
	if !(radiusM > 0 && radiusM <= MaxRadiusM) {
		return s2.Cap{}, fmt.Errorf("router: radius %v m: %w (want more than 0 and at most %.0f m)", radiusM, ErrBadRadius, MaxRadiusM)
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

// Cover returns the cells and distinct shards of a region. A region that
// spans more than MaxCoverCells cells at the map's level is covered with
// at most 64 cells of any level instead, and each shard whose range meets
// one of their ranges is named: a superset of the exact shards, found
// without listing millions of cells.
func (m *Map) Cover(region s2.Region) Coverage {
	// The bounding cap's area over a cell's average area: a cheap upper
	// estimate, so that small regions (every search) go straight to the
	// exact covering.
	if est := region.CapBound().Area() / s2.AvgAreaMetric.Value(m.level); est > MaxCoverCells {
		if cov, ok := m.coverCoarsely(region); ok {
			return cov
		}
	}
	cells := CoverCells(region, m.level)
	var shards []int
	for _, c := range cells {
		// Cells come in ID order and shards own ascending ranges, so a
		// shard's cells are consecutive and a change of shard is a new one.
		if i := m.LocateCell(c); len(shards) == 0 || shards[len(shards)-1] != i {
			shards = append(shards, i)
		}
	}
	return Coverage{Cells: cells, NumCells: int64(len(cells)), Shards: shards}
}

// coverCoarsely covers region with at most 64 cells; ok is false when
// they span at most MaxCoverCells cells at the map's level (then the exact
// covering is affordable).
func (m *Map) coverCoarsely(region s2.Region) (Coverage, bool) {
	coarse := (&s2.RegionCoverer{MaxLevel: m.level, MaxCells: 64}).Covering(region)
	var n int64
	for _, c := range coarse {
		n += int64(1) << (2 * (m.level - c.Level()))
	}
	if n > MaxCoverCells {
		seen := map[int]bool{}
		var shards []int
		for _, c := range coarse {
			lo := m.LocateCell(c.ChildBeginAtLevel(m.level))
			hi := m.LocateCell(c.ChildEndAtLevel(m.level).Prev())
			for i := lo; i <= hi; i++ {
				if !seen[i] {
					seen[i] = true
					shards = append(shards, i)
				}
			}
		}
		sort.Ints(shards)
		return Coverage{NumCells: n, Shards: shards}, true
	}
	return Coverage{}, false
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
