package migrate

import (
	"context"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/geo/s2"
	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// balancePlaces are three cities in three different level-10 cells.
var balancePlaces = []struct {
	name     string
	lat, lng float64
}{
	{"San Francisco", 37.7749, -122.4194},
	{"Chicago", 41.8781, -87.6298},
	{"Miami", 25.7617, -80.1918},
}

// skewedMenu builds a map with one geoshard per place (curve order),
// planned with mapDocs, initialises index under alias with it, and writes
// restaurants[i] restaurants, each with one dish, at the i-th place of the
// map (curve order). It returns the map.
func skewedMenu(t *testing.T, client *opensearch.Client, alias, index string, restaurants, mapDocs []int64) *router.Map {
	t.Helper()
	cells := make([]s2.CellID, len(balancePlaces))
	for i, p := range balancePlaces {
		cells[i] = s2.CellIDFromLatLng(s2.LatLngFromDegrees(p.lat, p.lng)).Parent(10)
	}
	order := []int{0, 1, 2}
	sort.Slice(order, func(a, b int) bool { return cells[order[a]] < cells[order[b]] })
	n := len(restaurants)
	shards := make([]router.Shard, n)
	for i := range n {
		start := s2.CellIDFromFace(0).ChildBeginAtLevel(10)
		if i > 0 {
			start = cells[order[i]]
		}
		name := router.ShardName(i)
		shards[i] = router.Shard{Name: name, Start: start.ToToken(), Routing: router.RoutingKey(name, i, n, n), Docs: mapDocs[i]}
	}
	m, err := router.New(10, 0, shards)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	admin := bulk.NewAdmin(client)
	replicas := 0
	if err := Init(ctx, admin, InitConfig{Map: m, Index: index, Alias: alias, Replicas: &replicas}); err != nil {
		t.Fatal(err)
	}
	docs := &docSet{byID: map[string]*testDoc{}, dishes: map[string][]string{}}
	for i, k := range restaurants {
		p := balancePlaces[order[i]]
		if got := m.LocateCell(cells[order[i]]); got != i {
			t.Fatalf("%s is on geoshard %d, want %d", p.name, got, i)
		}
		for j := range k {
			rid := index + "-" + strconv.Itoa(i) + "-" + strconv.FormatInt(j, 10)
			docs.add(&testDoc{ID: schema.RestaurantID(rid), Relation: schema.RelationRestaurant, Rest: rid, Lat: p.lat, Lng: p.lng, Version: 1})
			docs.add(&testDoc{ID: schema.DishID(rid + "-0"), Relation: schema.RelationDish, Rest: rid, Lat: p.lat, Lng: p.lng, Version: 1})
		}
	}
	if err := docs.write(ctx, client, index, m, docs.all()); err != nil {
		t.Fatal(err)
	}
	if err := admin.Refresh(ctx, index); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestBalance(t *testing.T) {
	realenv.Parallel(t)
	client, _ := testCluster(t, osfake.Options{})
	alias := realenv.Unique("menu")
	// 5, 5 and 20 restaurants with a dish each: 10, 10, 40 documents,
	// mean 20. Planned 300, 300, 600: shares 15, 15, 30 of 60.
	m := skewedMenu(t, client, alias, alias+"-v1", []int64{5, 5, 20}, []int64{300, 300, 600})
	r, err := Balance(context.Background(), bulk.NewAdmin(client), alias)
	if err != nil {
		t.Fatal(err)
	}
	if r.Index != alias+"-v1" || r.MapHash != m.Hash() || r.Docs != 60 {
		t.Errorf("Balance = index %s, map %s, %d docs; want %s-v1, %s, 60", r.Index, r.MapHash, r.Docs, alias, m.Hash())
	}
	want := []ShardBalance{
		{Name: "ares", Docs: 10, MapDocs: 300, Planned: 15},
		{Name: "bravo", Docs: 10, MapDocs: 300, Planned: 15},
		{Name: "cosmo", Docs: 40, MapDocs: 600, Planned: 30},
	}
	if len(r.Shards) != len(want) {
		t.Fatalf("Balance: %d shards, want %d", len(r.Shards), len(want))
	}
	for i, w := range want {
		if r.Shards[i] != w {
			t.Errorf("shard %d = %+v, want %+v", i, r.Shards[i], w)
		}
	}
	if r.Imbalance != 2 || r.PlannedImbalance != 1.5 {
		t.Errorf("imbalance %v (planned %v), want 2 (planned 1.5)", r.Imbalance, r.PlannedImbalance)
	}

	if _, err := Balance(context.Background(), bulk.NewAdmin(client), alias+"-missing"); err == nil {
		t.Error("Balance of a missing alias: no error")
	}
}

func TestBalanceWatch(t *testing.T) {
	realenv.Parallel(t)
	client, _ := testCluster(t, osfake.Options{})
	alias := realenv.Unique("menu")
	skewedMenu(t, client, alias, alias+"-v1", []int64{5, 5, 20}, []int64{300, 300, 600})
	reg := prometheus.NewRegistry()
	w, err := NewBalanceWatch(client, BalanceWatchConfig{Alias: alias, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := w.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP geoshard_map_imbalance The largest geoshard's documents over the mean (max/mean); 1 is an even spread, 0 an empty index.
# TYPE geoshard_map_imbalance gauge
geoshard_map_imbalance 2
# HELP geoshard_shard_documents Documents on each geoshard of the alias's write index, as of the last count.
# TYPE geoshard_shard_documents gauge
geoshard_shard_documents{shard="ares"} 10
geoshard_shard_documents{shard="bravo"} 10
geoshard_shard_documents{shard="cosmo"} 40
# HELP geoshard_shard_planned_documents Each geoshard's planned load in the map, scaled so the planned total equals the current total.
# TYPE geoshard_shard_planned_documents gauge
geoshard_shard_planned_documents{shard="ares"} 15
geoshard_shard_planned_documents{shard="bravo"} 15
geoshard_shard_planned_documents{shard="cosmo"} 30
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}

	// The alias moves to an index under a two-shard map, as at a cutover:
	// cosmo's series goes.
	skewedMenu(t, client, alias+"-next", alias+"-v2", []int64{3, 3}, []int64{1, 1})
	yes := true
	if err := bulk.NewAdmin(client).UpdateAliases(ctx, []bulk.AliasAction{
		{Remove: &bulk.AliasSpec{Index: alias + "-v1", Alias: alias}},
		{Add: &bulk.AliasSpec{Index: alias + "-v2", Alias: alias, IsWriteIndex: &yes}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	want = `
# HELP geoshard_map_imbalance The largest geoshard's documents over the mean (max/mean); 1 is an even spread, 0 an empty index.
# TYPE geoshard_map_imbalance gauge
geoshard_map_imbalance 1
# HELP geoshard_shard_documents Documents on each geoshard of the alias's write index, as of the last count.
# TYPE geoshard_shard_documents gauge
geoshard_shard_documents{shard="ares"} 6
geoshard_shard_documents{shard="bravo"} 6
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "geoshard_map_imbalance", "geoshard_shard_documents"); err != nil {
		t.Error(err)
	}

	// A second watch on the same registry is refused, not a panic.
	if _, err := NewBalanceWatch(client, BalanceWatchConfig{Alias: alias, Registerer: reg}); err == nil {
		t.Error("a second BalanceWatch on one registry: no error")
	}
}

// Run counts at once, logs a failed count instead of failing, and returns
// when its context ends.
func TestBalanceWatchRun(t *testing.T) {
	realenv.Parallel(t)
	client, _ := testCluster(t, osfake.Options{})
	alias := realenv.Unique("menu")
	skewedMenu(t, client, alias, alias+"-v1", []int64{5, 5, 20}, []int64{300, 300, 600})

	var logs testenv.LogBuffer
	logger := slog.New(slog.NewTextHandler(&logs, nil))
	regs := []*prometheus.Registry{prometheus.NewRegistry(), prometheus.NewRegistry()}
	good, err := NewBalanceWatch(client, BalanceWatchConfig{Alias: alias, Registerer: regs[0], Logger: logger, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := NewBalanceWatch(client, BalanceWatchConfig{Alias: alias + "-missing", Registerer: regs[1], Logger: logger, Interval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, w := range []*BalanceWatch{good, bad} {
		wg.Go(func() { w.Run(ctx) })
	}
	// Both first counts happen at once; the bound only ends a hung test.
	for give := time.Now().Add(time.Minute); testutil.ToFloat64(good.imbalance) != 2 || !strings.Contains(logs.String(), "balance count failed"); {
		if time.Now().After(give) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if got := testutil.ToFloat64(good.imbalance); got != 2 {
		t.Errorf("after Run, geoshard_map_imbalance = %v, want 2", got)
	}
	if !strings.Contains(logs.String(), "alias="+alias+"-missing") {
		t.Errorf("the failed count is not logged with its alias:\n%s", logs.String())
	}
}

func TestBalanceWatchConfigValidate(t *testing.T) {
	err := BalanceWatchConfig{Interval: time.Millisecond}.Validate()
	for _, want := range []string{"alias: none given", "registerer: none given", "interval 1ms: want 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to say %q", err, want)
		}
	}
	if err := (BalanceWatchConfig{Alias: "menu", Registerer: prometheus.NewRegistry()}).Validate(); err != nil {
		t.Errorf("Validate() of a good config = %v", err)
	}
}
