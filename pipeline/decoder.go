package pipeline

// The decoder stage: it reads each fetched message through the format's
// decode.Decoder, beside the fetch and the processing loop, and hands the
// decoded message on; and the event, a fetched message on its way through
// the rest of the pipeline.

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/pipeline/pending"
	"github.com/geoshard/geoshard/pipeline/placement"
)

// labelUnknown is the type or op label of an event too broken to have a
// valid one, so labels stay bounded.
const labelUnknown = "unknown"

// newDecoder returns the reader of cfg.Format; cfg has its defaults
// (withDefaults) and a Mapping under decode.FormatDebezium.
func newDecoder(cfg Config) decode.Decoder {
	return decode.New(cfg.Format, cfg.Mapping, cfg.RestaurantTopic)
}

// decoded is a message's change as the format's decode.Decoder reads it,
// and what is wrong with it, if anything.
type decoded struct {
	change  *decode.Change
	members []byte        // an upsert's doc members, reserved fields stripped
	reason  decode.Reason // "" for a good event
	detail  string
	origin  *placement.Origin // a repartitioned event's place in the dish topic
	// skip: the event finishes with no write and no dead letter (a
	// Debezium tombstone), counted as noop.
	skip bool
}

// decoder decodes the fetched messages, in order, beside the fetch and
// the processing loop: it needs none of the loop's state.
type decoder struct {
	cfg Config
	log *slog.Logger
	// format reads the events (newDecoder(cfg)).
	format decode.Decoder
	// placement, under DishKeyDish, knows or learns where the
	// repartitioner places dishes: once it is known, a restaurant event
	// elsewhere stops the pipeline through fail (nil: not checked). Set
	// before Run starts the decoder.
	placement *placement.Placer
	fail      func(error)
	misplaced atomic.Int64
}

// run decodes the fetched messages and hands them to the processing
// loop until in closes or ctx ends.
func (d *decoder) run(ctx context.Context, in <-chan fetched, out chan<- fetched) {
	defer close(out)
	for f := range in {
		if f.start != nil {
			select {
			case out <- f:
				continue
			case <-ctx.Done():
				return
			}
		}
		f.dec = d.decode(f.msg)
		if d.placement != nil && f.msg.Topic == d.cfg.RestaurantTopic && !d.checkPlacement(f.msg) {
			return // stopped: the event is not handed on, so not committed
		}
		select {
		case out <- f:
		case <-ctx.Done():
			return
		}
	}
}

// decode reads a message's change.
func (d *decoder) decode(m kafka.Message) decoded {
	var o *placement.Origin
	if d.cfg.DishKey == DishKeyDish && m.Topic == d.cfg.RepartitionTopic {
		o = placement.OriginOf(m)
	}
	c, skip, bad := d.format.Decode(m.Topic, m.Key, m.Value, d.cfg.MaxEventBytes)
	if bad != nil {
		return decoded{change: c, reason: bad.Reason, detail: bad.Error(), origin: o}
	}
	if skip {
		return decoded{change: c, skip: true, origin: o}
	}
	out := decoded{change: c, origin: o}
	if c.Op == decode.OpUpsert {
		members, err := docMembers(c.Doc)
		if err != nil {
			return decoded{change: c, reason: decode.ReasonInvalidJSON, detail: "doc: " + err.Error(), origin: o}
		}
		out.members = members
	}
	return out
}

// checkPlacement reports whether a restaurant-topic message is where the
// placement puts it, or the placement is not yet known (no dish has been
// forwarded by it); if not, it stops the pipeline with why
// (placement.Placement.Check says why it stops rather than dead-letters).
func (d *decoder) checkPlacement(m kafka.Message) bool {
	k := d.placement.Current()
	if k == nil {
		return true
	}
	err := k.Check(m)
	if err == nil {
		return true
	}
	d.misplaced.Add(1)
	d.fail(err)
	return false
}

// event is one fetched message on its way through the pipeline.
type event struct {
	part   partKey
	offset int64
	key    []byte
	value  []byte
	ts     time.Time // the Kafka message timestamp
	entry  *trackEntry
	change *decode.Change
	// members are an upsert's doc members, reserved fields stripped.
	members []byte
	// origin is where a repartitioned event was in the dish topic (nil
	// for any other).
	origin *placement.Origin

	// rid is the restaurant the event belongs to: its own id, or its
	// dish's restaurant's.
	rid string
	// flying: the indexer counts the event's writes in flight (fly).
	flying bool
	// gen is the consumer-group generation the event was taken in: no
	// decision of it is made once that generation has ended (indexer_fence.go).
	gen int64
	// parkedAt is when the dish was parked to wait for its restaurant
	// (parking.go); zero if it never was. Set on the loop before the
	// event reaches another goroutine.
	parkedAt time.Time
	// targets are, for a dish event, the targets it was written to; the
	// spread of its writes reads them (reparent.go).
	targets []target

	mu          sync.Mutex
	outstanding int    // writes not yet answered
	result      string // the first successful write's result label
	rejected    error  // a permanent error of one of its writes
	failed      bool   // a write failed for good: the event never finishes
	// cut: a step its decision needed after a write was not taken, its
	// generation having ended (indexer_fence.go): the event never finishes here.
	cut bool
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

// Change is the event's change (pending.Event).
func (ev *event) Change() *decode.Change { return ev.change }

// Place is where the event was read (pending.Event).
func (ev *event) Place() pending.Place {
	return pending.Place{Topic: ev.part.topic, Partition: ev.part.partition, Offset: ev.offset}
}
