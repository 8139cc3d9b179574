package kafkatest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// minGroupSessionTimeout is the smallest consumer-group session timeout the
// brokers accept. Real brokers (and kfake) default to 6 s, which would make
// every test that waits out a dead member wait 6 s; ReaderConfig asks for
// readerSessionTimeout, so the bound only has to sit below that.
const minGroupSessionTimeout = 100 * time.Millisecond

// Cluster is a Kafka cluster for tests: in-process by default, or the real
// brokers of realenv when the tests run against the real engines (see
// New).
//
// In-process it wraps a kfake.Cluster listening on 127.0.0.1, which speaks
// the real wire protocol, so kafka-go and any other client connect to Addrs
// as they would to a real broker. The inspection methods (HighWatermarks,
// CommittedOffsets, DescribeGroup, …) then read the fake's state
// in-process rather than over the wire: they see exactly what the broker
// holds, with no client cache in between. On the real backend they ask the
// brokers with admin requests (see the package documentation for where the
// two differ).
//
// A Cluster is safe for concurrent use. After Close, every method that
// reaches the broker returns ErrClosed.
type Cluster struct {
	fake     *kfake.Cluster // nil on the real backend
	adm      *kadm.Client   // nil in-process
	producer *kgo.Client
	addrs    []string

	// sessionTimeout is the SessionTimeout ReaderConfig asks for: the
	// broker must accept it (see readerSessionTimeout).
	sessionTimeout time.Duration

	// brokers is how many brokers the cluster has: those started
	// in-process, or those the real cluster's metadata lists.
	brokers int
	// replicas is the replication factor of the topics c creates on the
	// real backend: realenv.TopicReplicas(brokers).
	replicas int

	nilKeys atomic.Uint64 // round-robin cursor for messages without a key
	readers atomic.Uint64 // numbers the client IDs ReaderConfig hands out

	// mu guards closed. Calls into the fake or the admin client hold it
	// for reading: a kfake admin call made after kfake's Close blocks
	// forever, so Close takes it for writing to wait for in-flight calls
	// and shut later ones out.
	mu     sync.RWMutex
	closed bool

	// created are the topics this Cluster created on the real backend,
	// which Close deletes.
	createdMu sync.Mutex
	created   []string
}

// New starts a cluster configured by opts and creates the declared topics.
// The caller must Close it. Tests use Start, which closes it for them.
//
// The backend is the in-process kfake broker, unless realenv.Enabled()
// (the realcluster build tag): then New connects to realenv.KafkaBrokers()
// instead, and WithInProcess is the way to get the in-process broker all
// the same. On the real backend WithBrokers(n) for n other than 1 and
// WithPorts are errors, since they describe brokers New would start, and
// WithLogger is ignored: the broker logs on its own side.
func New(opts ...Option) (*Cluster, error) {
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	cfg.resolve()
	useReal := realenv.Enabled() && !cfg.inProcess
	if err := cfg.validate(useReal); err != nil {
		return nil, err
	}
	if useReal {
		return newReal(cfg, realenv.KafkaBrokers())
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
	c := &Cluster{fake: fake, producer: producer, addrs: addrs, sessionTimeout: readerSessionTimeout,
		brokers: cfg.brokers, replicas: 1}

	for _, t := range cfg.topics {
		if err := c.createTopic(context.Background(), t.name, t.partitions); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, nil
}

// newReal connects to the real brokers at addrs, reads how many brokers
// the cluster has and the smallest session timeout they accept, and
// creates the declared topics.
func newReal(cfg config, addrs []string) (*Cluster, error) {
	producer, err := newProducer(addrs)
	if err != nil {
		return nil, err
	}
	adm, err := newAdmin(addrs)
	if err != nil {
		producer.Close()
		return nil, err
	}
	c := &Cluster{adm: adm, producer: producer, addrs: addrs}

	ctx, cancel := context.WithTimeout(context.Background(), realSetupTimeout)
	defer cancel()
	brokers, minSession, err := brokerSettings(ctx, adm)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("kafkatest: connect to %v: %w", addrs, err)
	}
	c.sessionTimeout = max(readerSessionTimeout, minSession)
	c.brokers = max(brokers, 1)
	c.replicas = realenv.TopicReplicas(c.brokers)

	for _, t := range cfg.topics {
		if err := c.createTopic(ctx, t.name, t.partitions); err != nil {
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
//
// On the real backend Close leaves the brokers running: it deletes the
// topics this Cluster created (best effort; consumer groups and their
// offsets stay, until the broker expires them) and closes its clients.
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	c.mu.Unlock()

	c.producer.Close()
	if c.fake != nil {
		c.fake.Close()
		return
	}
	c.deleteCreated()
	c.adm.Close()
}

// Addrs returns the brokers' host:port addresses for
// kafka.ReaderConfig.Brokers, kafka.Writer.Addr (kafka.TCP(addrs...)) and
// the like: all on 127.0.0.1 in-process, realenv.KafkaBrokers() on the
// real backend. The slice is a copy.
func (c *Cluster) Addrs() []string { return slices.Clone(c.addrs) }

// Fake returns the underlying kfake cluster for what this package does not
// wrap: fault injection (Fault, ControlKey), leader moves, coordinator
// rehashing. Its methods must not be called after Close; kfake's admin calls
// block forever on a closed cluster.
//
// It is nil on the real backend; a test that needs it skips there with
// realenv.EmulatorOnly.
func (c *Cluster) Fake() *kfake.Cluster { return c.fake }

// Real reports whether c is connected to real brokers (realenv) rather
// than running in-process.
func (c *Cluster) Real() bool { return c.fake == nil }

// Brokers is how many brokers the cluster has: those New started
// in-process, or on the real backend those its metadata lists when New
// connected (three in real.sh's cluster profile).
func (c *Cluster) Brokers() int { return c.brokers }

// Replicas is the replication factor of the topics CreateTopic and
// WithTopic create: min(3, Brokers()) on the real backend, so that a
// cluster requiring two replicas in sync (min.insync.replicas=2) takes
// writes with acks=all; 1 in-process, where kfake keeps one copy anyway.
func (c *Cluster) Replicas() int { return c.replicas }

// CreateTopic creates topic with the given number of partitions. Creating
// a topic that exists is an error.
//
// In-process the topic is created in-process; ctx is checked first but the
// call does not wait on any network. On the real backend the topic is
// created with exactly this name and Replicas() replicas, and CreateTopic
// returns once every partition has a leader that answers for it and
// enough replicas in sync for a write with acks=all; Close deletes it.
func (c *Cluster) CreateTopic(ctx context.Context, topic string, partitions int) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("kafkatest: create topic %s: %w", topic, err)
	}
	if err := validateTopic(topic, partitions); err != nil {
		return err
	}
	return c.createTopic(ctx, topic, partitions)
}

func (c *Cluster) createTopic(ctx context.Context, topic string, partitions int) error {
	var err error
	if c.Real() {
		err = c.createRealTopic(ctx, topic, partitions)
	} else {
		err = c.withFake(func(f *kfake.Cluster) error {
			return f.CreateTopic(topic, int32(partitions), nil)
		})
	}
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
func (c *Cluster) partitionCount(ctx context.Context, topic string) (int, error) {
	if c.Real() {
		return c.realPartitionCount(ctx, topic)
	}
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
