package e2e

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/internal/datagen"
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
	shardOf := func(r *modelRest) int {
		return e.m18.LocateCell(s2.CellIDFromLatLng(s2.LatLngFromDegrees(r.lat, r.lon)).Parent(e.m18.Level()))
	}
	dishesOf := map[string]int{}
	for _, d := range before.dishes {
		if d.live {
			dishesOf[d.rid]++
		}
	}
	var mover, dest string
	for _, id := range testenv.SortedKeys(before.rests) {
		r := before.rests[id]
		if !r.live {
			continue
		}
		if dishesOf[id] >= 2 && (mover == "" || shardOf(r) > shardOf(before.rests[mover])) {
			mover = id
		}
		if dest == "" || shardOf(r) < shardOf(before.rests[dest]) {
			dest = id
		}
	}
	if mover == "" {
		t.Fatal("no live restaurant with two dishes")
	}
	from, to := shardOf(before.rests[mover]), shardOf(before.rests[dest])
	if to+2 > from {
		t.Fatalf("no restaurant to move far enough in the backfill's order: %s on shard %d, %s on %d", mover, from, dest, to)
	}
	t.Logf("restaurant %s (%d dishes) moves from source shard %d (%s) to shard %d (%s) during the backfill",
		mover, dishesOf[mover], from, e.m18.Shard(from).Name, to, e.m18.Shard(to).Name)

	var mu sync.Mutex
	var progress []schema.SliceState
	type result struct {
		rep *migrate.BackfillReport
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := m.Backfill(ctx, migrate.BackfillConfig{
			Slices: 1, Page: 20, MaxDocsPerSecond: 400, ProgressInterval: 5 * time.Millisecond,
			Progress: func(p migrate.BackfillProgress) {
				mu.Lock()
				progress = p.Slices
				mu.Unlock()
			},
		})
		done <- result{rep, err}
	}()
	deadline := time.Now().Add(20 * time.Second)
	for {
		mu.Lock()
		ready := len(progress) > to && progress[to].Done
		mu.Unlock()
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the backfill did not finish source shard %d within 20s", to)
		}
		time.Sleep(2 * time.Millisecond)
	}
	r := before.rests[mover]
	doc, _ := json.Marshal(r.doc)
	at := before.rests[dest]
	f.inject(restaurantEvent(t, datagen.KindRestaurantMove, mover, r.version+1, datagen.Location{Lat: at.lat, Lon: at.lon}, doc))
	e.waitDrained(t, in, 20*time.Second)
	select {
	case res := <-done:
		t.Fatalf("the backfill ended (%+v, %v) before ingest had moved the restaurant: slow it down", res.rep, res.err)
	default:
	}
	res := <-done
	if res.err != nil {
		t.Fatalf("Backfill: %v", res.err)
	}

	final := buildModel(t, f.log())
	want := final.expected(e.m24)
	// Every dish of the restaurant is in the target, at the restaurant's
	// new place (a real-time GET with the routing the new map gives it).
	var lost []string
	for _, id := range testenv.SortedKeys(final.dishes) {
		d := final.dishes[id]
		if d.rid != mover || !d.live {
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
