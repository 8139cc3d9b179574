package pipeline

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/pipeline/deadletter"
	"github.com/geoshard/geoshard/pipeline/outbox"
)

// Dead-letter headers (package deadletter spells them). The three source
// headers name one event: for a repartitioned event, its place in the
// dish topic.
const (
	HeaderReason          = deadletter.HeaderReason
	HeaderError           = deadletter.HeaderError
	HeaderSourceTopic     = deadletter.HeaderSourceTopic
	HeaderSourcePartition = deadletter.HeaderSourcePartition
	HeaderSourceOffset    = deadletter.HeaderSourceOffset
)

// deadLetter is one event on its way to the dead-letter topic; its
// Result is the event's result label once written: dead_letter, or
// pending_expired for a dish that waited too long.
type deadLetter = deadletter.Letter[*event]

// dlq is the dead-letter queue: an outbox (package outbox) of dead
// letters, which keeps their order and retries them until written.
type dlq = outbox.Outbox[*deadLetter]

// newDeadLetter is ev's dead letter. A repartitioned event's place and
// key are its origin's in the dish topic (placement/repartition.go).
func newDeadLetter(ev *event, r decode.Reason, detail, result string) *deadLetter {
	d := &deadLetter{Event: ev, Own: ownPlace(ev), Key: ev.key, Value: ev.value, Reason: r, Detail: detail, Result: result}
	d.Source = d.Own
	if o := ev.origin; o != nil {
		d.Source, d.Key = deadletter.Place{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset}, o.Key
	}
	return d
}

// ownPlace is where the member read ev.
func ownPlace(ev *event) deadletter.Place {
	return deadletter.Place{Topic: ev.part.topic, Partition: ev.part.partition, Offset: ev.offset}
}

// deadPlaceOf is the place ev's dead letter names: its own, or a
// repartitioned event's origin in the dish topic.
func deadPlaceOf(ev *event) deadletter.Place {
	if o := ev.origin; o != nil {
		return deadletter.Place{Topic: o.Topic, Partition: o.Partition, Offset: o.Offset}
	}
	return ownPlace(ev)
}

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
	// (package deadletter). groupCommitted reads the
	// group's committed offsets (nil: not asked).
	dead           *dlq
	once           *deadletter.Once[*event]
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
	o.send(newDeadLetter(ev, decode.ReasonRejected, err.Error(), resultDeadLetter))
}

// finish records an event as finished, so its offset may be committed,
// and counts it. It reports false for an event a redelivery superseded.
func (o *outcomes) finish(ev *event, result string) bool {
	if !o.track.finish(ev.entry) {
		return false
	}
	o.parking.unpark(ev)
	if !ev.parkedAt.IsZero() {
		o.once.Unpin(ev, deadPlaceOf(ev))
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
// with those that joined it (deadletter.Once.Claim).
func (o *outcomes) deadLetterWritten(d *deadLetter) {
	done := false
	for _, x := range o.once.Written(d) {
		if o.finish(x.Event, x.Result) {
			done = true
		}
	}
	if !done {
		return
	}
	o.deadLetters.Add(1)
	o.met.deadLetters.WithLabelValues(string(d.Reason)).Inc()
	o.mu.Lock()
	o.deadCount[d.Reason]++
	o.mu.Unlock()
}

// park writes a dish that starts waiting for its restaurant to the
// parking topic (parker.park).
func (o *outcomes) park(ev *event, now time.Time) {
	o.once.Pin(ev, ev.part.partition, deadPlaceOf(ev))
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
	o.send(newDeadLetter(ev, r, detail, result))
	return nil
}

// send queues d unless its event's place is dead-lettered already, or
// on its way (deadletter.Once.Claim): then d is a repeat, counted, and
// its event finishes as dead-lettered now, or with the dead letter it
// joined.
func (o *outcomes) send(d *deadLetter) {
	switch o.once.Claim(d) {
	case deadletter.ClaimSend:
		o.dead.Enqueue(d)
		return
	case deadletter.ClaimKnown:
		o.finish(d.Event, d.Result)
	}
	o.deadRepeats.Add(1)
	o.met.deadLetterRepeats.WithLabelValues(string(d.Reason)).Inc()
}

// skipDeadLetter is the dead-letter outbox's skip: d need not be written
// when every event of it was superseded (deadletter.Once.Skip).
func (o *outcomes) skipDeadLetter(d *deadLetter) bool {
	return o.once.Skip(d, func(ev *event) bool { return o.track.isDropped(ev.entry) })
}

// deadLettersPassed tells the dead-letter record of the offsets just
// committed (deadletter.Once.Passed).
func (o *outcomes) deadLettersPassed(cs []commitPoint) {
	ps := make([]deadletter.Place, len(cs))
	for i, c := range cs {
		ps[i] = deadletter.Place{Topic: c.key.topic, Partition: c.key.partition, Offset: c.offset}
	}
	o.once.Passed(ps)
}

// deadLettersParked widens the dead-letter read-back of partition n to
// its parked dishes read back (deadletter.Once.Parked).
func (o *outcomes) deadLettersParked(ctx context.Context, n int, recs []unparked) error {
	at := make([]time.Time, len(recs))
	for i, u := range recs {
		at[i] = u.parkedAt
	}
	return o.once.Parked(ctx, n, at)
}

// learnDeadLetters has the dead-letter record follow the member into gen
// (deadletter.Once.Enter). The loop calls it before deciding any event
// of gen. A read-back that fails for good (no right to read the topic)
// costs only the repeats it would have avoided: it is logged, not fatal.
func (o *outcomes) learnDeadLetters(ctx context.Context, gen *generation) error {
	g := deadletter.Generation{}
	for k := range gen.owned {
		g.Partitions = append(g.Partitions, k.partition)
	}
	for k, off := range gen.offsets {
		g.Start = append(g.Start, deadletter.Place{Topic: k.topic, Partition: k.partition, Offset: off})
	}
	err := o.once.Enter(ctx, g)
	if err != nil && ctx.Err() == nil {
		o.log.Warn("dead letters not read back: repeats of them may be written", "generation", gen.id, "error", err)
		return nil
	}
	return err
}

// forgetDeadLetterOwners makes the next learnDeadLetters count every
// partition as gained.
func (o *outcomes) forgetDeadLetterOwners() { o.once.ForgetOwners() }

// landDeadLetters waits until every dead letter queued is written.
func (o *outcomes) landDeadLetters(ctx context.Context) error {
	return o.dead.WaitEmpty(ctx)
}
