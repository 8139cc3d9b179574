package deadletter

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"
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
// dead-lettered without a second dead letter (Claim). The places come
// from two sources:
//
//   - its own dead letters, once acknowledged (Written), and those still
//     in its outbox: a second decision of a place whose dead letter is
//     queued or being written joins that dead letter instead of queuing
//     another (it finishes when that one is acknowledged, and the dead
//     letter is skipped only when every event that joined it was
//     superseded);
//   - at each generation, for every partition it gains (all of them at
//     the first), the dead-letter topic read back (Enter). That is what a
//     previous owner, or this member's previous process, wrote.
//
// The read is bounded in two ways. Dead letters go to partition N mod M
// of the dead-letter topic (M partitions) for an event of partition N
// (Writer), so a partition's dead letters are in one place, each source
// partition's in order. And a dead letter of an event at or after the
// committed offset C was written after that event was produced, so after
// the event at C was produced: the read starts at the first dead letter
// whose timestamp is at least the timestamp of the event at C less
// Config.ClockMargin (the broker's offsets-for-times), the margin
// covering the skew between the clocks of the event's producer and of
// ingest, which stamps its dead letters. A producer that stamps events
// with times further in the future than that can make a repeat go
// unrecognised; it is then written, as before.
//
// A dish that waits for its restaurant is the exception to "at or after
// the committed offset": it is parked (pipeline/parking.go), its offset
// committed while it waits, and decided later, from memory or, by the
// partition's next owner, from the parking topic, perhaps after its dead
// letter was written and before its record's tombstone was. So a waiting
// dish pins its place (Pin, until it finishes), and the read-back of a
// partition with parked dishes starts no later than their earliest
// parking time, less the margin (Parked): a dish's dead letter follows
// its parking.
//
// The places of a partition go when it is lost, and each as the
// committed offset passes it (Passed), unless pinned: the next owner
// starts at or after it. A repartitioned event's dead letter names its
// place in the dish topic (pipeline/placement/repartition.go); read
// back, it cannot be told to which repartition offset it belongs, so it
// stays until no partition sharing its dead-letter partition is owned.
// The hot path is a map lookup per dead letter (Claim) and, per parked
// dish, a pin.
//
// # The previous owner's writes in flight
//
// The new owner reads the dead-letter topic once its generation has
// formed. The previous owner's dead letters are acknowledged before that
// when it hands the partition over in time: the handover lands the
// dead-letter queue before it commits and joins (pipeline's loop.settle),
// and the commit then covers them, so they are not even fetched again.
// Otherwise:
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
// Partitions added to the dead-letter topic change M, so a partition's
// dead letters written before are read back from the wrong place, and
// their repeats are written. What remains is a repeat a consumer
// recognises by the source headers, which name one event (docs/ingest.md,
// "Dead letters").

// Claim is what Once.Claim decided for a dead letter.
type Claim int

const (
	// ClaimSend: write it.
	ClaimSend Claim = iota
	// ClaimKnown: its place is dead-lettered already; finish its event.
	ClaimKnown
	// ClaimJoined: its place's dead letter is in the outbox; its event
	// finishes with that one (Written).
	ClaimJoined
)

// part is a partition of a topic.
type part struct {
	topic     string
	partition int
}

// known is a place known to be dead-lettered.
type known struct {
	// own is where the member reads the event; own.Topic is "" (and
	// own.Offset -1) for a repartitioned event's dead letter read back.
	own Place
	// dlqPart is the dead-letter partition it was read from (-1: written
	// by this member).
	dlqPart int
}

// pinned is a waiting dish's pin: its event, and the number of the
// partition it was read from.
type pinned[E comparable] struct {
	ev        E
	partition int
}

// Once keeps the places dead-lettered at or after the committed offsets
// of the partitions this member owns; E is the owner's event, compared
// by identity. It is safe for concurrent use: the loop claims, pins and
// enters generations (Enter and Parked only from the loop), writer
// callbacks claim, the outbox skips and acknowledges, the committer
// passes offsets.
type Once[E comparable] struct {
	cfg    Config
	log    *slog.Logger
	client *kafka.Client // reads the dead-letter topic back (nil: not read)

	mu sync.Mutex
	// owned are the partition numbers owned (nil before the first
	// generation: everything written is kept); dlqParts are the
	// dead-letter partitions of those, after a read.
	owned    map[int]bool
	dlqParts map[int]bool
	known    map[Place]known
	// parts is the dead-letter topic's partition count, and readFrom,
	// per partition number gained at this generation, the time from
	// which its dead letters were read (Enter, Parked: loop-owned).
	parts    int
	readFrom map[int]time.Time
	// sending are the dead letters in the outbox, by place; joined are
	// the dead letters that joined one of them.
	sending map[Place]*Letter[E]
	joined  map[*Letter[E]][]*Letter[E]
	// pins are the places of the dishes that wait for their restaurant,
	// parked (Pin): their offsets are committed while they wait, so a
	// place of them stays known past the commit.
	pins map[Place]pinned[E]

	// readBack counts the places read back from the dead-letter topic.
	readBack atomic.Int64
}

// New returns an empty record, or cfg's errors (Config.Validate).
func New[E comparable](cfg Config) (*Once[E], error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	return &Once[E]{
		cfg: cfg, log: cfg.Logger, client: cfg.Client, known: map[Place]known{},
		sending: map[Place]*Letter[E]{}, joined: map[*Letter[E]][]*Letter[E]{},
		pins: map[Place]pinned[E]{},
	}, nil
}

// ReadBack returns how many places were read back from the dead-letter
// topic so far.
func (o *Once[E]) ReadBack() int64 { return o.readBack.Load() }

// Claim decides whether d is written: not when its place is known to be
// dead-lettered, nor when a dead letter of its place is in the outbox,
// which d then joins.
func (o *Once[E]) Claim(d *Letter[E]) Claim {
	p := d.Source
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, ok := o.known[p]; ok {
		return ClaimKnown
	}
	if s := o.sending[p]; s != nil {
		o.joined[s] = append(o.joined[s], d)
		return ClaimJoined
	}
	o.sending[p] = d
	return ClaimSend
}

// Skip reports whether the outbox need not write d: every event of it,
// and of those that joined it, was superseded by a redelivery (dropped
// reports one). A skipped dead letter leaves the outbox: a later
// decision of its place writes its own.
//
// Claim (the loop, a writer callback) and Skip (the outbox) race for d;
// both hold mu. A claim that comes first joins d, and Skip then finds a
// live event and writes d; a claim that comes after finds no dead letter
// of its place in the outbox and queues its own. Either way the place is
// written once, and no event waits on a dead letter that is skipped.
// dropped is called under mu: it may take the owner's locks (the
// pipeline's tracker), which must never call back into Once.
func (o *Once[E]) Skip(d *Letter[E], dropped func(E) bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !dropped(d.Event) {
		return false
	}
	for _, j := range o.joined[d] {
		if !dropped(j.Event) {
			return false
		}
	}
	o.forget(d)
	return true
}

// Written records d as acknowledged and returns it with the dead letters
// that joined it, to finish. Its place is kept while its partition is
// owned.
func (o *Once[E]) Written(d *Letter[E]) []*Letter[E] {
	o.mu.Lock()
	defer o.mu.Unlock()
	all := append([]*Letter[E]{d}, o.joined[d]...)
	o.forget(d)
	if o.owned == nil || o.owned[d.Own.Partition] {
		o.known[d.Source] = known{own: d.Own, dlqPart: -1}
	}
	return all
}

// forget takes d out of the outbox's records. Called with mu held.
func (o *Once[E]) forget(d *Letter[E]) {
	p := d.Source
	if o.sending[p] == d {
		delete(o.sending, p)
	}
	delete(o.joined, d)
}

// Passed drops the places below the offsets just committed (each
// commit's Offset the next offset to read): they are not fetched again.
func (o *Once[E]) Passed(commits []Place) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.known) == 0 {
		return
	}
	to := make(map[part]int64, len(commits))
	for _, c := range commits {
		to[part{c.Topic, c.Partition}] = c.Offset
	}
	for p, k := range o.known {
		if c, ok := to[part{k.own.Topic, k.own.Partition}]; ok && k.own.Offset < c {
			if _, pin := o.pins[p]; !pin {
				delete(o.known, p)
			}
		}
	}
}

// Pin keeps the place source of ev, read from partition number
// partition, once known, past the commit of its offset until ev finishes
// (Unpin): ev waits for its restaurant, parked, and its offset is
// committed meanwhile (pipeline/parking.go). The place may be
// dead-lettered already (ev is a copy read again), or be on its way: the
// dish it copies expired a moment ago and its dead letter is in the
// outbox. The owner keeps one copy of a place waiting (package
// pending: Set.Holds), so a place has one pin, the newest copy's.
func (o *Once[E]) Pin(ev E, partition int, source Place) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.pins[source] = pinned[E]{ev: ev, partition: partition}
}

// Unpin ends ev's pin of source, when ev finishes.
func (o *Once[E]) Unpin(ev E, source Place) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if pn, ok := o.pins[source]; ok && pn.ev == ev {
		delete(o.pins, source)
	}
}

// ForgetOwners makes the next Enter read every partition's dead letters
// back, as at the start.
func (o *Once[E]) ForgetOwners() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.owned = nil
}

// dropUnowned drops the places and pins of partitions not owned (their
// waiting dishes were dropped with them: pipeline's releaseUnowned).
// Called with mu held.
func (o *Once[E]) dropUnowned() {
	for p, pn := range o.pins {
		if !o.owned[pn.partition] {
			delete(o.pins, p)
		}
	}
	for p, k := range o.known {
		keep := o.owned[k.own.Partition]
		if k.own.Topic == "" {
			keep = o.dlqParts[k.dlqPart]
		}
		if !keep {
			delete(o.known, p)
		}
	}
}
