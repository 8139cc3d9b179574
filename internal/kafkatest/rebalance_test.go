package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/segmentio/kafka-go"
)

// delivery is one message handed to the test by one reader.
type delivery struct {
	reader string // the reader's client ID
	msg    kafka.Message
}

// consumers runs a FetchMessage loop per reader and merges what they
// deliver into one channel. Commits stay with the test, which calls
// CommitMessages on the reader named in each delivery.
type consumers struct {
	out    chan delivery
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu   sync.Mutex
	errs []error
}

func newConsumers(ctx context.Context) (*consumers, context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	return &consumers{out: make(chan delivery), cancel: cancel}, ctx
}

// run starts a goroutine fetching from r until ctx ends; stop waits for it.
func (cs *consumers) run(ctx context.Context, r *kafka.Reader) {
	name := r.Config().Dialer.ClientID
	cs.wg.Go(func() {
		for {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				if ctx.Err() == nil {
					cs.mu.Lock()
					cs.errs = append(cs.errs, fmt.Errorf("%s: %w", name, err))
					cs.mu.Unlock()
				}
				return
			}
			select {
			case cs.out <- delivery{reader: name, msg: m}:
			case <-ctx.Done():
				return
			}
		}
	})
}

// stop ends every fetch loop, waits for them and returns their errors.
func (cs *consumers) stop() error {
	cs.cancel()
	cs.wg.Wait()
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return errors.Join(cs.errs...)
}

// next returns the next delivery, or fails the test after timeout.
func (cs *consumers) next(t *testing.T, ctx context.Context) delivery {
	t.Helper()
	select {
	case d := <-cs.out:
		return d
	case <-ctx.Done():
		t.Fatalf("waiting for a delivery: %v", ctx.Err())
		return delivery{}
	}
}

// TestConsumerGroupRebalance shows what a second member joining a kafka-go
// consumer group does to the first one:
//
//   - the partitions are split: each member owns at least one, together
//     they own all, and no partition is owned twice;
//   - every message the first member fetched but had not committed is
//     delivered again, once, to whichever member owns its partition after
//     the rebalance: at-least-once delivery, not exactly-once. This holds
//     for the partitions the first member keeps too, because kafka-go
//     restarts every partition from its committed offset in each new
//     generation;
//   - every message produced after the rebalance is delivered exactly once,
//     by the partition's new owner.
func TestConsumerGroupRebalance(t *testing.T) {
	realenv.Parallel(t)
	const (
		partitions = 6
		before     = 4 // messages per partition before the second member joins
		after      = 5 // messages per partition after the rebalance
	)
	ctx := testContext(t)
	rng := newRand(t)
	topic, group := realenv.Unique("restaurants"), realenv.Unique("indexer")
	c := Start(t, WithTopic(topic, partitions))

	produce := func(perPartition int, run string) map[pos]bool {
		want := make(map[pos]bool)
		for p := range partitions {
			for i := range perPartition {
				off, err := c.ProduceTo(ctx, topic, p, nil, fmt.Appendf(nil, "%s-%d-%d", run, p, i))
				if err != nil {
					t.Fatalf("ProduceTo(%d) = %v", p, err)
				}
				want[pos{p, off}] = true
			}
		}
		return want
	}

	cs, cctx := newConsumers(ctx)
	readers := make(map[string]*kafka.Reader)
	t.Cleanup(func() {
		// Fetch loops first: they use the readers.
		if err := cs.stop(); err != nil {
			t.Errorf("fetch loops: %v", err)
		}
		for _, r := range readers {
			r.Close()
		}
	})
	join := func() string {
		r := c.NewReader(group, topic)
		id := r.Config().Dialer.ClientID
		readers[id] = r
		cs.run(cctx, r)
		return id
	}

	// The first member alone owns everything and reads everything.
	first := join()
	g, err := c.WaitGroupStable(ctx, group, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := g.Members[0]; m.ClientID != first || !slices.Equal(m.Partitions[topic], partitionIDs(partitions)) {
		t.Fatalf("group with one member = %+v, want %s owning partitions %v", g.Members, first, partitionIDs(partitions))
	}
	early := produce(before, "before")
	byPartition := make(map[int][]kafka.Message)
	for range len(early) {
		d := cs.next(t, ctx)
		if d.reader != first || !early[posOf(d.msg)] {
			t.Fatalf("before the rebalance: %s got %v, want only %s getting the first %d messages", d.reader, posOf(d.msg), first, len(early))
		}
		byPartition[d.msg.Partition] = append(byPartition[d.msg.Partition], d.msg)
	}

	// It commits a random prefix of each partition, always leaving at least
	// the last message uncommitted.
	uncommitted := make(map[pos]bool)
	var commit []kafka.Message
	for p := range partitions {
		ms := byPartition[p]
		n := rng.IntN(len(ms))
		commit = append(commit, ms[:n]...)
		for _, m := range ms[n:] {
			uncommitted[posOf(m)] = true
		}
	}
	if err := readers[first].CommitMessages(ctx, commit...); err != nil {
		t.Fatalf("CommitMessages(%d messages) = %v", len(commit), err)
	}
	t.Logf("first member committed %d of %d messages", len(commit), len(early))

	// The second member joins: the partitions are split.
	second := join()
	g, err = c.WaitGroupStable(ctx, group, 2)
	if err != nil {
		t.Fatal(err)
	}
	owner := checkSplit(t, g, topic, partitions, first, second)
	t.Logf("generation %d: %s owns %v, %s owns %v", g.Generation,
		first, ownedBy(owner, first), second, ownedBy(owner, second))

	// Everything uncommitted comes again, then everything new, each once,
	// from the partition's new owner.
	late := produce(after, "after")
	want := make(map[pos]bool, len(uncommitted)+len(late))
	for at := range uncommitted {
		want[at] = true
	}
	for at := range late {
		want[at] = true
	}
	seen := make(map[pos]int)
	for missing := len(want); missing > 0; {
		d := cs.next(t, ctx)
		at := posOf(d.msg)
		seen[at]++
		switch {
		case !want[at]:
			t.Errorf("after the rebalance: %s got %v, which was committed before it", d.reader, at)
		case seen[at] > 1:
			t.Errorf("after the rebalance: %s got %v again (%d times)", d.reader, at, seen[at])
		default:
			missing--
		}
		if o := owner[at.Partition]; d.reader != o {
			t.Errorf("after the rebalance: %s got %v, but %s owns partition %d", d.reader, at, o, at.Partition)
		}
		if err := readers[d.reader].CommitMessages(ctx, d.msg); err != nil {
			t.Fatalf("%s: CommitMessages(%v) = %v", d.reader, at, err)
		}
	}

	// Then nothing more: only the end markers come, each from its
	// partition's owner.
	ends := produceEndMarkers(t, ctx, c, topic, partitions)
	for _, d := range readToEndMarkers(t, "after the rebalance", ends, func() delivery { return cs.next(t, ctx) }) {
		if o := owner[d.msg.Partition]; d.reader != o {
			t.Errorf("after the rebalance: %s got the end marker %v, but %s owns partition %d", d.reader, posOf(d.msg), o, d.msg.Partition)
		}
		if err := readers[d.reader].CommitMessages(ctx, d.msg); err != nil {
			t.Fatalf("%s: CommitMessages(%v) = %v", d.reader, posOf(d.msg), err)
		}
	}
	hw, err := c.HighWatermarks(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	checkOffsets(t, c, group, topic, hw)
}

// checkSplit fails unless g's two members are the readers a and b, each
// owning at least one partition of topic, together all of them, none twice.
// It returns each partition's owner by client ID.
func checkSplit(t *testing.T, g Group, topic string, partitions int, a, b string) map[int]string {
	t.Helper()
	owner := make(map[int]string)
	var clients []string
	for _, m := range g.Members {
		clients = append(clients, m.ClientID)
		if len(m.Partitions[topic]) == 0 {
			t.Errorf("member %s owns no partition of %s", m.ClientID, topic)
		}
		for _, p := range m.Partitions[topic] {
			if o, ok := owner[p]; ok {
				t.Errorf("partition %d owned by both %s and %s", p, o, m.ClientID)
			}
			owner[p] = m.ClientID
		}
	}
	slices.Sort(clients)
	if want := []string{min(a, b), max(a, b)}; !slices.Equal(clients, want) {
		t.Errorf("group members = %v, want %v", clients, want)
	}
	for p := range partitions {
		if _, ok := owner[p]; !ok {
			t.Errorf("partition %d owned by nobody", p)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	return owner
}

func ownedBy(owner map[int]string, client string) []int {
	var ps []int
	for p, o := range owner {
		if o == client {
			ps = append(ps, p)
		}
	}
	slices.Sort(ps)
	return ps
}
