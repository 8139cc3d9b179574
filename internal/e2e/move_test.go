package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/internal/eventmodel"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/schema"
)

// TestMoveDuringBackfill moves a restaurant, through the live pipeline,
// while the backfill runs: from the last source shard the backfill will
// copy to a source shard it has already copied. Its dishes must end in
// the target at the restaurant's new place, like every document ingest
// changes during dual writes.
//
// During dual writes ingest takes the dishes to move from the source,
// which has them all, and applies the move to every index with
// external_gte, the target included: the dishes it lacks are written at
// the new place, and their old copies deleted, leaving tombstones that
// refuse a backfill copy read before the move and written after it.
func TestMoveDuringBackfill(t *testing.T) {
	realenv.Parallel(t)
	s := startScenario(t, 13, 300, 1000)
	e, in, f := s.e, s.in, s.f
	ctx := context.Background()
	m := e.migrator(nil, nil)
	mig, err := m.Create(ctx, migrate.CreateConfig{Map: e.m24, Target: targetIdx})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.DualWrites(ctx, migrate.AckConfig{Timeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	e.waitApplied(t, in, mig.ID, schema.PhaseDualWrites)

	// The restaurant with dishes on the highest source shard moves to the
	// place of a restaurant on the lowest: one slice at a time, in source
	// shard order, the backfill copies the lowest first and the highest
	// last.
	before := buildModel(t, f.log())
	shardOf := func(r *eventmodel.Restaurant) int {
		return e.m18.LocateCell(s2.CellIDFromLatLng(s2.LatLngFromDegrees(r.Lat, r.Lon)).Parent(e.m18.Level()))
	}
	dishesOf := map[string]int{}
	for _, d := range before.Dishes {
		if d.Live {
			dishesOf[d.RestaurantID]++
		}
	}
	var mover, dest string
	for _, id := range testenv.SortedKeys(before.Restaurants) {
		r := before.Restaurants[id]
		if !r.Live {
			continue
		}
		if dishesOf[id] >= 2 && (mover == "" || shardOf(r) > shardOf(before.Restaurants[mover])) {
			mover = id
		}
		if dest == "" || shardOf(r) < shardOf(before.Restaurants[dest]) {
			dest = id
		}
	}
	if mover == "" {
		t.Fatal("no live restaurant with two dishes")
	}
	from, to := shardOf(before.Restaurants[mover]), shardOf(before.Restaurants[dest])
	if to+2 > from {
		t.Fatalf("no restaurant to move far enough in the backfill's order: %s on shard %d, %s on %d", mover, from, dest, to)
	}
	t.Logf("restaurant %s (%d dishes) moves from source shard %d (%s) to shard %d (%s) during the backfill",
		mover, dishesOf[mover], from, e.m18.Shard(from).Name, to, e.m18.Shard(to).Name)

	// The backfill reads the mover's source shard only once ingest has
	// moved the restaurant: its reads of that shard wait at a gate in the
	// transport of its migrator (the job keeps its state in the cluster,
	// so a second Migrator runs the same migration). Its throttle alone
	// would leave the order to the machine's speed.
	gate := newShardGate(sourceIdx, from)
	bctx, stopBackfill := context.WithCancel(ctx)
	t.Cleanup(func() { gate.release(); stopBackfill() })
	gated := e.migratorThrough(gate)

	var mu sync.Mutex
	var progress []schema.SliceState
	type result struct {
		rep *migrate.BackfillReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := gated.Backfill(bctx, migrate.BackfillConfig{
			Slices: 1, Page: 20, MaxDocsPerSecond: 400, ProgressInterval: 5 * time.Millisecond,
			Progress: func(p migrate.BackfillProgress) {
				mu.Lock()
				progress = p.Slices
				mu.Unlock()
			},
		})
		done <- result{rep, err}
	}()
	deadline := time.Now().Add(realenv.Slack(60 * time.Second))
	for {
		mu.Lock()
		ready := len(progress) > to && progress[to].Done
		mu.Unlock()
		if ready {
			break
		}
		select {
		case res := <-done:
			t.Fatalf("the backfill ended (%+v, %v) before it finished source shard %d", res.rep, res.err, to)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backfill did not finish source shard %d within %v", to, realenv.Slack(60*time.Second))
		}
		time.Sleep(2 * time.Millisecond)
	}
	r := before.Restaurants[mover]
	doc, _ := json.Marshal(r.Doc)
	at := before.Restaurants[dest]
	f.inject(restaurantEvent(t, datagen.KindRestaurantMove, mover, r.Version+1, datagen.Location{Lat: at.Lat, Lon: at.Lon}, doc))
	e.waitDrained(t, in, 20*time.Second)
	// The backfill comes to the gate once it has copied the shards before
	// the mover's: seeing it there shows the gate holds the reads it must.
	select {
	case <-gate.arrived:
	case res := <-done:
		t.Fatalf("the backfill ended (%+v, %v) without a read of source shard %d held at the gate", res.rep, res.err, from)
	case <-time.After(realenv.Slack(60 * time.Second)):
		t.Fatalf("the backfill did not come to source shard %d within %v", from, realenv.Slack(60*time.Second))
	}
	gate.release()
	res := <-done
	if res.err != nil {
		t.Fatalf("Backfill: %v", res.err)
	}

	final := buildModel(t, f.log())
	want := final.expected(e.m24)
	// Every dish of the restaurant is in the target, at the restaurant's
	// new place (a real-time GET with the routing the new map gives it).
	var lost []string
	for _, id := range testenv.SortedKeys(final.Dishes) {
		d := final.Dishes[id]
		if d.RestaurantID != mover || !d.Live {
			continue
		}
		w := want[schema.DishID(id)]
		if _, _, found, err := e.admin.Get(ctx, targetIdx, schema.DishID(id), w.routing); err != nil {
			t.Fatal(err)
		} else if !found {
			lost = append(lost, schema.DishID(id))
		}
	}
	if len(lost) > 0 {
		t.Errorf("%d of %d dishes of restaurant %s, moved during the backfill, are not in the target at its new place (shard %s): %v",
			len(lost), dishesOf[mover], mover, e.m24.Shard(want[schema.RestaurantID(mover)].shard).Name, lost)
	}
	if ver, err := m.Verify(ctx, migrate.VerifyConfig{IDs: true, Attempts: 3, Pause: 50 * time.Millisecond}); err != nil {
		logVerification(t, ver)
		t.Errorf("Verify after the backfill: %v", err)
	}
	s.mark("end")
	s.explain(t, targetIdx, e.checkIndex(t, targetIdx, e.m24, want))
	e.checkIndex(t, sourceIdx, e.m18, final.expected(e.m18))
}

// shardGate is an http.RoundTripper that holds every search of one shard
// of one index (a backfill slice's page reads, which name their shard with
// preference=_shards:N) until release; everything else goes straight
// through. arrived is closed when the first such search comes.
type shardGate struct {
	path, preference    string
	next                http.RoundTripper
	arrived, open       chan struct{}
	arriveOnce, release func()
}

func newShardGate(index string, shard int) *shardGate {
	g := &shardGate{
		path: "/" + index + "/_search", preference: "_shards:" + strconv.Itoa(shard),
		next: http.DefaultTransport, arrived: make(chan struct{}), open: make(chan struct{}),
	}
	g.arriveOnce = sync.OnceFunc(func() { close(g.arrived) })
	g.release = sync.OnceFunc(func() { close(g.open) })
	return g
}

func (g *shardGate) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == g.path && r.URL.Query().Get("preference") == g.preference {
		g.arriveOnce()
		select {
		case <-g.open:
		case <-r.Context().Done():
			return nil, r.Context().Err()
		}
	}
	return g.next.RoundTrip(r)
}
