package migrate

import (
	"context"
	"sync"
	"time"
)

// tokenBucket limits a rate of documents shared by every slice. A page
// reserves its documents at once and waits until the bucket has refilled
// the debt, so a page larger than the burst is allowed and simply waits
// longer; waiters are served in the order they reserved.
type tokenBucket struct {
	rate  float64 // tokens per second
	burst float64

	mu     sync.Mutex
	tokens float64
	last   time.Time
	now    func() time.Time
}

// newTokenBucket returns a bucket of rate per second, or nil (no limit)
// for a rate <= 0. The bucket starts full.
func newTokenBucket(rate, burst float64) *tokenBucket {
	if rate <= 0 {
		return nil
	}
	if burst < 1 {
		burst = 1
	}
	return &tokenBucket{rate: rate, burst: burst, tokens: burst, now: time.Now}
}

// reserve takes n tokens and returns how long to wait before using them.
func (b *tokenBucket) reserve(n int) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if !b.last.IsZero() {
		b.tokens = min(b.burst, b.tokens+now.Sub(b.last).Seconds()*b.rate)
	}
	b.last = now
	b.tokens -= float64(n)
	if b.tokens >= 0 {
		return 0
	}
	return time.Duration(-b.tokens / b.rate * float64(time.Second))
}

// wait blocks until n tokens are available, or ctx ends. A nil bucket
// never waits.
func (b *tokenBucket) wait(ctx context.Context, n int) error {
	if b == nil || n <= 0 {
		return nil
	}
	d := b.reserve(n)
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
