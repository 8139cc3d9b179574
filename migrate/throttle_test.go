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

// --max-docs-per-second bounds the copy rate.
func TestBackfillThrottled(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 200)
	ctx := context.Background()
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.DualWrites(ctx, AckConfig{}); err != nil {
		t.Fatal(err)
	}
	n := e.docs.live()
	const rate, page = 4000, 100
	start := time.Now()
	rep, err := e.m.Backfill(ctx, BackfillConfig{Page: page, MaxDocsPerSecond: rate})
	if err != nil {
		t.Fatal(err)
	}
	// The bucket starts with one page; the rest comes at the rate.
	min := time.Duration(float64(n-page) / rate * float64(time.Second))
	if took := time.Since(start); took < min || rep.Copied != int64(n) {
		t.Errorf("copied %d documents in %v at %d/s; want %d in at least %v", rep.Copied, took, rate, n, min)
	}
}
