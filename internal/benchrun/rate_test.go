package benchrun

import (
	"math"
	"testing"
	"time"
)

func series(pts ...int64) Series {
	// pts are pairs: milliseconds, value.
	var s Series
	for i := 0; i < len(pts); i += 2 {
		s.Add(time.Duration(pts[i])*time.Millisecond, pts[i+1])
	}
	return s
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func TestSeriesPoints(t *testing.T) {
	s := series(0, 0, 100, 0, 200, 0, 300, 500, 1300, 20500, 2300, 30000, 3300, 30000, 4300, 30000)
	tests := []struct {
		name string
		got  func() (Point, bool)
		want Point
		ok   bool
	}{
		{"start is the last sample before the first move", s.Start, Point{200 * time.Millisecond, 0}, true},
		{"settled is the first sample of the final value", s.Settled, Point{2300 * time.Millisecond, 30000}, true},
		{"reach 20000", func() (Point, bool) { return s.Reach(20000) }, Point{1300 * time.Millisecond, 20500}, true},
		{"reach exactly a value", func() (Point, bool) { return s.Reach(500) }, Point{300 * time.Millisecond, 500}, true},
		{"reach past the end", func() (Point, bool) { return s.Reach(30001) }, Point{}, false},
		{"empty start", Series(nil).Start, Point{}, false},
		{"empty settled", Series(nil).Settled, Point{}, false},
		{"never moved", series(0, 7, 100, 7).Start, Point{0, 7}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.got()
			if got != tt.want || ok != tt.ok {
				t.Errorf("= %v, %v, want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestRates(t *testing.T) {
	// 0 until 1 s, then 10,000 events/s for 2 s, then 5,000/s for 2 s,
	// then one straggler at 60 s.
	s := series(0, 0, 1000, 0, 2000, 10000, 3000, 20000, 4000, 25000, 5000, 30000, 60000, 30001)
	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"rate", Rate(Point{time.Second, 0}, Point{3 * time.Second, 20000}), 10000},
		{"rate over no time", Rate(Point{time.Second, 0}, Point{time.Second, 10}), 0},
		{"whole, to the straggler", s.Whole(), 30001.0 / 59},
		{"upto 99%: the straggler left out", s.Upto(0.99), 30000.0 / 4},
		{"upto 1 is whole", s.Upto(1), 30001.0 / 59},
		{"upto 0", s.Upto(0), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !near(tt.got, tt.want) {
				t.Errorf("= %v, want %v", tt.got, tt.want)
			}
		})
	}
	r, end, ok := s.Window(20000)
	if !ok || !near(r, 10000) || end.T != 3*time.Second {
		t.Errorf("Window(20000) = %v, %v, %v, want 10000, 3s, true", r, end, ok)
	}
	if _, _, ok := s.Window(40000); ok {
		t.Errorf("Window(40000) ok, want not reached")
	}
}

func TestSegments(t *testing.T) {
	s := series(0, 0, 1000, 0, 2000, 10000, 3000, 20000, 5000, 30000, 7000, 40000)
	got := s.Segments(4)
	want := []float64{10000, 10000, 5000, 5000}
	if len(got) != len(want) {
		t.Fatalf("Segments(4) = %v, want %v", got, want)
	}
	for i := range want {
		if !near(got[i], want[i]) {
			t.Errorf("Segments(4)[%d] = %v, want %v", i, got[i], want[i])
		}
	}
	if got := series(0, 0, 1000, 0).Segments(4); got != nil {
		t.Errorf("Segments of a flat series = %v, want nil", got)
	}
	// Samples coarser than the parts: a part that ends at the same sample
	// as the one before is 0, and the rate of the one that reached that
	// sample is still the true rate.
	got = series(0, 0, 1000, 20, 2000, 40).Segments(4)
	if !near(got[0], 20) || got[1] != 0 || !near(got[2], 20) || got[3] != 0 {
		t.Errorf("Segments(4) of coarse samples = %v, want [20 0 20 0]", got)
	}
}

func TestAtMaxFrom(t *testing.T) {
	// A gauge: it rises and falls.
	s := series(0, 10, 1000, 50, 2000, 80, 3000, 40, 4000, 60)
	tests := []struct {
		name string
		got  func() (Point, bool)
		want Point
		ok   bool
	}{
		{"at a sample", func() (Point, bool) { return s.At(time.Second) }, Point{time.Second, 50}, true},
		{"between samples: the next", func() (Point, bool) { return s.At(1500 * time.Millisecond) }, Point{2 * time.Second, 80}, true},
		{"after the last", func() (Point, bool) { return s.At(5 * time.Second) }, Point{}, false},
		{"max from the start", func() (Point, bool) { return s.MaxFrom(0) }, Point{2 * time.Second, 80}, true},
		{"max after the peak", func() (Point, bool) { return s.MaxFrom(2500 * time.Millisecond) }, Point{4 * time.Second, 60}, true},
		{"max after the last", func() (Point, bool) { return s.MaxFrom(time.Minute) }, Point{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.got()
			if got != tt.want || ok != tt.ok {
				t.Errorf("= %v, %v, want %v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestCores(t *testing.T) {
	// CPU milliseconds: 1.5 cores for 2 s, then 0.5.
	s := series(0, 0, 1000, 1500, 2000, 3000, 3000, 3500, 4000, 4000)
	tests := []struct {
		name string
		a, b time.Duration
		want float64
		ok   bool
	}{
		{"first two seconds", 0, 2 * time.Second, 1.5, true},
		{"the rest", 2 * time.Second, 4 * time.Second, 0.5, true},
		{"between samples", 500 * time.Millisecond, 3500 * time.Millisecond, 1.0 * 2500 / 3000, true},
		{"one sample", 4 * time.Second, 4 * time.Second, 0, false},
		{"past the end", 0, time.Minute, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := s.Cores(tt.a, tt.b)
			if !near(got, tt.want) || ok != tt.ok {
				t.Errorf("Cores(%v, %v) = %v, %v, want %v, %v", tt.a, tt.b, got, ok, tt.want, tt.ok)
			}
		})
	}
}
