package placement

// Dish events keyed by dish id.
//
// A change-data-capture tool (Debezium, a Kafka Connect JDBC source) keys
// each row's events by the row's own primary key, so a dish topic fed by
// one is keyed by dish id: a dish's events are in its own id's partition,
// not its restaurant's, and partition N of the dish topic does not hold
// the dishes of partition N's restaurants. With its Config.DishKey
// DishKeyDish the pipeline re-keys them the way a Kafka Streams
// repartition topic does:
//
//   - A repartitioner consumes the dish topic in a group of its own
//     (Config.Group: the pipeline's group + ".repartition") and produces every event, value and
//     headers unchanged, to the repartition topic, keyed by its restaurant
//     id and placed in the partition of the restaurant topic that holds
//     its restaurant's events: the partition the restaurant topic's
//     producer gives the restaurant's key, with that producer's
//     partitioner (murmur2, crc32, fnv1a or Sarama's), the key spelled as
//     that producer spells it (the id, or a JSON key naming it). Both are
//     learnt from the restaurant topic, or the partitioner is named
//     (placement.go, detect.go); until both are known the
//     repartitioner forwards nothing and dish events wait in the dish
//     topic (learn.go). Each batch is acknowledged by every
//     in-sync replica before its offsets are committed and before the
//     next batch is sent.
//   - The pipeline consumes the restaurant topic and the repartition
//     topic, co-partitioned, exactly as it consumes a dish topic keyed by
//     restaurant. Once the placement is known the decoder checks every
//     keyed restaurant event against it, and one that is elsewhere stops
//     ingest (Placement.Check says why).
//
// Order: a dish's events come from one dish topic partition, in order,
// and go to one repartition partition, its restaurant's, in that order.
// A crash between a write and its commit writes some events twice; their
// external versions make the second copy a no-op. (A dish that moves to
// another restaurant goes to that restaurant's partition from then on;
// its versions still order its writes.)
//
// An event whose restaurant id cannot be read is forwarded without a key
// (to the partition of its dish-topic partition's number, modulo the
// count), so that the pipeline dead-letters it with the reason it would
// have had;
// one over Config.MaxEventBytes is forwarded cut to one byte over it (its
// dead letter's reason is oversized, and its origin headers point at the
// whole event). Every forwarded event carries its origin (dish topic,
// partition, offset and key) in headers, and its dead letter names the
// origin, so that it can be replayed to the dish topic.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
)

// Origin headers of a repartitioned event: where it was in the dish topic.
const (
	HeaderOriginTopic     = "geoshard-origin-topic"
	HeaderOriginPartition = "geoshard-origin-partition"
	HeaderOriginOffset    = "geoshard-origin-offset"
	// HeaderOriginKey is the event's key in the dish topic; absent when it
	// had none.
	HeaderOriginKey = "geoshard-origin-key"
)

// Origin is where a repartitioned event was in the dish topic.
type Origin struct {
	Topic     string
	Partition int
	Offset    int64
	Key       []byte // nil when it had none
}

// OriginOf reads a repartitioned message's origin headers; nil if it has
// none (or they are not ours).
func OriginOf(m kafka.Message) *Origin {
	var o Origin
	var seen int
	for _, h := range m.Headers {
		switch h.Key {
		case HeaderOriginTopic:
			o.Topic = string(h.Value)
			seen |= 1
		case HeaderOriginPartition:
			n, err := strconv.Atoi(string(h.Value))
			if err != nil {
				return nil
			}
			o.Partition = n
			seen |= 2
		case HeaderOriginOffset:
			n, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return nil
			}
			o.Offset = n
			seen |= 4
		case HeaderOriginKey:
			o.Key = h.Value
		}
	}
	if seen != 7 {
		return nil
	}
	return &o
}

// rekey is the message the repartitioner writes for m, in the partition
// of the restaurant topic that place says holds its restaurant, which
// restaurantID (the format's) reads from the event.
func rekey(m kafka.Message, maxBytes int, place *Placement, restaurantID func(value []byte) (string, bool)) kafka.Message {
	out := kafka.Message{Value: m.Value, Time: m.Time, Partition: m.Partition % len(place.parts)}
	if rid, ok := restaurantID(m.Value); ok && (maxBytes <= 0 || len(m.Value) <= maxBytes) {
		out.Key = []byte(rid)
		out.Partition = place.DishPartition(rid)
	}
	if maxBytes > 0 && len(out.Value) > maxBytes {
		out.Value = out.Value[:maxBytes+1]
	}
	out.Headers = make([]kafka.Header, 0, len(m.Headers)+4)
	for _, h := range m.Headers {
		if !strings.HasPrefix(h.Key, "geoshard-origin-") {
			out.Headers = append(out.Headers, h)
		}
	}
	out.Headers = AppendOrigin(out.Headers, Origin{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: m.Key})
	return out
}

// AppendOrigin appends the headers that OriginOf reads back.
func AppendOrigin(hs []kafka.Header, o Origin) []kafka.Header {
	hs = append(hs,
		kafka.Header{Key: HeaderOriginTopic, Value: []byte(o.Topic)},
		kafka.Header{Key: HeaderOriginPartition, Value: strconv.AppendInt(nil, int64(o.Partition), 10)},
		kafka.Header{Key: HeaderOriginOffset, Value: strconv.AppendInt(nil, o.Offset, 10)},
	)
	if o.Key != nil {
		hs = append(hs, kafka.Header{Key: HeaderOriginKey, Value: o.Key})
	}
	return hs
}

// writer is the part of a kafka-go Writer the repartitioner uses.
type writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
	Close() error
}

var _ writer = (*kafka.Writer)(nil)

// Keys reads the restaurant ids of events: the format's, as the pipeline
// decodes them.
type Keys interface {
	// KeyID is the restaurant id a restaurant event's key names.
	KeyID(key []byte) (string, bool)
	// RestaurantID is the restaurant id a dish event's value names.
	RestaurantID(value []byte) (string, bool)
}

// Hooks are what the repartitioner reports to, and the loops it runs in,
// which its owner (the pipeline) provides.
type Hooks struct {
	// Fail stops the pipeline: the restaurant topic was refused while the
	// placement was learnt, or the consumer group could not be made.
	// Required.
	Fail func(error)
	// Forwarded is told how many events each batch the repartition topic
	// acknowledged held (nil: nothing).
	Forwarded func(n int)
	// Fetch hands r's messages to deliver until ctx ends or deliver
	// returns false, retrying failed fetches: the pipeline's one fetch
	// loop. Required.
	Fetch func(ctx context.Context, log *slog.Logger, r *kafka.Reader, deliver func(kafka.Message) bool)
	// Pause logs msg and waits after the failures-th failure in a row,
	// and reports false if ctx ended first: the pipeline's one wait after
	// a failure. Required.
	Pause func(ctx context.Context, log *slog.Logger, msg string, failures int, err error) bool
}

// Repartitioner moves dish events from the dish topic to the repartition
// topic, keyed by restaurant (see the top of this file).
//
// It follows its consumer group generation by generation, as the
// pipeline's member does (pipeline/group.go): each generation reads the partitions
// it was given from their committed offsets, and commits what it
// forwarded through that generation alone. A commit of a generation that
// has ended is refused by the coordinator, so it can never move a
// partition's committed offset back after the partition's next owner
// committed further (a kafka-go Reader in a group hands a commit asked
// for in one generation to the next, and a member cut off from the
// coordinator for a while then commits offsets it fetched long before).
type Repartitioner struct {
	log *slog.Logger
	// newGroup joins the repartitioner's consumer group, once the
	// placement is known; newReader reads one partition of the dish topic,
	// outside any group.
	newGroup  func() (*kafka.ConsumerGroup, error)
	newReader func(partition int) *kafka.Reader
	topic     string
	w         writer
	// place knows, or learns, the restaurant topic's placement; fail
	// stops the pipeline when the topic is refused while it learns.
	place    *Placer
	hooks    Hooks
	maxBytes int
	maxBatch int
	// ridOf reads a dish event's restaurant id (the format's).
	ridOf func(value []byte) (string, bool)
}

// Run waits until the placement is known, then forwards, one consumer
// group generation after another, until stop ends; it finishes the batch
// it is writing (within work) and commits it. It closes its group and
// writer.
func (rp *Repartitioner) Run(stop, work context.Context) {
	defer func() {
		if err := rp.w.Close(); err != nil {
			rp.log.Warn("repartition: close kafka writer", "error", err)
		}
	}()
	place, err := rp.place.Learn(stop)
	if err != nil {
		rp.hooks.Fail(err)
	}
	if place == nil {
		return
	}
	group, err := rp.newGroup()
	if err != nil {
		rp.hooks.Fail(fmt.Errorf("pipeline: repartition consumer group: %w", err))
		return
	}
	defer func() {
		if err := group.Close(); err != nil {
			rp.log.Debug("repartition: leave the consumer group", "error", err)
		}
	}()
	for failures := 0; stop.Err() == nil; {
		gen, err := group.Next(stop)
		if err != nil {
			if stop.Err() != nil {
				return
			}
			failures++
			if !rp.hooks.Pause(stop, rp.log, "repartition: joining the consumer group failed; trying again", failures, err) {
				return
			}
			continue
		}
		failures = 0
		done := make(chan struct{})
		gen.Start(func(genCtx context.Context) {
			defer close(done)
			ctx, cancel := context.WithCancel(genCtx)
			defer cancel()
			defer context.AfterFunc(stop, cancel)()
			rp.forward(ctx, work, gen, place)
		})
		<-done
	}
}

// forward forwards the partitions gen gave the repartitioner (none, when
// the group has more members than the dish topic has partitions) until
// ctx ends (the generation's end, or stop), and commits each batch through
// gen once the repartition topic has acknowledged it: the commits run
// beside the next batch's write, the latest acknowledged offset of each
// partition at a time. The batch being written when ctx ends is finished
// (within work) and committed, which the coordinator refuses if gen has
// ended: its next owner forwards it again, and the copies' versions make
// that a no-op.
func (rp *Repartitioner) forward(ctx, work context.Context, gen *kafka.Generation, place *Placement) {
	in := make(chan kafka.Message, rp.maxBatch)
	var fetchers sync.WaitGroup
	for _, a := range gen.Assignments[rp.topic] {
		r := rp.newReader(a.ID)
		if err := r.SetOffset(a.Offset); err != nil {
			rp.log.Error("repartition: cannot start a partition's reader", "partition", a.ID, "offset", a.Offset, "error", err)
			r.Close()
			continue
		}
		fetchers.Go(func() {
			defer r.Close()
			rp.hooks.Fetch(ctx, rp.log.With("step", "repartition"), r, func(m kafka.Message) bool {
				select {
				case in <- m:
					return true
				case <-ctx.Done():
					return false
				}
			})
		})
	}
	go func() {
		fetchers.Wait()
		close(in)
	}()

	var mu sync.Mutex
	acked := map[int]int64{} // partition → the offset after the last acknowledged
	commit := func() {
		mu.Lock()
		offsets := maps.Clone(acked)
		clear(acked)
		mu.Unlock()
		if len(offsets) == 0 {
			return
		}
		err := gen.CommitOffsets(map[string]map[int]int64{rp.topic: offsets})
		if err == nil {
			return
		}
		level := slog.LevelWarn
		if errors.Is(err, kafka.RebalanceInProgress) || errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.UnknownMemberId) {
			level = slog.LevelDebug // the generation has ended: the partitions' next owners forward these again
		}
		rp.log.Log(work, level, "repartition: commit failed; will retry", "generation", gen.ID, "partitions", len(offsets), "error", err)
		mu.Lock()
		for p, o := range offsets {
			acked[p] = max(acked[p], o)
		}
		mu.Unlock()
	}
	wake := make(chan struct{}, 1)
	committing := make(chan struct{})
	stopCommit := make(chan struct{})
	go func() {
		defer close(committing)
		tick := time.NewTicker(time.Second) // a failed commit is tried again
		defer tick.Stop()
		for {
			select {
			case <-wake:
			case <-tick.C:
			case <-stopCommit:
				return
			}
			commit()
		}
	}()

	batch := make([]kafka.Message, 0, rp.maxBatch)
	out := make([]kafka.Message, 0, rp.maxBatch)
	for m := range in {
		if ctx.Err() != nil {
			break // what is fetched and not forwarded comes again
		}
		batch = append(batch[:0], m)
	fill:
		for len(batch) < rp.maxBatch {
			select {
			case m, ok := <-in:
				if !ok {
					break fill
				}
				batch = append(batch, m)
			default:
				break fill
			}
		}
		out = out[:0]
		for _, m := range batch {
			out = append(out, rekey(m, rp.maxBytes, place, rp.ridOf))
		}
		if err := rp.write(work, out); err != nil {
			break // work ended: what is not committed comes again
		}
		if rp.hooks.Forwarded != nil {
			rp.hooks.Forwarded(len(out))
		}
		mu.Lock()
		for _, m := range batch {
			acked[m.Partition] = m.Offset + 1 // in offset order within a partition
		}
		mu.Unlock()
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	for range in {
		// Fetched after the end: not forwarded, not committed.
	}
	close(stopCommit)
	<-committing
	commit() // the last: once more, whatever ended the generation
	// A function of a generation that returns ends the generation
	// (kafka-go's Generation.Start), and the member rejoins: one given no
	// partition (more members than partitions) would make the group
	// rebalance again and again. It returns with the generation.
	<-ctx.Done()
}

// write writes msgs until the broker acknowledges them all, or ctx ends.
// A partial failure writes the whole batch again: order per key holds,
// and the copies are no-ops.
func (rp *Repartitioner) write(ctx context.Context, msgs []kafka.Message) error {
	return bulk.Retry(ctx, bulk.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}, nil, func(err error, wait time.Duration) {
		rp.log.Warn("repartition: write to the repartition topic failed; retrying", "events", len(msgs), "in", wait, "error", err)
	}, func() error { return rp.w.WriteMessages(ctx, msgs...) })
}

// NewRepartitioner builds the repartitioner's writer, and the reader it
// makes once place knows where the restaurant topic holds each
// restaurant; keys reads the dish events' restaurant ids.
func NewRepartitioner(cfg Config, log *slog.Logger, keys Keys, place *Placer, hooks Hooks) (*Repartitioner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if hooks.Fail == nil || hooks.Fetch == nil || hooks.Pause == nil {
		return nil, errors.New("placement: the repartitioner's hooks Fail, Fetch and Pause are required")
	}
	errorLog := func(what string) kafka.Logger {
		return kafka.LoggerFunc(func(msg string, args ...any) {
			log.Debug(what, "group", cfg.Group.ID, "detail", fmt.Sprintf(msg, args...))
		})
	}
	// kafka-go's range and round robin: any member may forward any
	// partition.
	gc := cfg.Group
	gc.ErrorLogger = errorLog("kafka consumer group")
	rc := kafka.ReaderConfig{
		Brokers:         cfg.Brokers,
		Topic:           cfg.DishTopic,
		Dialer:          cfg.Dialer,
		MinBytes:        1,
		MaxBytes:        max(10<<20, 2*cfg.MaxEventBytes),
		MaxWait:         cfg.MaxWait,
		ReadLagInterval: -1,
		ReadBackoffMin:  50 * time.Millisecond,
		ReadBackoffMax:  time.Second,
		ErrorLogger:     errorLog("kafka reader"),
	}
	maxBytes := MaxMessageBytes(cfg.MaxEventBytes)
	return &Repartitioner{
		log:      log.With("component", "repartition"),
		newGroup: func() (*kafka.ConsumerGroup, error) { return kafka.NewConsumerGroup(gc) },
		newReader: func(partition int) *kafka.Reader {
			c := rc
			c.Partition = partition
			return kafka.NewReader(c)
		},
		topic: cfg.DishTopic,
		w: &kafka.Writer{
			Addr:  kafka.TCP(cfg.Brokers...),
			Topic: cfg.RepartitionTopic,
			// rekey has placed each message: the repartition topic has the
			// restaurant topic's partition count (the pipeline creates it
			// so, or refuses it).
			Balancer:     kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition }),
			RequiredAcks: kafka.RequireAll,
			BatchSize:    1000,
			BatchBytes:   int64(max(maxBytes, 1<<20)),
			BatchTimeout: time.Millisecond,
			MaxAttempts:  3,
			Transport:    cfg.Transport,
		},
		place:    place,
		hooks:    hooks,
		maxBytes: cfg.MaxEventBytes,
		maxBatch: 1000,
		ridOf:    keys.RestaurantID,
	}, nil
}

// MaxMessageBytes is the largest message the repartitioner writes, in
// bytes: an event of maxEventBytes and its headers.
func MaxMessageBytes(maxEventBytes int) int { return maxEventBytes + 64<<10 }
