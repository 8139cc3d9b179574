package pipeline

import (
	"testing"
	"time"
)

// The epoch rises once per written heartbeat at most, and only past the
// events tracked when the current epoch began: an event still in flight
// holds it, whatever else finishes; a heartbeat that was not written
// does not move it; a lost partition holds nothing.
func TestProgressEpoch(t *testing.T) {
	tr := newTracker()
	p := newProgress(tr, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	a, b := partKey{"restaurants", 0}, partKey{"restaurants", 1}
	beat := func(write bool) int64 {
		e := p.propose()
		if write {
			p.commit(e)
		}
		return e.epoch
	}

	move, _ := tr.track(a, 10, 100) // a restaurant move, in flight
	if got := beat(true); got != 1 {
		t.Fatalf("first heartbeat: epoch %d, want 1", got)
	}
	// Epoch 1 began with offset 10 of a tracked: it holds epoch 2, though
	// later events finish.
	later, _ := tr.track(b, 5, 100)
	tr.finish(later)
	if got := beat(true); got != 1 {
		t.Errorf("with the move in flight: epoch %d, want 1", got)
	}
	tr.finish(move)
	if got := beat(false); got != 2 {
		t.Errorf("the move finished, heartbeat not written: proposed epoch %d, want 2", got)
	}
	if got := beat(true); got != 2 {
		t.Errorf("the move finished: epoch %d, want 2 (a heartbeat not written moves nothing)", got)
	}
	// Epoch 2 began with a:10 and b:5 tracked and finished: nothing holds it.
	if got := beat(true); got != 3 {
		t.Errorf("nothing in flight: epoch %d, want 3", got)
	}
	// Epoch 3 is held by b:6 until b is lost to another member.
	tr.track(b, 6, 100)
	if got := beat(true); got != 4 {
		t.Errorf("b:6 taken after epoch 3 began: epoch %d, want 4", got)
	}
	if got := beat(true); got != 4 {
		t.Errorf("b:6 in flight since epoch 4 began: epoch %d, want 4", got)
	}
	tr.release(func(partition int) bool { return partition == 1 })
	if got := beat(true); got != 5 {
		t.Errorf("b lost: epoch %d, want 5", got)
	}
}
