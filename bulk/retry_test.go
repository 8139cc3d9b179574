package bulk

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
)

func TestTransient(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{context.Canceled, false},
		{fmt.Errorf("search: %w", context.DeadlineExceeded), true}, // the request timed out
		{&net.OpError{Op: "dial", Err: errors.New("connection refused")}, true},
		{&APIError{Status: 429}, true},
		{fmt.Errorf("x: %w", &APIError{Status: 503}), true},
		{&APIError{Status: 500}, true},
		{&APIError{Status: 400}, false},
		{&APIError{Status: 404}, false},
		{&APIError{Status: 409}, false},
		{&EngineError{Problem: EngineUnreadable, Err: errors.New("decode response: invalid character '<'")}, false},
	} {
		if got := Transient(tc.err); got != tc.want {
			t.Errorf("Transient(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

// Transient and Classify share one rule: for every status, a request
// that failed with it is retried exactly when a bulk item that failed with
// it would be (501 and 505 are permanent for both).
func TestTransientAgreesWithClassify(t *testing.T) {
	for s := 100; s <= 599; s++ {
		item := Classify(s, "", Index, false) == ClassRetry
		if got := Transient(&APIError{Status: s}); got != item {
			t.Errorf("Transient(status %d) = %v, Classify retries an item: %v", s, got, item)
		}
	}
	for _, s := range []int{501, 505} {
		if Transient(&APIError{Status: s}) {
			t.Errorf("Transient(status %d) = true, want permanent", s)
		}
	}
}

// The ceiling doubles from Initial to Max, each delay below it.
func TestBackoffDelay(t *testing.T) {
	b := &Backoff{Initial: 10 * time.Millisecond, Max: 80 * time.Millisecond}
	for n, ceiling := range map[int]time.Duration{1: 10 * time.Millisecond, 2: 20 * time.Millisecond, 4: 80 * time.Millisecond, 9: 80 * time.Millisecond} {
		for range 200 {
			if d := b.Delay(n); d < 0 || d >= ceiling {
				t.Fatalf("Delay(%d) = %v, want in [0, %v)", n, d, ceiling)
			}
		}
	}
	if d := (&Backoff{}).Delay(3); d != 0 {
		t.Errorf("zero Backoff Delay = %v, want 0", d)
	}
}

// Retry stops at success, at an error retryable refuses, at a permanent
// one, after MaxRetries, and when ctx ends.
func TestRetry(t *testing.T) {
	ctx := context.Background()
	quick := Backoff{Initial: time.Microsecond, Max: time.Microsecond}
	calls := 0
	err := Retry(ctx, quick, Transient, nil, func() error {
		if calls++; calls < 3 {
			return &APIError{Status: 503}
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("transient twice then success: %v after %d calls, want nil after 3", err, calls)
	}
	calls = 0
	err = Retry(ctx, quick, Transient, nil, func() error { calls++; return &APIError{Status: 400} })
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 400 || calls != 1 {
		t.Errorf("a 400: %v after %d calls, want it at once", err, calls)
	}
	calls = 0
	err = Retry(ctx, quick, nil, nil, func() error { calls++; return backoff.Permanent(errors.New("no")) })
	if err == nil || err.Error() != "no" || calls != 1 {
		t.Errorf("permanent: %v after %d calls", err, calls)
	}
	calls = 0
	notified := 0
	limited := quick
	limited.MaxRetries = 4
	err = Retry(ctx, limited, nil, func(error, time.Duration) { notified++ }, func() error { calls++; return errors.New("down") })
	if err == nil || calls != 5 || notified != 4 {
		t.Errorf("MaxRetries 4: %v after %d calls, %d notified; want the error after 5 calls, 4 notices", err, calls, notified)
	}
	calls = 0
	err = Retry(ctx, quick, Transient, nil, func() error {
		if calls++; calls < 3 {
			return fmt.Errorf("refresh: %w", context.DeadlineExceeded) // the request's own timeout
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Errorf("a request timing out twice: %v after %d calls, want nil after 3", err, calls)
	}
	cctx, cancel := context.WithCancel(ctx)
	calls = 0
	err = Retry(cctx, quick, nil, nil, func() error {
		if calls++; calls == 2 {
			cancel()
		}
		return errors.New("down")
	})
	if !errors.Is(err, context.Canceled) || calls != 2 {
		t.Errorf("cancelled: %v after %d calls, want context.Canceled after 2", err, calls)
	}
}
