package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

var errCrash = errors.New("crash")

// restaurantWithDishes is a restaurant in San Francisco with n dishes,
// and a dish of another restaurant in New York (which must not move).
func restaurantWithDishes(n int) []genEvent {
	evs := []genEvent{
		{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 1, lat: 37.7749, lon: -122.4194, doc: map[string]any{"name": "sf"}},
		{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r2", rid: "r2", version: 1, lat: 40.7128, lon: -74.006, doc: map[string]any{"name": "ny"}},
		{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: "other", rid: "r2", version: 1, doc: map[string]any{"name": "bagel"}},
	}
	for i := range n {
		evs = append(evs, genEvent{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: fmt.Sprintf("d%03d", i), rid: "r1",
			version: int64(1 + i%3), doc: map[string]any{"name": fmt.Sprintf("dish %d", i), "price_cents": float64(100 + i)}})
	}
	return evs
}

func encodeAll(evs []genEvent) []genEvent {
	for i := range evs {
		if evs[i].value == nil {
			evs[i].value = encodeEvent(evs[i])
		}
		if evs[i].key == nil {
			evs[i].key = []byte(evs[i].rid)
		}
	}
	return evs
}

// TestCrashMidMove stops the pipeline after each step of a move (and of a
// restaurant delete) and starts another: the redelivered event completes
// the change, and every dish ends with its restaurant, exactly once.
func TestCrashMidMove(t *testing.T) {
	realenv.Parallel(t)
	moveToNY := genEvent{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 2, lat: 40.73, lon: -73.99, doc: map[string]any{"name": "moved"}}
	nearby := genEvent{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 2, lat: 37.80, lon: -122.27, doc: map[string]any{"name": "oakland"}}
	remove := genEvent{typ: decode.TypeRestaurant, op: decode.OpDelete, id: "r1", rid: "r1", version: 2}
	// After the move back, the old shard holds a tombstone of every dish at
	// the version being copied back.
	back := genEvent{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 3, lat: 37.7749, lon: -122.4194, doc: map[string]any{"name": "back"}}
	for _, tc := range []struct {
		name   string
		change []genEvent
		step   moveStep
	}{
		{"move/copy", []genEvent{moveToNY}, stepCopyDishes},
		{"move/delete dishes", []genEvent{moveToNY}, stepDeleteOldDishes},
		{"move/delete restaurant", []genEvent{moveToNY}, stepDeleteOldCopy},
		{"move and back", []genEvent{moveToNY, back}, stepDeleteOldCopy},
		{"new cell same shard", []genEvent{nearby}, stepCopyDishes},
		{"delete", []genEvent{remove}, stepDeleteDishes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			realenv.Parallel(t)
			e := newEnv(t, envOptions{partitions: 1})
			ctx := context.Background()
			evs := encodeAll(restaurantWithDishes(40))
			where := e.produce(ctx, evs)
			r := e.start(e.config())
			e.waitCaughtUp(t, r, 20*time.Second)
			if err := r.Stop(t); err != nil {
				t.Fatal(err)
			}
			change := encodeAll(append([]genEvent(nil), tc.change...))
			evs = append(evs, change...)
			where = append(where, e.produce(ctx, change)...)

			crashes := 0
			r = e.startWith(e.config(), func(p *Pipeline) {
				p.ix.searchSize = 7 // several pages
				p.ix.stepHook = func(step moveStep) error {
					if step == tc.step && crashes == 0 {
						crashes++
						return errCrash
					}
					return nil
				}
			})
			if err := r.Wait(t, 20*time.Second); !errors.Is(err, errCrash) {
				t.Fatalf("Run = %v, want the crash after %q", err, tc.step)
			}
			if ok, _ := e.caughtUp(ctx); ok {
				t.Fatal("the interrupted change was committed")
			}
			r = e.startWith(e.config(), func(p *Pipeline) { p.ix.searchSize = 7 })
			e.waitCaughtUp(t, r, 20*time.Second)
			if err := r.Stop(t); err != nil {
				t.Fatal(err)
			}
			checkFinal(t, e, evs, where)
		})
	}
}

// TestRecreateOnAnotherShardWaitsForTheDelete: a restaurant deleted and
// created again on another shard is written there only once the delete
// has landed, so that no interruption can leave the old copy live while
// the index shows the new one (a redelivered delete would then be stale).
func TestRecreateOnAnotherShardWaitsForTheDelete(t *testing.T) {
	realenv.EmulatorOnly(t, "injects latency on the old shard")
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 1})
	ctx := context.Background()
	evs := encodeAll(restaurantWithDishes(3))
	where := e.produce(ctx, evs)
	r := e.start(e.config())
	e.waitCaughtUp(t, r, 20*time.Second)

	routingAt := func(lat, lon float64) (int, string) {
		cell, _ := e.m.Cell(lat, lon)
		i := e.m.LocateCell(cell)
		return i, e.m.Shard(i).Routing
	}
	sfShard, sfRouting := routingAt(evs[0].lat, evs[0].lon)
	_, nyRouting := routingAt(40.73, -73.99)
	if err := e.os.SetFaults(osfake.Faults{ShardLatency: []osfake.ShardLatency{{Index: testIndex, Shard: sfShard, Delay: osfake.Duration(250 * time.Millisecond)}}}); err != nil {
		t.Fatal(err)
	}
	change := encodeAll([]genEvent{
		{typ: decode.TypeRestaurant, op: decode.OpDelete, id: "r1", rid: "r1", version: 2},
		{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 3, lat: 40.73, lon: -73.99, doc: map[string]any{"name": "again"}},
	})
	evs = append(evs, change...)
	where = append(where, e.produce(ctx, change)...)
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, _, found, err := e.admin.Get(ctx, testIndex, "restaurant:r1", nyRouting)
		if err != nil {
			t.Fatal(err)
		}
		if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the new copy never appeared")
		}
		time.Sleep(2 * time.Millisecond)
	}
	if _, _, found, err := e.admin.Get(ctx, testIndex, "restaurant:r1", sfRouting); err != nil || found {
		t.Errorf("the new copy is written while the old one is still there (found %v, %v)", found, err)
	}
	e.waitCaughtUp(t, r, 20*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatal(err)
	}
	e.os.ClearFaults()
	checkFinal(t, e, evs, where)
}

// TestSlowMoveHoldsOnlyItsRestaurant holds a move between its steps (its
// task blocks after copying the dishes): events of another restaurant
// that came after the move are written meanwhile, the later dish event
// of the moving restaurant waits for the move, nothing past the move is
// committed, and once the move goes on everything ends exactly right.
func TestSlowMoveHoldsOnlyItsRestaurant(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 1})
	ctx := context.Background()
	evs := encodeAll(restaurantWithDishes(10))
	where := e.produce(ctx, evs)
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r := e.startWith(e.config(), func(p *Pipeline) {
		p.ix.stepHook = func(step moveStep) error {
			if step == stepCopyDishes {
				once.Do(func() {
					close(entered)
					<-release
				})
			}
			return nil
		}
	})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	e.waitCaughtUp(t, r, 20*time.Second)

	change := encodeAll([]genEvent{
		{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 2, lat: 40.73, lon: -73.99, doc: map[string]any{"name": "moved"}},
		{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r2", rid: "r2", version: 2, lat: 40.7128, lon: -74.006, doc: map[string]any{"name": "ny, later"}},
		{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: "other", rid: "r2", version: 2, doc: map[string]any{"name": "bagel, later"}},
		{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: "d000", rid: "r1", version: 9, doc: map[string]any{"name": "after the move"}},
	})
	evs = append(evs, change...)
	where = append(where, e.produce(ctx, change)...)
	select {
	case <-entered:
	case <-time.After(realenv.Slack(20 * time.Second)):
		t.Fatal("the move never started")
	}

	routing := func(lat, lon float64) string {
		cell, _ := e.m.Cell(lat, lon)
		return e.m.Shard(e.m.LocateCell(cell)).Routing
	}
	ny, sf := routing(40.7128, -74.006), routing(37.7749, -122.4194)
	version := func(id, routing string) int64 {
		t.Helper()
		_, v, found, err := e.admin.Get(ctx, testIndex, id, routing)
		if err != nil {
			t.Fatal(err)
		}
		if !found {
			return 0
		}
		return v
	}
	deadline := time.Now().Add(realenv.Slack(20 * time.Second))
	for version(schema.RestaurantID("r2"), ny) != 2 || version(schema.DishID("other"), ny) != 2 {
		if time.Now().After(deadline) {
			t.Fatal("the other restaurant's later events were not written while the move was held")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if v := version(schema.DishID("d000"), sf); v != 1 {
		t.Errorf("the moving restaurant's dish at the old shard has version %d while the move is held, want 1", v)
	}
	if v := version(schema.RestaurantID("r1"), sf); v != 1 {
		t.Errorf("the moving restaurant at the old shard has version %d while the move is held, want 1", v)
	}
	if ok, _ := e.caughtUp(ctx); ok {
		t.Fatal("events past the held move were committed")
	}

	released = true
	close(release)
	e.waitCaughtUp(t, r, 20*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatal(err)
	}
	checkFinal(t, e, evs, where)
}
