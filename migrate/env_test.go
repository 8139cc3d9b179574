package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golang/geo/s2"
	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// env is a cluster with an alias on its first index under the 18-shard
// US map, seeded with generated restaurants and dishes, and a Migrator
// towards the 24-shard map in testdata. The cluster is an emulator of the
// test's own, or, with -tags realcluster, the real node at
// realenv.OpenSearchURL(), which the tests use one at a time: each starts
// by deleting what an earlier one left (see testCluster).
//
// With the emulator the alias is "menu" and the indexes menu-v1, menu-v2;
// on the real node the alias is made unique to the run and the test
// (realenv.Unique), and the indexes are named after it.
type env struct {
	t      testing.TB
	srv    *osfake.TestServer // nil on the real node
	url    string             // the cluster's address
	client *opensearch.Client
	admin  *bulk.Admin
	m      *Migrator
	src    *router.Map
	dst    *router.Map
	docs   *docSet
	// alias is the alias migrated; v1 and v2 the source and the first
	// target (ix(1), ix(2)).
	alias, v1, v2 string
	// hbStore creates the migration state index for heartbeats.
	hbStore *stateStore
	// replicas is the source's number_of_replicas, which cutover restores
	// on the target and then waits for green: 1 on the emulator (it
	// pretends to have three nodes), 0 on the one real node, where a
	// replica can never be assigned.
	replicas int
}

// ix is the name of the alias's n-th index: <alias>-v<n>.
func (e *env) ix(n int) string { return e.alias + "-v" + strconv.Itoa(n) }

func newEnv(t testing.TB, restaurants int) *env {
	t.Helper()
	return newEnvWith(t, restaurants, osfake.Options{})
}

// newEnvWith is newEnv on an emulator with options (a manual clock). A
// test that needs them is emulator only.
func newEnvWith(t testing.TB, restaurants int, opts osfake.Options) *env {
	t.Helper()
	client, srv := testCluster(t, opts)
	e := &env{t: t, srv: srv, client: client, admin: bulk.NewAdmin(client), alias: realenv.Unique("menu"), replicas: 1,
		src: testenv.LoadMap(t, testenv.MapUS18), dst: testenv.LoadMap(t, testenv.MapUS24)}
	e.v1, e.v2 = e.ix(1), e.ix(2)
	e.url = realenv.OpenSearchURL()
	if srv != nil {
		e.url = srv.URL
	} else {
		e.replicas = 0
	}
	ctx := context.Background()
	if err := Init(ctx, e.admin, InitConfig{Map: e.src, Index: e.v1, Alias: e.alias, Replicas: &e.replicas}); err != nil {
		t.Fatal(err)
	}
	e.m = e.migrator(nil)
	e.hbStore = newStore(e.admin, e.alias, time.Now)
	e.docs = genDocs(t, restaurants, 3, 7)
	if restaurants > 0 {
		if err := e.docs.write(ctx, client, e.v1, e.src, e.docs.all()); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// testCluster is a client of the cluster a test runs against: a new
// emulator with opts (srv), or the real node (srv nil), cleared of what
// earlier tests left, and cleared again after the test if it passed (a
// failed test leaves its indexes for a look; the next test deletes
// them). The tests of this package are the only users of the menu*
// indexes and the migration state index while they run.
func testCluster(t testing.TB, opts osfake.Options) (*opensearch.Client, *osfake.TestServer) {
	t.Helper()
	c := testenv.StartCluster(t, testenv.ClusterOptions{Emulator: opts, KeepOnFailure: true})
	return c.Client, c.Server
}

func (e *env) migrator(reg prometheus.Registerer) *Migrator {
	e.t.Helper()
	level := slog.LevelError
	if os.Getenv("MIGRATE_TEST_LOG") != "" {
		level = slog.LevelDebug
	}
	m, err := New(e.client, Config{
		Alias:        e.alias,
		Logger:       slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})),
		PollInterval: 10 * time.Millisecond,
		Registerer:   reg,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// heartbeat records an ingest instance's heartbeat, as ingest does.
func (e *env) heartbeat(instance, migrationID string, applied schema.Phase, at time.Time) {
	e.t.Helper()
	// As ingest does: the index is created with its mappings first (a
	// heartbeat written to a missing index would create one with dynamic
	// mappings, where "alias" is analysed text and the job's term query
	// on it misses an alias such as menu.1a2b-7).
	if err := e.hbStore.ensureIndex(context.Background()); err != nil {
		e.t.Errorf("heartbeat of %s: %v", instance, err)
		return
	}
	body, _ := json.Marshal(schema.Heartbeat{Alias: e.alias, Instance: instance, MigrationID: migrationID, Applied: applied, At: at})
	// Errorf, not Fatal: simulated instances call it from goroutines.
	if _, err := e.admin.IndexDoc(context.Background(), schema.MigrationsIndex, schema.HeartbeatDocID(e.alias, instance), body, bulk.DocOptions{}); err != nil {
		e.t.Errorf("heartbeat of %s: %v", instance, err)
	}
}

// quickVerify is a verification configuration for tests: no long pauses.
var quickVerify = VerifyConfig{Attempts: 3, Pause: 10 * time.Millisecond}

// migrateTo runs create, dual writes (no ingest instance), backfill and
// verify.
func (e *env) migrateTo(ctx context.Context, bf BackfillConfig) *schema.Migration {
	e.t.Helper()
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		e.t.Fatalf("Create: %v", err)
	}
	if _, err := e.m.DualWrites(ctx, AckConfig{Timeout: time.Second}); err != nil {
		e.t.Fatalf("DualWrites: %v", err)
	}
	if _, err := e.m.Backfill(ctx, bf); err != nil {
		e.t.Fatalf("Backfill: %v", err)
	}
	if _, err := e.m.Verify(ctx, quickVerify); err != nil {
		e.t.Fatalf("Verify: %v", err)
	}
	mig, err := e.m.Load(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return mig
}

// testDoc is a restaurant or a dish as the tests write it.
type testDoc struct {
	ID       string // _id
	Relation string
	Rest     string // the restaurant's own id (for a restaurant, itself)
	Lat, Lng float64
	Version  int64
	Deleted  bool
}

func (d *testDoc) cell(level int) s2.CellID {
	return s2.CellIDFromLatLng(s2.LatLngFromDegrees(d.Lat, d.Lng)).Parent(level)
}

// body is the document's source, with the fields ingest writes.
func (d *testDoc) body(level int) []byte {
	tok := d.cell(level).ToToken()
	if d.Relation == schema.RelationRestaurant {
		return fmt.Appendf(nil, `{"name":"Restaurant %s","relation":"restaurant","geo_cell":%q,"version":%d,"doc_id":%q,"location":{"lat":%g,"lon":%g}}`,
			d.Rest, tok, d.Version, d.ID, d.Lat, d.Lng)
	}
	return fmt.Appendf(nil, `{"name":"Dish %s","price_cents":1250,"relation":{"name":"dish","parent":%q},"geo_cell":%q,"version":%d,"doc_id":%q,"restaurant_id":%q}`,
		d.ID, schema.RestaurantID(d.Rest), tok, d.Version, d.ID, d.Rest)
}

// docSet is the expected state of every document, current or deleted.
type docSet struct {
	mu     sync.Mutex
	byID   map[string]*testDoc
	order  []string
	dishes map[string][]string // restaurant id → dish _ids
}

// genDocs generates restaurants (around US cities) and their dishes.
func genDocs(t testing.TB, restaurants int, medianDishes float64, seed uint64) *docSet {
	t.Helper()
	s := &docSet{byID: map[string]*testDoc{}, dishes: map[string][]string{}}
	if restaurants == 0 {
		return s
	}
	cities, err := datagen.Cities()
	if err != nil {
		t.Fatal(err)
	}
	rs, err := datagen.Generate(cities, datagen.Config{Countries: []string{"US"}, Restaurants: restaurants, MedianDishes: medianDishes, DishSigma: 0.5, Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rs {
		s.add(&testDoc{ID: schema.RestaurantID(r.ID), Relation: schema.RelationRestaurant, Rest: r.ID, Lat: r.Lat, Lng: r.Lng, Version: 1})
		for k := range r.Dishes {
			s.add(&testDoc{ID: schema.DishID(r.ID + "-" + strconv.Itoa(k)), Relation: schema.RelationDish, Rest: r.ID, Lat: r.Lat, Lng: r.Lng, Version: 1})
		}
	}
	return s
}

func (s *docSet) add(d *testDoc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.byID[d.ID] = d
	s.order = append(s.order, d.ID)
	if d.Relation == schema.RelationDish {
		s.dishes[d.Rest] = append(s.dishes[d.Rest], d.ID)
	}
}

func (s *docSet) all() []*testDoc {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*testDoc, len(s.order))
	for i, id := range s.order {
		c := *s.byID[id]
		out[i] = &c
	}
	return out
}

// live counts the documents that are not deleted.
func (s *docSet) live() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, d := range s.byID {
		if !d.Deleted {
			n++
		}
	}
	return n
}

// write writes docs to index under map mp: each at its version with
// external versioning, deleted ones as deletes.
func (s *docSet) write(ctx context.Context, client *opensearch.Client, index string, mp *router.Map, docs []*testDoc) error {
	var mu sync.Mutex
	var first error
	w, err := bulk.New(client, bulk.Config{FlushItems: 2000, OnResult: func(r bulk.Result) {
		if !r.Outcome.Succeeded() {
			mu.Lock()
			if first == nil {
				first = fmt.Errorf("%s %s: %v %v", r.Item.Action, r.Item.ID, r.Outcome, r.Err)
			}
			mu.Unlock()
		}
	}})
	if err != nil {
		return err
	}
	for _, d := range docs {
		if err := w.Add(ctx, docItem(index, mp, d)); err != nil {
			return err
		}
	}
	if err := w.Close(ctx); err != nil {
		return err
	}
	return first
}

func docItem(index string, mp *router.Map, d *testDoc) bulk.Item {
	s := mp.Shard(mp.LocateCell(d.cell(mp.Level())))
	it := bulk.Item{Action: bulk.Index, Index: index, ID: d.ID, Routing: s.Routing, Version: d.Version, VersionType: bulk.External, Shard: index + "/" + s.Name}
	if d.Deleted {
		it.Action = bulk.Delete
	} else {
		it.Body = d.body(mp.Level())
	}
	return it
}

// stored reads every document of index shard by shard: _id → the shard
// it is on, its version and geo_cell.
type storedDoc struct {
	Shard   int
	Routing string
	Version int64
	Cell    string
}

func (e *env) stored(ctx context.Context, index string, shards int) map[string]storedDoc {
	e.t.Helper()
	out := map[string]storedDoc{}
	for i := range shards {
		after := ""
		for {
			pg, err := e.admin.Search(ctx, index, pageRequest(5000, after), bulk.SearchParams{Preference: "_shards:" + strconv.Itoa(i)})
			if err != nil {
				e.t.Fatal(err)
			}
			for _, h := range pg.Hits {
				var f copyFields
				json.Unmarshal(h.Source, &f)
				out[h.ID] = storedDoc{Shard: i, Routing: h.Routing, Version: *f.Version, Cell: f.GeoCell}
			}
			if len(pg.Hits) < 5000 {
				break
			}
			after, _ = sortAfter(pg.Hits[len(pg.Hits)-1])
		}
	}
	return out
}

// writeItems writes items as they are and checks that each succeeded.
func (e *env) writeItems(ctx context.Context, items ...bulk.Item) error {
	var mu sync.Mutex
	var first error
	w, err := bulk.New(e.client, bulk.Config{OnResult: func(r bulk.Result) {
		mu.Lock()
		defer mu.Unlock()
		if r.Outcome != bulk.OK && first == nil {
			first = fmt.Errorf("%s %s: %v %v", r.Item.Action, r.Item.ID, r.Outcome, r.Err)
		}
	}})
	if err != nil {
		return err
	}
	for _, it := range items {
		if err := w.Add(ctx, it); err != nil {
			return err
		}
	}
	if err := w.Close(ctx); err != nil {
		return err
	}
	return first
}
