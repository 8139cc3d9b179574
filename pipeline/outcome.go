package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
)

// outcomes is where an event ends: every event finishes here (written,
// stale, dead-lettered, dropped), counted, its offset then free for the
// committer. It is the indexer's host: the indexer, which takes the bulk
// writer's answers, hands it each event it has decided the end of.
type outcomes struct {
	log     *slog.Logger
	met     *metrics
	track   *tracker
	now     func() time.Time
	parking *parker
	fail    func(error)
	// dead writes dead letters, once keeps it from writing one twice
	// (dlqonce.go); groupCommitted reads the group's committed
	// offsets (nil: not asked). Both set by Run.
	dead           *dlq
	once           *deadOnce
	groupCommitted func(ctx context.Context, parts map[partKey]bool) (map[partKey]int64, error)

	finished, deadLetters atomic.Int64
	deadRepeats           atomic.Int64 // dead letters not written twice (send)
	lastProgress          atomic.Int64 // unix nanoseconds
	mu                    sync.Mutex   // guards the counts
	counts                map[EventKey]int64
	deadCount             map[decode.Reason]int64
}

var _ host = (*outcomes)(nil)

// rejected dead-letters an event the index rejected a write of.
func (o *outcomes) rejected(ev *event, err error) {
	o.send(&deadLetter{ev: ev, reason: decode.ReasonRejected, detail: err.Error(), result: resultDeadLetter})
}

func resultOf(r bulk.Result) string {
	switch {
	case r.Coalesced:
		return resultCoalesced
	case r.Outcome == bulk.Stale:
		return resultStale
	case r.Outcome == bulk.NotFound:
		return resultNotFound
	}
	return resultWritten
}

// finish records an event as finished, so its offset may be committed,
// and counts it. It reports false for an event a redelivery superseded.
func (o *outcomes) finish(ev *event, result string) bool {
	if !o.track.finish(ev.entry) {
		return false
	}
	o.parking.unpark(ev)
	if o.once != nil && !ev.parkedAt.IsZero() {
		o.once.unpin(ev)
	}
	typ, op := ev.labels()
	o.met.events.WithLabelValues(typ, op, result).Inc()
	now := o.now()
	switch result {
	case resultWritten, resultStale, resultNotFound, resultCoalesced:
		if !ev.ts.IsZero() {
			o.met.endToEnd.Observe(now.Sub(ev.ts).Seconds())
		}
	}
	o.mu.Lock()
	o.counts[EventKey{Type: typ, Op: op, Result: result}]++
	o.mu.Unlock()
	o.finished.Add(1)
	o.lastProgress.Store(now.UnixNano())
	return true
}

// deadLetterWritten finishes an event whose dead letter is acknowledged,
// with those that joined it (deadOnce.claim).
func (o *outcomes) deadLetterWritten(d *deadLetter) {
	all := []*deadLetter{d}
	if o.once != nil {
		all = o.once.written(d)
	}
	done := false
	for _, x := range all {
		if o.finish(x.ev, x.result) {
			done = true
		}
	}
	if !done {
		return
	}
	o.deadLetters.Add(1)
	o.met.deadLetters.WithLabelValues(string(d.reason)).Inc()
	o.mu.Lock()
	o.deadCount[d.reason]++
	o.mu.Unlock()
}

// park writes a dish that starts waiting for its restaurant to the
// parking topic (parker.park).
func (o *outcomes) park(ev *event, now time.Time) {
	if o.once != nil {
		o.once.pin(ev)
	}
	o.parking.park(ev, now)
}

// committedOffsets reads the group's committed offsets of parts.
func (o *outcomes) committedOffsets(ctx context.Context, parts map[partKey]bool) (map[partKey]int64, error) {
	if o.groupCommitted == nil {
		return nil, nil
	}
	return o.groupCommitted(ctx, parts)
}

// deadLetter queues an event for the dead-letter topic, waiting while the
// queue is full. The event finishes when the write is acknowledged.
func (o *outcomes) deadLetter(ctx context.Context, ev *event, r decode.Reason, detail, result string) error {
	if err := o.dead.WaitRoom(ctx); err != nil {
		return err
	}
	o.send(&deadLetter{ev: ev, reason: r, detail: detail, result: result})
	return nil
}

// send queues d unless its event's place is dead-lettered already, or
// on its way (deadOnce.claim): then d is a repeat, counted, and its event
// finishes as dead-lettered now, or with the dead letter it joined.
func (o *outcomes) send(d *deadLetter) {
	c := claimSend
	if o.once != nil {
		c = o.once.claim(d)
	}
	switch c {
	case claimSend:
		o.dead.Enqueue(d)
		return
	case claimKnown:
		o.finish(d.ev, d.result)
	}
	o.deadRepeats.Add(1)
	o.met.deadLetterRepeats.WithLabelValues(string(d.reason)).Inc()
}

// learnDeadLetters has the dead-letter record follow the member into gen
// (deadOnce.enter). The loop calls it before deciding any event of gen.
// A read-back that fails for good (no right to read the topic) costs
// only the repeats it would have avoided: it is logged, not fatal.
func (o *outcomes) learnDeadLetters(ctx context.Context, gen *generation) error {
	if o.once == nil {
		return nil
	}
	err := o.once.enter(ctx, gen)
	if err != nil && ctx.Err() == nil {
		o.log.Warn("dead letters not read back: repeats of them may be written", "generation", gen.id, "error", err)
		return nil
	}
	return err
}

// forgetDeadLetterOwners makes the next learnDeadLetters count every
// partition as gained.
func (o *outcomes) forgetDeadLetterOwners() {
	if o.once != nil {
		o.once.forgetOwners()
	}
}

// landDeadLetters waits until every dead letter queued is written.
func (o *outcomes) landDeadLetters(ctx context.Context) error {
	if o.dead == nil {
		return nil
	}
	return o.dead.WaitEmpty(ctx)
}
