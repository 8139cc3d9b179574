package pipeline

// The pipeline's side of re-keying dish events keyed by dish: the keying
// it is told, the placement package's config built from its own, and the
// format's reading of restaurant ids lent to it. The placer and the
// repartitioner themselves are package placement's.

import (
	"context"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/pipeline/placement"
)

// DishKey says how the dish topic's events are keyed.
type DishKey string

const (
	// DishKeyRestaurant: each dish event is keyed by its restaurant's id,
	// so it is in its restaurant's partition (a key that is not the
	// restaurant id is dead-lettered as key_mismatch).
	DishKeyRestaurant DishKey = "restaurant"
	// DishKeyDish: dish events are keyed by anything (their own id, as
	// change-data-capture tools key them); the pipeline re-keys them by
	// restaurant into the repartition topic and consumes that.
	DishKeyDish DishKey = "dish"
)

// Valid reports whether k is a known dish keying.
func (k DishKey) Valid() bool { return k == DishKeyRestaurant || k == DishKeyDish }

// DefaultRepartitionRetention is the repartition topic's retention when
// the pipeline creates it: Kafka's default, long enough to outlast an
// outage of the consuming group.
const DefaultRepartitionRetention = 7 * 24 * time.Hour

// repartitionGroup is the consumer group of the repartitioner.
func (c Config) repartitionGroup() string { return c.Group + ".repartition" }

// maxRepartitionMessage is the largest message the repartitioner writes,
// in bytes: an event of MaxEventBytes and its headers.
func (c Config) maxRepartitionMessage() int { return placement.MaxMessageBytes(c.MaxEventBytes) }

// placement is the config of the placer and the repartitioner, from c
// (with its defaults), dialing with d and t: the one place it is built.
// keyIsID says a restaurant's key is its id itself (nativeKeys).
func (c Config) placement(d *kafka.Dialer, t *kafka.Transport, keyIsID bool) placement.Config {
	return placement.Config{
		Brokers:          c.Brokers,
		Dialer:           d,
		Transport:        t,
		RestaurantTopic:  c.RestaurantTopic,
		Partitioner:      c.RestaurantPartitioner,
		KeyIsID:          keyIsID,
		MaxEventBytes:    c.MaxEventBytes,
		DishTopic:        c.DishTopic,
		RepartitionTopic: c.RepartitionTopic,
		Group:            groupConfig(c, c.repartitionGroup(), d, []string{c.DishTopic}),
		MaxWait:          c.Kafka.MaxWait,
	}
}

// nativeKeys reports whether the format of c (with its defaults) keys a
// restaurant's events by its id itself: the native format, which
// newDecoder reads unless the format is Debezium's with a mapping.
func (c Config) nativeKeys() bool { return c.Format != decode.FormatDebezium || c.Mapping == nil }

// newPlacer samples the restaurant topic under DishKeyDish and decides
// its placement if it can; nil under any other keying. keys reads the
// restaurant ids (the format's decode.Decoder); keyIsID says a key is the
// id itself. An error refuses the topic (placement/detect.go).
func newPlacer(ctx context.Context, cfg Config, log *slog.Logger, t *kafka.Transport, keys placement.Keys, keyIsID bool) (*placement.Placer, error) {
	if cfg.DishKey != DishKeyDish {
		return nil, nil
	}
	return placement.NewPlacer(ctx, cfg.placement(nil, t, keyIsID), log, keys)
}

// newRepartitioner builds the repartitioner, which reports to the
// pipeline through fail and forwarded, and runs in the pipeline's fetch
// loop.
func newRepartitioner(cfg Config, log *slog.Logger, d *kafka.Dialer, t *kafka.Transport, place *placement.Placer, fail func(error), forwarded func(n int)) (*placement.Repartitioner, error) {
	return placement.NewRepartitioner(cfg.placement(d, t, cfg.nativeKeys()), log, newDecoder(cfg), place, placement.Hooks{
		Fail:      fail,
		Forwarded: forwarded,
		Fetch: func(ctx context.Context, log *slog.Logger, r *kafka.Reader, deliver func(kafka.Message) bool) {
			fetchAll(ctx, log, nil, r, deliver)
		},
		Pause: pause,
	})
}

// A format's decoder is how package placement reads restaurant ids.
var _ placement.Keys = decode.Decoder(nil)
