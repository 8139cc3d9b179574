package pipeline

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/golang/geo/s2"
	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/pipeline/directory"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

var (
	warmRestaurants = flag.Int("warm-restaurants", 650_000, "restaurants in the index for BenchmarkWarm")
	warmIndex       = flag.String("warm-index", "", "with -tags realcluster, the index of the real node BenchmarkWarm reads, kept afterwards "+
		"(loaded unless it holds -warm-restaurants restaurants; delete it by hand); empty: an index of the run's own, deleted afterwards")
)

// BenchmarkWarm reads the restaurant directory of an index holding
// -warm-restaurants restaurants (the seed's count by default), as an
// instance does at start and at a new consumer-group
// generation whose assignment it cannot read:
//
//	go test -run '^$' -bench Warm -benchtime 1x -count 3 ./pipeline/
//
// With -tags realcluster it reads an index of the real node (see
// internal/realenv), named for the run and deleted afterwards; loading it
// takes minutes, so -warm-index names one that is kept and read again by
// the next run:
//
//	GEOSHARD_OPENSEARCH_URL=http://127.0.0.1:9200 GEOSHARD_KAFKA_BROKERS=127.0.0.1:9092 \
//		go test -tags realcluster -run '^$' -bench Warm -benchtime 1x -count 3 ./pipeline/ -warm-index warm-bench
func BenchmarkWarm(b *testing.B) {
	n := *warmRestaurants
	ctx := context.Background()
	m := testenv.LoadMap(b, testenv.MapUS18)
	admin, index := warmCluster(b, m, n)
	p := offlinePipeline(b)
	p.ix.admin = admin
	tg := newTarget(index, m, true)
	b.ReportAllocs()
	b.ResetTimer()
	var took time.Duration
	for range b.N {
		d := directory.New()
		start := time.Now()
		if err := p.ix.warm(ctx, &tg, d); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
		if d.Len() != int64(n) {
			b.Fatalf("directory holds %d restaurants, want %d", d.Len(), n)
		}
	}
	b.ReportMetric(took.Seconds()/float64(b.N), "s/warm")
	b.ReportMetric(float64(n)*float64(b.N)/took.Seconds(), "restaurants/s")
}

// warmCluster returns the cluster BenchmarkWarm reads and the index there
// that holds n restaurants under m: one created for the benchmark on the
// emulator or the real node, or -warm-index on the real node, loaded only
// if it does not hold n restaurants already.
func warmCluster(b *testing.B, m *router.Map, n int) (*bulk.Admin, string) {
	b.Helper()
	ctx := context.Background()
	index := *warmIndex
	var client *opensearch.Client
	var admin *bulk.Admin
	if index == "" {
		index = realenv.Unique("warm-bench")
		c := testenv.StartCluster(b, testenv.ClusterOptions{RequestTimeout: testenv.RequestTimeout, Clear: []string{index}})
		client, admin = c.Client, c.Admin
	} else {
		if !realenv.Enabled() {
			b.Fatal("-warm-index names an index of the real node: it needs -tags realcluster")
		}
		var err error
		client, err = bulk.NewClient(bulk.ClientConfig{Addresses: []string{realenv.OpenSearchURL()}, RequestTimeout: testenv.RequestTimeout})
		if err != nil {
			b.Fatal(err)
		}
		admin = bulk.NewAdmin(client)
		if held := warmHeld(b, admin, index); held == int64(n) {
			b.Logf("index %s holds %d restaurants: read as it is", index, held)
			return admin, index
		} else if held >= 0 {
			b.Logf("index %s holds %d restaurants, want %d: loaded again", index, held, n)
			if err := admin.DeleteIndex(ctx, index); err != nil {
				b.Fatal(err)
			}
		}
	}
	replicas := 0
	if err := migrate.Init(ctx, admin, migrate.InitConfig{Map: m, Index: index, Alias: index + "-alias", Replicas: &replicas}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	storeRestaurantsIn(b, client, m, index, n)
	b.Logf("loaded %d restaurants into %s in %v", n, index, time.Since(start).Round(time.Second))
	return admin, index
}

// warmHeld is how many restaurants index holds, or -1 if it does not
// exist.
func warmHeld(b *testing.B, admin *bulk.Admin, index string) int64 {
	b.Helper()
	ctx := context.Background()
	exists, err := admin.IndexExists(ctx, index)
	if err != nil {
		b.Fatal(err)
	}
	if !exists {
		return -1
	}
	if err := admin.Refresh(ctx, index); err != nil {
		b.Fatal(err)
	}
	q, err := json.Marshal(map[string]any{"term": map[string]any{schema.FieldRelation: schema.RelationRestaurant}})
	if err != nil {
		b.Fatal(err)
	}
	held, err := admin.Count(ctx, index, q, bulk.SearchParams{})
	if err != nil {
		b.Fatal(err)
	}
	return held
}

// storeRestaurants writes n restaurants, r0000000 on, at random places in
// the contiguous US, straight to the test index, and returns their ids.
func storeRestaurants(b *testing.B, e *testEnv, n int) []string {
	b.Helper()
	return storeRestaurantsIn(b, e.client, e.m, testIndex, n)
}

// storeRestaurantsIn writes n restaurants, r0000000 on, at random places
// in the contiguous US, straight to index under m, and returns their ids.
// Each has the fields of internal/datagen's restaurants (name, cuisines,
// city, price level, rating) besides the ones ingest writes: the warm
// reads whole documents.
func storeRestaurantsIn(b *testing.B, client *opensearch.Client, m *router.Map, index string, n int) []string {
	b.Helper()
	ctx := context.Background()
	w, err := bulk.New(client, bulk.Config{})
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
		shard := m.LocateCell(cell)
		err := w.Add(ctx, bulk.Item{
			Action: bulk.Index, Index: index, ID: schema.RestaurantID(id), Routing: m.Shard(shard).Routing,
			Version: 1, VersionType: bulk.External, Shard: m.Shard(shard).Name,
			Body: restaurantBody(benchRestaurantMembers(rng, id), id, 1, cell, lat, lon, m.Level()),
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

// benchRestaurantMembers are the fields of restaurant id as a source
// system sends them, like internal/datagen's RestaurantDoc.
func benchRestaurantMembers(rng *rand.Rand, id string) []byte {
	cuisines := []string{"thai", "mexican", "italian", "japanese", "indian", "vegan", "seafood", "breakfast"}
	cities := []string{"Portland", "Austin", "Chicago", "Denver", "Atlanta", "Boston", "Phoenix", "Seattle"}
	name := fmt.Sprintf("The %s Kitchen %s", cities[rng.IntN(len(cities))], id)
	b, err := json.Marshal(map[string]any{
		"name": name, "city": cities[rng.IntN(len(cities))], "cuisines": cuisines[:1+rng.IntN(3)],
		"price_level": 1 + rng.IntN(4), "rating": float64(10+rng.IntN(41)) / 10,
	})
	if err != nil {
		panic(err)
	}
	return b[1 : len(b)-1] // the members, without the braces
}
