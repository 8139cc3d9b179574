package pending

import (
	"strconv"
	"testing"
	"time"

	"github.com/geoshard/geoshard/decode"
)

// event is a waiting dish event of the tests.
type event struct {
	change *decode.Change
	offset int64
}

func (ev *event) Change() *decode.Change { return ev.change }
func (ev *event) Place() Place           { return Place{Topic: "dishes", Offset: ev.offset} }

func pendingEvent(rid, id string, op string, version int64) *event {
	return &event{change: &decode.Change{Type: decode.TypeDish, Op: op, ID: id, RestaurantID: rid, Version: version}}
}

func ids(evs []*event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.change.ID)
	}
	return out
}

func TestPendingCountBound(t *testing.T) {
	s := New[*event](3, time.Hour)
	now := time.Unix(0, 0)
	for i, id := range []string{"a", "b", "c"} {
		if ev := s.Add(pendingEvent("r"+id, id, decode.OpUpsert, 1), now.Add(time.Duration(i))); ev != nil {
			t.Fatalf("add %s evicted %v", id, ids(ev))
		}
	}
	got := s.Add(pendingEvent("rd", "d", decode.OpUpsert, 1), now.Add(3))
	if len(got) != 1 || got[0].change.ID != "a" {
		t.Fatalf("add over the bound evicted %v, want [a] (the oldest)", ids(got))
	}
	if s.Len() != 3 {
		t.Errorf("len = %d, want 3", s.Len())
	}
	if got := s.Take("ra"); got != nil {
		t.Errorf("take of an evicted restaurant = %v, want none", ids(got))
	}
}

func TestPendingAgeBound(t *testing.T) {
	s := New[*event](100, 5*time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Add(pendingEvent("r1", "d1", decode.OpUpsert, 1), t0)
	s.Add(pendingEvent("r2", "d2", decode.OpUpsert, 1), t0.Add(time.Minute))
	s.Add(pendingEvent("r1", "d3", decode.OpUpsert, 1), t0.Add(2*time.Minute))
	if got := s.Expire(t0.Add(5 * time.Minute)); len(got) != 0 {
		t.Fatalf("expire at exactly the age = %v, want none", ids(got))
	}
	got := s.Expire(t0.Add(6*time.Minute + time.Second))
	if len(got) != 2 || got[0].change.ID != "d1" || got[1].change.ID != "d2" {
		t.Fatalf("expire = %v, want [d1 d2], oldest first", ids(got))
	}
	if got := s.Take("r1"); len(got) != 1 || got[0].change.ID != "d3" {
		t.Fatalf("take(r1) = %v, want [d3]", ids(got))
	}
	if s.Len() != 0 {
		t.Errorf("len = %d, want 0", s.Len())
	}
}

func TestPendingTakeAndCancel(t *testing.T) {
	s := New[*event](100, time.Hour)
	now := time.Unix(0, 0)
	s.Add(pendingEvent("r1", "d1", decode.OpUpsert, 3), now)
	s.Add(pendingEvent("r1", "d2", decode.OpUpsert, 1), now)
	s.Add(pendingEvent("r1", "d1", decode.OpUpsert, 5), now)
	s.Add(pendingEvent("r2", "d9", decode.OpUpsert, 1), now)
	if got := s.Cancel("r1", "d1", 4); len(got) != 1 || got[0].change.Version != 3 {
		t.Fatalf("cancel(d1, 4) = %v, want the version 3 upsert only", got)
	}
	if got := s.Take("r1"); len(got) != 2 || got[0].change.ID != "d2" || got[1].change.Version != 5 {
		t.Fatalf("take(r1) = %v, want [d2 d1@5] in arrival order", ids(got))
	}
	if s.Len() != 1 {
		t.Errorf("len = %d, want 1", s.Len())
	}
	// Removed items are skipped by expiry and eviction.
	if got := s.Expire(now.Add(2 * time.Hour)); len(got) != 1 || got[0].change.ID != "d9" {
		t.Fatalf("expire = %v, want [d9]", ids(got))
	}
}

func TestPendingPurgeAndCompact(t *testing.T) {
	s := New[*event](1000, time.Hour)
	now := time.Unix(0, 0)
	var evs []*event
	for i := range 300 {
		ev := pendingEvent("r", string(rune('a'+i%26))+string(rune('0'+i/26)), decode.OpUpsert, 1)
		ev.offset = int64(i)
		evs = append(evs, ev)
		s.Add(ev, now.Add(time.Duration(i)*time.Second))
	}
	purged := s.Purge(func(ev *event) bool { return ev.offset >= 200 })
	if len(purged) != 100 || s.Len() != 200 {
		t.Fatalf("purge removed %d, len %d; want 100 and 200", len(purged), s.Len())
	}
	got := s.Expire(now.Add(time.Hour + 150*time.Second))
	if len(got) != 150 || got[0] != evs[0] || got[149] != evs[149] {
		t.Fatalf("expire = %d events, want the 150 oldest", len(got))
	}
	if s.Len() != 50 || len(s.queue)-s.head != 150 {
		t.Errorf("len %d, queue %d; want 50 held and 150 queue slots (100 purged ones not yet reached)", s.Len(), len(s.queue)-s.head)
	}
	if got := s.Expire(now.Add(10 * time.Hour)); len(got) != 50 {
		t.Errorf("final expire = %d, want 50", len(got))
	}
}

// Behind a dish whose restaurant never comes, the dishes that waited and
// were taken since let go of their events at once, and the queue stays
// within a constant of the dishes held: nothing grows with the stream
// while the oldest waits out its age bound.
func TestPendingReleasesTakenEvents(t *testing.T) {
	s := New[*event](1_000_000, 5*time.Minute)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Add(pendingEvent("orphan", "o", decode.OpUpsert, 1), t0)
	const n = 100_000
	for i := range n {
		rid := "r" + strconv.Itoa(i)
		s.Add(pendingEvent(rid, "d"+strconv.Itoa(i), decode.OpUpsert, 1), t0.Add(time.Millisecond))
		if i%2 == 0 {
			if got := s.Take(rid); len(got) != 1 {
				t.Fatalf("take(%s) = %v", rid, ids(got))
			}
		} else if got := s.Cancel(rid, "d"+strconv.Itoa(i), 1); len(got) != 1 {
			t.Fatalf("cancel(%s) = %v", rid, ids(got))
		}
	}
	if s.Len() != 1 {
		t.Fatalf("len = %d, want 1 (the orphan)", s.Len())
	}
	if q := len(s.queue) - s.head; q > 2*s.Len()+4096+1 {
		t.Errorf("queue holds %d items for %d events", q, s.Len())
	}
	for _, it := range s.queue[s.head:] {
		if it.removed && it.ev != nil {
			t.Fatalf("a removed item still holds dish %s", it.ev.change.ID)
		}
	}
	// The orphan still expires, alone.
	if got := s.Expire(t0.Add(6 * time.Minute)); len(got) != 1 || got[0].change.ID != "o" {
		t.Errorf("expire = %v, want [o]", ids(got))
	}
	if s.Len() != 0 {
		t.Errorf("len = %d after the expiry, want 0", s.Len())
	}
}

func TestPendingOldest(t *testing.T) {
	s := New[*event](100, 5*time.Minute)
	if !s.Oldest().IsZero() {
		t.Fatal("an empty set has an oldest")
	}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.Add(pendingEvent("r1", "d1", decode.OpUpsert, 1), t0)
	s.Add(pendingEvent("r2", "d2", decode.OpUpsert, 1), t0.Add(time.Minute))
	s.Add(pendingEvent("r1", "d3", decode.OpUpsert, 1), t0.Add(2*time.Minute))
	if got := s.Oldest(); !got.Equal(t0) {
		t.Errorf("oldest = %v, want %v", got, t0)
	}
	s.Take("r1") // d1 and d3: d2 is the oldest now
	if got := s.Oldest(); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("after take: oldest = %v, want %v", got, t0.Add(time.Minute))
	}
	s.Expire(t0.Add(10 * time.Minute))
	if !s.Oldest().IsZero() {
		t.Errorf("after expire: oldest = %v, want none", s.Oldest())
	}
	s.Add(pendingEvent("r3", "d4", decode.OpUpsert, 1), t0.Add(11*time.Minute))
	s.Cancel("r3", "d4", 2)
	if !s.Oldest().IsZero() {
		t.Errorf("after cancel: oldest = %v, want none", s.Oldest())
	}
}
