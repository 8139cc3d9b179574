package bulk

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/acksrv"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil"
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

const benchWorkers = 4

// writeWithWriter writes every document with this package's Writer and
// returns how many succeeded.
func writeWithWriter(b *testing.B, url string, docs []benchDoc) int64 {
	client, err := NewClient(ClientConfig{Addresses: []string{url}})
	if err != nil {
		b.Fatal(err)
	}
	var ok atomic.Int64
	w, err := New(client, Config{Workers: benchWorkers, OnResult: func(r Result) {
		if r.Outcome.Succeeded() {
			ok.Add(1)
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for i := range docs {
		d := &docs[i]
		if err := w.Add(ctx, Item{Action: Index, Index: "menu", ID: d.id, Routing: d.routing, Shard: d.shard,
			Version: d.version, VersionType: External, Body: d.body}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	return ok.Load()
}

// writeWithBulkIndexer writes every document with opensearchutil's
// BulkIndexer, the same worker count and flush size.
func writeWithBulkIndexer(b *testing.B, url string, docs []benchDoc) int64 {
	client, err := opensearchapi.NewClient(opensearchapi.Config{Client: opensearch.Config{Addresses: []string{url}}})
	if err != nil {
		b.Fatal(err)
	}
	bi, err := opensearchutil.NewBulkIndexer(opensearchutil.BulkIndexerConfig{
		Client: client, NumWorkers: benchWorkers, FlushBytes: DefaultFlushBytes, FlushInterval: DefaultFlushInterval,
	})
	if err != nil {
		b.Fatal(err)
	}
	var ok atomic.Int64
	ctx := context.Background()
	vt := "external"
	for i := range docs {
		d := &docs[i]
		routing, version := d.routing, d.version
		if err := bi.Add(ctx, opensearchutil.BulkIndexerItem{Index: "menu", Action: "index", DocumentID: d.id,
			Routing: &routing, Version: &version, VersionType: &vt, Body: bytes.NewReader(d.body),
			OnSuccess: func(context.Context, opensearchutil.BulkIndexerItem, opensearchapi.BulkRespItem) { ok.Add(1) },
		}); err != nil {
			b.Fatal(err)
		}
	}
	if err := bi.Close(ctx); err != nil {
		b.Fatal(err)
	}
	return ok.Load()
}

// BenchmarkWriterVsBulkIndexer writes the same 200,000 documents (~1 KB
// each) with this package's Writer and with opensearchutil.BulkIndexer,
// both with 4 workers, first against an acknowledging server (the
// clients' own overhead), then against the emulator. It reports docs/s and
// allocations per document; compare the pairs side by side.
func BenchmarkWriterVsBulkIndexer(b *testing.B) {
	docs := benchDocuments()
	type contender struct {
		name  string
		write func(*testing.B, string, []benchDoc) int64
	}
	contenders := []contender{{"geoshard", writeWithWriter}, {"bulkindexer", writeWithBulkIndexer}}
	for _, server := range []string{"ack", "osfake"} {
		for _, c := range contenders {
			b.Run(server+"/"+c.name, func(b *testing.B) {
				var url string
				switch server {
				case "ack":
					s := acksrv.Start()
					defer s.Close()
					url = s.URL
				case "osfake":
					s := osfake.NewTestServer(osfake.Options{})
					defer s.Close()
					url = s.URL
					createBenchIndex(b, url)
				}
				b.ReportAllocs()
				var ms0, ms1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms0)
				start := time.Now()
				for b.Loop() {
					if got := c.write(b, url, docs); got != int64(len(docs)) {
						b.Fatalf("%s: %d of %d documents succeeded", c.name, got, len(docs))
					}
				}
				elapsed := time.Since(start)
				runtime.ReadMemStats(&ms1)
				n := float64(len(docs) * b.N)
				b.ReportMetric(n/elapsed.Seconds(), "docs/s")
				b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/doc")
				b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/doc")
			})
		}
	}
}

func createBenchIndex(b *testing.B, url string) {
	client, err := opensearchapi.NewClient(opensearchapi.Config{Client: opensearch.Config{Addresses: []string{url}}})
	if err != nil {
		b.Fatal(err)
	}
	_, err = client.Indices.Create(context.Background(), opensearchapi.IndicesCreateReq{Index: "menu",
		Body: bytes.NewReader([]byte(`{"settings":{"number_of_shards":18,"number_of_routing_shards":18,"number_of_replicas":0,"refresh_interval":"-1"}}`))})
	if err != nil {
		b.Fatal(err)
	}
}
