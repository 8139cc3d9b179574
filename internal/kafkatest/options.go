package kafkatest

import (
	"errors"
	"fmt"
	"log/slog"
	"math"

	"github.com/geoshard/geoshard/internal/realenv"
)

// Option configures a Cluster. Options are applied in order, then the whole
// configuration is validated once; New reports every bad value together.
type Option func(*config)

// config holds every setting and its default in one place.
type config struct {
	// brokers is the number of brokers. Default 0, resolved to one broker
	// per port given to WithPorts, else 1.
	brokers int
	// ports are the loopback ports to listen on, one per broker; 0 picks a
	// free port. Default: none, every broker on a free port.
	ports []int
	// topics are created before New returns, in declaration order.
	// Default: none.
	topics []topicSpec
	// logger receives the fake broker's own log lines. Default: discard.
	logger *slog.Logger
	// inProcess asks for the in-process broker even when realenv selects
	// the real engines. Default: false, the backend realenv selects.
	inProcess bool
}

type topicSpec struct {
	name       string
	partitions int
}

// resolve fills in the defaults that depend on other settings.
func (c *config) resolve() {
	if c.brokers == 0 {
		c.brokers = max(len(c.ports), 1)
	}
}

// WithTopic creates topic with the given number of partitions when the
// cluster starts. Declaring the same topic twice is an error.
func WithTopic(topic string, partitions int) Option {
	return func(c *config) {
		c.topics = append(c.topics, topicSpec{name: topic, partitions: partitions})
	}
}

// WithBrokers sets the number of brokers, default 1. Partitions are spread
// over the brokers; kafka-go connects to each partition's leader, so more
// than one broker exercises its multi-connection paths.
func WithBrokers(n int) Option {
	return func(c *config) { c.brokers = n }
}

// WithPorts fixes the ports the brokers listen on, one port per broker; a 0
// asks the kernel for a free port. The brokers always listen on 127.0.0.1
// and nowhere else. Without WithPorts every broker gets a free port, so
// clusters in parallel tests never collide. WithPorts also sets the number
// of brokers when WithBrokers is not given.
func WithPorts(ports ...int) Option {
	return func(c *config) { c.ports = append([]int(nil), ports...) }
}

// WithLogger sends the fake broker's log lines to l at the matching level.
// Default: discarded. Pass a logger at Debug to see every request. On the
// real backend it is ignored: the real broker keeps its own log.
func WithLogger(l *slog.Logger) Option {
	return func(c *config) { c.logger = l }
}

// WithInProcess makes New start the in-process broker even when the tests
// run against the real engines (realenv.Enabled). The embedded demo mode
// uses it: its broker is part of the binary, whatever the build tags.
func WithInProcess() Option {
	return func(c *config) { c.inProcess = true }
}

// validate reports every bad setting at once. onReal says the cluster is to
// connect to the real brokers, where broker count and ports are not New's
// to choose.
func (c *config) validate(onReal bool) error {
	var errs []error
	if onReal && (c.brokers != 1 || len(c.ports) > 0) {
		errs = append(errs, fmt.Errorf("kafkatest: the real broker (realenv %s) is not started by New: WithBrokers(%d) and WithPorts(%v) cannot apply; use WithInProcess, or skip the test there with realenv.EmulatorOnly",
			realenv.KafkaBrokersVar, c.brokers, c.ports))
	}
	if c.brokers < 1 || c.brokers > maxBrokers {
		errs = append(errs, fmt.Errorf("kafkatest: brokers %d out of range [1, %d]", c.brokers, maxBrokers))
	}
	if len(c.ports) > 0 && len(c.ports) != c.brokers {
		errs = append(errs, fmt.Errorf("kafkatest: %d ports for %d brokers, want one port per broker", len(c.ports), c.brokers))
	}
	seenPort := make(map[int]bool)
	for _, p := range c.ports {
		switch {
		case p < 0 || p > math.MaxUint16:
			errs = append(errs, fmt.Errorf("kafkatest: port %d out of range [0, %d]", p, math.MaxUint16))
		case p != 0 && seenPort[p]:
			errs = append(errs, fmt.Errorf("kafkatest: port %d given twice", p))
		}
		seenPort[p] = true
	}
	seenTopic := make(map[string]bool)
	for _, t := range c.topics {
		if err := validateTopic(t.name, t.partitions); err != nil {
			errs = append(errs, err)
		}
		if seenTopic[t.name] {
			errs = append(errs, fmt.Errorf("kafkatest: topic %q declared twice", t.name))
		}
		seenTopic[t.name] = true
	}
	return errors.Join(errs...)
}

const (
	// maxBrokers bounds WithBrokers: each broker is a listener and a few
	// goroutines, and tests need no more than a handful.
	maxBrokers = 16
	// maxPartitions bounds a topic's partition count for the same reason.
	maxPartitions = 1000
)

func validateTopic(name string, partitions int) error {
	var errs []error
	if name == "" {
		errs = append(errs, errors.New("kafkatest: empty topic name"))
	}
	if partitions < 1 || partitions > maxPartitions {
		errs = append(errs, fmt.Errorf("kafkatest: topic %q: partitions %d out of range [1, %d]", name, partitions, maxPartitions))
	}
	return errors.Join(errs...)
}
