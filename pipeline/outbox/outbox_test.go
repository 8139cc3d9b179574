package outbox

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// note is a message that is its own value.
type note string

func (n note) Message() kafka.Message { return kafka.Message{Value: []byte(n)} }

// fakeProducer records what it is asked to write, answering each call
// with what fail returns for that call's messages (nil: all written).
type fakeProducer struct {
	mu    sync.Mutex
	calls [][]string
	fail  func(call int, msgs []string) error
}

func (f *fakeProducer) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	vals := make([]string, len(msgs))
	for i, m := range msgs {
		vals[i] = string(m.Value)
	}
	f.calls = append(f.calls, vals)
	if f.fail == nil {
		return nil
	}
	return f.fail(len(f.calls)-1, vals)
}

// run starts q's writing loop, stopped and waited for when t ends.
func run[T Item](t *testing.T, q *Outbox[T]) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = q.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// TestOutboxOrder: messages are written, and acknowledged, in the order
// they were queued, whatever the broker refuses on the way: a batch's
// failed messages are written before anything queued after it, and a
// skipped message is neither written nor acknowledged.
func TestOutboxOrder(t *testing.T) {
	refused := errors.New("broker refused")
	for _, tc := range []struct {
		name      string
		fail      func(call int, msgs []string) error
		skip      string
		wantCalls int // at least this many calls to the producer
		want      []string
	}{
		{"all written", nil, "", 1, []string{"a", "b", "c", "d"}},
		{"a batch refused whole", func(call int, _ []string) error {
			if call == 0 {
				return refused
			}
			return nil
		}, "", 2, []string{"a", "b", "c", "d"}},
		{"a batch partly refused", func(call int, msgs []string) error {
			if call != 0 {
				return nil
			}
			werrs := make(kafka.WriteErrors, len(msgs))
			werrs[1] = refused // b
			return werrs
		}, "", 2, []string{"a", "c", "b", "d"}},
		{"skipped", nil, "b", 1, []string{"a", "c", "d"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &fakeProducer{fail: tc.fail}
			var mu sync.Mutex
			var written []string
			var skip func(note) bool
			if tc.skip != "" {
				skip = func(n note) bool { return string(n) == tc.skip }
			}
			q := New(w, quiet(), "test", func(n note) {
				mu.Lock()
				written = append(written, string(n))
				mu.Unlock()
			}, skip)
			// The first batch is a, b, c: d is queued once it is taken.
			for _, n := range []note{"a", "b", "c"} {
				q.Enqueue(n)
			}
			run(t, q)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for len(q.Queued()) > 0 {
				time.Sleep(time.Millisecond)
			}
			q.Enqueue("d")
			if err := q.WaitEmpty(ctx); err != nil {
				t.Fatalf("WaitEmpty = %v; written %v", err, written)
			}
			mu.Lock()
			defer mu.Unlock()
			// The partly refused batch acknowledges a and c at once, and b
			// when it is written again, before d.
			if !slices.Equal(written, tc.want) {
				t.Errorf("written %v, want %v", written, tc.want)
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			if len(w.calls) < tc.wantCalls {
				t.Errorf("%d calls to the producer (%v), want at least %d", len(w.calls), w.calls, tc.wantCalls)
			}
			var sent []string
			for _, c := range w.calls {
				sent = append(sent, c...)
			}
			if tc.skip != "" && slices.Contains(sent, tc.skip) {
				t.Errorf("the skipped message %q was written: %v", tc.skip, w.calls)
			}
		})
	}
}

// TestOutboxWaitRoom: a full outbox holds its caller back until it has
// room, and lets it go when its context ends.
func TestOutboxWaitRoom(t *testing.T) {
	q := New(&fakeProducer{}, quiet(), "test", func(note) {}, nil)
	q.maxQueued = 2
	q.Enqueue("a")
	if err := q.WaitRoom(context.Background()); err != nil {
		t.Fatalf("WaitRoom with room = %v", err)
	}
	q.Enqueue("b")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := q.WaitRoom(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitRoom of a full outbox = %v, want it to wait until its context ends", err)
	}
	run(t, q)
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := q.WaitRoom(ctx); err != nil {
		t.Fatalf("WaitRoom once written = %v", err)
	}
	if err := q.WaitEmpty(ctx); err != nil {
		t.Fatalf("WaitEmpty = %v", err)
	}
}
