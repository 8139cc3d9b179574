package benchrun

import (
	"math"
	"sort"
	"time"
)

// A Point is a counter's value V seen at T, the time since the run began.
type Point struct {
	T time.Duration
	V int64
}

// A Series is a counter sampled over a run, in order of time; the counter
// only grows (events finished, offsets committed, documents written).
type Series []Point

// Add appends a sample.
func (s *Series) Add(t time.Duration, v int64) { *s = append(*s, Point{t, v}) }

// Last is the latest sample, or the zero Point for an empty series.
func (s Series) Last() Point {
	if len(s) == 0 {
		return Point{}
	}
	return s[len(s)-1]
}

// Start is the last sample before the counter first moved from its first
// value: the latest time at which nothing had happened yet. For a series
// that never moved it is the first sample; ok is false for an empty one.
func (s Series) Start() (p Point, ok bool) {
	if len(s) == 0 {
		return Point{}, false
	}
	for i := 1; i < len(s); i++ {
		if s[i].V != s[0].V {
			return s[i-1], true
		}
	}
	return s[0], true
}

// Reach is the first sample at which the counter was at least v.
func (s Series) Reach(v int64) (Point, bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].V >= v })
	if i == len(s) {
		return Point{}, false
	}
	return s[i], true
}

// Settled is the first sample that shows the counter's final value: the
// time of its last move, to within the sampling interval. ok is false for
// an empty series.
func (s Series) Settled() (Point, bool) {
	if len(s) == 0 {
		return Point{}, false
	}
	final := s[len(s)-1].V
	i := len(s) - 1
	for i > 0 && s[i-1].V == final {
		i--
	}
	return s[i], true
}

// Rate is the counter's growth per second from a to b; 0 when b is not
// after a.
func Rate(a, b Point) float64 {
	dt := (b.T - a.T).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(b.V-a.V) / dt
}

// Window is the rate over the first n counts after Start: from Start to
// the first sample at or past Start.V+n. ok is false when the series never
// got that far.
func (s Series) Window(n int64) (rate float64, end Point, ok bool) {
	a, ok := s.Start()
	if !ok {
		return 0, Point{}, false
	}
	b, ok := s.Reach(a.V + n)
	if !ok {
		return 0, Point{}, false
	}
	return Rate(a, b), b, true
}

// Whole is the rate from Start to Settled: the counter's whole movement.
func (s Series) Whole() float64 {
	a, ok := s.Start()
	if !ok {
		return 0
	}
	b, _ := s.Settled()
	return Rate(a, b)
}

// Upto is the rate from Start to the first sample at which the counter
// had made the fraction q (in (0, 1]) of its whole movement. Upto(1) is
// Whole; a q below 1 leaves out a tail of stragglers.
func (s Series) Upto(q float64) float64 {
	a, ok := s.Start()
	if !ok || q <= 0 {
		return 0
	}
	total := s.Last().V - a.V
	b, ok := s.Reach(a.V + int64(math.Ceil(q*float64(total))))
	if !ok {
		return 0
	}
	return Rate(a, b)
}

// Segments cuts the movement from Start to the final value into k equal
// parts by count and returns the rate of each (0 for a part the samples
// cannot tell apart from the one before). It shows whether a run slowed
// down: a flat run has k similar figures.
func (s Series) Segments(k int) []float64 {
	if k < 1 {
		return nil
	}
	a, ok := s.Start()
	if !ok {
		return nil
	}
	total := s.Last().V - a.V
	if total <= 0 {
		return nil
	}
	out := make([]float64, k)
	prev := a
	for i := 1; i <= k; i++ {
		p, _ := s.Reach(a.V + total*int64(i)/int64(k))
		out[i-1] = Rate(prev, p)
		if p.T > prev.T {
			prev = p
		}
	}
	return out
}

// At is the first sample at or after t.
func (s Series) At(t time.Duration) (Point, bool) {
	i := sort.Search(len(s), func(i int) bool { return s[i].T >= t })
	if i == len(s) {
		return Point{}, false
	}
	return s[i], true
}

// MaxFrom is the largest value of the samples at or after t (for a gauge,
// which may fall as well as rise); ok is false when none is that late.
func (s Series) MaxFrom(t time.Duration) (p Point, ok bool) {
	for _, q := range s {
		if q.T >= t && (!ok || q.V > p.V) {
			p, ok = q, true
		}
	}
	return p, ok
}

// Cores is the average number of cores a CPU-time series (in
// milliseconds) kept busy from a to b: its growth between the samples at
// or after a and b, over the time between those samples. ok is false when
// the series has no two such samples.
func (s Series) Cores(a, b time.Duration) (float64, bool) {
	p, ok1 := s.At(a)
	q, ok2 := s.At(b)
	if !ok1 || !ok2 || q.T <= p.T {
		return 0, false
	}
	return Rate(p, q) / 1000, true
}
