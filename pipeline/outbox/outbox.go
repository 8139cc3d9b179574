package outbox

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
)

// Producer is the part of kafka-go's Writer an outbox uses.
type Producer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

var _ Producer = (*kafka.Writer)(nil)

// Item is what an outbox writes: Message is the item as written.
type Item interface {
	Message() kafka.Message
}

// Outbox writes messages to a topic in the order they were queued,
// synchronously acknowledged, retrying with backoff until they are
// written: ingest's dead letters (a dead letter that is not written
// keeps its event unfinished, so its offset is not committed) and its
// parking records. A batch's failed messages go back to the front of the
// queue, so a message is not written after one queued in a later batch
// (see write for one batch).
type Outbox[T Item] struct {
	w         Producer
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

// New returns an outbox that writes through w, names itself what in its
// logs, calls written for each message acknowledged and, unless skip is
// nil, drops a message skip reports before writing it. It writes
// batches of at most 500 messages and holds at most 10,000 before
// WaitRoom blocks. Run writes.
func New[T Item](w Producer, log *slog.Logger, what string, written func(T), skip func(T) bool) *Outbox[T] {
	return &Outbox[T]{
		w: w, log: log, what: what, maxBatch: 500, maxQueued: 10_000, written: written, skip: skip,
		wake: make(chan struct{}, 1), changed: make(chan struct{}),
	}
}

// Enqueue adds a message. It never blocks: write callbacks call it.
func (q *Outbox[T]) Enqueue(d T) {
	q.mu.Lock()
	q.queue = append(q.queue, d)
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Queued returns the messages waiting to be written, oldest first, not
// those of the batch being written.
func (q *Outbox[T]) Queued() []T {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]T(nil), q.queue...)
}

// WaitRoom blocks while the queue is full, so that a topic that is down
// slows fetching instead of filling memory.
func (q *Outbox[T]) WaitRoom(ctx context.Context) error {
	return q.waitBelow(ctx, q.maxQueued)
}

// WaitEmpty blocks until every message enqueued is written.
func (q *Outbox[T]) WaitEmpty(ctx context.Context) error {
	return q.waitBelow(ctx, 1)
}

// waitBelow blocks until fewer than n messages are queued or being
// written.
func (q *Outbox[T]) waitBelow(ctx context.Context, n int) error {
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

func (q *Outbox[T]) signalChanged() {
	close(q.changed)
	q.changed = make(chan struct{})
}

// Run writes messages until ctx ends. It returns nil.
func (q *Outbox[T]) Run(ctx context.Context) error {
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
		case <-time.After(backoff.Delay(failures) + 10*time.Millisecond):
		}
	}
}

// backoff spaces the attempts at a batch the broker refused.
var backoff = bulk.Backoff{Initial: 200 * time.Millisecond, Max: 2 * time.Second}

// write sends one batch and returns the messages to retry.
func (q *Outbox[T]) write(ctx context.Context, batch []T) []T {
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
		msgs[i] = d.Message()
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
