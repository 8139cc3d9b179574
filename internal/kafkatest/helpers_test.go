package kafkatest

import (
	"context"
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

// endMarker is the value of the messages produceEndMarkers writes.
const endMarker = "end-marker"

// produceEndMarkers writes one end marker to each of topic's partitions,
// after every message a test expects, and returns their positions.
//
// Reading up to the markers is how a test shows that nothing more was
// coming, which no wait for silence can show on a busy machine: a
// partition's messages come in offset order, so whatever a reader delivers
// before it has had every marker (a duplicate, a message it should not
// have read again) is more than expected, however late it comes.
func produceEndMarkers(t *testing.T, ctx context.Context, c *Cluster, topic string, partitions int) map[pos]bool {
	t.Helper()
	ends := make(map[pos]bool, partitions)
	for p := range partitions {
		off, err := c.ProduceTo(ctx, topic, p, nil, []byte(endMarker))
		if err != nil {
			t.Fatalf("ProduceTo(%s, %d) of the end marker = %v", topic, p, err)
		}
		ends[pos{p, off}] = true
	}
	return ends
}

// readToEndMarkers takes deliveries from next until it has had each marker
// of ends once, and fails the test for every other delivery meanwhile:
// more than expected. It returns the markers' deliveries, for the test to
// commit.
func readToEndMarkers(t *testing.T, who string, ends map[pos]bool, next func() delivery) []delivery {
	t.Helper()
	seen := make(map[pos]bool, len(ends))
	var got []delivery
	for len(got) < len(ends) {
		d := next()
		at := posOf(d.msg)
		switch {
		case !ends[at]:
			t.Errorf("%s: %s got %v (%q) after the last expected message, want nothing before the end markers", who, d.reader, at, d.msg.Value)
		case seen[at]:
			t.Errorf("%s: %s got the end marker %v again", who, d.reader, at)
		default:
			seen[at] = true
			got = append(got, d)
		}
	}
	return got
}
