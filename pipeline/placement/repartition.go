package pipeline

// Dish events keyed by dish id.
//
// A change-data-capture tool (Debezium, a Kafka Connect JDBC source) keys
// each row's events by the row's own primary key, so a dish topic fed by
// one is keyed by dish id: a dish's events are in its own id's partition,
// not its restaurant's, and partition N of the dish topic does not hold
// the dishes of partition N's restaurants. With Config.DishKey
// DishKeyDish the pipeline re-keys them the way a Kafka Streams
// repartition topic does:
//
//   - A repartitioner consumes the dish topic in a group of its own
//     (Config.Group + ".repartition") and produces every event, value and
//     headers unchanged, to the repartition topic, keyed by its restaurant
//     id and placed in the partition of the restaurant topic that holds
//     its restaurant's events: the partition the restaurant topic's
//     producer gives the restaurant's key, with that producer's
//     partitioner (murmur2, crc32, fnv1a or Sarama's), the key spelled as
//     that producer spells it (the id, or a JSON key naming it). Both are
//     learnt from the restaurant topic, or the partitioner is named
//     (placement.go, placement_detect.go); until both are known the
//     repartitioner forwards nothing and dish events wait in the dish
//     topic (placement_learn.go). Each batch is acknowledged by every
//     in-sync replica before its offsets are committed and before the
//     next batch is sent.
//   - The pipeline consumes the restaurant topic and the repartition
//     topic, co-partitioned, exactly as it consumes a dish topic keyed by
//     restaurant. Once the placement is known the decoder checks every
//     keyed restaurant event against it, and one that is elsewhere stops
//     ingest (keyPlacement.check says why).
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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
)

// DishKey says how the dish topic's events are keyed.
type DishKey string

const (
	// DishKeyRestaurant: each dish event is keyed by its restaurant's id,
	// so it is in its restaurant's partition (a key that is not the
	// restaurant id is dead-lettered as key_mismatch).
	DishKeyRestaurant DishKey = "restaurant"
	// DishKeyDish: dish events are keyed by anything (their own id, as
	// change-data-capture tools key them); the pipeline re-keys them by
	// restaurant into the repartition topic and consumes that.
	DishKeyDish DishKey = "dish"
)

// Valid reports whether k is a known dish keying.
func (k DishKey) Valid() bool { return k == DishKeyRestaurant || k == DishKeyDish }

// Origin headers of a repartitioned event: where it was in the dish topic.
const (
	HeaderOriginTopic     = "geoshard-origin-topic"
	HeaderOriginPartition = "geoshard-origin-partition"
	HeaderOriginOffset    = "geoshard-origin-offset"
	// HeaderOriginKey is the event's key in the dish topic; absent when it
	// had none.
	HeaderOriginKey = "geoshard-origin-key"
)

// DefaultRepartitionRetention is the repartition topic's retention when
// the pipeline creates it: Kafka's default, long enough to outlast an
// outage of the consuming group.
const DefaultRepartitionRetention = 7 * 24 * time.Hour

// repartitionGroup is the consumer group of the repartitioner.
func (c Config) repartitionGroup() string { return c.Group + ".repartition" }

// maxRepartitionMessage is the largest message the repartitioner writes,
// in bytes: an event of MaxEventBytes and its headers.
func (c Config) maxRepartitionMessage() int { return c.MaxEventBytes + 64<<10 }

// origin is where a repartitioned event was in the dish topic.
type origin struct {
	topic     string
	partition int
	offset    int64
	key       []byte
}

// originOf reads a repartitioned message's origin headers; nil if it has
// none (or they are not ours).
func originOf(m kafka.Message) *origin {
	var o origin
	var seen int
	for _, h := range m.Headers {
		switch h.Key {
		case HeaderOriginTopic:
			o.topic = string(h.Value)
			seen |= 1
		case HeaderOriginPartition:
			n, err := strconv.Atoi(string(h.Value))
			if err != nil {
				return nil
			}
			o.partition = n
			seen |= 2
		case HeaderOriginOffset:
			n, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return nil
			}
			o.offset = n
			seen |= 4
		case HeaderOriginKey:
			o.key = h.Value
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
func rekey(m kafka.Message, maxBytes int, place *keyPlacement, restaurantID func(value []byte) (string, bool)) kafka.Message {
	out := kafka.Message{Value: m.Value, Time: m.Time, Partition: m.Partition % len(place.parts)}
	if rid, ok := restaurantID(m.Value); ok && (maxBytes <= 0 || len(m.Value) <= maxBytes) {
		out.Key = []byte(rid)
		out.Partition = place.dishPartition(rid)
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
	out.Headers = appendOrigin(out.Headers, origin{topic: m.Topic, partition: m.Partition, offset: m.Offset, key: m.Key})
	return out
}

// appendOrigin appends the headers that originOf reads back.
func appendOrigin(hs []kafka.Header, o origin) []kafka.Header {
	hs = append(hs,
		kafka.Header{Key: HeaderOriginTopic, Value: []byte(o.topic)},
		kafka.Header{Key: HeaderOriginPartition, Value: strconv.AppendInt(nil, int64(o.partition), 10)},
		kafka.Header{Key: HeaderOriginOffset, Value: strconv.AppendInt(nil, o.offset, 10)},
	)
	if o.key != nil {
		hs = append(hs, kafka.Header{Key: HeaderOriginKey, Value: o.key})
	}
	return hs
}

// repartitioner moves dish events from the dish topic to the repartition
// topic, keyed by restaurant (see the top of this file).
//
// It follows its consumer group generation by generation, as the
// pipeline's member does (group.go): each generation reads the partitions
// it was given from their committed offsets, and commits what it
// forwarded through that generation alone. A commit of a generation that
// has ended is refused by the coordinator, so it can never move a
// partition's committed offset back after the partition's next owner
// committed further (a kafka-go Reader in a group hands a commit asked
// for in one generation to the next, and a member cut off from the
// coordinator for a while then commits offsets it fetched long before).
type repartitioner struct {
	log *slog.Logger
	// newGroup joins the repartitioner's consumer group, once the
	// placement is known; newReader reads one partition of the dish topic,
	// outside any group.
	newGroup  func() (*kafka.ConsumerGroup, error)
	newReader func(partition int) *kafka.Reader
	topic     string
	w         producer
	// place knows, or learns, the restaurant topic's placement; fail
	// stops the pipeline when the topic is refused while it learns.
	place    *placer
	fail     func(error)
	maxBytes int
	maxBatch int
	// forwarded counts events acknowledged by the repartition topic.
	forwarded prometheus.Counter
	count     func(n int)
	// ridOf reads a dish event's restaurant id (the format's).
	ridOf func(value []byte) (string, bool)
}

// run waits until the placement is known, then forwards, one consumer
// group generation after another, until stop ends; it finishes the batch
// it is writing (within work) and commits it. It closes its group and
// writer.
func (rp *repartitioner) run(stop, work context.Context) {
	defer func() {
		if err := rp.w.Close(); err != nil {
			rp.log.Warn("repartition: close kafka writer", "error", err)
		}
	}()
	place, err := rp.place.learn(stop)
	if err != nil {
		rp.fail(err)
	}
	if place == nil {
		return
	}
	group, err := rp.newGroup()
	if err != nil {
		rp.fail(fmt.Errorf("pipeline: repartition consumer group: %w", err))
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
			if !pause(stop, rp.log, "repartition: joining the consumer group failed; trying again", failures, err) {
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
func (rp *repartitioner) forward(ctx, work context.Context, gen *kafka.Generation, place *keyPlacement) {
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
			fetchAll(ctx, rp.log.With("step", "repartition"), nil, r, func(m kafka.Message) bool {
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
		rp.forwarded.Add(float64(len(out)))
		rp.count(len(out))
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
func (rp *repartitioner) write(ctx context.Context, msgs []kafka.Message) error {
	return bulk.Retry(ctx, bulk.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second}, nil, func(err error, wait time.Duration) {
		rp.log.Warn("repartition: write to the repartition topic failed; retrying", "events", len(msgs), "in", wait, "error", err)
	}, func() error { return rp.w.WriteMessages(ctx, msgs...) })
}

// newRepartitioner builds the repartitioner's writer, and the reader it
// makes once place knows where the restaurant topic holds each
// restaurant; fail stops the pipeline.
func newRepartitioner(cfg Config, log *slog.Logger, d *kafka.Dialer, t *kafka.Transport, place *placer, fail func(error), forwarded prometheus.Counter, count func(n int)) *repartitioner {
	k := cfg.Kafka
	errorLog := func(what string) kafka.Logger {
		return kafka.LoggerFunc(func(msg string, args ...any) {
			log.Debug(what, "group", cfg.repartitionGroup(), "detail", fmt.Sprintf(msg, args...))
		})
	}
	// kafka-go's range and round robin: any member may forward any
	// partition.
	gc := groupConfig(cfg, cfg.repartitionGroup(), d, []string{cfg.DishTopic})
	gc.ErrorLogger = errorLog("kafka consumer group")
	rc := kafka.ReaderConfig{
		Brokers:         cfg.Brokers,
		Topic:           cfg.DishTopic,
		Dialer:          d,
		MinBytes:        1,
		MaxBytes:        max(10<<20, 2*cfg.MaxEventBytes),
		MaxWait:         k.MaxWait,
		ReadLagInterval: -1,
		ReadBackoffMin:  50 * time.Millisecond,
		ReadBackoffMax:  time.Second,
		ErrorLogger:     errorLog("kafka reader"),
	}
	maxBytes := cfg.maxRepartitionMessage()
	return &repartitioner{
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
			// restaurant topic's partition count (ensureRepartitionTopic).
			Balancer:     kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition }),
			RequiredAcks: kafka.RequireAll,
			BatchSize:    1000,
			BatchBytes:   int64(max(maxBytes, 1<<20)),
			BatchTimeout: time.Millisecond,
			MaxAttempts:  3,
			Transport:    t,
		},
		place:     place,
		fail:      fail,
		maxBytes:  cfg.MaxEventBytes,
		maxBatch:  1000,
		forwarded: forwarded,
		count:     count,
		ridOf:     newEventFormat(cfg).restaurantID,
	}
}

// OwnTopicError is the refusal to start when a topic ingest owns (the
// repartition topic under --dish-key dish, the parking topic) is missing
// and cannot be created, or exists with another partition count than the
// restaurant topic's.
type OwnTopicError struct {
	// What is "repartition" or "parking".
	What                   string
	Topic, RestaurantTopic string
	// Partitions is the restaurant topic's partition count; Have the
	// topic's (0: missing).
	Partitions, Have int
	// Command is what an operator can run instead.
	Command string
	Err     error
}

// RepartitionTopicError is the OwnTopicError of the repartition topic.
type RepartitionTopicError = OwnTopicError

func (e *OwnTopicError) Error() string {
	if e.Have > 0 {
		why := "dishes would not be in their restaurant's partition"
		if e.What == "parking" {
			why = "a partition's parked dishes would be read by another member than the partition's"
		}
		return fmt.Sprintf("pipeline: %s topic %q has %d partitions, the restaurant topic %q has %d: %s; %s",
			e.What, e.Topic, e.Have, e.RestaurantTopic, e.Partitions, why, e.Command)
	}
	return fmt.Sprintf("pipeline: cannot create the %s topic %q (%v); create it with the restaurant topic's %d partitions: %s",
		e.What, e.Topic, e.Err, e.Partitions, e.Command)
}

func (e *OwnTopicError) Unwrap() error { return e.Err }

// ensureRepartitionTopic creates the repartition topic, with the
// restaurant topic's partition count, if it is missing, and refuses one
// with another count (checkPartitions would too, without the remedy).
func ensureRepartitionTopic(ctx context.Context, cfg Config, log *slog.Logger, t *kafka.Transport) error {
	if cfg.DishKey != DishKeyDish {
		return nil
	}
	return ensureOwnTopic(ctx, cfg, log, t, "repartition", cfg.RepartitionTopic, []kafka.ConfigEntry{
		{ConfigName: "cleanup.policy", ConfigValue: "delete"},
		{ConfigName: "retention.ms", ConfigValue: strconv.FormatInt(cfg.RepartitionRetention.Milliseconds(), 10)},
		{ConfigName: "max.message.bytes", ConfigValue: strconv.Itoa(max(cfg.maxRepartitionMessage(), 1<<20+12))},
	})
}

// ensureOwnTopic creates topic, one of ingest's own, with the restaurant
// topic's partition count and configs, if it is missing, and refuses one
// with another partition count.
func ensureOwnTopic(ctx context.Context, cfg Config, log *slog.Logger, t *kafka.Transport, what, topic string, configs []kafka.ConfigEntry) error {
	client := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 10 * time.Second, Transport: t}
	counts, err := partitionCounts(ctx, client, cfg.RestaurantTopic, topic)
	if err != nil {
		return fmt.Errorf("pipeline: read the partition counts of %q and %q: %w", cfg.RestaurantTopic, topic, err)
	}
	n := counts[cfg.RestaurantTopic]
	if n == 0 {
		return fmt.Errorf("pipeline: restaurant topic %q not found: the %s topic %q takes its partition count", cfg.RestaurantTopic, what, topic)
	}
	bootstrap := strings.Join(cfg.Brokers, ",")
	if have := counts[topic]; have > 0 {
		if have == n {
			return nil
		}
		fix := fmt.Sprintf("kafka-topics.sh --bootstrap-server %s --alter --topic %s --partitions %d", bootstrap, topic, n)
		if have > n {
			fix = fmt.Sprintf("a topic's partitions cannot be removed: stop ingest once group %q has no lag on it, then delete it (ingest creates it again): kafka-topics.sh --bootstrap-server %s --delete --topic %s",
				cfg.Group, bootstrap, topic)
		}
		return &OwnTopicError{What: what, Topic: topic, RestaurantTopic: cfg.RestaurantTopic, Partitions: n, Have: have, Command: fix}
	}
	command := fmt.Sprintf("kafka-topics.sh --bootstrap-server %s --create --topic %s --partitions %d", bootstrap, topic, n)
	for _, c := range configs {
		command += " --config " + c.ConfigName + "=" + c.ConfigValue
	}
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{{
		Topic: topic, NumPartitions: n, ReplicationFactor: -1, ConfigEntries: configs,
	}}})
	if err == nil {
		err = resp.Errors[topic]
	}
	if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
		return &OwnTopicError{What: what, Topic: topic, RestaurantTopic: cfg.RestaurantTopic, Partitions: n, Command: command, Err: err}
	}
	if err == nil {
		log.Info("created the "+what+" topic", "topic", topic, "partitions", n)
	}
	// Created (by this instance or another): its count is confirmed at
	// the next start.
	return nil
}

// partitionCounts reads the topics' partition counts; a topic the broker
// does not know is left out.
func partitionCounts(ctx context.Context, client *kafka.Client, topics ...string) (map[string]int, error) {
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, err
	}
	counts := map[string]int{}
	for _, tp := range md.Topics {
		if tp.Error == nil && len(tp.Partitions) > 0 {
			counts[tp.Name] = len(tp.Partitions)
		}
	}
	return counts, nil
}
