package pipeline

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/decode"
)

// TestGainedPartitionsAreLookedUp: after a generation that gained
// partitions, a restaurant's first event there looks the restaurant up in
// the index, batched, and the index's answer replaces what the directory
// knew (another member owned the partition meanwhile): a newer copy wins,
// a restaurant the index lacks becomes unknown, a delete newer than the
// index's copy stands. A restaurant of a kept partition, or one already
// looked up, is not looked up again; a lost partition is forgotten.
func TestGainedPartitionsAreLookedUp(t *testing.T) {
	e := newEnv(t, envOptions{partitions: 1})
	p := offlinePipeline(t)
	ix := p.ix
	ix.admin = e.admin
	ix.targets = []target{newTarget(testIndex, e.m, true)}
	ctx := context.Background()
	sf := s2.CellIDFromLatLng(s2.LatLngFromDegrees(37.7749, -122.4194))
	ny := s2.CellIDFromLatLng(s2.LatLngFromDegrees(40.7128, -74.006))
	lvl := e.m.Level()
	store := func(rid string, v int64, c s2.CellID, lat, lon float64) {
		t.Helper()
		_, routing := ix.targets[0].routing(c)
		u := fmt.Sprintf("%s/%s/_doc/restaurant:%s?routing=%s&refresh=true", e.url, testIndex, rid, url.QueryEscape(routing))
		req, _ := http.NewRequest(http.MethodPut, u, bytes.NewReader(restaurantBody(nil, rid, v, c, lat, lon, lvl)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			t.Fatalf("store %s: %s", rid, resp.Status)
		}
	}
	// The directory as this member left it; the index as the partition's
	// owner meanwhile left it.
	ix.dir.Set("moved", sf, 1)
	store("moved", 3, ny, 40.7128, -74.006)
	ix.dir.Set("gone", sf, 1)
	ix.dir.Set("deleted", sf, 4)
	ix.dir.Remove("deleted", 9)
	store("deleted", 5, sf, 37.7749, -122.4194)
	store("new", 2, ny, 40.7128, -74.006)
	ix.dir.Set("kept", sf, 1)
	store("kept", 7, ny, 40.7128, -74.006)

	if err := ix.gain(ctx, 5, []int{0, 1}, nil); err != nil {
		t.Fatal(err)
	}
	if ix.dirGen != 5 {
		t.Errorf("directory generation %d, want 5", ix.dirGen)
	}
	ev := func(part int, rid string) *event {
		return &event{part: partKey{"events", part}, rid: rid}
	}
	var asked []string
	for _, x := range []*event{ev(0, "moved"), ev(1, "gone"), ev(0, "deleted"), ev(1, "new"), ev(2, "kept"), ev(0, "moved")} {
		if ix.needsLookup(x) {
			asked = append(asked, x.rid)
			ix.lookUp(ctx, x.rid)
		}
	}
	if fmt.Sprint(asked) != "[moved gone deleted new]" {
		t.Errorf("looked up %v, want the first event of each restaurant of a gained partition", asked)
	}
	if err := ix.quiesce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := ix.lookups.Load(); got != 4 {
		t.Errorf("%d restaurants looked up, want 4", got)
	}
	if len(ix.rests) != 0 {
		t.Errorf("restaurants still held after the lookups: %v", ix.rests)
	}
	check := func(rid string, live bool, c s2.CellID, v int64) {
		t.Helper()
		got, ok := ix.dir.Get(rid)
		if !live {
			if ok && !got.Deleted {
				t.Errorf("%s: %+v, want it not live", rid, got)
			}
			return
		}
		if !ok || got.Deleted || got.Version != v || got.Cell != c {
			t.Errorf("%s: %+v (known %v), want live at %v v%d", rid, got, ok, c, v)
		}
	}
	check("moved", true, ny, 3)
	check("gone", false, 0, 0)
	if _, ok := ix.dir.Get("gone"); ok {
		t.Error("gone: still in the directory, want unknown")
	}
	if d, _ := ix.dir.Get("deleted"); !d.Deleted || d.Version != 9 {
		t.Errorf("deleted: %+v, want the delete at v9 kept", d)
	}
	check("new", true, ny, 2)
	check("kept", true, sf, 1) // partition 2 was kept: no lookup
	if n := ix.dir.Len(); n != 3 {
		t.Errorf("%d live restaurants, want 3 (moved, new, kept)", n)
	}

	// Losing a partition forgets it; gaining it again looks up again.
	if err := ix.gain(ctx, 6, nil, []int{0}); err != nil {
		t.Fatal(err)
	}
	if ix.needsLookup(ev(0, "moved")) {
		t.Error("a lost partition still asks for lookups")
	}
	if err := ix.gain(ctx, 7, []int{0}, nil); err != nil {
		t.Fatal(err)
	}
	if !ix.needsLookup(ev(0, "moved")) {
		t.Error("a partition gained again does not look its restaurants up again")
	}
}

// TestLostPartitionIsReleased: a generation that gives a partition to
// another member drops, unfinished, this member's events of it that
// wait (queued behind a held restaurant, pending for an unknown one),
// ends its tracking so that nothing more of it is committed here (an
// event of it still in flight finishes for nothing), and keeps the
// events of the partitions kept.
func TestLostPartitionIsReleased(t *testing.T) {
	p := offlinePipeline(t)
	ix := p.ix
	p.loop.assigned = map[partKey]bool{{"events", 0}: true, {"events", 1}: true}
	p.loop.gen = &generation{id: 1, owned: p.loop.assigned}
	ix.dirGen = 1
	var offset int64
	ev := func(part int, rid string, typ string) *event {
		k := partKey{"events", part}
		offset++
		e, _ := p.track.track(k, offset, 100)
		return &event{part: k, offset: offset, rid: rid, entry: e,
			change: &decode.Change{Type: typ, Op: decode.OpUpsert, ID: "x" + rid, RestaurantID: rid, Version: 1}}
	}
	flying := ev(0, "r0", decode.TypeRestaurant) // in flight when the partition goes
	ix.rest("r0").held = true
	for range 3 {
		ix.rest("r0").queue = append(ix.rest("r0").queue, ev(0, "r0", decode.TypeDish))
		ix.queuedBehind++
	}
	ix.rest("r1").held = true
	ix.rest("r1").queue = append(ix.rest("r1").queue, ev(1, "r1", decode.TypeDish))
	ix.queuedBehind++
	ix.pend.Add(ev(0, "r9", decode.TypeDish), time.Now())
	kept := ev(1, "r8", decode.TypeDish)
	ix.pend.Add(kept, time.Now())

	if err := p.loop.enterGeneration(context.Background(), &generation{id: 2, owned: map[partKey]bool{{"events", 1}: true}}); err != nil {
		t.Fatal(err)
	}
	if q := len(ix.rests["r0"].queue); q != 0 {
		t.Errorf("%d events of the lost partition still queued, want none", q)
	}
	if q := len(ix.rests["r1"].queue); q != 1 || ix.queuedBehind != 1 {
		t.Errorf("kept partition: %d queued, %d counted; want 1 and 1", q, ix.queuedBehind)
	}
	if n := ix.pend.Len(); n != 1 {
		t.Errorf("%d pending, want only the kept partition's", n)
	}
	if got := ix.pend.Take("r8"); len(got) != 1 || got[0] != kept {
		t.Errorf("pending of r8 = %v, want the kept partition's dish", got)
	}
	if p.out.finish(flying, resultWritten) {
		t.Error("an event of the lost partition finished after the release, want it to count for nothing")
	}
	snap := p.track.snapshot()
	if _, ok := snap[partKey{"events", 0}]; ok {
		t.Error("the lost partition is still tracked")
	}
	if _, ok := snap[partKey{"events", 1}]; !ok {
		t.Error("the kept partition is no longer tracked")
	}
	if got := p.track.due(); len(got) != 0 {
		t.Errorf("commits due %v, want none", got)
	}
	if !p.loop.assigned[partKey{"events", 1}] || p.loop.assigned[partKey{"events", 0}] {
		t.Errorf("assigned %v, want partition 1 only", p.loop.assigned)
	}
	// A message read in the generation before, still queued, is skipped
	// and counted: its partition's owner reads it again from the committed
	// offset. One of the generation entered is decided.
	if !p.loop.ended(1) {
		t.Error("a message of the generation before is not skipped")
	}
	if p.loop.ended(2) {
		t.Error("a message of the current generation is skipped")
	}
	if n := p.Stats().Unowned; n != 1 {
		t.Errorf("Stats().Unowned = %d, want 1", n)
	}
}

// TestHandoverWaitsForWritesInFlight: when a generation ends, the
// handover holds the member's next join until the processing loop has
// landed every write in flight; from then on the loop decides no message
// of that generation, and the next generation is entered with its
// assignment (a partition lost is released).
func TestHandoverWaitsForWritesInFlight(t *testing.T) {
	p := offlinePipeline(t)
	ix := p.ix
	p.loop.assigned = map[partKey]bool{{"events", 0}: true, {"events", 1}: true}
	old := &generation{id: 1, owned: p.loop.assigned}
	p.loop.gen = old
	ix.dirGen = 1
	var mu sync.Mutex
	var order []string
	note := func(s string) {
		mu.Lock()
		order = append(order, s)
		mu.Unlock()
	}
	stop := context.Background()

	// Not deciding yet (still reading the directory): nothing can be in
	// flight, the join goes on at once without asking the loop, and the
	// loop decides no message of the generation that ended meanwhile.
	p.grp.handOver(stop, old)
	if !p.loop.ended(1) {
		t.Fatal("a generation that ended before the loop decided would still have its messages decided")
	}

	p.loop.deciding.Store(true)
	ev := &event{rid: "r1", part: partKey{"events", 0}}
	ix.fly(ev)
	joined := make(chan struct{})
	go func() {
		p.grp.handOver(stop, old)
		note("joined")
		close(joined)
	}()
	// The loop takes the ask; the write lands after that.
	ask := <-p.grp.settles
	settled := make(chan error, 1)
	go func() { settled <- p.loop.settle(stop, ask) }()
	runtime.Gosched()
	note("landed")
	ix.land(ev)
	if err := <-settled; err != nil {
		t.Fatal(err)
	}
	<-joined
	if fmt.Sprint(order) != "[landed joined]" {
		t.Fatalf("order %v: the join went on before the write in flight landed", order)
	}
	if !p.loop.ended(1) {
		t.Error("a message of the settled generation would still be decided")
	}
	if err := p.loop.enterGeneration(stop, &generation{id: 2, owned: map[partKey]bool{{"events", 1}: true}}); err != nil {
		t.Fatal(err)
	}
	if p.loop.ended(2) {
		t.Error("a message of the generation entered is skipped")
	}
	if ix.dirGen != 2 {
		t.Errorf("directory generation %d, want 2", ix.dirGen)
	}
	if p.loop.assigned[partKey{"events", 0}] || !p.loop.assigned[partKey{"events", 1}] {
		t.Errorf("assigned %v, want partition 1 only", p.loop.assigned)
	}
}
