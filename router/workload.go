package router

import (
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/golang/geo/s2"
)

// DerivedRadiiM are the radii of a workload derived from loads: 5, 10, 15,
// 25 and 50 miles, in metres.
var DerivedRadiiM = []float64{5 * 1609.344, 10 * 1609.344, 15 * 1609.344, 25 * 1609.344, 50 * 1609.344}

// run is a stretch of consecutive covered curve positions, lo..hi inclusive.
type run struct{ lo, hi uint64 }

// coveredQuery is a query reduced to what shard placement can change: the
// runs of curve positions its covering touches, and its weight.
type coveredQuery struct {
	runs []run
	w    float64
}

// Workload is a search workload covered at one level, ready to be asked how
// many shards each search of it would touch under any map of that level.
type Workload struct {
	level   int
	queries []coveredQuery
	weight  float64 // sum of weights
}

// Len is the number of distinct searches in the workload.
func (w *Workload) Len() int { return len(w.queries) }

// Level is the S2 level the workload was covered at.
func (w *Workload) Level() int { return w.level }

// NewWorkload covers every query at the given level. The coverings are
// computed in parallel, one goroutine per CPU; the result does not depend on
// their schedule.
func NewWorkload(queries []Query, level int) (*Workload, error) {
	if level < 1 || level > s2.MaxLevel {
		return nil, fmt.Errorf("router: workload level %d, want 1 to %d", level, s2.MaxLevel)
	}
	caps := make([]s2.Cap, len(queries))
	for i, q := range queries {
		c, err := Circle(q.Lat, q.Lng, q.RadiusM)
		if err != nil {
			return nil, fmt.Errorf("router: query %d: %w", i, err)
		}
		if !(q.weight() > 0) {
			return nil, fmt.Errorf("router: query %d: weight %v, want a positive number", i, q.Weight)
		}
		caps[i] = c
	}
	w := &Workload{level: level, queries: make([]coveredQuery, len(queries))}
	parallel(len(queries), func(i int) {
		w.queries[i] = coveredQuery{runs: runsOf(CoverCells(caps[i], level), level), w: queries[i].weight()}
	})
	for _, q := range w.queries {
		w.weight += q.w
	}
	return w, nil
}

// DeriveWorkload builds a workload from loads when no real one is known:
// search centres in proportion to documents, picked by systematic sampling
// along the curve (centre t at cumulative load (t+½)·total/centres, at the
// centre of its cell; repeats merge into one weighted centre), each searched
// at every radius of DerivedRadiiM. It is deterministic.
func DeriveWorkload(loads []CellLoad, level, centres int) (*Workload, error) {
	c, err := newCurve(loads, level)
	if err != nil {
		return nil, err
	}
	if centres < 1 {
		return nil, fmt.Errorf("router: derived workload needs at least 1 centre, got %d", centres)
	}
	total := c.total()
	if total == 0 {
		return nil, fmt.Errorf("router: derived workload: the loads hold no documents")
	}
	step := float64(total) / float64(centres)
	var qs []Query
	j := 0
	for t := 0; t < centres; t++ {
		target := (float64(t) + 0.5) * step
		for j+1 < len(c.pos) && float64(c.cum[j+1]) <= target {
			j++
		}
		ll := s2.LatLngFromPoint(posCell(c.pos[j], level).Point())
		if n := len(qs); n > 0 && qs[n-len(DerivedRadiiM)].Lat == ll.Lat.Degrees() && qs[n-len(DerivedRadiiM)].Lng == ll.Lng.Degrees() {
			for k := range DerivedRadiiM {
				qs[n-len(DerivedRadiiM)+k].Weight++
			}
			continue
		}
		for _, r := range DerivedRadiiM {
			qs = append(qs, Query{Lat: ll.Lat.Degrees(), Lng: ll.Lng.Degrees(), RadiusM: r, Weight: 1})
		}
	}
	return NewWorkload(qs, level)
}

// runsOf turns a covering in cell ID order into runs of curve positions.
func runsOf(cells []s2.CellID, level int) []run {
	var rs []run
	for _, id := range cells {
		p := cellPos(id, level)
		if n := len(rs); n > 0 && rs[n-1].hi+1 == p {
			rs[n-1].hi = p
			continue
		}
		rs = append(rs, run{p, p})
	}
	return rs
}

// fanout is the number of distinct shards a query touches when shard k
// starts at curve position starts[k] (starts[0] == 0, ascending).
func (q *coveredQuery) fanout(starts []uint64) int {
	n, last := 0, -1
	for _, r := range q.runs {
		a := shardOf(starts, r.lo)
		b := shardOf(starts, r.hi)
		if a <= last {
			a = last + 1
		}
		if b >= a {
			n += b - a + 1
			last = b
		}
	}
	return n
}

// shardOf is the last k with starts[k] <= p.
func shardOf(starts []uint64, p uint64) int {
	return sort.Search(len(starts), func(k int) bool { return starts[k] > p }) - 1
}

// Fanout is the mean number of shards a search of the workload asks under
// the map, weighted by the searches' weights.
func (w *Workload) Fanout(m *Map) (float64, error) {
	if m.level != w.level {
		return 0, fmt.Errorf("router: map level %d differs from workload level %d", m.level, w.level)
	}
	starts := make([]uint64, m.NumShards())
	for i := range starts {
		starts[i] = cellPos(s2.CellID(m.lo[i]), m.level)
	}
	return w.fanoutStarts(starts), nil
}

func (w *Workload) fanoutStarts(starts []uint64) float64 {
	if w.weight == 0 {
		return 0
	}
	var sum float64
	for i := range w.queries {
		sum += float64(w.queries[i].fanout(starts)) * w.queries[i].w
	}
	return sum / w.weight
}

// parallel calls f(0..n-1) on one goroutine per CPU and waits for all.
func parallel(n int, f func(i int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	var wg sync.WaitGroup
	for g := 0; g < workers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := g; i < n; i += workers {
				f(i)
			}
		}()
	}
	wg.Wait()
}
