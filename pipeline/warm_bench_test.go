package pipeline

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/schema"
)

var warmRestaurants = flag.Int("warm-restaurants", 650_000, "restaurants in the index for BenchmarkWarm")

// BenchmarkWarm reads the restaurant directory of an index holding
// -warm-restaurants restaurants (the seed's count by default), as an
// instance does at start and at a new consumer-group
// generation whose assignment it cannot read:
//
//	go test -run '^$' -bench Warm -benchtime 1x -count 3 ./pipeline/
func BenchmarkWarm(b *testing.B) {
	e := newEnv(b, envOptions{partitions: 1})
	n := *warmRestaurants
	ctx := context.Background()
	storeRestaurants(b, e, n)
	p := offlinePipeline(b)
	p.ix.admin = e.admin
	tg := newTarget(testIndex, e.m, true)
	b.ReportAllocs()
	b.ResetTimer()
	var took time.Duration
	for range b.N {
		d := newDirectory()
		start := time.Now()
		if err := p.ix.warm(ctx, &tg, d); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		if d.size() != int64(n) {
			b.Fatalf("directory holds %d restaurants, want %d", d.size(), n)
		}
	}
	b.ReportMetric(took.Seconds()/float64(b.N), "s/warm")
	b.ReportMetric(float64(n)*float64(b.N)/took.Seconds(), "restaurants/s")
}

// storeRestaurants writes n restaurants, r0000000 on, at random places in
// the contiguous US, straight to the test index, and returns their ids.
func storeRestaurants(b *testing.B, e *testEnv, n int) []string {
	b.Helper()
	ctx := context.Background()
	w, err := bulk.New(e.client, bulk.Config{})
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]string, n)
	for i := range n {
		lat, lon := 25+rng.Float64()*23, -124+rng.Float64()*57
		cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(lat, lon))
		id := fmt.Sprintf("r%07d", i)
		ids[i] = id
		shard := e.m.LocateCell(cell)
		err := w.Add(ctx, bulk.Item{
			Action: bulk.Index, Index: testIndex, ID: schema.RestaurantID(id), Routing: e.m.Shard(shard).Routing,
			Version: 1, VersionType: bulk.External, Shard: e.m.Shard(shard).Name,
			Body: restaurantBody([]byte(`"name":"place `+id+`"`), id, 1, cell, lat, lon, e.m.Level()),
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	if st := w.Stats(); st.OK != int64(n) {
		b.Fatalf("%d of %d restaurants written", st.OK, n)
	}
	return ids
}
