package pending

import (
	"sync/atomic"
	"time"

	"github.com/geoshard/geoshard/decode"
)

// Set holds dish events whose restaurant is unknown (or deleted) until
// the restaurant arrives, bounded by a count and an age.
//
// It is owned by one goroutine; only the count and the age of the oldest
// are read concurrently.
type Set[E Event] struct {
	max    int
	maxAge time.Duration

	byRest map[string][]*item[E]
	// byPlace finds a held event by where it was read, so that a copy of
	// it read again (Holds) is known for one.
	byPlace map[Place]*item[E]
	// queue is every item in arrival order, oldest first, from head on.
	// A removed item lets go of its event at once and stays, empty, until
	// it reaches the head or a sweep (Add) drops it: behind a dish whose
	// restaurant never comes, every dish that waited after it would
	// otherwise be held for the whole age bound.
	queue []*item[E]
	head  int
	n     atomic.Int64 // items held
	// oldestAt is when the oldest item held arrived, in Unix nanoseconds
	// (0: none), for readers on other goroutines.
	oldestAt atomic.Int64
}

// Event is a waiting dish event: its change, and where it was read.
type Event interface {
	comparable
	Change() *decode.Change
	Place() Place
}

// Place is where an event was read: its topic, partition and offset.
type Place struct {
	Topic     string
	Partition int
	Offset    int64
}

type item[E Event] struct {
	ev      E // the zero E once removed
	at      time.Time
	removed bool
}

// New returns a set that holds at most max events, each at most maxAge.
func New[E Event](max int, maxAge time.Duration) *Set[E] {
	return &Set[E]{max: max, maxAge: maxAge, byRest: make(map[string][]*item[E]), byPlace: make(map[Place]*item[E])}
}

// Len is the number of events held.
func (s *Set[E]) Len() int { return int(s.n.Load()) }

// Oldest is when the oldest event held arrived (zero: none); any
// goroutine may ask.
func (s *Set[E]) Oldest() time.Time {
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
func (s *Set[E]) noteOldest() {
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

// Add holds ev, which arrived at now, and returns the events evicted to
// keep within the count bound, oldest first.
func (s *Set[E]) Add(ev E, now time.Time) []E {
	it := &item[E]{ev: ev, at: now}
	rid := ev.Change().RestaurantID
	s.byRest[rid] = append(s.byRest[rid], it)
	s.byPlace[ev.Place()] = it
	s.queue = append(s.queue, it)
	s.n.Add(1)
	s.sweep()
	var out []E
	for s.Len() > s.max {
		out = append(out, s.popOldest())
	}
	s.noteOldest()
	return out
}

// Holds reports whether a copy of ev waits here: the same change read
// from the same place. A partition read again from a committed offset
// behind what was finished (a commit the coordinator refused at a
// rebalance, a failover of the coordinator) delivers again dishes that
// still wait, parked; and a gained partition may deliver one that was
// also read back from the parking topic.
func (s *Set[E]) Holds(ev E) bool {
	it := s.byPlace[ev.Place()]
	if it == nil || it.removed {
		return false
	}
	a, b := it.ev.Change(), ev.Change()
	return a.ID == b.ID && a.Version == b.Version && a.RestaurantID == b.RestaurantID && a.Op == b.Op
}

// forget drops it from the index by place.
func (s *Set[E]) forget(it *item[E]) {
	k := it.ev.Place()
	if s.byPlace[k] == it {
		delete(s.byPlace, k)
	}
}

// popOldest removes and returns the oldest event. The set is not empty.
func (s *Set[E]) popOldest() E {
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

// Expire removes and returns the events that have waited longer than the
// age bound, oldest first.
func (s *Set[E]) Expire(now time.Time) []E {
	var out []E
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

// Take removes and returns the events waiting for restaurant rid, in
// arrival order.
func (s *Set[E]) Take(rid string) []E {
	items := s.byRest[rid]
	if len(items) == 0 {
		return nil
	}
	delete(s.byRest, rid)
	out := make([]E, len(items))
	for i, it := range items {
		out[i] = it.ev
		s.forget(it)
		it.removed, it.ev = true, *new(E)
	}
	s.n.Add(-int64(len(items)))
	s.noteOldest()
	return out
}

// Cancel removes and returns the pending upserts of dish dishID of
// restaurant rid whose version is at most version: a delete of the dish
// supersedes them.
func (s *Set[E]) Cancel(rid, dishID string, version int64) []E {
	return s.removeIf(rid, func(ev E) bool {
		c := ev.Change()
		return c.ID == dishID && c.Op == decode.OpUpsert && c.Version <= version
	})
}

// Purge removes the events for which drop is true, from every restaurant.
func (s *Set[E]) Purge(drop func(E) bool) []E {
	var out []E
	for rid := range s.byRest {
		out = append(out, s.removeIf(rid, drop)...)
	}
	return out
}

func (s *Set[E]) removeIf(rid string, drop func(E) bool) []E {
	items := s.byRest[rid]
	var out []E
	kept := items[:0]
	for _, it := range items {
		if drop(it.ev) {
			out = append(out, it.ev)
			s.forget(it)
			it.removed, it.ev = true, *new(E)
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
func (s *Set[E]) unlink(it *item[E]) {
	rid := it.ev.Change().RestaurantID
	s.forget(it)
	it.removed, it.ev = true, *new(E)
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
func (s *Set[E]) sweep() {
	if len(s.queue)-s.head <= 2*s.Len()+4096 {
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
func (s *Set[E]) compact() {
	if s.head > 64 && s.head*2 >= len(s.queue) {
		n := copy(s.queue, s.queue[s.head:])
		clear(s.queue[n:])
		s.queue = s.queue[:n]
		s.head = 0
	}
}
