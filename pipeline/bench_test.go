package pipeline

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/acksrv"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// benchEvents is a stream of n upserts: a restaurant, then its dishes,
// about one restaurant in ten events, spread over US cities.
func benchEvents(n int) []genEvent {
	evs := make([]genEvent, 0, n)
	cities := [][2]float64{{40.71, -74.0}, {37.77, -122.42}, {34.05, -118.24}, {41.88, -87.63}, {29.76, -95.37}, {47.61, -122.33}, {25.76, -80.19}, {39.74, -104.99}}
	var rid string
	for i := 0; len(evs) < n; i++ {
		if i%10 == 0 {
			c := cities[(i/10)%len(cities)]
			rid = fmt.Sprintf("r%07d", i/10)
			evs = append(evs, genEvent{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: rid, rid: rid, version: 1,
				lat: c[0] + float64(i%97)*0.001, lon: c[1] + float64(i%89)*0.001,
				doc: map[string]any{"name": "place " + rid, "cuisines": []string{"thai", "ramen"}}})
			continue
		}
		evs = append(evs, genEvent{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: fmt.Sprintf("d%08d", i), rid: rid, version: 1,
			doc: map[string]any{"name": "noodles", "price_cents": 1250, "allergens": []string{"peanut"}, "diets": []string{"vegan"}}})
	}
	return encodeAll(evs)
}

// splitTransport sends _bulk requests to one server and everything else
// to another.
type splitTransport struct {
	bulk *url.URL
	next http.RoundTripper
}

func (s *splitTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.HasSuffix(req.URL.Path, "/_bulk") {
		req = req.Clone(req.Context())
		req.URL.Scheme, req.URL.Host = s.bulk.Scheme, s.bulk.Host
		req.Host = s.bulk.Host
	}
	return s.next.RoundTrip(req)
}

func benchPipeline(b *testing.B, client func(e *testEnv) *opensearch.Client) {
	benchPipelineOn(b, envOptions{partitions: 4}, client)
}

func benchPipelineOn(b *testing.B, o envOptions, client func(e *testEnv) *opensearch.Client) float64 {
	return benchPipelineWith(b, o, client, nil)
}

// benchPipelineWith runs b.N events through a pipeline and reports (and
// returns) events/s. setup, if given, prepares the environment before the
// pipeline starts; ready, if given, must hold before the events are
// produced.
func benchPipelineWith(b *testing.B, o envOptions, client func(e *testEnv) *opensearch.Client, setup func(e *testEnv) func(*Pipeline) bool) float64 {
	return benchPipelineRun(b, o, client, setup, benchEvents)
}

// benchPipelineEvents is benchPipelineOn with the events gen makes.
func benchPipelineEvents(b *testing.B, o envOptions, client func(e *testEnv) *opensearch.Client, gen func(n int) []genEvent) float64 {
	return benchPipelineRun(b, o, client, nil, gen)
}

func benchPipelineRun(b *testing.B, o envOptions, client func(e *testEnv) *opensearch.Client, setup func(e *testEnv) func(*Pipeline) bool, gen func(n int) []genEvent) float64 {
	b.ReportAllocs()
	e := newEnv(b, o)
	var ready func(*Pipeline) bool
	if setup != nil {
		ready = setup(e)
	}
	evs := gen(b.N)
	if o.dishKeyDish {
		for i := range evs {
			if evs[i].dish {
				evs[i].key = []byte(evs[i].id)
			}
		}
	}
	cfg := e.config()
	cfg.Bulk.FlushInterval = 20 * time.Millisecond
	cfg.Registerer = nil
	p, err := New(cfg, client(e))
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	for ok, why := p.Ready(); !ok; ok, why = p.Ready() {
		if strings.HasPrefix(why, "waiting") || strings.HasPrefix(why, "warming") || why == "not started" {
			time.Sleep(5 * time.Millisecond)
			continue
		}
		b.Fatalf("not ready: %s", why)
	}
	for ready != nil && !ready(p) {
		time.Sleep(5 * time.Millisecond)
	}
	b.ResetTimer()
	start := time.Now()
	e.produce(context.Background(), evs)
	for {
		if ok, _ := e.caughtUp(context.Background()); ok {
			break
		}
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	rate := float64(b.N) / elapsed.Seconds()
	b.ReportMetric(rate, "events/s")
	return rate
}

// BenchmarkPipeline: events through the whole pipeline in one process,
// from the in-process broker to the OpenSearch emulator (or, with -tags
// realcluster, from the real broker to the real node).
func BenchmarkPipeline(b *testing.B) {
	benchPipeline(b, func(e *testEnv) *opensearch.Client { return e.client })
}

// BenchmarkPipelineAckServer: the same, with the bulk writes going to a
// server that acknowledges them without storing anything (the admin calls
// still go to the emulator), so the figure is the pipeline's own cost.
func BenchmarkPipelineAckServer(b *testing.B) {
	benchPipeline(b, func(e *testEnv) *opensearch.Client {
		ack := acksrv.Start()
		b.Cleanup(ack.Close)
		return ackClient(b, e, ack)
	})
}

// ackClient is a client that sends _bulk requests to ack and everything
// else to the environment's OpenSearch.
func ackClient(b *testing.B, e *testEnv, ack *acksrv.Server) *opensearch.Client {
	u, _ := url.Parse(ack.URL)
	c, err := opensearch.NewClient(opensearch.Config{
		Addresses:    []string{e.url},
		Transport:    &splitTransport{bulk: u, next: http.DefaultTransport.(*http.Transport).Clone()},
		DisableRetry: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkPipelineEngines runs the same events through the pipeline
// twice in one run: from the in-process broker to the emulator, and (with
// -tags realcluster) from the real Kafka broker to the real OpenSearch
// node, so the two figures are measured side by side.
func BenchmarkPipelineEngines(b *testing.B) {
	b.Run("in-process", func(b *testing.B) {
		benchPipelineOn(b, envOptions{partitions: 4, inProcess: true}, func(e *testEnv) *opensearch.Client { return e.client })
	})
	b.Run("real", func(b *testing.B) {
		realenv.RealOnly(b)
		benchPipelineOn(b, envOptions{partitions: 4}, func(e *testEnv) *opensearch.Client { return e.client })
	})
}

// BenchmarkPipelineDishKey runs the events of BenchmarkPipeline from a
// restaurant and a dish topic, the dishes keyed by restaurant
// (dishkey=restaurant) and by their own id (dishkey=dish: re-keyed through
// the repartition topic), side by side, to the emulator and to the
// acknowledging server (the pipeline's own cost), both on the in-process
// broker, and with -tags realcluster on the real broker and node.
func BenchmarkPipelineDishKey(b *testing.B) {
	for _, server := range []string{"emulator", "ack", "real"} {
		for _, dish := range []bool{false, true} {
			name := "restaurant"
			if dish {
				name = "dish"
			}
			b.Run("server="+server+"/dishkey="+name, func(b *testing.B) {
				if server == "real" {
					realenv.RealOnly(b)
				}
				benchPipelineOn(b, envOptions{partitions: 4, twoTopics: true, dishKeyDish: dish, inProcess: server != "real"}, func(e *testEnv) *opensearch.Client {
					if server != "ack" {
						return e.client
					}
					ack := acksrv.Start()
					b.Cleanup(ack.Close)
					return ackClient(b, e, ack)
				})
			})
		}
	}
}

// BenchmarkPipelineDualWrites runs the events of BenchmarkPipeline with no
// migration and during a migration's dual writes (to the 18-shard source
// and a 24-shard target), side by side, against three servers:
//
//   - server=emulator: the OpenSearch emulator, with 0 and 5 ms added to
//     every bulk request (its shard_latency on every shard of both
//     indexes; a real cluster takes at least that). The emulator runs in
//     the same process and indexes every document, twice during dual
//     writes, on the same two cores as the pipeline.
//   - server=ack: the bulk writes go to a server that acknowledges them
//     without storing anything (the admin calls still go to the
//     emulator), answering each request after 0 or 5 ms: the pipeline's
//     own cost of writing twice.
//   - server=real: the real broker and node (-tags realcluster; skipped
//     otherwise), at the node's own latency.
//
// The dual-writes runs also report their rate as a fraction of the
// no-migration run before them ("x_of_none"). Use enough events that the
// last events' round trips do not dominate:
//
//	go test -run '^$' -bench PipelineDualWrites -benchtime 100000x -count 3 ./pipeline/
func BenchmarkPipelineDualWrites(b *testing.B) {
	type server struct {
		name      string
		latencies []time.Duration
	}
	for _, srv := range []server{
		{"emulator", []time.Duration{0, 5 * time.Millisecond}},
		{"ack", []time.Duration{0, 5 * time.Millisecond}},
		{"real", []time.Duration{0}},
	} {
		for _, latency := range srv.latencies {
			var none float64
			for _, dual := range []bool{false, true} {
				name := fmt.Sprintf("server=%s/latency=%v/no-migration", srv.name, latency)
				if dual {
					name = fmt.Sprintf("server=%s/latency=%v/dual-writes", srv.name, latency)
				}
				b.Run(name, func(b *testing.B) {
					opts := envOptions{partitions: 4, inProcess: true}
					if srv.name == "real" {
						realenv.RealOnly(b)
						opts.inProcess = false
					}
					var ack *acksrv.Server
					client := func(e *testEnv) *opensearch.Client { return e.client }
					if srv.name == "ack" {
						ack = acksrv.Start()
						b.Cleanup(ack.Close)
						ack.Delay.Store(int64(latency))
						client = func(e *testEnv) *opensearch.Client { return ackClient(b, e, ack) }
					}
					rate := benchPipelineWith(b, opts, client, func(e *testEnv) func(*Pipeline) bool {
						indexes := []string{testIndex}
						var m24 *router.Map
						if dual {
							m24 = plannedMap24(b)
							e.createIndex(b, testIndex2, m24)
							e.setMigration(b, e.newMigration(b, m24, schema.PhaseDualWrites))
							indexes = append(indexes, testIndex2)
						}
						if latency > 0 && srv.name == "emulator" {
							var slow []osfake.ShardLatency
							for _, index := range indexes {
								n := e.m.NumShards()
								if index == testIndex2 {
									n = m24.NumShards()
								}
								for i := range n {
									slow = append(slow, osfake.ShardLatency{Index: index, Shard: i, Delay: osfake.Duration(latency)})
								}
							}
							if err := e.os.SetFaults(osfake.Faults{ShardLatency: slow}); err != nil {
								b.Fatal(err)
							}
						}
						if !dual {
							return nil
						}
						return func(p *Pipeline) bool { return p.Stats().Migration.Phase == schema.PhaseDualWrites }
					})
					if !dual {
						none = rate
					} else if none > 0 {
						b.ReportMetric(rate/none, "x_of_none")
					}
				})
			}
		}
	}
}
