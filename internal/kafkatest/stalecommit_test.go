package kafkatest

import (
	"fmt"
	"maps"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
)

// TestCommitFromEarlierGenerationIsAccepted pins a hazard of kafka-go's
// Reader with the classic group protocol. CommitMessages does not remember
// the generation a message was fetched in: the commit goes out stamped
// with the reader's current generation. The coordinator checks only member
// and generation, not partition ownership (so does a real broker). A member
// that commits a message fetched before a rebalance, for a partition it has
// since lost, therefore succeeds, and overwrites the new owner's progress,
// which may move the group's offset backwards and cause redelivery.
func TestCommitFromEarlierGenerationIsAccepted(t *testing.T) {
	realenv.Parallel(t)
	topic, group := realenv.Unique("restaurants"), realenv.Unique("indexer")
	ctx := testContext(t)
	c := Start(t, WithTopic(topic, 2))

	a := c.NewReader(group, topic)
	defer a.Close()
	if _, err := c.WaitGroupStable(ctx, group, 1); err != nil {
		t.Fatal(err)
	}
	for p := range 2 {
		if _, err := c.ProduceTo(ctx, topic, p, nil, fmt.Appendf(nil, "first-%d", p)); err != nil {
			t.Fatalf("ProduceTo(%d) = %v", p, err)
		}
	}
	fetched, err := fetchN(ctx, a, 2) // one per partition, none committed
	if err != nil {
		t.Fatalf("first member: %v", err)
	}

	b := c.NewReader(group, topic)
	defer b.Close()
	g, err := c.WaitGroupStable(ctx, group, 2)
	if err != nil {
		t.Fatal(err)
	}
	owner := checkSplit(t, g, topic, 2, a.Config().Dialer.ClientID, b.Config().Dialer.ClientID)
	lost := ownedBy(owner, b.Config().Dialer.ClientID)[0]
	stale := fetched[0]
	if stale.Partition != lost {
		stale = fetched[1]
	}

	// The new owner reads the redelivered message and two more, and
	// commits them all.
	for i := range 2 {
		if _, err := c.ProduceTo(ctx, topic, lost, nil, fmt.Appendf(nil, "second-%d", i)); err != nil {
			t.Fatalf("ProduceTo(%d) = %v", lost, err)
		}
	}
	got, err := fetchN(ctx, b, 3)
	if err != nil {
		t.Fatalf("second member: %v", err)
	}
	if err := b.CommitMessages(ctx, got...); err != nil {
		t.Fatalf("second member CommitMessages = %v", err)
	}
	committed, err := c.CommittedOffsets(ctx, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	if committed[lost] != 3 {
		t.Fatalf("after the new owner's commit: CommittedOffsets = %v, want partition %d at 3", committed, lost)
	}

	// The old owner now commits what it fetched before the rebalance.
	if err := a.CommitMessages(ctx, stale); err != nil {
		t.Fatalf("stale CommitMessages(%d@%d) = %v, want it accepted", stale.Partition, stale.Offset, err)
	}
	committed, err = c.CommittedOffsets(ctx, group, topic)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int]int64{lost: stale.Offset + 1}
	if !maps.Equal(committed, want) {
		t.Errorf("after the stale commit: CommittedOffsets = %v, want %v (rewound from 3)", committed, want)
	}
}
