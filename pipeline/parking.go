package pipeline

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/kafkarange"
	"github.com/geoshard/geoshard/pipeline/outbox"
	"github.com/geoshard/geoshard/pipeline/placement"
)

// A dish whose restaurant is not known yet waits for it (package pending), up
// to Config.PendingMaxAge. Were it to hold its partition's commit while
// it waits, a restaurant that never comes would hold every later offset
// of the partition for five minutes: a restart in that time reads the
// partition again from there, and the lag a dashboard shows is events
// long decided. So a waiting dish is parked: written to the parking
// topic, a compacted topic of ingest's own (Config.ParkingTopic), and
// once the broker has acknowledged that, its offset counts as finished
// for the commit (tracker.park) while the dish itself goes on waiting in
// memory. When it finishes — written once its restaurant comes, stale,
// cancelled by its delete, or dead-lettered as unknown_restaurant — a
// tombstone removes its record.
//
// The parking topic has the event topics' partition count, and a dish of
// event partition N is parked in its partition N, so the member that owns
// partition N (one member owns partition N of every event topic:
// topics.Copartitioned) owns its parked dishes too. At each generation a member
// reads the parked dishes of every partition it did not own before
// (unparkOwned), start included, and they wait again with the time they
// were first parked, so the age bound holds across restarts. A record is
// keyed by the dish event's own place (topic/partition/offset), so two
// waiting versions of one dish are two records, and each tombstone
// removes exactly its own.
//
// Ordering: a member finishes a parked dish only after reading it back
// or parking it; its tombstone goes through the same outbox as the
// record, after it. A record whose dish finished before the record was
// written is written and then removed. What the member wrote to the
// parking topic is acknowledged before it joins a new generation
// (the handover, group.go), so the new owner of a partition reads every record and
// tombstone it made.
//
// Limits: a member that stops without draining (SIGKILL) may have parked
// dishes whose offsets it had not committed yet; both the event and its
// record come back to the next owner, which decides the dish twice (the
// second write is Stale; a dead letter already written is found and not
// written again: package deadletter). A tombstone lost that way leaves a record
// whose dish is decided again when it is read back: Stale, or
// dead-lettered if its restaurant was deleted since.

// Parking headers; the source place uses the dead-letter headers
// (HeaderSourceTopic, HeaderSourcePartition, HeaderSourceOffset).
const (
	// HeaderParkedAt is when the dish was first parked, in Unix
	// milliseconds: its wait for its restaurant is counted from there.
	HeaderParkedAt = "geoshard-parked-at"
	// HeaderEventTime is the source message's timestamp, in Unix
	// milliseconds.
	HeaderEventTime = "geoshard-event-time"
	// HeaderSourceKey is the source message's key; absent when it had
	// none.
	HeaderSourceKey = "geoshard-source-key"
)

// parkRecord is a dish's parking record, or its tombstone.
type parkRecord struct {
	ev        *event
	tombstone bool
}

// parkKey is the record key of a parked event: its place.
func parkKey(ev *event) []byte {
	b := append([]byte(ev.part.topic), '/')
	b = strconv.AppendInt(b, int64(ev.part.partition), 10)
	b = append(b, '/')
	return strconv.AppendInt(b, ev.offset, 10)
}

// Message is the record as written, in the parking partition of the
// event's partition number. A tombstone has no value.
func (r *parkRecord) Message() kafka.Message {
	ev := r.ev
	m := kafka.Message{Key: parkKey(ev), Partition: ev.part.partition}
	if r.tombstone {
		return m
	}
	m.Value = ev.value
	m.Headers = []kafka.Header{
		{Key: HeaderSourceTopic, Value: []byte(ev.part.topic)},
		{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(ev.part.partition), 10)},
		{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, ev.offset, 10)},
		{Key: HeaderParkedAt, Value: strconv.AppendInt(nil, ev.parkedAt.UnixMilli(), 10)},
		{Key: HeaderEventTime, Value: strconv.AppendInt(nil, ev.ts.UnixMilli(), 10)},
	}
	if ev.key != nil {
		m.Headers = append(m.Headers, kafka.Header{Key: HeaderSourceKey, Value: ev.key})
	}
	if ev.origin != nil {
		m.Headers = placement.AppendOrigin(m.Headers, *ev.origin)
	}
	return m
}

// unparked is a parking record read back: the source message as it was
// fetched (its origin headers kept), and when it was first parked.
type unparked struct {
	msg      kafka.Message
	parkedAt time.Time
}

// parseParked reads a parking record's value and headers back into the
// source message.
func parseParked(value []byte, headers []kafka.Header) (unparked, error) {
	u := unparked{msg: kafka.Message{Value: value}}
	seen := 0
	for _, h := range headers {
		switch h.Key {
		case HeaderSourceTopic:
			u.msg.Topic = string(h.Value)
			seen |= 1
		case HeaderSourcePartition:
			n, err := strconv.Atoi(string(h.Value))
			if err != nil {
				return u, fmt.Errorf("header %s %q: %w", h.Key, h.Value, err)
			}
			u.msg.Partition = n
			seen |= 2
		case HeaderSourceOffset:
			n, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return u, fmt.Errorf("header %s %q: %w", h.Key, h.Value, err)
			}
			u.msg.Offset = n
			seen |= 4
		case HeaderParkedAt, HeaderEventTime:
			ms, err := strconv.ParseInt(string(h.Value), 10, 64)
			if err != nil {
				return u, fmt.Errorf("header %s %q: %w", h.Key, h.Value, err)
			}
			if h.Key == HeaderParkedAt {
				u.parkedAt = time.UnixMilli(ms)
				seen |= 8
			} else {
				u.msg.Time = time.UnixMilli(ms)
			}
		case HeaderSourceKey:
			u.msg.Key = h.Value
		case placement.HeaderOriginTopic, placement.HeaderOriginPartition, placement.HeaderOriginOffset, placement.HeaderOriginKey:
			u.msg.Headers = append(u.msg.Headers, h)
		}
	}
	if seen != 15 {
		return u, errors.New("missing the source topic, partition or offset, or the parking time")
	}
	return u, nil
}

// parker keeps the dishes waiting for their restaurant in the parking
// topic: it writes their records and tombstones through its outbox, and
// reads a partition's records back when the member gains it.
type parker struct {
	cfg   Config
	log   *slog.Logger
	track *tracker
	met   *metrics
	// out writes records and tombstones, client reads them back; both
	// set by New (out nil, in a member driven by hand: nothing is parked).
	out    *outbox.Outbox[*parkRecord]
	client *kafka.Client
	// readAlso, if set, is shown a partition's records read back before
	// they are decided (outcomes.deadLettersParked).
	readAlso func(ctx context.Context, partition int, recs []unparked) error
	// read are the partitions whose records were read back (loop-owned).
	read map[int]bool
	// parked, unparked and readBack count the records written, their
	// tombstones written, and the records read back.
	parked, unparked, readBack atomic.Int64
}

func newParker(cfg Config, log *slog.Logger, track *tracker, met *metrics) *parker {
	return &parker{cfg: cfg, log: log, track: track, met: met, read: map[int]bool{}}
}

// park writes a dish that starts waiting for its restaurant to the
// parking topic. The loop calls it once per event, when the event first
// goes pending; an event read back from the topic is parked already.
func (pk *parker) park(ev *event, now time.Time) {
	if pk.out == nil || !ev.parkedAt.IsZero() {
		return
	}
	ev.parkedAt = now
	pk.out.Enqueue(&parkRecord{ev: ev})
}

// written is the parking outbox's acknowledgement: a record lets its
// event's offset be committed; a tombstone ends a record.
func (pk *parker) written(r *parkRecord) {
	if r.tombstone {
		pk.unparked.Add(1)
		return
	}
	if pk.track.park(r.ev.entry) {
		pk.parked.Add(1)
		pk.met.parked.Inc()
	}
}

// unpark removes a finished event's parking record, if it has one.
func (pk *parker) unpark(ev *event) {
	if pk.out != nil && !ev.parkedAt.IsZero() {
		pk.out.Enqueue(&parkRecord{ev: ev, tombstone: true})
	}
}

// readBackOwned reads back the parked dishes of the partitions in owned
// that the member did not own at the previous generation, and has decide
// decide them again: each waits for its restaurant from the time it was
// first parked (or is written at once if the directory knows the
// restaurant). The partitions it no longer owns are forgotten; their
// waiting dishes were dropped with the partitions (releaseUnowned).
func (pk *parker) readBackOwned(ctx context.Context, owned map[partKey]bool, decide func(context.Context, unparked) error) error {
	if pk.out == nil {
		return nil
	}
	now := map[int]bool{}
	for k := range owned {
		now[k.partition] = true
	}
	for n := range pk.read {
		if !now[n] {
			delete(pk.read, n)
		}
	}
	var read []int
	for n := range now {
		if !pk.read[n] {
			read = append(read, n)
		}
	}
	if len(read) == 0 {
		return nil
	}
	start := time.Now()
	total := 0
	for _, n := range read {
		recs, err := pk.readPartition(ctx, n)
		if err != nil {
			return err
		}
		if pk.readAlso != nil && len(recs) > 0 {
			if err := pk.readAlso(ctx, n, recs); err != nil {
				return err
			}
		}
		for _, u := range recs {
			if err := decide(ctx, u); err != nil {
				return err
			}
		}
		total += len(recs)
		pk.read[n] = true
	}
	pk.readBack.Add(int64(total))
	pk.log.Info("parked dishes read back", "topic", pk.cfg.ParkingTopic, "partitions", len(read), "dishes", total, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// forgetRead makes the next readBackOwned read every partition it is
// given, as at the start.
func (pk *parker) forgetRead() { clear(pk.read) }

// readPartition reads partition n of the parking topic from its start to
// its end as it is now, and returns the records that stand: the last of
// each key, unless it is a tombstone, in offset order.
func (pk *parker) readPartition(ctx context.Context, n int) ([]unparked, error) {
	type rec struct {
		offset int64
		u      unparked
		live   bool
	}
	byKey := map[string]rec{}
	topic := pk.cfg.ParkingTopic
	rd := kafkarange.Reader{Client: pk.client, Retry: func(ctx context.Context, fetch func() error) error {
		return retry(ctx, pk.log, "read parked dishes from Kafka", fetch)
	}}
	res, err := rd.Read(ctx, kafkarange.Range{Topic: topic, Partition: n, From: 0, End: kafkarange.HighWatermark, MaxBytes: 8 << 20}, func(r *kafka.Record) error {
		key, err := kafka.ReadAll(r.Key)
		if err != nil {
			return err
		}
		value, err := kafka.ReadAll(r.Value)
		if err != nil {
			return err
		}
		if value == nil {
			byKey[string(key)] = rec{offset: r.Offset}
			return nil
		}
		headers := make([]kafka.Header, len(r.Headers))
		for i, h := range r.Headers {
			headers[i] = kafka.Header{Key: h.Key, Value: bytes.Clone(h.Value)}
		}
		u, err := parseParked(value, headers)
		if err != nil {
			pk.log.Warn("parking record unreadable; dropped", "topic", topic, "partition", n, "offset", r.Offset, "error", err)
			return nil
		}
		byKey[string(key)] = rec{offset: r.Offset, u: u, live: true}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("pipeline: read parking topic %s/%d at %d: %w", topic, n, res.Next, err)
	}
	if res.Short {
		pk.log.Warn("parking topic read stopped short of its end", "topic", topic, "partition", n, "offset", res.Next, "high_watermark", res.HighWatermark)
	}
	var out []rec
	for _, r := range byKey {
		if r.live {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b rec) int { return cmp.Compare(a.offset, b.offset) })
	us := make([]unparked, len(out))
	for i, r := range out {
		us[i] = r.u
	}
	return us, nil
}
