package kafkatest

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

var seedFlag = flag.Uint64("kafkatest.seed", 0, "seed for the randomized tests; 0 picks one from the clock")

// testTimeout bounds each test's broker traffic, so a hang fails in seconds
// rather than blocking until go test's own timeout.
const testTimeout = 30 * time.Second

// quietPeriod is how long a reader must stay silent for a test to conclude
// nothing more is coming. It is many fetch waits (readerMaxWait) long.
const quietPeriod = 750 * time.Millisecond

// testContext returns a context that ends after testTimeout or when the
// test finishes.
func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newRand returns a seeded generator and logs the seed, so a failure can be
// replayed with -kafkatest.seed.
func newRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *seedFlag
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -kafkatest.seed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed))
}

// pos identifies a message by where it is stored.
type pos struct {
	Partition int
	Offset    int64
}

func (p pos) String() string { return fmt.Sprintf("%d@%d", p.Partition, p.Offset) }

func posOf(m kafka.Message) pos { return pos{m.Partition, m.Offset} }

// sortedPos returns the keys of set in partition, offset order, for stable
// failure messages.
func sortedPos[V any](set map[pos]V) []pos {
	return slices.SortedFunc(maps.Keys(set), func(a, b pos) int {
		if a.Partition != b.Partition {
			return a.Partition - b.Partition
		}
		return int(a.Offset - b.Offset)
	})
}

// fetchN fetches exactly n messages from r.
func fetchN(ctx context.Context, r *kafka.Reader, n int) ([]kafka.Message, error) {
	msgs := make([]kafka.Message, 0, n)
	for len(msgs) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			return msgs, fmt.Errorf("fetch message %d of %d: %w", len(msgs)+1, n, err)
		}
		msgs = append(msgs, m)
	}
	return msgs, nil
}

// expectQuiet fails the test if r delivers anything within quietPeriod.
// A fetch cancelled by its context loses nothing in kafka-go: the message,
// had one come, stays queued in the reader.
func expectQuiet(t *testing.T, ctx context.Context, r *kafka.Reader) {
	t.Helper()
	qctx, cancel := context.WithTimeout(ctx, quietPeriod)
	defer cancel()
	m, err := r.FetchMessage(qctx)
	switch {
	case err == nil:
		t.Errorf("FetchMessage after the last expected message = %v (key %q), want nothing", posOf(m), m.Key)
	case !errors.Is(err, context.DeadlineExceeded):
		t.Errorf("FetchMessage while waiting for silence: %v, want %v", err, context.DeadlineExceeded)
	}
}
