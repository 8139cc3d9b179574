package placement

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// Config is what the placer and the repartitioner need. Package pipeline
// builds it from its own Config (Config.placement there).
type Config struct {
	// Brokers are the Kafka bootstrap addresses, host:port. Required.
	Brokers []string
	// Dialer dials the repartitioner's readers (nil: kafka-go's default
	// dialer).
	Dialer *kafka.Dialer
	// Transport carries the placer's requests and the repartitioner's
	// writes (nil: kafka-go's default transport).
	Transport kafka.RoundTripper

	// RestaurantTopic is the topic whose placement is learnt. Required.
	RestaurantTopic string
	// Partitioner is the partitioner the restaurant topic's producer
	// places keys with, checked against the topic's last events; "" or
	// PartitionerAuto (the default) detects it from them.
	Partitioner Partitioner
	// KeyIsID says that a restaurant's key is its id itself (the native
	// format), so the key template needs no sample. Default false: the
	// template is learnt from a sampled key that names its restaurant id.
	KeyIsID bool
	// MaxEventBytes is the largest event accepted, in bytes: one sample
	// fetch reads up to twice it (at least 1 MiB), and the repartitioner
	// forwards an event over it cut to one byte over it. Default 0: no
	// limit on what is forwarded, fetches of 1 MiB.
	MaxEventBytes int

	// DishTopic is the topic the repartitioner reads. Required by
	// NewRepartitioner.
	DishTopic string
	// RepartitionTopic is the topic the repartitioner writes, with the
	// restaurant topic's partition count. Required by NewRepartitioner.
	RepartitionTopic string
	// Group is the repartitioner's consumer group: its ID (required by
	// NewRepartitioner), brokers, dialer, topics (DishTopic) and timings,
	// as the pipeline's own group has them. NewRepartitioner sets its
	// ErrorLogger.
	Group kafka.ConsumerGroupConfig
	// MaxWait bounds a dish-topic fetch's long poll. Default 0: kafka-go's
	// (10s).
	MaxWait time.Duration

	// Poll is how often a placer that waits for the placement reads what
	// the restaurant topic gained. Default 250ms.
	Poll time.Duration
	// Remind is how often a placer that waits says it still waits.
	// Default 1 minute.
	Remind time.Duration
}

// Defaults.
const (
	DefaultPoll   = 250 * time.Millisecond
	DefaultRemind = time.Minute
)

func (c Config) withDefaults() Config {
	if c.Partitioner == "" {
		c.Partitioner = PartitionerAuto
	}
	if c.Poll <= 0 {
		c.Poll = DefaultPoll
	}
	if c.Remind <= 0 {
		c.Remind = DefaultRemind
	}
	return c
}

// Validate reports every bad field at once, for the placer and the
// repartitioner both.
func (c Config) Validate() error { return c.validate(true) }

// validate reports every bad field at once; repartition adds the
// repartitioner's.
func (c Config) validate(repartition bool) error {
	var p []string
	bad := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if len(c.Brokers) == 0 {
		bad("brokers: none given; want at least one host:port")
	}
	if c.RestaurantTopic == "" {
		bad("restaurant topic: none given")
	}
	if !c.Partitioner.Valid() {
		bad("partitioner %q: want auto, murmur2, crc32, fnv1a or sarama", c.Partitioner)
	}
	if c.MaxEventBytes < 0 {
		bad("max event bytes %d: must not be negative", c.MaxEventBytes)
	}
	if c.Poll < 0 || c.Remind < 0 || c.MaxWait < 0 {
		bad("poll %v, remind %v, max wait %v: must not be negative", c.Poll, c.Remind, c.MaxWait)
	}
	if repartition {
		if c.DishTopic == "" || c.RepartitionTopic == "" {
			bad("dish topic %q, repartition topic %q: both needed to repartition", c.DishTopic, c.RepartitionTopic)
		}
		if c.Group.ID == "" {
			bad("group: no id given")
		}
	}
	if len(p) > 0 {
		return errors.New("placement: invalid config: " + strings.Join(p, "; "))
	}
	return nil
}
