package deadletter

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/kafkarange"
)

// Generation is what Enter needs of a consumer-group generation.
type Generation struct {
	// Partitions are the numbers of the partitions the member owns
	// (partition N of every event topic is one member's).
	Partitions []int
	// Start is, for each partition of an event topic the member owns,
	// where its reading starts: Offset is the group's committed offset,
	// or kafka.FirstOffset. A partition without one is owned all the
	// same, but its dead letters are not read back.
	Start []Place
}

// Enter follows the member into gen: the places of partitions lost go,
// and those of the partitions gained are read back from the dead-letter
// topic. The owner's loop calls it before it decides any event of gen.
func (o *Once[E]) Enter(ctx context.Context, gen Generation) error {
	now := map[int]bool{}
	for _, n := range gen.Partitions {
		now[n] = true
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
		counts, err := kafkarange.PartitionCounts(ctx, o.client, o.cfg.Topic)
		m = counts[o.cfg.Topic]
		return err
	})
	if err != nil {
		return fmt.Errorf("deadletter: read dead letters back: %w", err)
	}
	o.parts = m
	if m == 0 {
		return nil // no dead-letter topic yet: nothing was dead-lettered
	}
	// From when each dead-letter partition is read: the earliest
	// timestamp of the events at the committed offsets of the partitions
	// gained that it holds, less the margin.
	from := map[int]time.Time{}
	for _, s := range gen.Start {
		if !gained[s.Partition] {
			continue
		}
		ts, ok, err := o.timeAt(ctx, s)
		if err != nil {
			return err
		}
		if !ok {
			continue // nothing at or after the committed offset
		}
		d := s.Partition % m
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
		n, err := o.learn(ctx, d, ts.Add(-o.cfg.ClockMargin), parts)
		if err != nil {
			return err
		}
		learnt += n
	}
	o.log.Info("dead letters read back", "topic", o.cfg.Topic, "partitions", len(gained), "dead_letters", learnt, "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// Parked widens the read of the dead-letter topic for partition number
// n to its dishes read back from the parking topic, parked at the times
// parkedAt, before they are decided: their offsets were committed while
// they waited, perhaps long before the committed offset's event was
// produced, and the previous owner may have dead-lettered one and
// stopped before its tombstone. A dish's dead letter follows its
// parking, so the read starts at the earliest parking time, less the
// margin. The owner's loop calls it, after Enter. A read that fails for
// good is logged, not returned: it costs repeats, not the run.
func (o *Once[E]) Parked(ctx context.Context, n int, parkedAt []time.Time) error {
	if o.client == nil || o.parts == 0 || len(parkedAt) == 0 {
		return nil
	}
	since := parkedAt[0]
	for _, t := range parkedAt[1:] {
		if t.Before(since) {
			since = t
		}
	}
	since = since.Add(-o.cfg.ClockMargin)
	if t, ok := o.readFrom[n]; ok && !since.Before(t) {
		return nil // read from there already
	}
	if _, err := o.learn(ctx, n%o.parts, since, map[int]bool{n: true}); err != nil {
		if ctx.Err() != nil {
			return err
		}
		// As the owner does with Enter's error: costs repeats, not the run.
		o.log.Warn("dead letters of parked dishes not read back: repeats of them may be written", "partition", n, "error", err)
	}
	return nil
}

// learn reads dead-letter partition d from since and records the places
// of the partitions numbered in parts (all of them in d), and those of
// repartitioned events, which cannot be told apart. It returns how many
// it read.
func (o *Once[E]) learn(ctx context.Context, d int, since time.Time, parts map[int]bool) (int, error) {
	direct := map[string]bool{}
	for _, t := range o.cfg.EventTopics {
		direct[t] = true
	}
	learnt := map[Place]known{}
	err := o.readPartition(ctx, d, since, func(p Place) {
		switch {
		case !direct[p.Topic]:
			learnt[p] = known{own: Place{Offset: -1}, dlqPart: d}
		case parts[p.Partition]:
			learnt[p] = known{own: p, dlqPart: d}
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

// timeAt is the timestamp of the first message of s's partition at or
// after s.Offset (kafka.FirstOffset: the log's start); ok is false when
// there is none.
func (o *Once[E]) timeAt(ctx context.Context, s Place) (ts time.Time, ok bool, err error) {
	err = o.fetch(ctx, s.Topic, s.Partition, s.Offset, 1<<20, func(r *kafka.Record) bool {
		ts, ok = r.Time, true
		return false
	})
	return ts, ok, err
}

// readPartition hands each dead letter of partition d stamped at or
// after since, to the end of the partition as it is now, to fn.
func (o *Once[E]) readPartition(ctx context.Context, d int, since time.Time, fn func(Place)) error {
	topic := o.cfg.Topic
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
		return fmt.Errorf("deadletter: find dead letters of %s/%d since %v: %w", topic, d, since, err)
	}
	if start < 0 {
		return nil // none stamped since
	}
	return o.fetch(ctx, topic, d, start, 8<<20, func(r *kafka.Record) bool {
		if p, ok := SourceOf(r.Headers); ok {
			fn(p)
		}
		return true
	})
}

// fetch hands the records of topic/partition from offset on, to its end
// as it is now, to fn until fn returns false. An offset below the log's
// start reads from the start.
func (o *Once[E]) fetch(ctx context.Context, topic string, partition int, offset, maxBytes int64, fn func(*kafka.Record) bool) error {
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
		return fmt.Errorf("deadletter: read %s/%d at %d: %w", topic, partition, res.Next, err)
	}
	return nil
}

// retry runs f with the project's backoff (bulk's, 100ms up to 5s) while
// it fails transiently (bulk.Transient), logging each failure, as the
// pipeline's other reads do.
func retry(ctx context.Context, log *slog.Logger, op string, f func() error) error {
	attempt := 0
	err := bulk.Retry(ctx, bulk.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Second},
		bulk.Transient, func(err error, wait time.Duration) {
			attempt++
			log.Warn("request failed; retrying", "step", op, "attempt", attempt, "in", wait, "error", err)
		}, f)
	if err != nil {
		return fmt.Errorf("deadletter: %s: %w", op, err)
	}
	return nil
}
