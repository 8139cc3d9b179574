package deadletter

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/segmentio/kafka-go"
)

// DefaultClockMargin is Config.ClockMargin's default.
const DefaultClockMargin = 5 * time.Minute

// Config is what Once needs to know.
type Config struct {
	// Topic is the dead-letter topic. Required when Client is set.
	Topic string
	// EventTopics are the topics the member reads events from directly
	// (the restaurant and dish topics, or the repartition topic in place
	// of the dish topic). A dead letter read back that names another
	// topic is a repartitioned event's. No default.
	EventTopics []string
	// ClockMargin is how far before the timestamp of the event at the
	// committed offset (or a parked dish's parking time) the read-back of
	// the dead-letter topic starts: the skew allowed between the clocks of
	// the events' producers and of ingest. Default DefaultClockMargin
	// (5 minutes).
	ClockMargin time.Duration
	// Client reads the dead-letter topic and the event topics back. Nil:
	// nothing is read back, and only the member's own dead letters are
	// known.
	Client *kafka.Client
	// Logger receives the read-back's logs. Default slog.Default().
	Logger *slog.Logger
}

// Validate returns every bad field at once.
func (c Config) Validate() error {
	var errs []error
	if c.Client != nil && c.Topic == "" {
		errs = append(errs, errors.New("deadletter: topic: required to read dead letters back"))
	}
	if c.ClockMargin < 0 {
		errs = append(errs, fmt.Errorf("deadletter: clock margin %v: must not be negative", c.ClockMargin))
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.ClockMargin == 0 {
		c.ClockMargin = DefaultClockMargin
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}
