package pipeline

import (
	"context"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// event is one fetched message on its way through the pipeline.
type event struct {
	part   partKey
	offset int64
	key    []byte
	value  []byte
	ts     time.Time // the Kafka message timestamp
	entry  *trackEntry
	change *Change
	// members are an upsert's doc members, reserved fields stripped.
	members []byte
	// origin is where a repartitioned event was in the dish topic (nil
	// for any other).
	origin *origin

	// rid is the restaurant the event belongs to: its own id, or its
	// dish's restaurant's.
	rid string
	// flying: the indexer counts the event's writes in flight (fly).
	flying bool
	// parkedAt is when the dish was parked to wait for its restaurant
	// (parking.go); zero if it never was. Set on the loop before the
	// event reaches another goroutine.
	parkedAt time.Time

	mu          sync.Mutex
	outstanding int    // writes not yet answered
	result      string // the first successful write's result label
	rejected    error  // a permanent error of one of its writes
	failed      bool   // a write failed for good: the event never finishes
	// settled, if set, runs on the loop once every write of the event is
	// answered (whatever the answers).
	settled func(context.Context) error
}

func (ev *event) labels() (typ, op string) {
	typ, op = labelUnknown, labelUnknown
	if ev.change != nil {
		if ev.change.Type != "" {
			typ = ev.change.Type
		}
		if ev.change.Op != "" {
			op = ev.change.Op
		}
	}
	return typ, op
}

// expect counts n writes about to be added for ev.
func (ev *event) expect(n int) {
	ev.mu.Lock()
	ev.outstanding += n
	ev.mu.Unlock()
}

// decoded is a message's change as Decode reads it, and what is wrong
// with it, if anything.
type decoded struct {
	change  *Change
	members []byte // an upsert's doc members, reserved fields stripped
	reason  Reason // "" for a good event
	detail  string
	origin  *origin // a repartitioned event's place in the dish topic
}

// handle processes one fetched message, decoded: it tracks it,
// dead-letters it if it is bad, and hands it to the indexer. It returns
// an error only when the pipeline cannot go on (ctx ended, or a fatal
// failure).
func (p *Pipeline) handle(ctx context.Context, m kafka.Message, d decoded) error {
	k := partKey{topic: m.Topic, partition: m.Partition}
	entry, dropped := p.track.track(k, m.Offset, m.HighWaterMark)
	if len(dropped) > 0 {
		p.redelivered(k, m.Offset, dropped)
	}
	p.fetched.Add(1)
	c := d.change
	ev := &event{part: k, offset: m.Offset, key: m.Key, value: m.Value, ts: m.Time, entry: entry, change: c, members: d.members, origin: d.origin}
	if d.reason != "" {
		return p.deadLetter(ctx, ev, d.reason, d.detail, resultDeadLetter)
	}
	ev.rid = c.ID
	if c.Type == TypeDish {
		ev.rid = c.RestaurantID
	}
	return p.ix.submit(ctx, ev)
}

// redelivered forgets the pending dishes a redelivery superseded: they
// come again.
func (p *Pipeline) redelivered(k partKey, offset int64, dropped []*trackEntry) {
	gone := make(map[*trackEntry]bool, len(dropped))
	for _, e := range dropped {
		gone[e] = true
	}
	n := len(p.ix.pend.purge(func(ev *event) bool { return gone[ev.entry] }))
	p.log.Info("redelivery restarts partition tracking", "partition", k.String(), "offset", offset, "dropped", len(dropped), "pending_dropped", n)
}
