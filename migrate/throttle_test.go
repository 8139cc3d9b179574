package migrate

import (
	"context"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/realenv"
)

func TestTokenBucket(t *testing.T) {
	realenv.Parallel(t)
	at := time.Unix(0, 0)
	b := newTokenBucket(100, 50)
	b.now = func() time.Time { return at }
	// Each step starts from the tokens and the clock the one before left:
	// a sequence, not cases that could run alone, so not subtests.
	for _, c := range []struct {
		advance time.Duration
		take    int
		wait    time.Duration
	}{
		{0, 50, 0},                      // the burst
		{0, 10, 100 * time.Millisecond}, // 10 in debt at 100/s
		{100 * time.Millisecond, 10, 100 * time.Millisecond}, // the debt repaid, 10 more
		{time.Hour, 20, 0},              // refilled, up to the burst only
		{0, 40, 100 * time.Millisecond}, // 30 left: 10 in debt
	} {
		at = at.Add(c.advance)
		if got := b.reserve(c.take); got != c.wait {
			t.Errorf("after %v, reserve(%d) = %v, want %v", c.advance, c.take, got, c.wait)
		}
	}
	if newTokenBucket(0, 10) != nil {
		t.Errorf("a rate of 0 makes a bucket; want none (no limit)")
	}
	var none *tokenBucket
	if err := none.wait(context.Background(), 1e9); err != nil {
		t.Errorf("nil bucket waits: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := newTokenBucket(1, 1).wait(ctx, 100); err == nil {
		t.Errorf("wait ignored a cancelled context")
	}
}

// --max-docs-per-second bounds the copy rate: every document copied
// takes a token, and the backfill waits for the tokens the bucket lacks.
// On a clock that moves only by those waits, they add up to the
// documents beyond the first page (the bucket starts full, with a page)
// at the rate, and none is longer than a page's worth. One slice, so
// that the waits follow one another.
func TestBackfillThrottled(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 200)
	ctx := context.Background()
	e.dualWriting(t)
	c := &fakeClock{now: time.Now()}
	m := e.migratorOn(c)
	n := e.docs.live()
	const rate, page = 4000, 100
	rep, err := m.Backfill(ctx, BackfillConfig{Slices: 1, Page: page, MaxDocsPerSecond: rate})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied != int64(n) {
		t.Errorf("copied %d documents, want %d", rep.Copied, n)
	}
	// The limiter computes in float seconds: a wait may be off by a
	// nanosecond.
	waits := c.sleeps()
	slack := time.Duration(len(waits)) * time.Nanosecond
	perPage := time.Duration(page) * time.Second / rate
	for i, d := range waits {
		if d <= 0 || d > perPage+slack {
			t.Errorf("wait %d of %d: %v, want in (0, %v] (at most one page at %d/s)", i+1, len(waits), d, perPage, rate)
		}
	}
	want := time.Duration(n-page) * time.Second / rate
	if got := c.total(); got < want-slack || got > want+slack {
		t.Errorf("the throttle waited %v in all (%d waits) for %d documents at %d/s; want %v (all but the first page)", got, len(waits), n, rate, want)
	}
}
