package migrate

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// fakeClock is a clock that moves only when the job waits on it: a Sleep
// of d records d and moves the clock on by d at once, then runs onSleep
// with the new time (what happens meanwhile, e.g. an ingest instance
// that applies a phase). Nothing waits in real time.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	slept   []time.Duration
	onSleep func(now time.Time)
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	now, f := c.now, c.onSleep
	c.mu.Unlock()
	if f != nil {
		f(now)
	}
	return nil
}

// sleeps are the waits asked so far, in order.
func (c *fakeClock) sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// total is the sum of the waits asked so far.
func (c *fakeClock) total() time.Duration {
	var t time.Duration
	for _, d := range c.sleeps() {
		t += d
	}
	return t
}

var _ clock = (*fakeClock)(nil)

// migratorOn is a Migrator of the env's alias whose time is c: its waits
// and its Now (timestamps, heartbeat liveness) alike.
func (e *env) migratorOn(c *fakeClock) *Migrator {
	e.t.Helper()
	m, err := New(e.client, Config{Alias: e.alias, Logger: slog.New(slog.DiscardHandler), Now: c.Now, PollInterval: 10 * time.Millisecond})
	if err != nil {
		e.t.Fatal(err)
	}
	m.clock = c
	return m
}
