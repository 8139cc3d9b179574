package migrate

import (
	"context"
	"time"

	"golang.org/x/time/rate"
)

// tokenBucket limits a rate of documents shared by every slice: a
// rate.Limiter whose burst is a page. A page reserves its documents at
// once and waits until the limiter has refilled the debt (a page larger
// than the burst reserves it burst by burst, so it is allowed and simply
// waits longer); waiters are served in the order they reserved, and a
// wait cut short by its context gives its tokens back.
type tokenBucket struct {
	lim *rate.Limiter
	// now and sleep are the clock the tokens refill by and the wait for
	// them: the Migrator's clock, in a backfill.
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

// newTokenBucket returns a bucket of rate per second, or nil (no limit)
// for a rate <= 0. The bucket starts full.
func newTokenBucket(perSecond, burst float64) *tokenBucket {
	if perSecond <= 0 {
		return nil
	}
	return &tokenBucket{lim: rate.NewLimiter(rate.Limit(perSecond), max(1, int(burst))), now: time.Now, sleep: sleep}
}

// reserveAt takes n tokens and returns how long to wait before using
// them, and the reservations to cancel if the wait is abandoned.
func (b *tokenBucket) reserveAt(n int) (time.Duration, []*rate.Reservation) {
	now := b.now()
	var d time.Duration
	var rs []*rate.Reservation
	for burst := b.lim.Burst(); n > 0; n -= burst {
		r := b.lim.ReserveN(now, min(n, burst))
		rs = append(rs, r)
		d = r.DelayFrom(now)
	}
	return d, rs
}

// reserve takes n tokens and returns how long to wait before using them.
func (b *tokenBucket) reserve(n int) time.Duration {
	d, _ := b.reserveAt(n)
	return d
}

// wait blocks until n tokens are available, or ctx ends (then the tokens
// go back). A nil bucket never waits.
func (b *tokenBucket) wait(ctx context.Context, n int) error {
	if b == nil || n <= 0 {
		return nil
	}
	d, rs := b.reserveAt(n)
	if d <= 0 {
		return nil
	}
	if err := b.sleep(ctx, d); err != nil {
		now := b.now()
		for _, r := range rs {
			r.CancelAt(now)
		}
		return err
	}
	return nil
}
