package kafkatest

import (
	"context"
	"fmt"

	"github.com/twmb/franz-go/pkg/kfake"
)

// HighWatermarks returns, for each partition of topic, the offset the next
// produced message will get: the broker's high watermark.
//
// Like every inspection method, in-process it reads the broker's state
// directly; ctx is checked first but the call does not wait on any network.
// On the real backend it is a ListOffsets request (latest, read
// uncommitted), which answers with the high watermark.
func (c *Cluster) HighWatermarks(ctx context.Context, topic string) (map[int]int64, error) {
	parts, err := c.offsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: high watermarks of %s: %w", topic, err)
	}
	out := make(map[int]int64, len(parts))
	for p, o := range parts {
		out[p] = o.highWatermark
	}
	return out, nil
}

// CommittedOffsets returns the offsets group has committed on topic, by
// partition. A committed offset is the next offset the group will read
// (kafka-go commits a message's offset plus one). Partitions with no commit
// are absent; a group that does not exist has no commits and gives an empty
// map, as a real broker's OffsetFetch does. On the real backend it is an
// OffsetFetch request for every topic of the group.
func (c *Cluster) CommittedOffsets(ctx context.Context, group, topic string) (map[int]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("kafkatest: committed offsets of group %s on %s: %w", group, topic, err)
	}
	if c.Real() {
		out, err := c.realCommitted(ctx, group, topic)
		if err != nil {
			return nil, fmt.Errorf("kafkatest: committed offsets of group %s on %s: %w", group, topic, err)
		}
		return out, nil
	}
	var info *kfake.GroupInfo
	err := c.withFake(func(f *kfake.Cluster) error {
		info = f.GroupInfo(group)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("kafkatest: committed offsets of group %s on %s: %w", group, topic, err)
	}
	out := make(map[int]int64)
	if info == nil {
		return out, nil
	}
	for p, commit := range info.Commits[topic] {
		out[int(p)] = commit.Offset
	}
	return out, nil
}

// Lag returns how many messages of topic group has still to consume: the
// sum over partitions of high watermark minus committed offset. A
// partition without a commit counts from its log start offset, since
// ReaderConfig starts such partitions at the first offset.
func (c *Cluster) Lag(ctx context.Context, group, topic string) (int64, error) {
	parts, err := c.offsets(ctx, topic)
	if err != nil {
		return 0, fmt.Errorf("kafkatest: lag of group %s on %s: %w", group, topic, err)
	}
	committed, err := c.CommittedOffsets(ctx, group, topic)
	if err != nil {
		return 0, fmt.Errorf("kafkatest: lag of group %s on %s: %w", group, topic, err)
	}
	var lag int64
	for p, o := range parts {
		from, ok := committed[p]
		if !ok {
			from = o.logStart
		}
		lag += max(o.highWatermark-from, 0)
	}
	return lag, nil
}

// offsets returns topic's log start offsets and high watermarks by
// partition, or fails with ErrUnknownTopic.
func (c *Cluster) offsets(ctx context.Context, topic string) (map[int]partitionOffsets, error) {
	if c.Real() {
		return c.realOffsets(ctx, topic)
	}
	parts, err := c.partitions(ctx, topic)
	if err != nil {
		return nil, err
	}
	out := make(map[int]partitionOffsets, len(parts))
	for _, p := range parts {
		out[int(p.Partition)] = partitionOffsets{logStart: p.LogStartOffset, highWatermark: p.HighWatermark}
	}
	return out, nil
}

// partitions snapshots topic's partitions, or fails with ErrUnknownTopic.
func (c *Cluster) partitions(ctx context.Context, topic string) ([]*kfake.PartitionInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var parts []*kfake.PartitionInfo
	err := c.withFake(func(f *kfake.Cluster) error {
		parts = f.PartitionInfos(topic)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("%w %q", ErrUnknownTopic, topic)
	}
	return parts, nil
}
