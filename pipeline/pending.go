package pipeline

import (
	"sync/atomic"
	"time"

	"github.com/geoshard/geoshard/decode"
)

// pendingSet holds dish events whose restaurant is unknown (or deleted)
// until the restaurant arrives, bounded by a count and an age. A pending
// event is unfinished, but it does not hold its partition's commit back:
// it is parked in the parking topic (parking.go), and once the broker has
// it its offset is committed; if the process stops, the partition's next
// owner reads it back, and it waits again from the time it was parked.
//
// It is owned by the processing goroutine; only the count is read
// concurrently.
type pendingSet struct {
	max    int
	maxAge time.Duration

	byRest map[string][]*pendingItem
	// byPlace finds a held event by where it was read, so that a copy of
	// it read again (holds) is known for one.
	byPlace map[eventPlace]*pendingItem
	// queue is every item in arrival order, oldest first, from head on.
	// A removed item lets go of its event at once and stays, empty, until
	// it reaches the head or a sweep (add) drops it: behind a dish whose
	// restaurant never comes, every dish that waited after it would
	// otherwise be held for the whole age bound.
	queue []*pendingItem
	head  int
	n     atomic.Int64 // items held
	// oldestAt is when the oldest item held arrived, in Unix nanoseconds
	// (0: none), for readers on other goroutines.
	oldestAt atomic.Int64
}

// eventPlace is where an event was read: its partition and offset.
type eventPlace struct {
	part   partKey
	offset int64
}

type pendingItem struct {
	ev      *event // nil once removed
	at      time.Time
	removed bool
}

func newPendingSet(max int, maxAge time.Duration) *pendingSet {
	return &pendingSet{max: max, maxAge: maxAge, byRest: make(map[string][]*pendingItem), byPlace: make(map[eventPlace]*pendingItem)}
}

// len is the number of events held.
func (s *pendingSet) len() int { return int(s.n.Load()) }

// oldest is when the oldest event held arrived (zero: none); any
// goroutine may ask.
func (s *pendingSet) oldest() time.Time {
	if s == nil {
		return time.Time{}
	}
	if n := s.oldestAt.Load(); n != 0 {
		return time.Unix(0, n)
	}
	return time.Time{}
}

// noteOldest drops the removed items at the queue's front and records
// when the first one held arrived.
func (s *pendingSet) noteOldest() {
	for s.head < len(s.queue) && s.queue[s.head].removed {
		s.queue[s.head] = nil
		s.head++
	}
	s.compact()
	if s.head < len(s.queue) {
		s.oldestAt.Store(s.queue[s.head].at.UnixNano())
	} else {
		s.oldestAt.Store(0)
	}
}

// add holds ev, which arrived at now, and returns the events evicted to
// keep within the count bound, oldest first.
func (s *pendingSet) add(ev *event, now time.Time) []*event {
	it := &pendingItem{ev: ev, at: now}
	rid := ev.change.RestaurantID
	s.byRest[rid] = append(s.byRest[rid], it)
	s.byPlace[eventPlace{ev.part, ev.offset}] = it
	s.queue = append(s.queue, it)
	s.n.Add(1)
	s.sweep()
	var out []*event
	for s.len() > s.max {
		out = append(out, s.popOldest())
	}
	s.noteOldest()
	return out
}

// holds reports whether a copy of ev waits here: the same change read
// from the same place. A partition read again from a committed offset
// behind what was finished (a commit the coordinator refused at a
// rebalance, a failover of the coordinator) delivers again dishes that
// still wait, parked; and a gained partition may deliver one that was
// also read back from the parking topic.
func (s *pendingSet) holds(ev *event) bool {
	it := s.byPlace[eventPlace{ev.part, ev.offset}]
	if it == nil || it.ev == nil {
		return false
	}
	a, b := it.ev.change, ev.change
	return a.ID == b.ID && a.Version == b.Version && a.RestaurantID == b.RestaurantID && a.Op == b.Op
}

// forget drops it from the index by place.
func (s *pendingSet) forget(it *pendingItem) {
	k := eventPlace{it.ev.part, it.ev.offset}
	if s.byPlace[k] == it {
		delete(s.byPlace, k)
	}
}

// popOldest removes and returns the oldest event. The set is not empty.
func (s *pendingSet) popOldest() *event {
	for {
		it := s.queue[s.head]
		s.queue[s.head] = nil
		s.head++
		if !it.removed {
			ev := it.ev
			s.unlink(it)
			s.compact()
			return ev
		}
	}
}

// expire removes and returns the events that have waited longer than the
// age bound, oldest first.
func (s *pendingSet) expire(now time.Time) []*event {
	var out []*event
	for s.head < len(s.queue) {
		it := s.queue[s.head]
		if it.removed {
			s.queue[s.head] = nil
			s.head++
			continue
		}
		if now.Sub(it.at) <= s.maxAge {
			break
		}
		out = append(out, s.popOldest())
	}
	s.noteOldest()
	return out
}

// take removes and returns the events waiting for restaurant rid, in
// arrival order.
func (s *pendingSet) take(rid string) []*event {
	items := s.byRest[rid]
	if len(items) == 0 {
		return nil
	}
	delete(s.byRest, rid)
	out := make([]*event, len(items))
	for i, it := range items {
		out[i] = it.ev
		s.forget(it)
		it.removed, it.ev = true, nil
	}
	s.n.Add(-int64(len(items)))
	s.noteOldest()
	return out
}

// cancel removes and returns the pending upserts of dish dishID of
// restaurant rid whose version is at most version: a delete of the dish
// supersedes them.
func (s *pendingSet) cancel(rid, dishID string, version int64) []*event {
	return s.removeIf(rid, func(ev *event) bool {
		c := ev.change
		return c.ID == dishID && c.Op == decode.OpUpsert && c.Version <= version
	})
}

// purge removes the events for which drop is true, from every restaurant.
func (s *pendingSet) purge(drop func(*event) bool) []*event {
	var out []*event
	for rid := range s.byRest {
		out = append(out, s.removeIf(rid, drop)...)
	}
	return out
}

func (s *pendingSet) removeIf(rid string, drop func(*event) bool) []*event {
	items := s.byRest[rid]
	var out []*event
	kept := items[:0]
	for _, it := range items {
		if drop(it.ev) {
			out = append(out, it.ev)
			s.forget(it)
			it.removed, it.ev = true, nil
			continue
		}
		kept = append(kept, it)
	}
	for i := len(kept); i < len(items); i++ {
		items[i] = nil
	}
	if len(kept) == 0 {
		delete(s.byRest, rid)
	} else {
		s.byRest[rid] = kept
	}
	s.n.Add(-int64(len(out)))
	if len(out) > 0 {
		s.noteOldest()
	}
	return out
}

// unlink removes it from its restaurant's list.
func (s *pendingSet) unlink(it *pendingItem) {
	rid := it.ev.change.RestaurantID
	s.forget(it)
	it.removed, it.ev = true, nil
	items := s.byRest[rid]
	for i, x := range items {
		if x == it {
			items = append(items[:i], items[i+1:]...)
			break
		}
	}
	if len(items) == 0 {
		delete(s.byRest, rid)
	} else {
		s.byRest[rid] = items
	}
	s.n.Add(-1)
}

// sweep drops the removed items from the queue once they outnumber the
// held ones by more than a few thousand, so that the queue's length
// stays within a constant of the events held.
func (s *pendingSet) sweep() {
	if len(s.queue)-s.head <= 2*s.len()+4096 {
		return
	}
	kept := s.queue[:0]
	for _, it := range s.queue[s.head:] {
		if !it.removed {
			kept = append(kept, it)
		}
	}
	clear(s.queue[len(kept):])
	s.queue, s.head = kept, 0
}

// compact drops the consumed front of the queue once it is half of it.
func (s *pendingSet) compact() {
	if s.head > 64 && s.head*2 >= len(s.queue) {
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue = s.queue[:n]
		s.head = 0
	}
}
