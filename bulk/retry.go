package bulk

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Transient reports whether a failed call is worth trying again as it
// is: a transport error (no answer: refused, reset, timed out — the
// client's request timeout ends a request with context.DeadlineExceeded),
// or a status Classify retries for an item: 429, 500, 502, 503, 504
// (retryableStatus, the rule both apply). A cancelled context is not, nor
// is any other status, 501 and 505 among them, nor an answer that is not
// an engine's (*EngineError): the same request would get the same
// answer. Retry tells a request that timed out from a caller whose own
// context ended by asking the caller's context. It is the request-level
// counterpart of Classify, which judges one bulk item.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return retryableStatus(ae.Status)
	}
	var ee *EngineError
	return !errors.As(err, &ee)
}

// Backoff is the project's one retry schedule, a backoff.BackOff: the
// ceiling doubles from Initial up to Max with each consecutive failure,
// and each wait is drawn uniformly below it (full jitter), so clients
// that failed together do not retry together.
type Backoff struct {
	Initial, Max time.Duration
	// MaxElapsed stops the retries once this long has passed since the
	// first attempt (0: no limit); MaxRetries after this many (0: no
	// limit).
	MaxElapsed time.Duration
	MaxRetries int

	failures int
	start    time.Time
}

// Delay is the wait after the n-th consecutive failure (n >= 1): uniform
// in [0, min(Max, Initial·2^(n−1))).
func (b *Backoff) Delay(n int) time.Duration {
	ceiling := b.Initial
	for i := 1; i < n && ceiling < b.Max; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, b.Max)
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rand.Int64N(int64(ceiling)))
}

// NextBackOff implements backoff.BackOff.
func (b *Backoff) NextBackOff() time.Duration {
	if b.start.IsZero() {
		b.start = time.Now()
	}
	b.failures++
	if b.MaxRetries > 0 && b.failures > b.MaxRetries || b.MaxElapsed > 0 && time.Since(b.start) > b.MaxElapsed {
		return backoff.Stop
	}
	return b.Delay(b.failures)
}

// Reset implements backoff.BackOff.
func (b *Backoff) Reset() { b.failures, b.start = 0, time.Time{} }

var _ backoff.BackOff = (*Backoff)(nil)

// Retry calls f until it succeeds, fails with an error retryable refuses
// (nil retries every error) or wrapped by backoff.Permanent, the schedule
// gives up, or ctx ends; notify, if set, sees each failure that is
// retried and the wait before the next attempt. It returns f's last error,
// joined with ctx's when ctx ended: a call that fails with
// context.DeadlineExceeded while ctx lives timed out on its own and is
// retried if retryable says so.
func Retry(ctx context.Context, b Backoff, retryable func(error) bool, notify func(err error, wait time.Duration), f func() error) error {
	op := func() error {
		err := f()
		switch {
		case err == nil:
		case ctx.Err() != nil:
			// The caller's context ended (not a request's own timeout).
			return backoff.Permanent(errors.Join(ctx.Err(), err))
		case retryable != nil && !retryable(err):
			return backoff.Permanent(err)
		}
		return err
	}
	return backoff.RetryNotify(op, backoff.WithContext(&b, ctx), notify)
}
