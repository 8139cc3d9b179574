package pipeline

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeRefreshes is a refresh function whose calls block until released,
// and that records them.
type fakeRefreshes struct {
	mu      sync.Mutex
	started []time.Time
	calls   chan string   // each call's index, as it starts
	release chan error    // the answer of the call in flight
	active  int           // calls in flight
	overlap bool          // two calls of one index were in flight at once
	gate    chan struct{} // nil: answer at once with nil
}

func newFakeRefreshes(blocking bool) *fakeRefreshes {
	f := &fakeRefreshes{calls: make(chan string, 100), release: make(chan error)}
	if blocking {
		f.gate = make(chan struct{})
	}
	return f
}

func (f *fakeRefreshes) refresh(ctx context.Context, index string) error {
	f.mu.Lock()
	f.started = append(f.started, time.Now())
	f.active++
	if f.active > 1 {
		f.overlap = true
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.active--
		f.mu.Unlock()
	}()
	f.calls <- index
	if f.gate == nil {
		return nil
	}
	select {
	case err := <-f.release:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeRefreshes) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.started)
}

// Callers that arrive while a refresh runs share the next one: four
// callers, two refreshes; none of the three late ones returns on the
// first refresh, which may have started before their writes were
// acknowledged.
func TestRefresherSharesTheNextRound(t *testing.T) {
	var tasks sync.WaitGroup
	f := newFakeRefreshes(true)
	r := newRefresher(0, &tasks, f.refresh)
	ctx := context.Background()

	first := make(chan error, 1)
	go func() { first <- r.wait(ctx, "menu") }()
	<-f.calls // round 1 runs

	late := make(chan error, 3)
	for range 3 {
		go func() { late <- r.wait(ctx, "menu") }()
	}
	waitFor(t, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		next := r.byIndex["menu"].next
		return next != nil && next.waiters == 3
	})

	f.release <- nil
	if err := <-first; err != nil {
		t.Fatalf("first caller: %v", err)
	}
	select {
	case err := <-late:
		t.Fatalf("a late caller returned (%v) on the refresh that started before it", err)
	default:
	}
	<-f.calls // round 2 runs, for the three
	f.release <- nil
	for range 3 {
		if err := <-late; err != nil {
			t.Errorf("late caller: %v", err)
		}
	}
	tasks.Wait()
	if n := f.count(); n != 2 || r.sent.Load() != 2 {
		t.Errorf("%d refreshes (%d counted) for 4 callers in two rounds, want 2", n, r.sent.Load())
	}
	if f.overlap {
		t.Error("two refreshes of one index were in flight at once")
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 10s")
		}
		time.Sleep(time.Millisecond)
	}
}

// Rounds of one index start at least gap apart; other indexes have
// their own rounds. A round's start is the refresher's own (the time it
// spaces the next from), read by the refresh it calls, on its goroutine:
// the time the refresh itself is entered at comes later by as long as the
// scheduler likes, and would measure that.
func TestRefresherGap(t *testing.T) {
	var tasks sync.WaitGroup
	f := newFakeRefreshes(false)
	const gap = 30 * time.Millisecond
	var r *refresher
	var starts []time.Time // of the menu index's rounds, under f.mu
	r = newRefresher(gap, &tasks, func(ctx context.Context, index string) error {
		r.mu.Lock()
		q := r.byIndex[index]
		r.mu.Unlock()
		if index == "menu" {
			f.mu.Lock()
			starts = append(starts, q.last)
			f.mu.Unlock()
		}
		return f.refresh(ctx, index)
	})
	ctx := context.Background()
	for i := range 3 {
		if err := r.wait(ctx, "menu"); err != nil {
			t.Fatalf("wait %d: %v", i, err)
		}
	}
	if err := r.wait(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	tasks.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.started) != 4 || len(starts) != 3 {
		t.Fatalf("%d refreshes, %d of menu, want 4 and 3", len(f.started), len(starts))
	}
	for i := 1; i < 3; i++ {
		if d := starts[i].Sub(starts[i-1]); d < gap {
			t.Errorf("refresh %d started %v after the one before, want at least %v", i, d, gap)
		}
	}
}

// A refresh that fails is the error of every caller waiting for it; the
// next round is tried again. A caller whose context ends stops waiting.
func TestRefresherErrors(t *testing.T) {
	var tasks sync.WaitGroup
	f := newFakeRefreshes(true)
	r := newRefresher(0, &tasks, f.refresh)
	boom := errors.New("index_not_found_exception")
	got := make(chan error, 1)
	go func() { got <- r.wait(context.Background(), "menu") }()
	<-f.calls
	f.release <- boom
	if err := <-got; !errors.Is(err, boom) {
		t.Errorf("wait = %v, want the refresh's error", err)
	}
	go func() { got <- r.wait(context.Background(), "menu") }()
	<-f.calls
	f.release <- nil
	if err := <-got; err != nil {
		t.Errorf("the next round: %v, want nil", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go func() { got <- r.wait(ctx, "menu") }()
	<-f.calls
	cancel()
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait = %v, want context.Canceled", err)
	}
	tasks.Wait()
}
