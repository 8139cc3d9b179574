package pipeline

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

func TestTrackerContiguousCommit(t *testing.T) {
	tr := newTracker()
	k := partKey{"t", 0}
	var es []*trackEntry
	for off := int64(10); off < 15; off++ {
		e, dropped := tr.track(k, off, 20)
		if dropped != nil {
			t.Fatalf("track(%d) dropped %d entries", off, len(dropped))
		}
		es = append(es, e)
	}
	if due := tr.due(); len(due) != 0 {
		t.Fatalf("due before any finish = %v, want none", due)
	}
	// Out-of-order finishes: 12 and 14 first hold nothing back but move
	// nothing either.
	tr.finish(es[2])
	tr.finish(es[4])
	if due := tr.due(); len(due) != 0 {
		t.Fatalf("due with 10 unfinished = %v, want none", due)
	}
	tr.finish(es[0])
	want := []commitPoint{{k, 11}}
	if due := tr.due(); !reflect.DeepEqual(due, want) {
		t.Fatalf("due = %v, want %v", due, want)
	}
	tr.finish(es[1])
	want = []commitPoint{{k, 13}}
	if due := tr.due(); !reflect.DeepEqual(due, want) {
		t.Fatalf("due = %v, want %v", due, want)
	}
	tr.committed(want)
	if due := tr.due(); len(due) != 0 {
		t.Fatalf("due after commit = %v, want none", due)
	}
	tr.finish(es[3])
	want = []commitPoint{{k, 15}}
	if due := tr.due(); !reflect.DeepEqual(due, want) {
		t.Fatalf("due = %v, want %v", due, want)
	}
	tr.committed(want)
	if s := tr.snapshot()[k]; s.Lag != 5 || s.Committed != 15 || s.Tracked != 0 {
		t.Errorf("snapshot = %+v, want lag 5 (hwm 20 − 15), committed 15, nothing tracked", s)
	}
	if tr.finish(es[3]) {
		t.Error("finishing an entry twice reported true")
	}
}

func TestTrackerGapsAndPartitions(t *testing.T) {
	tr := newTracker()
	a, b := partKey{"t", 0}, partKey{"t", 1}
	e1, _ := tr.track(a, 5, 100)
	e2, _ := tr.track(a, 9, 100) // compaction gap
	e3, _ := tr.track(b, 0, 3)
	tr.finish(e2)
	tr.finish(e3)
	want := []commitPoint{{b, 1}}
	if due := tr.due(); !reflect.DeepEqual(due, want) {
		t.Fatalf("due = %v, want %v", due, want)
	}
	tr.finish(e1)
	want = []commitPoint{{a, 10}, {b, 1}}
	if due := tr.due(); !reflect.DeepEqual(due, want) {
		t.Fatalf("due = %v, want %v", due, want)
	}
}

// TestTrackerRedelivery walks through a rebalance that redelivers a
// partition we keep, with writes of the first delivery still in flight.
func TestTrackerRedelivery(t *testing.T) {
	tr := newTracker()
	k := partKey{"t", 3}
	first := map[int64]*trackEntry{}
	for off := int64(10); off <= 20; off++ {
		first[off], _ = tr.track(k, off, 21)
	}
	for off := int64(10); off <= 14; off++ {
		tr.finish(first[off])
	}
	tr.finish(first[17]) // finished, but behind 15 and 16
	if due := tr.due(); !reflect.DeepEqual(due, []commitPoint{{k, 15}}) {
		t.Fatalf("due = %v, want 15", due)
	}
	// The broker still holds 10: the generation restarts there.
	e10, dropped := tr.track(k, 10, 21)
	if len(dropped) != 6 || dropped[0].offset != 15 || dropped[5].offset != 20 {
		t.Fatalf("redelivery at 10 dropped %d entries (%v…), want 15..20", len(dropped), dropped)
	}
	// The first delivery's late finishes no longer count.
	if tr.finish(first[15]) || tr.finish(first[16]) {
		t.Error("finish of a dropped entry reported true")
	}
	// 10..14 were finished by this process: the commit point stays.
	if due := tr.due(); !reflect.DeepEqual(due, []commitPoint{{k, 15}}) {
		t.Fatalf("due after redelivery = %v, want 15", due)
	}
	second := map[int64]*trackEntry{10: e10}
	for off := int64(11); off <= 20; off++ {
		var d []*trackEntry
		second[off], d = tr.track(k, off, 21)
		if d != nil {
			t.Fatalf("track(%d) after the restart dropped %v", off, d)
		}
	}
	for off := int64(10); off <= 19; off++ {
		tr.finish(second[off])
	}
	if due := tr.due(); !reflect.DeepEqual(due, []commitPoint{{k, 20}}) {
		t.Fatalf("due = %v, want 20 (20 unfinished)", due)
	}
	tr.finish(second[20])
	if due := tr.due(); !reflect.DeepEqual(due, []commitPoint{{k, 21}}) {
		t.Fatalf("due = %v, want 21", due)
	}
	if s := tr.snapshot()[k]; s.Restarts != 1 {
		t.Errorf("restarts = %d, want 1", s.Restarts)
	}
}

// TestTrackerRedeliveryKeepsOlderUnfinished: a redelivery from above an
// unfinished entry (another member committed further) keeps that entry
// holding the commit.
func TestTrackerRedeliveryKeepsOlderUnfinished(t *testing.T) {
	tr := newTracker()
	k := partKey{"t", 0}
	e0, _ := tr.track(k, 0, 10)
	for off := int64(1); off <= 5; off++ {
		tr.track(k, off, 10)
	}
	_, dropped := tr.track(k, 3, 10)
	if len(dropped) != 3 {
		t.Fatalf("dropped %d, want 3 (3..5)", len(dropped))
	}
	if due := tr.due(); len(due) != 0 {
		t.Fatalf("due = %v, want none: 0 is unfinished", due)
	}
	tr.finish(e0)
	if due := tr.due(); !reflect.DeepEqual(due, []commitPoint{{k, 1}}) {
		t.Fatalf("due = %v, want 1 (1 and 2 unfinished)", due)
	}
}

// TestTrackerRandom checks against a naive model: the commit point is
// always one past the longest finished prefix of fetched offsets.
func TestTrackerRandom(t *testing.T) {
	seed := uint64(rand.Int64())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	tr := newTracker()
	k := partKey{"t", 0}
	var offs []int64
	entries := map[int64]*trackEntry{}
	done := map[int64]bool{}
	next := int64(0)
	for range 2000 {
		if rng.IntN(2) == 0 || len(offs) == 0 {
			next += 1 + int64(rng.IntN(2))
			e, _ := tr.track(k, next, next+1)
			offs = append(offs, next)
			entries[next] = e
			continue
		}
		o := offs[rng.IntN(len(offs))]
		tr.finish(entries[o])
		done[o] = true
		want := int64(-1)
		for _, x := range offs {
			if !done[x] {
				break
			}
			want = x + 1
		}
		got := tr.snapshot()[k].Ready
		if got != want {
			t.Fatalf("ready = %d, want %d", got, want)
		}
		if n, s := tr.size(), tr.snapshot()[k].Tracked; n != int64(s) {
			t.Fatalf("size = %d, the partition tracks %d", n, s)
		}
	}
}

// The tracker's size follows what it holds through redelivery and the
// release of lost partitions, and its peak is the most it held.
func TestTrackerSize(t *testing.T) {
	tr := newTracker()
	a, b := partKey{"t", 0}, partKey{"t", 1}
	var ea []*trackEntry
	for off := range int64(10) {
		e, _ := tr.track(a, off, 10)
		ea = append(ea, e)
		tr.track(b, off, 10)
	}
	if n := tr.size(); n != 20 {
		t.Fatalf("size = %d, want 20", n)
	}
	tr.finish(ea[0])
	tr.finish(ea[1])
	tr.finish(ea[3]) // behind 2: still held
	if n := tr.size(); n != 18 {
		t.Fatalf("size after 0, 1 and 3 finished = %d, want 18", n)
	}
	tr.track(a, 5, 10) // redelivery from 5: 5..9 drop, 5 comes again
	if n := tr.size(); n != 14 {
		t.Fatalf("size after a redelivery from 5 = %d, want 14 (t/0 2..5, t/1 0..9)", n)
	}
	tr.release(func(p int) bool { return p == 1 })
	if n := tr.size(); n != 4 {
		t.Fatalf("size after t/1 was released = %d, want 4", n)
	}
	if p := tr.peak.Load(); p != 20 {
		t.Errorf("peak = %d, want 20", p)
	}
}

// A backlog of unfinished entries behind one slow event grows the
// partition's array; once the backlog is finished and the stream goes on
// at its usual depth, the array shrinks back instead of keeping its peak
// size for the rest of the run, and the commit point stays right.
func TestTrackerShrinksAfterBacklog(t *testing.T) {
	tr := newTracker()
	k := partKey{"t", 0}
	slow, _ := tr.track(k, 0, 0)
	var backlog []*trackEntry
	for off := int64(1); off <= 200_000; off++ {
		e, _ := tr.track(k, off, off)
		backlog = append(backlog, e)
	}
	for _, e := range backlog {
		tr.finish(e)
	}
	peak := cap(tr.parts[k].entries)
	tr.finish(slow)
	// The usual depth: a few hundred in flight, finished in order.
	off := int64(200_001)
	var inFlight []*trackEntry
	for range 10_000 {
		e, _ := tr.track(k, off, off)
		off++
		inFlight = append(inFlight, e)
		if len(inFlight) > 300 {
			tr.finish(inFlight[0])
			inFlight = inFlight[1:]
		}
	}
	if c := cap(tr.parts[k].entries); c*8 > peak {
		t.Errorf("array capacity %d after the backlog, %d at its peak: not shrunk", c, peak)
	}
	want := []commitPoint{{k, inFlight[0].offset}}
	if due := tr.due(); !reflect.DeepEqual(due, want) {
		t.Errorf("due = %v, want %v", due, want)
	}
	for _, e := range inFlight {
		tr.finish(e)
	}
	if due := tr.due(); !reflect.DeepEqual(due, []commitPoint{{k, off}}) {
		t.Errorf("due = %v, want %v", due, []commitPoint{{k, off}})
	}
}
