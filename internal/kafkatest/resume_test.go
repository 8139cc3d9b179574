package kafkatest

import (
	"fmt"
	"maps"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/segmentio/kafka-go"
)

// TestConsumerGroupResumesFromCommits checks the contract the pipeline's
// restart story rests on: a kafka-go reader that closes and a new reader in
// the same group picks up exactly at the committed offsets, so it sees every
// message not yet committed and none that was.
func TestConsumerGroupResumesFromCommits(t *testing.T) {
	realenv.Parallel(t)
	const (
		partitions = 6
		firstRun   = 48
		secondRun  = 30
	)
	tests := []struct {
		name string
		// cut returns how many of a partition's n first-run messages the
		// first reader commits.
		cut func(n int) int
	}{
		{"everything committed", func(n int) int { return n }},
		{"nothing committed", func(int) int { return 0 }},
		{"random prefix committed", nil}, // filled from the seeded generator below
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			rng := newRand(t)
			if tt.cut == nil {
				tt.cut = func(n int) int { return rng.IntN(n + 1) }
			}
			topic, group := realenv.Unique("restaurants"), realenv.Unique("indexer")
			c := Start(t, WithTopic(topic, partitions))

			produce := func(n, run int) map[pos][]byte {
				msgs := make([]Message, n)
				for i := range msgs {
					msgs[i] = Message{
						Key:   fmt.Appendf(nil, "restaurant-%d", rng.IntN(1000)),
						Value: fmt.Appendf(nil, `{"run":%d,"i":%d}`, run, i),
					}
				}
				out, err := c.ProduceBatch(ctx, topic, msgs)
				if err != nil {
					t.Fatalf("ProduceBatch(%d messages) = %v", n, err)
				}
				want := make(map[pos][]byte, n)
				for i, p := range out {
					want[pos(p)] = msgs[i].Value
				}
				return want
			}

			// First run: read everything, commit a prefix of each partition.
			first := produce(firstRun, 1)
			r1 := c.NewReader(group, topic)
			got, err := fetchN(ctx, r1, firstRun)
			if err != nil {
				r1.Close()
				t.Fatalf("first reader: %v", err)
			}
			checkDelivered(t, "first reader", got, first)

			perPartition := make(map[int][]kafka.Message)
			for _, m := range got {
				perPartition[m.Partition] = append(perPartition[m.Partition], m)
			}
			wantCommitted := make(map[int]int64)
			var toCommit []kafka.Message
			for p, ms := range perPartition {
				// kafka-go returns a partition's messages in offset order.
				n := tt.cut(len(ms))
				if n > 0 {
					toCommit = append(toCommit, ms[:n]...)
					wantCommitted[p] = ms[n-1].Offset + 1
				}
			}
			if len(toCommit) > 0 {
				if err := r1.CommitMessages(ctx, toCommit...); err != nil {
					r1.Close()
					t.Fatalf("CommitMessages(%d messages) = %v", len(toCommit), err)
				}
			}
			if err := r1.Close(); err != nil {
				t.Fatalf("first reader Close() = %v", err)
			}
			checkOffsets(t, c, group, topic, wantCommitted)

			// Second run: only what was not committed, and the new messages.
			second := produce(secondRun, 2)
			want := maps.Clone(second)
			for at, v := range first {
				if committed, ok := wantCommitted[at.Partition]; !ok || at.Offset >= committed {
					want[at] = v
				}
			}
			r2 := c.NewReader(group, topic)
			defer r2.Close()
			got, err = fetchN(ctx, r2, len(want))
			if err != nil {
				t.Fatalf("second reader: %v", err)
			}
			checkDelivered(t, "second reader", got, want)
			// Then nothing more: only the end markers come.
			ends := produceEndMarkers(t, ctx, c, topic, partitions)
			for _, d := range readToEndMarkers(t, "second reader", ends, func() delivery {
				m, err := r2.FetchMessage(ctx)
				if err != nil {
					t.Fatalf("second reader, waiting for the end markers: %v", err)
				}
				return delivery{reader: "second reader", msg: m}
			}) {
				got = append(got, d.msg)
			}
			if err := r2.CommitMessages(ctx, got...); err != nil {
				t.Fatalf("CommitMessages(%d messages) = %v", len(got), err)
			}

			hw, err := c.HighWatermarks(ctx, topic)
			if err != nil {
				t.Fatalf("HighWatermarks = %v", err)
			}
			checkOffsets(t, c, group, topic, hw)
		})
	}
}

// checkDelivered fails unless got holds each message of want exactly once,
// with the produced value, and nothing else.
func checkDelivered(t *testing.T, who string, got []kafka.Message, want map[pos][]byte) {
	t.Helper()
	seen := make(map[pos]int, len(got))
	for _, m := range got {
		at := posOf(m)
		seen[at]++
		v, ok := want[at]
		switch {
		case !ok:
			t.Errorf("%s got unexpected message %v = %s", who, at, m.Value)
		case string(v) != string(m.Value):
			t.Errorf("%s got message %v = %s, want %s", who, at, m.Value, v)
		}
	}
	for _, at := range sortedPos(seen) {
		if seen[at] > 1 {
			t.Errorf("%s got message %v %d times, want once", who, at, seen[at])
		}
	}
	for _, at := range sortedPos(want) {
		if seen[at] == 0 {
			t.Errorf("%s never got message %v", who, at)
		}
	}
}

// checkOffsets fails unless group's committed offsets on topic are exactly
// want, and Lag agrees with the high watermarks.
func checkOffsets(t *testing.T, c *Cluster, group, topic string, want map[int]int64) {
	t.Helper()
	ctx := testContext(t)
	got, err := c.CommittedOffsets(ctx, group, topic)
	if err != nil {
		t.Fatalf("CommittedOffsets(%s, %s) = %v", group, topic, err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("CommittedOffsets(%s, %s) = %v, want %v", group, topic, got, want)
	}
	hw, err := c.HighWatermarks(ctx, topic)
	if err != nil {
		t.Fatalf("HighWatermarks(%s) = %v", topic, err)
	}
	var wantLag int64
	for p, h := range hw {
		wantLag += h - want[p] // a missing commit reads as 0, the log start here
	}
	lag, err := c.Lag(ctx, group, topic)
	if err != nil {
		t.Fatalf("Lag(%s, %s) = %v", group, topic, err)
	}
	if lag != wantLag {
		t.Errorf("Lag(%s, %s) = %d, want %d (high watermarks %v, committed %v)", group, topic, lag, wantLag, hw, got)
	}
}
