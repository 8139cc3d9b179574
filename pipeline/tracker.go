package pipeline

import (
	"sort"
	"sync"
	"sync/atomic"
)

// trackEntry is one fetched message of a partition.
type trackEntry struct {
	part    *partState
	offset  int64
	done    bool // finished: written or dead-lettered, or parked
	dropped bool // superseded by a redelivery; its finish counts for nothing
	// parked: done for the commit because its dish is parked durably
	// (parking.go), while the event itself goes on; its finish still
	// reports true, once.
	parked bool
}

// parkedEntry is the entry of a dish read back from the parking topic:
// its offset is committed already, and its finish reports true once.
func parkedEntry() *trackEntry { return &trackEntry{done: true, parked: true} }

// partState tracks one partition.
type partState struct {
	key partKey
	// entries are the fetched messages not yet behind ready, in offset
	// order, from head on.
	entries []*trackEntry
	head    int
	// last is the highest offset tracked, -1 before the first.
	last int64
	// ready is the offset to commit: every message fetched below it is
	// finished. -1 before anything finished.
	ready int64
	// committed is the offset last committed, -1 before the first commit.
	committed int64
	// base is the first offset fetched, the lag's origin before a commit.
	base int64
	// hwm is the newest high watermark seen on a fetched message.
	hwm      int64
	restarts int64
}

// tracker decides, per partition, how far offsets may be committed: up
// to the first message that is not finished. Messages may finish in any
// order (different shards answer at different speeds, a dish waits for its
// restaurant, a dead letter is retried); the commit point only moves over
// a contiguous run of finished messages. Offsets need not be contiguous
// (compaction and transaction markers leave gaps): only fetched offsets
// are tracked.
//
// # Redelivery
//
// Every generation reads its partitions from the group's committed offset
// (group.go), so after a rebalance a partition we keep may deliver again
// messages we already track: finished but not committed (the handover
// commits them, unless it was cut short or the commit failed), or still
// in flight (a handover cut short).
// A message whose offset is at or below the highest tracked offset of its
// partition therefore restarts the tracking from that offset: the entries
// at and above it are dropped (their writes may still land; their finish
// no longer counts) and the redelivered messages are tracked afresh. The
// interleavings:
//
//   - Kept partition, in-flight writes. We track 10..20, 10..14 done,
//     ready = 15 but the broker still holds 10 (the rebalance came before
//     our commit). Offset 10 arrives again: entries 10..20 drop. The
//     old writes of 15..20 land later and are ignored by the tracker; the
//     redelivered 15..20 are written again (stale under external
//     versioning, or the same document again) and finish. ready never
//     moves back: 10..14 were finished by this process, so committing 15
//     stays true, and a commit behind the broker's would only cause more
//     redelivery.
//   - Entries below the redelivered offset that are not finished (possible
//     when another member committed further than we had) stay tracked and
//     keep holding the commit: nothing we have not finished is committed
//     on our behalf.
//   - Partition lost. The processing loop releases it (release) as soon
//     as it sees the generation that gave it away: its entries drop, so
//     the events of it still in flight finish for nothing and this member
//     commits nothing more of it, and the messages of it still queued
//     between its reader and the loop are left to the new owner,
//     untracked (loop.ended). Nor can a commit of it land behind the
//     new owner's: commits go through a generation that owns it
//     (committer.commit).
//
// A tracker is safe for concurrent use: the fetching goroutine tracks,
// write callbacks finish, the committer reads.
type tracker struct {
	mu    sync.Mutex
	parts map[partKey]*partState
	// held is the number of entries tracked over every partition (what
	// the snapshot's Tracked adds up to), peak the most ever held; both
	// change under mu and are read without it.
	held, peak atomic.Int64
}

func newTracker() *tracker { return &tracker{parts: make(map[partKey]*partState)} }

// size is the number of fetched messages tracked: not finished, or
// finished behind one that is not.
func (t *tracker) size() int64 { return t.held.Load() }

// track records a fetched message. dropped lists the entries a
// redelivery superseded.
func (t *tracker) track(k partKey, offset, hwm int64) (e *trackEntry, dropped []*trackEntry) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.parts[k]
	if !ok {
		p = &partState{key: k, last: -1, ready: -1, committed: -1, base: offset}
		t.parts[k] = p
	}
	if hwm > p.hwm {
		p.hwm = hwm
	}
	if p.last >= 0 && offset <= p.last {
		p.restarts++
		i := sort.Search(len(p.entries)-p.head, func(i int) bool { return p.entries[p.head+i].offset >= offset }) + p.head
		for _, d := range p.entries[i:] {
			d.dropped = true
			dropped = append(dropped, d)
		}
		clear(p.entries[i:])
		p.entries = p.entries[:i]
		p.last = offset - 1
		t.held.Add(-int64(len(dropped)))
	}
	e = &trackEntry{part: p, offset: offset}
	p.entries = append(p.entries, e)
	p.last = offset
	if n := t.held.Add(1); n > t.peak.Load() {
		t.peak.Store(n)
	}
	return e, dropped
}

// finish marks an entry finished and moves its partition's commit point
// over the finished run at its front. It reports false for an entry that
// a redelivery dropped (or that was already finished).
func (t *tracker) finish(e *trackEntry) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.parked && !e.dropped {
		e.parked = false
		return true
	}
	if e.done || e.dropped {
		return false
	}
	e.done = true
	t.advance(e.part)
	return true
}

// park marks an entry done for the commit while its event goes on: its
// dish is parked in the parking topic. It reports false for an entry a
// redelivery dropped or that is done already (finished, or parked).
func (t *tracker) park(e *trackEntry) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e.done || e.dropped {
		return false
	}
	e.done, e.parked = true, true
	t.advance(e.part)
	return true
}

// advance moves p's commit point over the done run at its front.
func (t *tracker) advance(p *partState) {
	from := p.head
	for p.head < len(p.entries) && p.entries[p.head].done {
		if off := p.entries[p.head].offset + 1; off > p.ready {
			p.ready = off
		}
		p.entries[p.head] = nil
		p.head++
	}
	t.held.Add(-int64(p.head - from))
	if p.head > 64 && p.head*2 >= len(p.entries) {
		live := p.entries[p.head:]
		if c := cap(p.entries); c > 4096 && 4*len(live) < c {
			// The array grew with a backlog of unfinished entries (a
			// commit held by one slow event) and would keep that size for
			// the rest of the run: a smaller one takes over.
			p.entries = append(make([]*trackEntry, 0, max(2*len(live), 1024)), live...)
		} else {
			n := copy(p.entries, live)
			clear(p.entries[n:])
			p.entries = p.entries[:n]
		}
		p.head = 0
	}
}

// isDropped reports whether a redelivery superseded the entry.
func (t *tracker) isDropped(e *trackEntry) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return e.dropped
}

// commitPoint is an offset to commit: the next offset to read.
type commitPoint struct {
	key    partKey
	offset int64
}

// due returns the partitions whose commit point moved past their last
// commit.
func (t *tracker) due() []commitPoint {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []commitPoint
	for k, p := range t.parts {
		if p.ready >= 0 && p.ready > p.committed {
			out = append(out, commitPoint{key: k, offset: p.ready})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key.String() < out[j].key.String() })
	return out
}

// committed records a successful commit.
func (t *tracker) committed(cs []commitPoint) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range cs {
		if p := t.parts[c.key]; p != nil && c.offset > p.committed {
			p.committed = c.offset
		}
	}
}

// PartitionStats describe one partition, "topic/partition".
type PartitionStats struct {
	// Committed is the offset last committed (-1 before the first).
	Committed int64
	// Ready is the offset that would be committed now.
	Ready int64
	// HighWatermark is the newest high watermark seen.
	HighWatermark int64
	// Lag is HighWatermark − Committed (from the first offset fetched
	// before the first commit).
	Lag int64
	// Tracked is the number of fetched messages not yet finished, or
	// finished behind one that is not.
	Tracked int
	// Restarts counts redeliveries that restarted the tracking.
	Restarts int64
}

// release stops tracking the partitions numbered lost, of every topic,
// and returns their keys. Their entries drop: an event of them
// still in flight finishes for nothing, and nothing more of them is
// committed until a message of them is tracked again.
func (t *tracker) release(lost func(partition int) bool) []partKey {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []partKey
	for k, p := range t.parts {
		if !lost(k.partition) {
			continue
		}
		for _, e := range p.entries[p.head:] {
			e.dropped = true
		}
		t.held.Add(-int64(len(p.entries) - p.head))
		delete(t.parts, k)
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}

// owns reports whether partition k is tracked.
func (t *tracker) owns(k partKey) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.parts[k]
	return p != nil
}

// snapshot returns the figures of every partition this member owns.
func (t *tracker) snapshot() map[partKey]PartitionStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[partKey]PartitionStats, len(t.parts))
	for k, p := range t.parts {
		out[k] = PartitionStats{
			Committed: p.committed, Ready: p.ready, HighWatermark: p.hwm,
			Lag: p.lag(), Tracked: len(p.entries) - p.head, Restarts: p.restarts,
		}
	}
	return out
}

func (p *partState) lag() int64 {
	from := p.committed
	if from < 0 {
		from = p.base
	}
	return max(p.hwm-from, 0)
}

// totalLag sums the lag of every partition this member owns.
func (t *tracker) totalLag() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	var n int64
	for _, p := range t.parts {
		n += p.lag()
	}
	return n
}
