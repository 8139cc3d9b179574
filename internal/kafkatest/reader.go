package kafkatest

import (
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"
)

// Reader settings for tests. kafka-go's defaults suit a production cluster
// (a 10 s fetch wait, a 30 s session, 5 s between failed joins) and would
// make every rebalance in a test take tens of seconds.
const (
	// readerMaxWait bounds a fetch's long poll. A rebalance waits for every
	// fetch in flight to return, so it is also the floor on how fast a
	// member can leave a generation.
	readerMaxWait = 200 * time.Millisecond
	// readerHeartbeat is how often a member heartbeats; a member learns of
	// a rebalance from its next heartbeat's answer.
	readerHeartbeat = 200 * time.Millisecond
	// readerSessionTimeout is how long the coordinator keeps a silent
	// member before evicting it: 15 heartbeats, generous enough for the
	// race detector on two cores. Readers that Close leave at once and do
	// not wait for it. On the real backend ReaderConfig raises it to the
	// broker's group.min.session.timeout.ms (6 s by default) when that is
	// larger, since the broker refuses a JoinGroup below it.
	readerSessionTimeout = 3 * time.Second
	// readerRebalanceTimeout is how long the coordinator waits for known
	// members to rejoin during a rebalance before dropping them.
	readerRebalanceTimeout = 5 * time.Second
	// readerJoinBackoff is the pause after a failed JoinGroup.
	readerJoinBackoff = 200 * time.Millisecond
	// readerDialTimeout bounds each connection attempt.
	readerDialTimeout = 5 * time.Second
)

// ReaderConfig returns a kafka-go consumer-group reader configuration for
// group on topic, tuned so tests run in seconds:
//
//   - CommitInterval 0: CommitMessages commits synchronously and returns
//     the broker's answer, so a test knows what is committed.
//   - StartOffset FirstOffset: a partition with no commit is read from its
//     start.
//   - MinBytes 1 and MaxWait 200ms: a fetch returns as soon as one message
//     is there, and never holds up a rebalance for long.
//   - Heartbeat 200ms, session 3s, rebalance 5s, join backoff 200ms:
//     rebalances settle in well under a second when members behave. On the
//     real backend the session is the broker's minimum when that is above
//     3s (New reads group.min.session.timeout.ms from the brokers).
//   - A client ID unique within the cluster ("kafkatest-reader-N"), so
//     DescribeGroup's members can be matched to readers.
//
// Change any field before passing it to kafka.NewReader.
func (c *Cluster) ReaderConfig(group, topic string) kafka.ReaderConfig {
	n := c.readers.Add(1)
	return kafka.ReaderConfig{
		Brokers: c.Addrs(),
		GroupID: group,
		Topic:   topic,
		Dialer: &kafka.Dialer{
			ClientID: fmt.Sprintf("kafkatest-reader-%d", n),
			Timeout:  readerDialTimeout,
		},
		MinBytes:          1,
		MaxBytes:          1 << 20,
		MaxWait:           readerMaxWait,
		ReadLagInterval:   -1,
		HeartbeatInterval: readerHeartbeat,
		CommitInterval:    0,
		SessionTimeout:    c.sessionTimeout,
		RebalanceTimeout:  readerRebalanceTimeout,
		JoinGroupBackoff:  readerJoinBackoff,
		StartOffset:       kafka.FirstOffset,
		ReadBackoffMin:    20 * time.Millisecond,
		ReadBackoffMax:    200 * time.Millisecond,
	}
}

// NewReader returns a kafka-go reader in group on topic with ReaderConfig's
// settings. The caller must Close it, before closing the cluster for a
// quiet shutdown. Closing a reader leaves the group at once; a new reader
// with the same group resumes from the committed offsets.
func (c *Cluster) NewReader(group, topic string) *kafka.Reader {
	return kafka.NewReader(c.ReaderConfig(group, topic))
}
