package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
)

// Dead-letter headers. The three source headers name one event (for a
// repartitioned event, its place in the dish topic): a consumer that
// meets a repeat (dlqonce.go) recognises it by them.
const (
	HeaderReason          = "geoshard-reason"
	HeaderError           = "geoshard-error"
	HeaderSourceTopic     = "geoshard-source-topic"
	HeaderSourcePartition = "geoshard-source-partition"
	HeaderSourceOffset    = "geoshard-source-offset"
)

// producer is the part of kafka-go's Writer the dead-letter queue uses.
type producer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
	Close() error
}

var _ producer = (*kafka.Writer)(nil)

// deadLetter is one event on its way to the dead-letter topic.
type deadLetter struct {
	ev     *event
	reason decode.Reason
	detail string
	// result is the event's result label once written: dead_letter, or
	// pending_expired for a dish that waited too long.
	result string
}

// message is the dead letter as written: the event's key and value, and
// headers for the reason and the event's place. A repartitioned event's
// place and key are its origin's in the dish topic (placement/repartition.go). Its
// Partition is the number of the partition the event was read from, for
// dlqWriter's balancer: a partition's dead letters are read back from
// one place (dlqonce.go).
func (d *deadLetter) message() kafka.Message {
	ev := d.ev
	key, topic, partition, offset := ev.key, ev.part.topic, ev.part.partition, ev.offset
	if o := ev.origin; o != nil {
		key, topic, partition, offset = o.Key, o.Topic, o.Partition, o.Offset
	}
	return kafka.Message{
		Key:       key,
		Value:     ev.value,
		Partition: ev.part.partition,
		Headers: []kafka.Header{
			{Key: HeaderReason, Value: []byte(d.reason)},
			{Key: HeaderError, Value: []byte(d.detail)},
			{Key: HeaderSourceTopic, Value: []byte(topic)},
			{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(partition), 10)},
			{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, offset, 10)},
		},
	}
}

// outbox writes messages to a topic in the order they were queued,
// synchronously acknowledged, retrying with backoff until they are
// written: the dead letters (a dead letter that is not written keeps its
// event unfinished, so its offset is not committed) and the parking
// records (parking.go). A batch's failed messages go back to the front of
// the queue, so a message is not written after one queued in a later
// batch (see write for one batch).
type outbox[T outMessage] struct {
	w         producer
	log       *slog.Logger
	what      string // "dead-letter" or "parking", for logs
	maxBatch  int
	maxQueued int
	// written is called for each message once the broker acknowledged
	// it; skip reports one no longer worth writing (a dead letter whose
	// event a redelivery superseded).
	written func(T)
	skip    func(T) bool

	mu      sync.Mutex
	queue   []T
	busy    int           // messages taken by the writing loop
	wake    chan struct{} // signalled when the queue grows
	changed chan struct{} // closed and replaced when the queue shrinks
}

// outMessage is what an outbox writes.
type outMessage interface {
	message() kafka.Message
}

// dlq is the dead-letter queue.
type dlq = outbox[*deadLetter]

func newDLQ(w producer, log *slog.Logger, written func(*deadLetter), skip func(*deadLetter) bool) *dlq {
	return newOutbox(w, log, "dead-letter", written, skip)
}

func newOutbox[T outMessage](w producer, log *slog.Logger, what string, written func(T), skip func(T) bool) *outbox[T] {
	return &outbox[T]{
		w: w, log: log, what: what, maxBatch: 500, maxQueued: 10_000, written: written, skip: skip,
		wake: make(chan struct{}, 1), changed: make(chan struct{}),
	}
}

// enqueue adds a message. It never blocks: write callbacks call it.
func (q *outbox[T]) enqueue(d T) {
	q.mu.Lock()
	q.queue = append(q.queue, d)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// waitRoom blocks while the queue is full, so that a topic that is down
// slows fetching instead of filling memory.
func (q *outbox[T]) waitRoom(ctx context.Context) error {
	return q.waitBelow(ctx, q.maxQueued)
}

// waitEmpty blocks until every message enqueued is written.
func (q *outbox[T]) waitEmpty(ctx context.Context) error {
	return q.waitBelow(ctx, 1)
}

// waitBelow blocks until fewer than n messages are queued or being
// written.
func (q *outbox[T]) waitBelow(ctx context.Context, n int) error {
	for {
		q.mu.Lock()
		have, ch := len(q.queue)+q.busy, q.changed
		q.mu.Unlock()
		if have < n {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

func (q *outbox[T]) signalChanged() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// run writes messages until ctx ends.
func (q *outbox[T]) run(ctx context.Context) error {
	failures := 0
	for {
		q.mu.Lock()
		n := min(len(q.queue), q.maxBatch)
		batch := append([]T(nil), q.queue[:n]...)
		clear(q.queue[:n])
		q.queue = q.queue[n:]
		q.busy = n
		q.mu.Unlock()
		if n == 0 {
			select {
			case <-ctx.Done():
				return nil
			case <-q.wake:
				continue
			}
		}
		retry := q.write(ctx, batch)
		q.mu.Lock()
		q.queue = append(retry, q.queue...)
		q.busy = 0
		q.signalChanged()
		q.mu.Unlock()
		if len(retry) == 0 {
			failures = 0
			continue
		}
		failures++
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(dlqBackoff.Delay(failures) + 10*time.Millisecond):
		}
	}
}

// dlqBackoff spaces the attempts at a batch the broker refused.
var dlqBackoff = bulk.Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second}

// write sends one batch and returns the messages to retry.
func (q *outbox[T]) write(ctx context.Context, batch []T) []T {
	live := batch[:0]
	for _, d := range batch {
		if q.skip == nil || !q.skip(d) {
			live = append(live, d)
		}
	}
	if len(live) == 0 {
		return nil
	}
	msgs := make([]kafka.Message, len(live))
	for i, d := range live {
		msgs[i] = d.message()
	}
	err := q.w.WriteMessages(ctx, msgs...)
	if err == nil {
		for _, d := range live {
			q.written(d)
		}
		return nil
	}
	var werrs kafka.WriteErrors
	if !errors.As(err, &werrs) || len(werrs) != len(live) {
		if ctx.Err() == nil {
			q.log.Warn(q.what+" write failed; retrying", "count", len(live), "error", err)
		}
		return append([]T(nil), live...)
	}
	// A message that failed is retried before anything queued after this
	// batch. Within the batch kafka-go may have written a later message
	// of the same partition (when a partition's messages needed two
	// produce requests): a parking record's tombstone before its record
	// leaves the record, whose dish, read back, is written again as Stale.
	var retry []T
	for i, d := range live {
		if werrs[i] == nil {
			q.written(d)
			continue
		}
		retry = append(retry, d)
	}
	if ctx.Err() == nil {
		q.log.Warn(q.what+" write partly failed; retrying", "count", len(retry), "error", err)
	}
	return retry
}
