package pipeline

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/testenv"
)

// countingTransport counts the refresh requests that pass through it.
type countingTransport struct {
	refreshes atomic.Int64
	next      http.RoundTripper
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/_refresh") {
		c.refreshes.Add(1)
	}
	return c.next.RoundTrip(req)
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// BenchmarkMoves moves b.N restaurants, each with five dishes, to a
// city on another geoshard, and then deletes b.N/2 others with theirs,
// all produced at once as a backlog (each move and delete searches its
// restaurant's dishes, which needs the acknowledged writes visible). It
// reports the index refreshes sent per 1,000 moves and deletes, counted
// at the HTTP client, and the changes per second. Use enough changes that
// they overlap:
//
//	go test -run '^$' -bench Moves -benchtime 2000x -count 3 ./pipeline/
//
// (-tags realcluster: the real broker and node.)
func BenchmarkMoves(b *testing.B) {
	b.ReportAllocs()
	e := newEnv(b, envOptions{partitions: 4})
	from, to := [2]float64{40.71, -74.0}, [2]float64{37.77, -122.42} // New York, San Francisco: different geoshards
	if a, _ := e.m.Locate(from[0], from[1]); a == must(e.m.Locate(to[0], to[1])) {
		b.Fatal("the two cities share a geoshard")
	}
	n, dels := b.N, b.N/2
	var setup, changes []genEvent
	for i := range n + dels {
		rid := fmt.Sprintf("r%07d", i)
		lat, lon := from[0]+float64(i%97)*0.001, from[1]+float64(i%89)*0.001
		setup = append(setup, genEvent{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: rid, rid: rid, version: 1, lat: lat, lon: lon,
			doc: map[string]any{"name": "place " + rid}})
		for d := range 5 {
			setup = append(setup, genEvent{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: fmt.Sprintf("d%07d-%d", i, d), rid: rid, version: 1,
				doc: map[string]any{"name": "noodles", "price_cents": 1250}})
		}
		if i < n {
			changes = append(changes, genEvent{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: rid, rid: rid, version: 2,
				lat: to[0] + float64(i%97)*0.001, lon: to[1] + float64(i%89)*0.001, doc: map[string]any{"name": "place " + rid}})
		} else {
			changes = append(changes, genEvent{typ: decode.TypeRestaurant, op: decode.OpDelete, id: rid, rid: rid, version: 2})
		}
	}
	encodeAll(setup)
	encodeAll(changes)

	counter := &countingTransport{next: http.DefaultTransport}
	client, err := opensearch.NewClient(opensearch.Config{Addresses: []string{e.url}, Transport: counter, DisableRetry: true})
	if err != nil {
		b.Fatal(err)
	}
	cfg := e.config()
	cfg.Registerer = nil
	p, err := New(cfg, client)
	if err != nil {
		b.Fatal(err)
	}
	r := testenv.Go(b, p.Run)
	ctx := context.Background()
	caughtUp := func() {
		for ok, _ := e.caughtUp(ctx); !ok; ok, _ = e.caughtUp(ctx) {
			if err, exited := r.Exited(); exited {
				b.Fatalf("Run = %v", err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	e.produce(ctx, setup)
	caughtUp()
	before, movesBefore := counter.refreshes.Load(), p.Stats().Moves
	b.ResetTimer()
	start := time.Now()
	e.produce(ctx, changes)
	caughtUp()
	elapsed := time.Since(start)
	b.StopTimer()
	if moved := p.Stats().Moves - movesBefore; moved != int64(n) {
		b.Fatalf("%d restaurants moved, want %d", moved, n)
	}
	refreshes := counter.refreshes.Load() - before
	b.ReportMetric(float64(refreshes)*1000/float64(n+dels), "refreshes/1000changes")
	b.ReportMetric(float64(n+dels)/elapsed.Seconds(), "changes/s")
}
