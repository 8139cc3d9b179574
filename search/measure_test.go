package search_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/golang/geo/s2"
	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/benchrun"
	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
	"github.com/geoshard/geoshard/search"
)

var (
	measureRestaurants = flag.Int("measure-restaurants", 100_000, "restaurants of BenchmarkRoutedVsAllShards (10 dishes each)")
	measureSearches    = flag.Int("measure-searches", 1000, "searches of each kind in BenchmarkRoutedVsAllShards")
)

// BenchmarkRoutedVsAllShards measures the seed's headline on the real
// node: an index of -measure-restaurants restaurants placed like the US
// population (the seed's generator, a sample of its 650,000) with ten
// dishes each, on the 18 shards of the us-18 map; a workload of dish
// searches of 5 to 50 miles around restaurants drawn at random (so placed
// like the restaurants), each run routed to the covering shards and of
// every shard, alternately in blocks of 50. It reports the latency
// percentiles the client sees, and the node's CPU time per search over
// each block (nodeCPU).
//
//	deploy/local/real.sh run go test -tags realcluster ./search/ -run '^$' -bench RoutedVsAllShards -benchtime 1x -timeout 60m
func BenchmarkRoutedVsAllShards(b *testing.B) {
	realenv.RealOnly(b)
	ctx := context.Background()
	m := testenv.LoadMap(b, testenv.MapUS18)
	alias := realenv.Unique("menu-measure")
	index := alias + "-v1"
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{realenv.OpenSearchURL()}, RequestTimeout: 2 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	admin := bulk.NewAdmin(client)
	clear := func() { _ = realenv.DeleteIndexes(ctx, alias+"*") }
	clear()
	b.Cleanup(clear)
	replicas := 0
	if err := migrate.Init(ctx, admin, migrate.InitConfig{Map: m, Index: index, Alias: alias, Replicas: &replicas}); err != nil {
		b.Fatal(err)
	}
	cities, err := datagen.Cities()
	if err != nil {
		b.Fatal(err)
	}
	all, err := datagen.Generate(cities, datagen.DefaultUS())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, 11))
	rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
	rests := all[:min(*measureRestaurants, len(all))]
	start := time.Now()
	docs := loadMeasureIndex(b, client, m, index, rests)
	if err := admin.Refresh(ctx, index); err != nil {
		b.Fatal(err)
	}
	if err := admin.Send(ctx, bulk.Request{Method: http.MethodPost, Path: "/" + index + "/_forcemerge?max_num_segments=1"}, nil); err != nil {
		b.Logf("force merge: %v", err)
	}
	b.Logf("indexed %d documents (%d restaurants) in %v", docs, len(rests), time.Since(start).Round(time.Second))

	c, err := search.Open(ctx, client, search.Config{Alias: alias})
	if err != nil {
		b.Fatal(err)
	}
	type probe struct {
		lat, lng, radiusM float64
	}
	n := *measureSearches
	work := make([]probe, n)
	for i := range work {
		r := rests[rng.IntN(len(rests))]
		work[i] = probe{r.Lat, r.Lng, (5 + 45*rng.Float64()) * 1609.344}
	}
	type side struct {
		lat    []time.Duration
		cpuMS  int64
		shards int
	}
	var routed, every side
	runBlock := func(s *side, from, to int, allShards bool) {
		before := nodeCPU(b, admin)
		for _, p := range work[from:to] {
			t0 := time.Now()
			res, err := c.Dishes(ctx, search.DishQuery{Area: search.Circle(p.lat, p.lng, p.radiusM), AllShards: allShards})
			if err != nil {
				b.Fatal(err)
			}
			s.lat = append(s.lat, time.Since(t0))
			s.shards += len(res.Shards)
		}
		s.cpuMS += nodeCPU(b, admin) - before
	}
	// Warm both paths' caches.
	for i := 0; i < min(50, n); i++ {
		p := work[i]
		for _, allShards := range []bool{false, true} {
			if _, err := c.Dishes(ctx, search.DishQuery{Area: search.Circle(p.lat, p.lng, p.radiusM), AllShards: allShards}); err != nil {
				b.Fatal(err)
			}
		}
	}
	if pids := nodePIDs(); len(pids) > 0 {
		b.Logf("node CPU from /proc of pids %v", pids)
	} else {
		b.Log("node CPU from _nodes/stats, which the node refreshes once a second: blocks shorter than that read 0")
	}
	b.ResetTimer()
	const block = 50
	for from := 0; from < n; from += block {
		to := min(from+block, n)
		runBlock(&routed, from, to, false)
		runBlock(&every, from, to, true)
	}
	b.StopTimer()
	pct := func(d []time.Duration, p float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
	}
	for _, x := range []struct {
		name string
		s    side
	}{{"routed", routed}, {"all", every}} {
		b.ReportMetric(pct(x.s.lat, 0.5), x.name+"_p50_ms")
		b.ReportMetric(pct(x.s.lat, 0.99), x.name+"_p99_ms")
		b.ReportMetric(float64(x.s.cpuMS)/float64(n), x.name+"_cpu_ms/search")
		b.ReportMetric(float64(x.s.shards)/float64(n), x.name+"_shards/search")
	}
	if routed.cpuMS > 0 {
		b.ReportMetric(float64(every.cpuMS)/float64(routed.cpuMS), "cpu_all/routed")
	}
}

// loadMeasureIndex writes each restaurant and ten dishes, routed under m.
func loadMeasureIndex(b *testing.B, client *opensearch.Client, m *router.Map, index string, rests []datagen.Restaurant) int {
	b.Helper()
	ctx := context.Background()
	var failed error
	w, err := bulk.New(client, bulk.Config{OnResult: func(r bulk.Result) {
		if r.Outcome != bulk.OK && failed == nil {
			failed = fmt.Errorf("%s: %v %v", r.Item.ID, r.Outcome, r.Err)
		}
	}})
	if err != nil {
		b.Fatal(err)
	}
	menu := []struct {
		name             string
		allergens, diets []string
		price            int
	}{
		{"pad thai", []string{"peanut", "egg"}, nil, 1450}, {"green curry", nil, []string{"vegan", "gluten_free"}, 1650},
		{"margherita pizza", []string{"milk", "wheat"}, []string{"vegetarian"}, 1800}, {"tiramisu", []string{"milk", "egg", "wheat"}, []string{"vegetarian"}, 900},
		{"carnitas taco", nil, []string{"gluten_free"}, 450}, {"salmon roll", []string{"fish", "soy"}, nil, 1200},
		{"falafel wrap", []string{"sesame", "wheat"}, []string{"vegan"}, 1100}, {"cheeseburger", []string{"milk", "wheat"}, nil, 1350},
		{"caesar salad", []string{"egg", "fish", "milk"}, nil, 1250}, {"dal tadka", nil, []string{"vegan", "gluten_free"}, 1300},
	}
	cuisines := []string{"thai", "italian", "mexican", "japanese", "american", "indian", "mediterranean", "chinese"}
	docs := 0
	for i, r := range rests {
		cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(r.Lat, r.Lng)).Parent(m.Level())
		sh := m.Shard(m.LocateCell(cell))
		rb, _ := json.Marshal(map[string]any{
			schema.FieldRelation: schema.RelationRestaurant, schema.FieldGeoCell: cell.ToToken(), schema.FieldVersion: 1,
			schema.FieldDocID: schema.RestaurantID(r.ID), schema.FieldLocation: map[string]any{"lat": r.Lat, "lon": r.Lng},
			"name": "kitchen " + r.ID, "cuisines": []string{cuisines[i%len(cuisines)]},
		})
		if err := w.Add(ctx, bulk.Item{Action: bulk.Index, Index: index, ID: schema.RestaurantID(r.ID), Routing: sh.Routing, Shard: sh.Name, Body: rb}); err != nil {
			b.Fatal(err)
		}
		docs++
		for j, d := range menu {
			id := fmt.Sprintf("%s-%d", r.ID, j)
			db, _ := json.Marshal(map[string]any{
				schema.FieldRelation: map[string]any{"name": schema.RelationDish, "parent": schema.RestaurantID(r.ID)},
				schema.FieldVersion:  1, schema.FieldDocID: schema.DishID(id), schema.FieldRestaurantID: r.ID,
				"name": d.name, "allergens": d.allergens, "diets": d.diets, "price_cents": d.price + 50*(i%7),
			})
			if err := w.Add(ctx, bulk.Item{Action: bulk.Index, Index: index, ID: schema.DishID(id), Routing: sh.Routing, Shard: sh.Name, Body: db}); err != nil {
				b.Fatal(err)
			}
			docs++
		}
	}
	if err := w.Close(ctx); err != nil {
		b.Fatal(err)
	}
	if failed != nil {
		b.Fatal(failed)
	}
	return docs
}

// nodeCPU is the nodes' process CPU time so far, in milliseconds: from
// /proc, for the node processes deploy/local/real.sh started
// ($GEOSHARD_REAL_DIR/opensearch*.pid), else the sum of _nodes/stats'
// cpu.total_in_millis. The node caches that figure for a second
// (monitor.process.refresh_interval, which cannot be set lower), longer
// than a block of routed searches takes, so read there a short block's
// CPU is 0 and the next block's is counted with it.
func nodeCPU(b *testing.B, admin *bulk.Admin) int64 {
	b.Helper()
	if pids := nodePIDs(); len(pids) > 0 {
		var total time.Duration
		for _, pid := range pids {
			cpu, err := benchrun.ReadCPU(pid)
			if err != nil {
				b.Fatalf("node pid %d: %v", pid, err)
			}
			total += cpu
		}
		return total.Milliseconds()
	}
	var out struct {
		Nodes map[string]struct {
			Process struct {
				CPU struct {
					TotalInMillis int64 `json:"total_in_millis"`
				} `json:"cpu"`
			} `json:"process"`
		} `json:"nodes"`
	}
	if err := admin.Send(context.Background(), bulk.Request{Method: http.MethodGet, Path: "/_nodes/stats/process"}, &out); err != nil {
		b.Fatal(err)
	}
	var total int64
	for _, n := range out.Nodes {
		total += n.Process.CPU.TotalInMillis
	}
	return total
}

// nodePIDs are the pids of the node processes real.sh started, read from
// its PID files, or nil where there are none (engines started otherwise).
func nodePIDs() []int {
	files, _ := filepath.Glob(filepath.Join(os.Getenv("GEOSHARD_REAL_DIR"), "opensearch*.pid"))
	var pids []int
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(raw))); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}
