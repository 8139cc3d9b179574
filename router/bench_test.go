package router

import (
	"testing"
)

var sinkInt int

func BenchmarkLocate(b *testing.B) {
	m := worldMap(b, 18, 0)
	pts := [][2]float64{{37.7749, -122.4194}, {40.7128, -74.0060}, {51.5074, -0.1278}, {-33.8688, 151.2093}, {35.6762, 139.6503}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		p := pts[i%len(pts)]
		s, err := m.Locate(p[0], p[1])
		if err != nil {
			b.Fatal(err)
		}
		sinkInt += s
	}
}

func BenchmarkLocateCell(b *testing.B) {
	m := worldMap(b, 36, 0)
	cell, _ := m.Cell(37.7749, -122.4194)
	b.ReportAllocs()
	for b.Loop() {
		sinkInt += m.LocateCell(cell)
	}
}

func BenchmarkCover(b *testing.B) {
	m := worldMap(b, 18, 0)
	for _, bc := range []struct {
		name string
		mi   float64
	}{{"5mi", 5}, {"15mi", 15}, {"25mi", 25}, {"50mi", 50}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				cov, err := m.CoverCircle(37.7749, -122.4194, bc.mi*mile)
				if err != nil {
					b.Fatal(err)
				}
				sinkInt += len(cov.Shards)
			}
		})
	}
}

func BenchmarkRoutingKey(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		sinkInt += len(RoutingKey(ShardName(i%36), i%36, 576, 36))
	}
}

// BenchmarkPlanWorld plans the world fixture at 18 shards, deriving the
// workload from the loads, as `reshard plan --shards 18` does.
func BenchmarkPlanWorld(b *testing.B) {
	loads := fixtureLoads(b, "loads/world.csv")
	for _, s := range []Strategy{Optimal, Greedy} {
		b.Run(string(s), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Plan(loads, nil, PlanConfig{Shards: 18, Strategy: s}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPlanUS plans the US fixture at 18 shards.
func BenchmarkPlanUS(b *testing.B) {
	loads := fixtureLoads(b, "loads/us.csv")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Plan(loads, nil, PlanConfig{Shards: 18}); err != nil {
			b.Fatal(err)
		}
	}
}
