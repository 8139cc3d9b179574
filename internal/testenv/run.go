package testenv

import (
	"context"
	"testing"
	"time"
)

// stopWait bounds how long a cancelled run may take to return.
const stopWait = 30 * time.Second

// Running is a run (a pipeline's Run, in the tests that start one) on a
// goroutine of its own until its context is cancelled. The test's cleanup
// cancels it and waits for it, so a test that fails half-way leaves
// nothing running.
type Running struct {
	cancel context.CancelFunc
	// done holds run's error once it has returned; whoever takes it puts
	// it back, so that every later reader (the cleanup too) sees it.
	done chan error
}

// Go starts run and registers its stop with t's cleanup.
func Go(t testing.TB, run func(context.Context) error) *Running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Running{cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-r.done:
		case <-time.After(stopWait):
			t.Errorf("Run did not return within %v of its cancel", stopWait)
		}
	})
	return r
}

// Stop cancels the run and returns its error once it has returned.
func (r *Running) Stop(t testing.TB) error {
	t.Helper()
	r.cancel()
	return r.wait(t, stopWait, "of its cancel")
}

// Wait waits for the run to return by itself and returns its error.
func (r *Running) Wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	return r.wait(t, timeout, "")
}

func (r *Running) wait(t testing.TB, timeout time.Duration, after string) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err
		return err
	case <-time.After(timeout):
		t.Fatalf("Run did not return within %v %s", timeout, after)
		return nil
	}
}

// Exited returns the run's error if it has returned by itself.
func (r *Running) Exited() (error, bool) {
	select {
	case err := <-r.done:
		r.done <- err
		return err, true
	default:
		return nil, false
	}
}
