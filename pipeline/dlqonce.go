package pipeline

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/kafkarange"
)

// Dead letters once per event.
//
// An event's offset is committed some time after its dead letter is
// acknowledged (the committer's interval, or the handover's commit). An
// event dead-lettered in between is fetched again by the next owner of
// its partition (this member, for a partition it kept, when a handover
// was cut short or its commit refused), and would be dead-lettered again:
// a consumer of the dead-letter topic that alerts or replays would see
// the bad event twice. So the member keeps, per partition it owns, the
// places (source topic, partition, offset: the dead letter's headers) of
// the events dead-lettered at or after the group's committed offset, and
// an event decided again for a place it holds is finished as
// dead-lettered without a second dead letter (claim). The places come
// from two sources:
//
//   - its own dead letters, once acknowledged (written), and those still
//     in its outbox: a second decision of a place whose dead letter is
//     queued or being written joins that dead letter instead of queuing
//     another (it finishes when that one is acknowledged, and the dead
//     letter is skipped only when every event that joined it was
//     superseded);
//   - at each generation, for every partition it gains (all of them at
//     the first), the dead-letter topic read back (enter). That is what a
//     previous owner, or this member's previous process, wrote.
//
// The read is bounded in two ways. Dead letters go to partition N mod M
// of the dead-letter topic (M partitions) for an event of partition N
// (dlqWriter), so a partition's dead letters are in one place, each
// source partition's in order. And a dead letter of an event at or after
// the committed offset C was written after that event was produced, so
// after the event at C was produced: the read starts at the first dead
// letter whose timestamp is at least the timestamp of the event at C
// less deadLetterClockMargin (the broker's offsets-for-times), the margin
// covering the skew between the clocks of the event's producer and of
// ingest, which stamps its dead letters. A producer that stamps events
// with times further in the future than that can make a repeat go
// unrecognised; it is then written, as before.
//
// A dish that waits for its restaurant is the exception to "at or after
// the committed offset": it is parked (parking.go), its offset committed
// while it waits, and decided later, from memory or, by the partition's
// next owner, from the parking topic, perhaps after its dead letter was
// written and before its record's tombstone was. So a waiting dish pins
// its place (pin, until it finishes), and the read-back of a partition
// with parked dishes starts no later than their earliest parking time,
// less the margin (parked): a dish's dead letter follows its parking.
//
// The places of a partition go when it is lost, and each as the
// committed offset passes it (passed), unless pinned: the next owner
// starts at or after it. A repartitioned event's dead letter names its
// place in the dish topic (placement/repartition.go); read back, it cannot be told
// to which repartition offset it belongs, so it stays until no partition
// sharing its dead-letter partition is owned. The hot path is a map
// lookup per dead letter (claim) and, per parked dish, a pin.
//
// # The previous owner's writes in flight
//
// The new owner reads the dead-letter topic once its generation has
// formed. The previous owner's dead letters are acknowledged before that
// when it hands the partition over in time: the handover lands the
// dead-letter queue before it commits and joins (loop.settle), and the
// commit then covers them, so they are not even fetched again. Otherwise:
//
//   - Handover cut short (a shard that does not answer) or member killed:
//     a dead letter queued but not yet sent when the previous owner
//     releases the partition is skipped (its event was superseded); one
//     already sent may land after the new owner's read. The previous
//     owner A sends dead letter D for place P; A's generation ends; B's
//     generation forms and B reads the topic, without D; D lands; B
//     decides P again and writes D'. The window is what a produce request
//     already sent takes to land (the writer's timeout, at most a few
//     attempts), against the group's session or rebalance timeout before
//     B's generation forms at all: a member killed outright (SIGKILL, a
//     lost host) sends nothing more, and what it had sent lands or fails
//     long before its session expires.
//   - A member that decided after its generation ended would write dead
//     letters the new owner cannot know of. The loop decides no message
//     of an ended generation and expires no waiting dish once it has
//     handed over. What remains is a write answered after a handover cut
//     short, refused by the index (rejected): ownership is fenced (a
//     member makes no new decision for an ended generation: DESIGN.md,
//     Scale-out), so such an event is to be left undecided to the new
//     owner; a dead letter made of it would be a repeat the new owner
//     cannot see.
//
// What remains is a repeat a consumer recognises by the source headers,
// which name one event (docs/ingest.md, "Dead letters").

// deadLetterClockMargin is how far before the timestamp of the event at
// the committed offset the read-back of the dead-letter topic starts.
const deadLetterClockMargin = 5 * time.Minute

// deadPlace is a dead letter's source place: its headers.
type deadPlace struct {
	topic     string
	partition int
	offset    int64
}

// deadPlaceOf is the place an event's dead letter names: its own, or a
// repartitioned event's origin in the dish topic.
func deadPlaceOf(ev *event) deadPlace {
	if o := ev.origin; o != nil {
		return deadPlace{o.Topic, o.Partition, o.Offset}
	}
	return deadPlace{ev.part.topic, ev.part.partition, ev.offset}
}

// deadKnown is a place known to be dead-lettered.
type deadKnown struct {
	// own and offset are where the member reads the event; own.topic is
	// "" for a repartitioned event's dead letter read back.
	own    partKey
	offset int64
	// dlqPart is the dead-letter partition it was read from (-1: written
	// by this member).
	dlqPart int
}

// claimed is what claim decided for a dead letter.
type claimed int

const (
	claimSend   claimed = iota // write it
	claimKnown                 // its place is dead-lettered already: finish the event
	claimJoined                // its place's dead letter is in the outbox: finishes with it
)

// deadOnce keeps the places dead-lettered at or after the committed
// offsets of the partitions this member owns. It is safe for concurrent
// use: the loop claims and enters generations, writer callbacks claim,
// the outbox skips and acknowledges, the committer passes offsets.
type deadOnce struct {
	cfg    Config
	log    *slog.Logger
	client *kafka.Client // reads the dead-letter topic back (nil: not read)

	mu sync.Mutex
	// owned are the partition numbers owned (nil before the first
	// generation: everything written is kept); dlqParts are the
	// dead-letter partitions of those, after a read.
	owned    map[int]bool
	dlqParts map[int]bool
	known    map[deadPlace]deadKnown
	// parts is the dead-letter topic's partition count, and readFrom,
	// per partition number gained at this generation, the time from
	// which its dead letters were read (enter, parked: loop-owned).
	parts    int
	readFrom map[int]time.Time
	// sending are the dead letters in the outbox, by place; joined are
	// the dead letters that joined one of them.
	sending map[deadPlace]*deadLetter
	joined  map[*deadLetter][]*deadLetter
	// pins are the places of the dishes that wait for their restaurant,
	// parked (pin): their offsets are committed while they wait, so a
	// place of them stays known past the commit.
	pins map[deadPlace]*event

	// readBack counts the places read back from the dead-letter topic.
	readBack atomic.Int64
}

func newDeadOnce(cfg Config, log *slog.Logger) *deadOnce {
	return &deadOnce{
		cfg: cfg, log: log, known: map[deadPlace]deadKnown{},
		sending: map[deadPlace]*deadLetter{}, joined: map[*deadLetter][]*deadLetter{},
		pins: map[deadPlace]*event{},
	}
}

// claim decides whether d is written: not when its place is known to be
// dead-lettered, nor when a dead letter of its place is in the outbox,
// which d then joins.
func (o *deadOnce) claim(d *deadLetter) claimed {
	p := deadPlaceOf(d.ev)
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.known[p]; ok {
		return claimKnown
	}
	if s := o.sending[p]; s != nil {
		o.joined[s] = append(o.joined[s], d)
		return claimJoined
	}
	o.sending[p] = d
	return claimSend
}

// skip reports whether the outbox need not write d: every event of it,
// and of those that joined it, was superseded by a redelivery (dropped
// reports one). A skipped dead letter leaves the outbox: a later
// decision of its place writes its own.
//
// claim (the loop, a writer callback) and skip (the outbox) race for d;
// both hold mu. A claim that comes first joins d, and skip then finds a
// live event and writes d; a claim that comes after finds no dead letter
// of its place in the outbox and queues its own. Either way the place is
// written once, and no event waits on a dead letter that is skipped.
// dropped takes the tracker's lock under mu; the tracker never calls
// back here.
func (o *deadOnce) skip(d *deadLetter, dropped func(*event) bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !dropped(d.ev) {
		return false
	}
	for _, j := range o.joined[d] {
		if !dropped(j.ev) {
			return false
		}
	}
	o.forget(d)
	return true
}

// written records d as acknowledged and returns it with the dead letters
// that joined it, to finish. Its place is kept while its partition is
// owned.
func (o *deadOnce) written(d *deadLetter) []*deadLetter {
	o.mu.Lock()
	defer o.mu.Unlock()
	all := append([]*deadLetter{d}, o.joined[d]...)
	o.forget(d)
	ev := d.ev
	if o.owned == nil || o.owned[ev.part.partition] {
		o.known[deadPlaceOf(ev)] = deadKnown{own: ev.part, offset: ev.offset, dlqPart: -1}
	}
	return all
}

// forget takes d out of the outbox's records. Called with mu held.
func (o *deadOnce) forget(d *deadLetter) {
	p := deadPlaceOf(d.ev)
	if o.sending[p] == d {
		delete(o.sending, p)
	}
	delete(o.joined, d)
}

// passed drops the places below the offsets just committed: they are
// not fetched again.
func (o *deadOnce) passed(cs []commitPoint) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.known) == 0 {
		return
	}
	to := make(map[partKey]int64, len(cs))
	for _, c := range cs {
		to[c.key] = c.offset
	}
	for p, k := range o.known {
		if c, ok := to[k.own]; ok && k.offset < c && o.pins[p] == nil {
			delete(o.known, p)
		}
	}
}

// pin keeps ev's place, once known, past the commit of its offset until
// ev finishes (unpin): ev waits for its restaurant, parked, and its
// offset is committed meanwhile (parking.go). The place may be
// dead-lettered already (ev is a copy read again), or be on its way: the
// dish it copies expired a moment ago and its dead letter is in the
// outbox. The indexer keeps one copy of a place waiting (pending.Set.Holds),
// so a place has one pin, the newest copy's.
func (o *deadOnce) pin(ev *event) {
	p := deadPlaceOf(ev)
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pins[p] = ev
}

// unpin ends ev's pin, when ev finishes.
func (o *deadOnce) unpin(ev *event) {
	p := deadPlaceOf(ev)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pins[p] == ev {
		delete(o.pins, p)
	}
}

// enter follows the member into gen: the places of partitions lost go,
// and those of the partitions gained are read back from the dead-letter
// topic, before any event of gen is decided. The loop calls it.
func (o *deadOnce) enter(ctx context.Context, gen *generation) error {
	now := map[int]bool{}
	for k := range gen.owned {
		now[k.partition] = true
	}
	o.mu.Lock()
	before := o.owned
	o.owned = now
	o.dropUnowned()
	o.mu.Unlock()
	gained := map[int]bool{}
	for n := range now {
		if !before[n] {
			gained[n] = true
		}
	}
	o.readFrom = map[int]time.Time{}
	if o.client == nil || len(gained) == 0 {
		return nil
	}
	start := time.Now()
	var m int
	err := retry(ctx, o.log, "read the dead-letter topic's partition count", func() error {
		counts, err := kafkarange.PartitionCounts(ctx, o.client, o.cfg.DLQTopic)
		m = counts[o.cfg.DLQTopic]
		return err
	})
	if err != nil {
		return fmt.Errorf("pipeline: read dead letters back: %w", err)
	}
	o.parts = m
	if m == 0 {
		return nil // no dead-letter topic yet: nothing was dead-lettered
	}
	// From when each dead-letter partition is read: the earliest
	// timestamp of the events at the committed offsets of the partitions
	// gained that it holds, less the margin.
	from := map[int]time.Time{}
	for k, off := range gen.offsets {
		if !gained[k.partition] {
			continue
		}
		ts, ok, err := o.timeAt(ctx, k, off)
		if err != nil {
			return err
		}
		if !ok {
			continue // nothing at or after the committed offset
		}
		d := k.partition % m
		if t, seen := from[d]; !seen || ts.Before(t) {
			from[d] = ts
		}
	}
	o.mu.Lock()
	o.dlqParts = map[int]bool{}
	for n := range now {
		o.dlqParts[n%m] = true
	}
	o.mu.Unlock()
	learnt := 0
	for d, ts := range from {
		parts := map[int]bool{}
		for n := range gained {
			if n%m == d {
				parts[n] = true
			}
		}
		n, err := o.learn(ctx, d, ts.Add(-deadLetterClockMargin), parts)
		if err != nil {
			return err
		}
		learnt += n
	}
	o.log.Info("dead letters read back", "topic", o.cfg.DLQTopic, "partitions", len(gained), "dead_letters", learnt, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// parked widens the read of the dead-letter topic for partition n to the
// dishes of it read back from the parking topic (parking.go), before they
// are decided: their offsets were committed while they waited, perhaps
// long before the committed offset's event was produced, and the previous
// owner may have dead-lettered one and stopped before its tombstone. A
// dish's dead letter follows its parking, so the read starts at the
// earliest parking time, less the margin.
func (o *deadOnce) parked(ctx context.Context, n int, recs []unparked) error {
	if o.client == nil || o.parts == 0 || len(recs) == 0 {
		return nil
	}
	since := recs[0].parkedAt
	for _, u := range recs[1:] {
		if u.parkedAt.Before(since) {
			since = u.parkedAt
		}
	}
	since = since.Add(-deadLetterClockMargin)
	if t, ok := o.readFrom[n]; ok && !since.Before(t) {
		return nil // read from there already
	}
	if _, err := o.learn(ctx, n%o.parts, since, map[int]bool{n: true}); err != nil {
		if ctx.Err() != nil {
			return err
		}
		// As in outcomes.learnDeadLetters: costs repeats, not the run.
		o.log.Warn("dead letters of parked dishes not read back: repeats of them may be written", "partition", n, "error", err)
	}
	return nil
}

// learn reads dead-letter partition d from since and records the places
// of the partitions numbered in parts (all of them in d), and those of
// repartitioned events, which cannot be told apart. It returns how many
// it read.
func (o *deadOnce) learn(ctx context.Context, d int, since time.Time, parts map[int]bool) (int, error) {
	direct := map[string]bool{}
	for _, t := range o.cfg.topics() {
		direct[t] = true
	}
	learnt := map[deadPlace]deadKnown{}
	err := o.readPartition(ctx, d, since, func(p deadPlace) {
		switch {
		case !direct[p.topic]:
			learnt[p] = deadKnown{offset: -1, dlqPart: d}
		case parts[p.partition]:
			learnt[p] = deadKnown{own: partKey{p.topic, p.partition}, offset: p.offset, dlqPart: d}
		}
	})
	if err != nil {
		return 0, err
	}
	for n := range parts {
		if t, ok := o.readFrom[n]; !ok || since.Before(t) {
			o.readFrom[n] = since
		}
	}
	o.mu.Lock()
	for p, k := range learnt {
		if _, ok := o.known[p]; !ok {
			o.known[p] = k
		}
	}
	o.mu.Unlock()
	o.readBack.Add(int64(len(learnt)))
	return len(learnt), nil
}

// forgetOwners makes the next enter read every partition's dead letters
// back, as at the start.
func (o *deadOnce) forgetOwners() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.owned = nil
}

// dropUnowned drops the places and pins of partitions not owned (their
// waiting dishes were dropped with them: releaseUnowned). Called with mu
// held.
func (o *deadOnce) dropUnowned() {
	for p, ev := range o.pins {
		if !o.owned[ev.part.partition] {
			delete(o.pins, p)
		}
	}
	for p, k := range o.known {
		keep := o.owned[k.own.partition]
		if k.own.topic == "" {
			keep = o.dlqParts[k.dlqPart]
		}
		if !keep {
			delete(o.known, p)
		}
	}
}

// timeAt is the timestamp of the first message of k at or after offset
// (kafka.FirstOffset: the log's start); ok is false when there is none.
func (o *deadOnce) timeAt(ctx context.Context, k partKey, offset int64) (ts time.Time, ok bool, err error) {
	err = o.fetch(ctx, k.topic, k.partition, offset, 1<<20, func(r *kafka.Record) bool {
		ts, ok = r.Time, true
		return false
	})
	return ts, ok, err
}

// readPartition hands each dead letter of partition d stamped at or
// after since, to the end of the partition as it is now, to fn.
func (o *deadOnce) readPartition(ctx context.Context, d int, since time.Time, fn func(deadPlace)) error {
	topic := o.cfg.DLQTopic
	var start int64 = -1
	err := retry(ctx, o.log, "find dead letters by time", func() error {
		res, err := o.client.ListOffsets(ctx, &kafka.ListOffsetsRequest{
			Topics: map[string][]kafka.OffsetRequest{topic: {kafka.TimeOffsetOf(d, since)}},
		})
		if err != nil {
			return err
		}
		for _, p := range res.Topics[topic] {
			if p.Error != nil {
				return p.Error
			}
			for off := range p.Offsets {
				start = off
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pipeline: find dead letters of %s/%d since %v: %w", topic, d, since, err)
	}
	if start < 0 {
		return nil // none stamped since
	}
	return o.fetch(ctx, topic, d, start, 8<<20, func(r *kafka.Record) bool {
		if p, ok := parsePlace(r.Headers); ok {
			fn(p)
		}
		return true
	})
}

// parsePlace reads a dead letter's source headers.
func parsePlace(hs []kafka.Header) (deadPlace, bool) {
	var p deadPlace
	seen := 0
	for _, h := range hs {
		var err error
		switch h.Key {
		case HeaderSourceTopic:
			p.topic = string(h.Value)
			seen |= 1
		case HeaderSourcePartition:
			p.partition, err = strconv.Atoi(string(h.Value))
			seen |= 2
		case HeaderSourceOffset:
			p.offset, err = strconv.ParseInt(string(h.Value), 10, 64)
			seen |= 4
		}
		if err != nil {
			return p, false
		}
	}
	return p, seen == 7
}

// fetch hands the records of topic/partition from offset on, to its end
// as it is now, to fn until fn returns false. An offset below the log's
// start reads from the start.
func (o *deadOnce) fetch(ctx context.Context, topic string, partition int, offset, maxBytes int64, fn func(*kafka.Record) bool) error {
	rd := kafkarange.Reader{Client: o.client, Retry: func(ctx context.Context, fetch func() error) error {
		return retry(ctx, o.log, "read back from Kafka", fetch)
	}}
	res, err := rd.Read(ctx, kafkarange.Range{Topic: topic, Partition: partition, From: offset, End: kafkarange.HighWatermark, MaxBytes: maxBytes}, func(r *kafka.Record) error {
		if !fn(r) {
			return kafkarange.ErrStop
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("pipeline: read %s/%d at %d: %w", topic, partition, res.Next, err)
	}
	return nil
}
