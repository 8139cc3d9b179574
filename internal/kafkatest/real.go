package kafkatest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The real backend: a Cluster connected to brokers it did not start
// (realenv.KafkaBrokers). Produce goes through the same kgo client as
// in-process; everything the in-process backend reads from kfake's state is
// asked over the wire here, through a kadm admin client.

const (
	// realSetupTimeout bounds what New does on the real broker: reading
	// its group settings and creating the declared topics.
	realSetupTimeout = 60 * time.Second
	// realCloseTimeout bounds Close's deletion of the topics it created.
	realCloseTimeout = 15 * time.Second
	// topicPollInterval is how often CreateTopic looks at a new topic's
	// metadata while waiting for its leaders.
	topicPollInterval = 50 * time.Millisecond
	// defaultBrokerMinSession is Kafka's default
	// group.min.session.timeout.ms, assumed when the broker does not say.
	defaultBrokerMinSession = 6 * time.Second
	// retryBackoff is the pause before an inspection call that met a
	// retriable error is tried again.
	retryBackoff = 50 * time.Millisecond
)

// newAdmin builds the admin client of the real backend. kadm answers many
// calls from kgo's metadata cache, which keeps an entry (an unknown topic
// included) for MetadataMinAge, 5 s by default; the smallest age kgo
// allows makes every inspection see the broker's current topics.
func newAdmin(addrs []string) (*kadm.Client, error) {
	adm, err := kadm.NewOptClient(
		kgo.SeedBrokers(addrs...),
		kgo.ClientID("kafkatest-admin"),
		kgo.MetadataMinAge(10*time.Millisecond),
	)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: new admin client for %v: %w", addrs, err)
	}
	return adm, nil
}

// withAdmin runs fn against the admin client while holding off Close.
func (c *Cluster) withAdmin(fn func(*kadm.Client) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return ErrClosed
	}
	return fn(c.adm)
}

// retryAdmin is withAdmin, tried again while fn fails with a retriable
// Kafka error, until ctx ends. A real broker answers so for a moment where
// kfake never does: the first group call on a fresh broker meets
// COORDINATOR_NOT_AVAILABLE while the offsets topic is being created, and
// a coordinator or leader can be loading or moving.
func (c *Cluster) retryAdmin(ctx context.Context, fn func(*kadm.Client) error) error {
	for {
		err := c.withAdmin(fn)
		if err == nil || !kerr.IsRetriable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(retryBackoff):
		}
	}
}

// brokerSettings lists the brokers of the cluster (its metadata's, every
// one registered, not only the addresses given) and asks each for
// group.min.session.timeout.ms: it returns how many brokers there are and
// the largest minimum session, or Kafka's default when no broker answers
// with one.
func brokerSettings(ctx context.Context, adm *kadm.Client) (brokerCount int, minSession time.Duration, err error) {
	brokers, err := adm.ListBrokers(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("kafkatest: list brokers: %w", err)
	}
	configs, err := adm.DescribeBrokerConfigs(ctx, brokers.NodeIDs()...)
	if err != nil {
		return 0, 0, fmt.Errorf("kafkatest: describe broker configs: %w", err)
	}
	for _, rc := range configs {
		for _, cfg := range rc.Configs {
			if cfg.Key != "group.min.session.timeout.ms" {
				continue
			}
			if ms, err := strconv.ParseInt(cfg.MaybeValue(), 10, 64); err == nil {
				minSession = max(minSession, time.Duration(ms)*time.Millisecond)
			}
		}
	}
	if minSession == 0 {
		minSession = defaultBrokerMinSession
	}
	return len(brokers), minSession, nil
}

// createRealTopic creates topic on the real brokers, with c.replicas
// replicas of each partition, and waits until every partition has a leader
// that answers ListOffsets and enough replicas in sync for a write with
// acks=all. A topic that was created is deleted by Close even when the wait
// fails.
func (c *Cluster) createRealTopic(ctx context.Context, topic string, partitions int) error {
	err := c.withAdmin(func(adm *kadm.Client) error {
		resp, err := adm.CreateTopic(ctx, int32(partitions), int16(c.replicas), nil, topic)
		if err != nil {
			if resp.ErrMessage != "" {
				err = fmt.Errorf("%w (%s)", err, resp.ErrMessage)
			}
			return err
		}
		c.createdMu.Lock()
		c.created = append(c.created, topic)
		c.createdMu.Unlock()
		return nil
	})
	if err != nil {
		return err
	}
	return c.waitTopicReady(ctx, topic, partitions)
}

// waitTopicReady polls until topic's metadata shows partitions partitions,
// each with a leader and, on a cluster, at least two replicas in sync (the
// brokers' min.insync.replicas), and the leaders list their offsets. The
// last check matters on a KRaft broker, whose metadata can name it leader
// a moment before its log is ready to answer for the partition.
func (c *Cluster) waitTopicReady(ctx context.Context, topic string, partitions int) error {
	ticker := time.NewTicker(topicPollInterval)
	defer ticker.Stop()
	var last error
	for {
		last = c.withAdmin(func(adm *kadm.Client) error {
			md, err := adm.Metadata(ctx, topic)
			if err != nil {
				return err
			}
			td, ok := md.Topics[topic]
			switch {
			case !ok:
				return errors.New("not in metadata")
			case td.Err != nil:
				return td.Err
			case len(td.Partitions) != partitions:
				return fmt.Errorf("metadata shows %d of %d partitions", len(td.Partitions), partitions)
			}
			inSync := min(c.replicas, 2)
			for _, p := range td.Partitions {
				if p.Err != nil || p.Leader < 0 {
					return fmt.Errorf("partition %d: leader %d (%v)", p.Partition, p.Leader, p.Err)
				}
				if len(p.ISR) < inSync {
					return fmt.Errorf("partition %d: %d of %d replicas in sync", p.Partition, len(p.ISR), len(p.Replicas))
				}
			}
			ends, err := adm.ListEndOffsets(ctx, topic)
			if err != nil {
				return err
			}
			if err := ends.Error(); err != nil {
				return err
			}
			if n := len(ends[topic]); n != partitions {
				return fmt.Errorf("offsets listed for %d of %d partitions", n, partitions)
			}
			return nil
		})
		if last == nil || errors.Is(last, ErrClosed) {
			return last
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for leaders: %w (last: %v)", ctx.Err(), last)
		case <-ticker.C:
		}
	}
}

// deleteCreated deletes, best effort, the topics this Cluster created. It
// runs after Close has shut other calls out.
func (c *Cluster) deleteCreated() {
	c.createdMu.Lock()
	topics := slices.Clone(c.created)
	c.createdMu.Unlock()
	if len(topics) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), realCloseTimeout)
	defer cancel()
	c.adm.DeleteTopics(ctx, topics...) //nolint:errcheck // best effort: the names are unique to the run
}

// realPartitionCount returns how many partitions topic has on the broker.
func (c *Cluster) realPartitionCount(ctx context.Context, topic string) (int, error) {
	var n int
	err := c.retryAdmin(ctx, func(adm *kadm.Client) error {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err
		}
		td, ok := md.Topics[topic]
		switch {
		case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
			return fmt.Errorf("%w %q", ErrUnknownTopic, topic)
		case td.Err != nil:
			return td.Err
		}
		n = len(td.Partitions)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, fmt.Errorf("%w %q", ErrUnknownTopic, topic)
	}
	return n, nil
}

// partitionOffsets is one partition's log start and high watermark.
type partitionOffsets struct {
	logStart, highWatermark int64
}

// realOffsets lists topic's log start offsets and high watermarks, or fails
// with ErrUnknownTopic.
func (c *Cluster) realOffsets(ctx context.Context, topic string) (map[int]partitionOffsets, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out map[int]partitionOffsets
	err := c.retryAdmin(ctx, func(adm *kadm.Client) error {
		out = make(map[int]partitionOffsets)
		starts, err := adm.ListStartOffsets(ctx, topic)
		if err != nil {
			return err
		}
		ends, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			return err
		}
		for _, listed := range []kadm.ListedOffsets{starts, ends} {
			for _, o := range listed[topic] {
				if errors.Is(o.Err, kerr.UnknownTopicOrPartition) && o.Partition < 0 {
					return fmt.Errorf("%w %q", ErrUnknownTopic, topic)
				}
				if o.Err != nil {
					return fmt.Errorf("partition %d: %w", o.Partition, o.Err)
				}
			}
		}
		for p, o := range ends[topic] {
			s, ok := starts[topic][p]
			if !ok {
				return fmt.Errorf("partition %d: no log start offset listed", p)
			}
			out[int(p)] = partitionOffsets{logStart: s.Offset, highWatermark: o.Offset}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w %q", ErrUnknownTopic, topic)
	}
	return out, nil
}

// realCommitted fetches group's committed offsets on topic. A group the
// coordinator does not know has no commits.
func (c *Cluster) realCommitted(ctx context.Context, group, topic string) (map[int]int64, error) {
	var out map[int]int64
	err := c.retryAdmin(ctx, func(adm *kadm.Client) error {
		out = make(map[int]int64)
		resps, err := adm.FetchOffsets(ctx, group)
		if errors.Is(err, kerr.GroupIDNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		for p, r := range resps[topic] {
			if r.Err != nil {
				return fmt.Errorf("partition %d: %w", p, r.Err)
			}
			if r.At >= 0 { // -1: no commit
				out[int(p)] = r.At
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// realGroup describes group with DescribeGroups. That response carries no
// generation, so Generation is -1. A group the coordinator does not know
// (GROUP_ID_NOT_FOUND from DescribeGroups v6, Kafka 4.0+, or state "Dead"
// from earlier versions) is reported as state "Dead", as in-process.
func (c *Cluster) realGroup(ctx context.Context, group string) (Group, error) {
	var g Group
	err := c.retryAdmin(ctx, func(adm *kadm.Client) error {
		g = Group{Name: group, State: "Dead", Generation: -1}
		described, err := adm.DescribeGroups(ctx, group)
		if err != nil {
			return err
		}
		d, ok := described[group]
		if !ok || errors.Is(d.Err, kerr.GroupIDNotFound) {
			return nil
		}
		if d.Err != nil {
			if d.ErrMessage != "" {
				return fmt.Errorf("%w (%s)", d.Err, d.ErrMessage)
			}
			return d.Err
		}
		g.State = d.State
		for _, m := range d.Members {
			mm := Member{MemberID: m.MemberID, ClientID: m.ClientID, Partitions: make(map[string][]int)}
			if a, ok := m.Assigned.AsConsumer(); ok {
				for _, t := range a.Topics {
					if len(t.Partitions) == 0 {
						continue
					}
					ids := make([]int, len(t.Partitions))
					for i, p := range t.Partitions {
						ids[i] = int(p)
					}
					slices.Sort(ids)
					mm.Partitions[t.Topic] = ids
				}
			}
			g.Members = append(g.Members, mm)
		}
		slices.SortFunc(g.Members, func(a, b Member) int { return cmp.Compare(a.MemberID, b.MemberID) })
		return nil
	})
	if err != nil {
		return Group{}, err
	}
	return g, nil
}
