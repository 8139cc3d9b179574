package kafkatest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// minGroupSessionTimeout is the smallest consumer-group session timeout the
// brokers accept. Real brokers (and kfake) default to 6 s, which would make
// every test that waits out a dead member wait 6 s; ReaderConfig asks for
// readerSessionTimeout, so the bound only has to sit below that.
const minGroupSessionTimeout = 100 * time.Millisecond

// Cluster is an in-process Kafka cluster listening on 127.0.0.1. It wraps a
// kfake.Cluster, which speaks the real wire protocol, so kafka-go and any
// other client connect to Addrs as they would to a real broker.
//
// The inspection methods (HighWatermarks, CommittedOffsets, DescribeGroup,
// …) read the fake's state in-process rather than over the wire: they see
// exactly what the broker holds, with no client cache in between.
//
// A Cluster is safe for concurrent use. After Close, every method that
// reaches the broker returns ErrClosed.
type Cluster struct {
	fake     *kfake.Cluster
	producer *kgo.Client
	addrs    []string

	nilKeys atomic.Uint64 // round-robin cursor for messages without a key
	readers atomic.Uint64 // numbers the client IDs ReaderConfig hands out

	// mu guards closed. Calls into the fake hold it for reading: a kfake
	// admin call made after kfake's Close blocks forever, so Close takes it
	// for writing to wait for in-flight calls and shut later ones out.
	mu     sync.RWMutex
	closed bool
}

// New starts a cluster configured by opts and creates the declared topics.
// The caller must Close it. Tests use Start, which closes it for them.
func New(opts ...Option) (*Cluster, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	cfg.resolve()
	if err := cfg.validate(); err != nil {
		return nil, err
	}

	kopts := []kfake.Opt{
		kfake.NumBrokers(cfg.brokers),
		kfake.ClusterID("kafkatest"),
		kfake.GroupMinSessionTimeout(minGroupSessionTimeout),
	}
	if len(cfg.ports) > 0 {
		kopts = append(kopts, kfake.Ports(cfg.ports...))
	}
	if cfg.logger != nil {
		kopts = append(kopts, kfake.WithLogger(slogAdapter{cfg.logger}))
	}
	fake, err := kfake.NewCluster(kopts...)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: start %d brokers: %w", cfg.brokers, err)
	}

	addrs := fake.ListenAddrs()
	producer, err := newProducer(addrs)
	if err != nil {
		fake.Close()
		return nil, err
	}
	c := &Cluster{fake: fake, producer: producer, addrs: addrs}

	for _, t := range cfg.topics {
		if err := c.createTopic(t.name, t.partitions); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// Close shuts the cluster down: the internal producer first, then the
// brokers, which drops every client connection. Readers still open see
// connection errors; close them before the cluster for a quiet shutdown.
// Close is idempotent.
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()

	c.producer.Close()
	c.fake.Close()
}

// Addrs returns the brokers' host:port addresses, all on 127.0.0.1, for
// kafka.ReaderConfig.Brokers, kafka.Writer.Addr (kafka.TCP(addrs...)) and
// the like. The slice is a copy.
func (c *Cluster) Addrs() []string { return slices.Clone(c.addrs) }

// Fake returns the underlying kfake cluster for what this package does not
// wrap: fault injection (Fault, ControlKey), leader moves, coordinator
// rehashing. Its methods must not be called after Close; kfake's admin calls
// block forever on a closed cluster.
func (c *Cluster) Fake() *kfake.Cluster { return c.fake }

// CreateTopic creates topic with the given number of partitions.
//
// The topic is created in-process; ctx is checked first but the call does
// not wait on any network.
func (c *Cluster) CreateTopic(ctx context.Context, topic string, partitions int) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kafkatest: create topic %s: %w", topic, err)
	}
	if err := validateTopic(topic, partitions); err != nil {
		return err
	}
	return c.createTopic(topic, partitions)
}

func (c *Cluster) createTopic(topic string, partitions int) error {
	err := c.withFake(func(f *kfake.Cluster) error {
		return f.CreateTopic(topic, int32(partitions), nil)
	})
	if err != nil {
		return fmt.Errorf("kafkatest: create topic %s with %d partitions: %w", topic, partitions, err)
	}
	return nil
}

// withFake runs fn against the fake while holding off Close.
func (c *Cluster) withFake(fn func(*kfake.Cluster) error) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return ErrClosed
	}
	return fn(c.fake)
}

// partitionCount returns how many partitions topic has.
func (c *Cluster) partitionCount(topic string) (int, error) {
	var n int
	err := c.withFake(func(f *kfake.Cluster) error {
		n = len(f.PartitionInfos(topic))
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
