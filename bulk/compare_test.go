package bulk

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/acksrv"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
)

// benchDoc is one realistic document: a restaurant or one of its dishes,
// about 1 KB of JSON, routed to one of 18 geoshards.
type benchDoc struct {
	id, routing, shard string
	version            int64
	body               []byte
}

var (
	benchOnce sync.Once
	benchSet  []benchDoc
)

const benchDocs = 200_000

var words = []string{"spicy", "garlic", "basil", "crispy", "slow-cooked", "house", "smoked", "lemon", "chili", "roasted",
	"fresh", "seasonal", "tamarind", "sesame", "ginger", "wood-fired", "charred", "pickled", "miso", "saffron"}

// benchDocuments builds the same 200,000 documents every time.
func benchDocuments() []benchDoc {
	benchOnce.Do(func() {
		rng := rand.New(rand.NewPCG(42, 42))
		shards := make([]string, 18)
		for i := range shards {
			shards[i] = "shard-" + strconv.Itoa(i)
		}
		var b bytes.Buffer
		restaurant := ""
		shard := ""
		for i := 0; i < benchDocs; i++ {
			b.Reset()
			if i%86 == 0 {
				restaurant = "r" + strconv.Itoa(i/86)
				shard = shards[rng.IntN(len(shards))]
				fmt.Fprintf(&b, `{"relation":"restaurant","doc_id":"restaurant:%s","geo_cell":"8085%02x","version":%d,"location":{"lat":%.5f,"lon":%.5f},"name":"%s %s Kitchen","cuisines":["thai","vegan"],"description":"`,
					restaurant, rng.IntN(256), i, 37+rng.Float64(), -122+rng.Float64(), words[rng.IntN(20)], words[rng.IntN(20)])
				benchSet = append(benchSet, benchDoc{id: "restaurant:" + restaurant, routing: shard, shard: shard, version: int64(i)})
			} else {
				fmt.Fprintf(&b, `{"relation":{"name":"dish","parent":"restaurant:%s"},"doc_id":"dish:d%d","restaurant_id":"%s","geo_cell":"8085%02x","version":%d,"name":"%s %s noodles","price_cents":%d,"allergens":["peanut","soy"],"diets":["vegan"],"description":"`,
					restaurant, i, restaurant, rng.IntN(256), i, words[rng.IntN(20)], words[rng.IntN(20)], 500+rng.IntN(3000))
				benchSet = append(benchSet, benchDoc{id: "dish:d" + strconv.Itoa(i), routing: shard, shard: shard, version: int64(i)})
			}
			for b.Len() < 1000 {
				b.WriteString(words[rng.IntN(20)])
				b.WriteByte(' ')
			}
			b.WriteString(`"}`)
			benchSet[len(benchSet)-1].body = bytes.Clone(b.Bytes())
		}
	})
	return benchSet
}

// Both contenders run with the same workers, flush size and linger. The
// writer also cuts a batch at FlushItems (1,000), which BulkIndexer has no
// equivalent of.
const (
	benchWorkers       = 4
	benchFlushBytes    = DefaultFlushBytes
	benchFlushInterval = DefaultFlushInterval
)

// benchIndexBody is the benchmark's index: 18 shards, one per geoshard
// routing shard, no replicas and no periodic refresh during the load, and
// the fields of the menu mapping (the join field needs it: dynamic mapping
// would make relation text, and a real node then rejects every dish).
const benchIndexBody = `{"settings":{"number_of_shards":18,"number_of_routing_shards":18,"number_of_replicas":0,"refresh_interval":"-1"},` +
	`"mappings":{"_routing":{"required":true},"properties":{` +
	`"relation":{"type":"join","relations":{"restaurant":"dish"}},"doc_id":{"type":"keyword"},"restaurant_id":{"type":"keyword"},` +
	`"geo_cell":{"type":"keyword"},"version":{"type":"long"},"location":{"type":"geo_point"},"name":{"type":"text"},` +
	`"cuisines":{"type":"keyword"},"allergens":{"type":"keyword"},"diets":{"type":"keyword"},"price_cents":{"type":"integer"},` +
	`"description":{"type":"text"}}}}`

// benchTransport is the connection pool both contenders use, NewClient's:
// http.DefaultTransport keeps two idle connections per host, so four
// BulkIndexer workers on it would keep dialling new ones.
func benchTransport() *http.Transport {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return tr
}

// writeWithWriter writes every document to index with this package's
// Writer and returns how many succeeded.
func writeWithWriter(b *testing.B, url, index string, docs []benchDoc) int64 {
	client, err := NewClient(ClientConfig{Addresses: []string{url}})
	if err != nil {
		b.Fatal(err)
	}
	var ok atomic.Int64
	var firstErr atomic.Pointer[Result]
	w, err := New(client, Config{Workers: benchWorkers, FlushBytes: benchFlushBytes, FlushInterval: benchFlushInterval, OnResult: func(r Result) {
		if r.Outcome.Succeeded() {
			ok.Add(1)
		} else {
			failed := r
			firstErr.CompareAndSwap(nil, &failed)
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range docs {
		d := &docs[i]
		if err := w.Add(ctx, Item{Action: Index, Index: index, ID: d.id, Routing: d.routing, Shard: d.shard,
			Version: d.version, VersionType: External, Body: d.body}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	if r := firstErr.Load(); r != nil {
		b.Logf("geoshard: first failure: %s: %v %v", r.Item.ID, r.Outcome, r.Err)
	}
	return ok.Load()
}

// writeWithBulkIndexer writes every document to index with
// opensearchutil's BulkIndexer, the same worker count, flush size and
// linger, over the same connection pool.
func writeWithBulkIndexer(b *testing.B, url, index string, docs []benchDoc) int64 {
	client, err := opensearchapi.NewClient(opensearchapi.Config{Client: opensearch.Config{Addresses: []string{url},
		Transport: benchTransport(), RequestTimeout: 60 * time.Second, HealthCheckMaxRetries: -1}})
	if err != nil {
		b.Fatal(err)
	}
	var firstErr atomic.Pointer[string]
	bi, err := opensearchutil.NewBulkIndexer(opensearchutil.BulkIndexerConfig{
		Client: client, NumWorkers: benchWorkers, FlushBytes: benchFlushBytes, FlushInterval: benchFlushInterval,
		OnError: func(_ context.Context, err error) {
			msg := err.Error()
			firstErr.CompareAndSwap(nil, &msg)
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	// The callbacks are made once and the routing and version pointers
	// point into the documents, so that the only allocation per item on
	// this side is the body reader the API takes.
	var ok atomic.Int64
	onSuccess := func(context.Context, opensearchutil.BulkIndexerItem, opensearchapi.BulkRespItem) { ok.Add(1) }
	onFailure := func(_ context.Context, it opensearchutil.BulkIndexerItem, r opensearchapi.BulkRespItem, err error) {
		msg := fmt.Sprintf("%s: status %d %v %v", it.DocumentID, r.Status, r.Error, err)
		firstErr.CompareAndSwap(nil, &msg)
	}
	ctx := context.Background()
	vt := "external"
	for i := range docs {
		d := &docs[i]
		if err := bi.Add(ctx, opensearchutil.BulkIndexerItem{Index: index, Action: "index", DocumentID: d.id,
			Routing: &d.routing, Version: &d.version, VersionType: &vt, Body: bytes.NewReader(d.body),
			OnSuccess: onSuccess, OnFailure: onFailure,
		}); err != nil {
			b.Fatal(err)
		}
	}
	if err := bi.Close(ctx); err != nil {
		b.Fatal(err)
	}
	if msg := firstErr.Load(); msg != nil {
		b.Logf("bulkindexer: first failure: %s", *msg)
	}
	return ok.Load()
}

// BenchmarkWriterVsBulkIndexer writes the same 200,000 documents (~1 KB
// each) with this package's Writer and with opensearchutil.BulkIndexer,
// both with 4 workers, first against an acknowledging server (the
// clients' own overhead), then against the emulator, and under -tags
// realcluster against the real node. Each run against the emulator or the
// node writes to a fresh index, created and checked (counts per shard,
// versions) outside the timed part. It reports docs/s and allocations per
// document; compare the pairs side by side. In-process servers' own
// allocations are counted too.
func BenchmarkWriterVsBulkIndexer(b *testing.B) {
	docs := benchDocuments()
	type contender struct {
		name  string
		write func(*testing.B, string, string, []benchDoc) int64
	}
	contenders := []contender{{"geoshard", writeWithWriter}, {"bulkindexer", writeWithBulkIndexer}}
	servers := []string{"ack", "osfake"}
	if realenv.Enabled() {
		servers = append(servers, "real")
	}
	for _, server := range servers {
		for _, c := range contenders {
			b.Run(server+"/"+c.name, func(b *testing.B) {
				var url string
				switch server {
				case "ack":
					s := acksrv.Start()
					b.Cleanup(s.Close)
					url = s.URL
				case "osfake":
					s := osfake.NewTestServer(osfake.Options{})
					b.Cleanup(s.Close) // after the index's cleanup
					url = s.URL
				case "real":
					url = realenv.OpenSearchURL()
				}
				b.ReportAllocs()
				var elapsed time.Duration
				var mallocs, allocBytes uint64
				for b.Loop() {
					b.StopTimer()
					index := "menu" // the acknowledging server keeps nothing
					if server != "ack" {
						index = createBenchIndex(b, url)
					}
					var ms0, ms1 runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&ms0)
					b.StartTimer()
					start := time.Now()
					got := c.write(b, url, index, docs)
					elapsed += time.Since(start)
					b.StopTimer()
					runtime.ReadMemStats(&ms1)
					mallocs += ms1.Mallocs - ms0.Mallocs
					allocBytes += ms1.TotalAlloc - ms0.TotalAlloc
					if got != int64(len(docs)) {
						b.Fatalf("%s: %d of %d documents succeeded", c.name, got, len(docs))
					}
					if server != "ack" {
						checkBenchIndex(b, url, index, docs)
						deleteBenchIndex(b, url, index)
					}
					b.StartTimer()
				}
				n := float64(len(docs) * b.N)
				b.ReportMetric(n/elapsed.Seconds(), "docs/s")
				b.ReportMetric(float64(mallocs)/n, "allocs/doc")
				b.ReportMetric(float64(allocBytes)/n, "B/doc")
			})
		}
	}
}

func benchAdmin(b *testing.B, url string) *Admin {
	client, err := NewClient(ClientConfig{Addresses: []string{url}})
	if err != nil {
		b.Fatal(err)
	}
	return NewAdmin(client)
}

// createBenchIndex creates a fresh benchmark index (named uniquely on the
// real node) and returns its name; it is deleted when the benchmark ends
// if deleteBenchIndex has not done so.
func createBenchIndex(b *testing.B, url string) string {
	a := benchAdmin(b, url)
	index := realenv.Unique("bench-menu")
	if err := a.CreateIndex(context.Background(), index, []byte(benchIndexBody)); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := a.DeleteIndex(context.Background(), index); err != nil && !IsNotFound(err) {
			b.Errorf("delete %s: %v", index, err)
		}
	})
	return index
}

func deleteBenchIndex(b *testing.B, url, index string) {
	if err := benchAdmin(b, url).DeleteIndex(context.Background(), index); err != nil {
		b.Fatal(err)
	}
}

// checkBenchIndex checks, after a refresh, that index holds every
// document, each shard the ones its routing sends there, and a sample of
// documents their external versions.
func checkBenchIndex(b *testing.B, url, index string, docs []benchDoc) {
	a := benchAdmin(b, url)
	ctx := context.Background()
	if err := a.Refresh(ctx, index); err != nil {
		b.Fatal(err)
	}
	if n, err := a.Count(ctx, index, nil, SearchParams{}); err != nil || n != int64(len(docs)) {
		b.Fatalf("%s holds %d documents (%v), want %d", index, n, err, len(docs))
	}
	const shards = 18
	var want [shards]int64
	for i := range docs {
		want[shardhash.ForRouting(docs[i].routing, shards, shards)]++
	}
	for k, w := range want {
		n, err := a.Count(ctx, index, nil, SearchParams{Preference: "_shards:" + strconv.Itoa(k)})
		if err != nil || n != w {
			b.Fatalf("%s shard %d holds %d documents (%v), want %d", index, k, n, err, w)
		}
	}
	for _, i := range []int{0, 1, len(docs) / 2, len(docs) - 1} {
		d := &docs[i]
		if _, v, found, err := a.Get(ctx, index, d.id, d.routing); err != nil || !found || v != d.version {
			b.Fatalf("%s: %s = found %v version %d (%v), want version %d", index, d.id, found, v, err, d.version)
		}
	}
}
