package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

// A member driven by hand, as its processing loop would drive it: the
// test's goroutine is the loop. It writes to e's index through a writer
// of its own, and takes part in no consumer group: the generations are
// entered and ended by the test.
func handMember(t *testing.T, e *testEnv) *Pipeline {
	t.Helper()
	p, err := New(Config{Brokers: []string{"127.0.0.1:9"}, Bulk: e.config().Bulk, Logger: testLogger()}, e.client)
	if err != nil {
		t.Fatal(err)
	}
	drivenByHand(t, p)
	p.ix.targets = []target{newTarget(testIndex, e.m, true)}
	w, err := p.startWriter()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(context.Background()) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go p.ix.reparent.run(ctx)
	return p
}

// put stores a document as another member's write would have left it:
// at version v (external) under the routing of cell, deleted at once
// with del (a tombstone at v).
func (e *testEnv) put(t *testing.T, id string, v int64, cell s2.CellID, body []byte, del bool) {
	t.Helper()
	tg := newTarget(testIndex, e.m, true)
	_, routing := tg.routing(cell)
	do := func(method, query string, body []byte) {
		u := fmt.Sprintf("%s/%s/_doc/%s?routing=%s&version_type=external&refresh=true&%s", e.url, testIndex, url.PathEscape(id), url.QueryEscape(routing), query)
		req, _ := http.NewRequest(method, u, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("%s %s: %s", method, id, resp.Status)
		}
	}
	if !del {
		do(http.MethodPut, fmt.Sprintf("version=%d", v), body)
		return
	}
	do(http.MethodPut, fmt.Sprintf("version=%d", v-1), body)
	do(http.MethodDelete, fmt.Sprintf("version=%d", v), nil)
}

var (
	fenceSF = s2.CellIDFromLatLng(s2.LatLngFromDegrees(37.7749, -122.4194))
	fenceNY = s2.CellIDFromLatLng(s2.LatLngFromDegrees(40.7128, -74.006))
)

// fenceEvent is change, tracked at offset of partition 0, taken in the
// member's generation.
func fenceEvent(p *Pipeline, offset int64, c *decode.Change) *event {
	k := partKey{"events", 0}
	entry, _ := p.track.track(k, offset, 100)
	rid := c.ID
	if c.Type == decode.TypeDish {
		rid = c.RestaurantID
	}
	return &event{part: k, offset: offset, entry: entry, rid: rid, gen: p.ix.gen, change: c}
}

func fenceDish(p *Pipeline, offset int64, id, rid string, v int64) *event {
	return fenceEvent(p, offset, &decode.Change{Type: decode.TypeDish, Op: decode.OpUpsert, ID: id, RestaurantID: rid, Version: v})
}

// fenceMoveToNY is restaurant Y's upsert at version v in New York.
func fenceMoveToNY(p *Pipeline, offset, v int64) *event {
	return fenceEvent(p, offset, &decode.Change{Type: decode.TypeRestaurant, Op: decode.OpUpsert, ID: "Y", Version: v, Lat: 40.7128, Lon: -74.006})
}

// decideAll submits evs in order, runs the loop until nothing is in
// flight, and checks that every one of them is finished (the commit point
// is past the last).
func decideAll(t *testing.T, p *Pipeline, evs ...*event) {
	t.Helper()
	ctx := context.Background()
	for _, ev := range evs {
		if err := p.ix.submit(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.ix.quiesce(ctx); err != nil {
		t.Fatal(err)
	}
	last := evs[len(evs)-1].offset
	if due := p.track.due(); len(due) != 1 || due[0].offset != last+1 {
		t.Errorf("commit points %v, want every event finished", due)
	}
}

// TestEndedGenerationDecidesNothing: a member whose generation ends while
// one of its restaurants is held (by a move, a lookup) and a dish event
// of that restaurant waits behind the hold decides nothing more of that
// generation. When the hold's task comes back after the end, the member
// does not apply the waiting dish with its directory of before the end —
// which would write the dish under the restaurant's old routing after the
// partition's next owner moved the restaurant, and spread a delete of it
// under every other routing, the new one included. The task is
// cancelled, its end is not run, the dish stays unwritten and unfinished
// (its offset is not committed: the next owner decides it), and at the
// next generation the restaurant is forgotten and looked up again.
func TestEndedGenerationDecidesNothing(t *testing.T) {
	realenv.EmulatorOnly(t, "a member driven by hand against the emulator")
	e := newEnv(t, envOptions{partitions: 1})
	p := handMember(t, e)
	ix := p.ix
	ctx := context.Background()
	ix.enterGen(1)
	ix.dir.Set("Y", fenceSF, 1)
	e.put(t, schema.RestaurantID("Y"), 1, fenceSF, restaurantBody(nil, "Y", 1, fenceSF, 37.7749, -122.4194, e.m.Level()), false)

	// A task holds Y (a move, a lookup), and comes back only once let go.
	letGo := make(chan struct{})
	ix.rest("Y").held = true
	ix.goTask(ctx, func(ctx context.Context) func(context.Context) error {
		select {
		case <-letGo:
		case <-ctx.Done():
		}
		return func(ctx context.Context) error { return ix.unhold(ctx, "Y") }
	})
	dish := fenceDish(p, 5, "d1", "Y", 2)
	if err := ix.submit(ctx, dish); err != nil {
		t.Fatal(err)
	}
	if ix.queuedBehind != 1 {
		t.Fatalf("%d events queued behind held restaurants, want the dish", ix.queuedBehind)
	}

	// The generation ends (the coordinator's word reaches the member),
	// then the task comes back, then the handover asks the loop to settle.
	p.grp.ended.Store(1)
	close(letGo)
	settled := make(chan struct{})
	if err := p.loop.settle(ctx, settled); err != nil {
		t.Fatal(err)
	}
	select {
	case <-settled:
	default:
		t.Fatal("settle returned without closing settled")
	}

	if docs := e.scanIndex(t); len(docs) != 1 {
		t.Errorf("index holds %v, want only the restaurant: the dish was decided after its generation ended", docs)
	}
	if st := ix.writer.Stats(); st.Added != 0 {
		t.Errorf("the writer took %d items after the generation ended, want none", st.Added)
	}
	if due := p.track.due(); len(due) != 0 {
		t.Errorf("commit points %v, want none: the dish is not finished", due)
	}
	if len(ix.rests) != 0 || ix.queuedBehind != 0 || ix.idle() != true {
		t.Errorf("after the fence: %d restaurants with work, %d queued, idle %v; want nothing", len(ix.rests), ix.queuedBehind, ix.idle())
	}

	// The next generation: Y, whose decisions were cut, is forgotten, and
	// looked up at its next event.
	if !ix.enterGen(2) {
		t.Error("enterGen reports nothing to read back after a cut")
	}
	if _, ok := ix.dir.Get("Y"); ok {
		t.Error("Y is still in the directory after its decisions were cut")
	}
	if !ix.needsLookup(fenceDish(p, 5, "d1", "Y", 2)) {
		t.Error("Y's next event does not look it up")
	}
}

// TestReplayBehindALandedMoveKeepsTheDish: a dish event delivered again
// behind a move of its restaurant that already landed in part (its dishes
// carried to New York and deleted in San Francisco, the restaurant not
// yet moved: a move cut short, or landed by the partition's previous
// owner) is decided at the old place, where the move's tombstone refuses
// it at its own version; its spread's delete in New York is refused at
// that version too, by the copy the move carried. That copy is the dish,
// not a stray: the spread leaves it, the move decided again after the
// dish carries nothing more, and the dish ends once, in New York. (A
// spread that took a copy at its own version under another routing for a
// stray would delete it, and the dish would be nowhere.)
func TestReplayBehindALandedMoveKeepsTheDish(t *testing.T) {
	realenv.EmulatorOnly(t, "a member driven by hand against the emulator")
	e := newEnv(t, envOptions{partitions: 1})
	p := handMember(t, e)
	ix := p.ix
	ix.enterGen(2)
	lvl := e.m.Level()
	e.put(t, schema.RestaurantID("Y"), 1, fenceSF, restaurantBody(nil, "Y", 1, fenceSF, 37.7749, -122.4194, lvl), false)
	e.put(t, schema.DishID("d1"), 2, fenceNY, dishBody(nil, "d1", "Y", 2, fenceNY, lvl), false)
	e.put(t, schema.DishID("d1"), 2, fenceSF, dishBody(nil, "d1", "Y", 2, fenceSF, lvl), true)
	ix.dir.Set("Y", fenceSF, 1)

	decideAll(t, p, fenceDish(p, 7, "d1", "Y", 2), fenceMoveToNY(p, 8, 2))
	tg := newTarget(testIndex, e.m, true)
	_, ny := tg.routing(fenceNY)
	docs := e.scanIndex(t)
	for _, id := range []string{schema.DishID("d1"), schema.RestaurantID("Y")} {
		if d, ok := docs[id]; !ok || d.routing != ny {
			t.Errorf("%s: stored %v under %q, want once under %q (New York)", id, ok, d.routing, ny)
		}
	}
}

// TestWithdrawnFollowsTheGeneration: the writes of an event, of a task's
// step and of a spread are withdrawn once their generation has ended, and
// only then.
func TestWithdrawnFollowsTheGeneration(t *testing.T) {
	p := offlinePipeline(t)
	ix := p.ix
	ix.enterGen(3)
	ev := &event{gen: 3}
	items := map[string]bulk.Item{
		"event":       {Ref: ev},
		"source":      {Ref: &sourceWrite{ev: ev}},
		"task":        {Ref: genTag(3)},
		"other":       {Ref: "a caller's own"},
		"older event": {Ref: &event{gen: 2}},
	}
	p.grp.ended.Store(2)
	for name, it := range items {
		if got, want := ix.withdrawn(&it), name == "older event"; got != want {
			t.Errorf("generation 2 ended: withdrawn(%s) = %v, want %v", name, got, want)
		}
	}
	p.grp.ended.Store(3)
	for name, it := range items {
		if got, want := ix.withdrawn(&it), name != "other"; got != want {
			t.Errorf("generation 3 ended: withdrawn(%s) = %v, want %v", name, got, want)
		}
	}
}

// TestUnlandedGenerationIsLandedAtTheNext: a generation that ended while
// the loop was not deciding yet (the handover then asks it for nothing)
// may still have had writes in flight, made by the loop meanwhile (the
// parked dishes it read back). The next generation lands it first: its
// flights no longer count, so a quiesce there (a mode switch, a gain)
// finds nothing in flight instead of waiting for writes that will never
// be counted down.
func TestUnlandedGenerationIsLandedAtTheNext(t *testing.T) {
	realenv.EmulatorOnly(t, "a member driven by hand against the emulator")
	p := handMember(t, newEnv(t, envOptions{partitions: 1}))
	ix := p.ix
	ix.enterGen(1)
	owned := map[partKey]bool{{"events", 0}: true}
	p.loop.assigned = owned
	ix.fly(&event{rid: "Y", gen: 1})
	p.grp.ended.Store(1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.loop.enterGeneration(ctx, &generation{id: 2, owned: owned}); err != nil {
		t.Fatal(err)
	}
	if err := ix.quiesce(ctx); err != nil {
		t.Fatalf("quiesce in the next generation: %v, want nothing in flight", err)
	}
	if ix.landed != 1 || ix.gen != 2 {
		t.Errorf("landed %d, in %d; want 1 landed, in 2", ix.landed, ix.gen)
	}
}

// TestEndedGenerationRunsNoContinuation: the steps that follow a write or
// a task are decisions too. A move's task that comes back after the end
// does not run what follows it (the restaurant's write at its new place,
// which takes the dishes waiting for it); a restaurant's write answered
// after the end does not make the directory take it, nor release the
// dishes waiting for it. The waiting dish stays unwritten, and the
// events unfinished.
func TestEndedGenerationRunsNoContinuation(t *testing.T) {
	realenv.EmulatorOnly(t, "a member driven by hand against the emulator")
	for _, tc := range []string{"task", "write"} {
		t.Run(tc, func(t *testing.T) {
			e := newEnv(t, envOptions{partitions: 1})
			p := handMember(t, e)
			ix := p.ix
			ctx := context.Background()
			ix.enterGen(1)
			k := partKey{"events", 0}
			waiting := fenceDish(p, 3, "d1", "Y", 1)
			ix.pend.Add(waiting, time.Now())
			entry, _ := p.track.track(k, 4, 100)
			rest := &event{part: k, offset: 4, entry: entry, rid: "Y", gen: 1,
				change: &decode.Change{Type: decode.TypeRestaurant, Op: decode.OpUpsert, ID: "Y", Version: 2, Lat: 40.7128, Lon: -74.006}}
			letGo := make(chan struct{})
			switch tc {
			case "task":
				// A move of Y, whose task comes back once let go.
				err := ix.restaurantTask(ctx, rest, func(ctx context.Context) (error, error) {
					select {
					case <-letGo:
					case <-ctx.Done():
					}
					return nil, nil
				}, func(ctx context.Context) error { return ix.writeRestaurant(ctx, rest, fenceNY) })
				if err != nil {
					t.Fatal(err)
				}
				p.grp.ended.Store(1)
				close(letGo)
			case "write":
				// Y unknown: its write is confirmed before the directory
				// takes it; the answer comes after the end.
				if err := ix.confirmRestaurant(ctx, rest, fenceNY); err != nil {
					t.Fatal(err)
				}
				p.grp.ended.Store(1)
			}
			if err := p.loop.settle(ctx, make(chan struct{})); err != nil {
				t.Fatal(err)
			}
			if _, ok := e.scanIndex(t)[schema.DishID("d1")]; ok {
				t.Error("the waiting dish was written after the generation ended")
			}
			if _, ok := ix.dir.Lookup("Y"); ok && tc == "write" {
				t.Error("the directory took Y from a write answered after the generation ended")
			}
			if ix.pend.Len() != 1 {
				t.Errorf("%d dishes waiting, want the one that waited", ix.pend.Len())
			}
			if due := p.track.due(); len(due) != 0 {
				t.Errorf("commit points %v, want none: nothing of the ended generation is finished past its decisions", due)
			}
		})
	}
}

// TestMoveCutAfterItsCopiesLeavesNoLeftover: a move cut short after its
// first step (the dishes copied to New York, nothing deleted in San
// Francisco, the restaurant still there: a crash, or the end of its
// generation) is decided again; before it, a delete of one of the dishes
// is decided at the old place, where the restaurant still is. The move
// decided again deletes that dish's copy at the new place too: nothing
// of a deleted dish is left.
func TestMoveCutAfterItsCopiesLeavesNoLeftover(t *testing.T) {
	realenv.EmulatorOnly(t, "a member driven by hand against the emulator")
	e := newEnv(t, envOptions{partitions: 1})
	p := handMember(t, e)
	ix := p.ix
	ix.enterGen(2)
	lvl := e.m.Level()
	e.put(t, schema.RestaurantID("Y"), 1, fenceSF, restaurantBody(nil, "Y", 1, fenceSF, 37.7749, -122.4194, lvl), false)
	for _, id := range []string{"d1", "d2"} {
		e.put(t, schema.DishID(id), 2, fenceSF, dishBody(nil, id, "Y", 2, fenceSF, lvl), false)
		e.put(t, schema.DishID(id), 2, fenceNY, dishBody(nil, id, "Y", 2, fenceNY, lvl), false)
	}
	ix.dir.Set("Y", fenceSF, 1)

	gone := fenceEvent(p, 7, &decode.Change{Type: decode.TypeDish, Op: decode.OpDelete, ID: "d1", RestaurantID: "Y", Version: 3})
	decideAll(t, p, gone, fenceMoveToNY(p, 8, 2))
	tg := newTarget(testIndex, e.m, true)
	_, ny := tg.routing(fenceNY)
	docs := e.scanIndex(t)
	if d, ok := docs[schema.DishID("d1")]; ok {
		t.Errorf("d1, deleted, is still stored under %q", d.routing)
	}
	for _, id := range []string{schema.DishID("d2"), schema.RestaurantID("Y")} {
		if d, ok := docs[id]; !ok || d.routing != ny {
			t.Errorf("%s: stored %v under %q, want once under %q (New York)", id, ok, d.routing, ny)
		}
	}
}
