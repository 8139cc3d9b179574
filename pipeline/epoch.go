package pipeline

import (
	"sync"
	"time"
)

// The progress epoch is the figure of schema.Heartbeat.Epoch: it tells
// the reshard's verification when the changes this instance had in
// flight at some moment have all landed, so that a difference the
// verification saw then (a dish on two shards between a move's copies and
// its deletes, a deleted row still in one index) can be read again once
// it can no longer be a change under way.
//
// Each heartbeat proposes the next epoch: the current one, or one more
// if every event taken in when the current epoch began is finished by
// now. Taken in is "tracked": the tracker records each fetched message
// before its event writes anything, and an event is finished, and its
// offset ready to commit, only once all its writes are answered (a
// restaurant move: copies, deletes and its own write). So the barrier of
// an epoch is, per partition, the highest offset tracked when it began,
// and it is passed once every partition's commit point is beyond it.
//
// The epoch rises only when the heartbeat that carries it is written
// (commit): a proposal whose heartbeat failed is forgotten, and the next
// heartbeat proposes again from the last epoch written. So every value
// the job can see was written, and two written heartbeats are at most
// one epoch apart: the job's reasoning (package migrate, suspects.go)
// counts on both.
//
// What the barrier does not follow, said once here: the writes of a
// partition this member lost (its entries are dropped; the new owner
// redelivers and redoes those events, under its own epoch), and a dish
// parked durably for its restaurant (done for the commit, written when
// the restaurant comes). The verification confirms what it still sees
// after the barrier by reading it again, and reports it; a rerun of the
// verification then finds it gone.
type progress struct {
	track   *tracker
	started time.Time

	mu sync.Mutex // guards the fields below (heartbeats are written one at a time; tests call it too)
	// epoch is the last epoch written; barrier, per partition, the highest
	// offset tracked when it began (nil before the first heartbeat).
	epoch   int64
	barrier map[partKey]int64
}

func newProgress(t *tracker, started time.Time) *progress {
	return &progress{track: t, started: started}
}

// epochProposal is the epoch a heartbeat carries, and the state it
// leaves once written.
type epochProposal struct {
	epoch   int64
	barrier map[partKey]int64
}

// propose returns the epoch the next heartbeat carries: one more than
// the last written if the events tracked when that one began are all
// finished.
func (p *progress) propose() epochProposal {
	last, ready := p.track.marks()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.barrier != nil && !passed(p.barrier, ready) {
		return epochProposal{epoch: p.epoch, barrier: p.barrier}
	}
	return epochProposal{epoch: p.epoch + 1, barrier: last}
}

// commit records the proposal its heartbeat carried once written.
func (p *progress) commit(e epochProposal) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.epoch > p.epoch {
		p.epoch, p.barrier = e.epoch, e.barrier
	}
}

// passed reports whether every partition of barrier has its commit point
// beyond the offset barrier holds for it: every message tracked up to it
// is finished. A partition no longer tracked was lost to another member.
func passed(barrier, ready map[partKey]int64) bool {
	for k, off := range barrier {
		r, ok := ready[k]
		if ok && r <= off {
			return false
		}
	}
	return true
}

// marks returns, per partition, the highest offset tracked and the
// commit point (every message tracked below it is finished; -1 before
// any). A partition with nothing tracked has no mark in last.
func (t *tracker) marks() (last, ready map[partKey]int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	last, ready = make(map[partKey]int64, len(t.parts)), make(map[partKey]int64, len(t.parts))
	for k, p := range t.parts {
		if p.last >= 0 {
			last[k] = p.last
		}
		ready[k] = p.ready
	}
	return last, ready
}
