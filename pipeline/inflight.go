package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
)

// inflight is the indexer's account of what is in flight, as the
// indexer's contract describes it (indexer.go): the restaurants with work
// outstanding (rests, loop-owned), the count of each restaurant's events
// whose writes are not all answered (flights, under flightMu: raised by
// the loop, lowered by writer callbacks), the functions waiting for a
// restaurant to be quiet, the tasks running, and the inbox through which
// callbacks and tasks hand work back to the loop. It decides nothing: the
// indexer's decisions use it.
type inflight struct {
	// gen is the consumer-group generation the loop decides in (0 before
	// the first); ended is the member's latest ended generation (nil: none
	// ends, as in tests that run no group). See indexer_fence.go.
	gen   int64
	ended *atomic.Int64
	// genCtx ends when gen does: the tasks started in it run under it.
	genCtx    context.Context
	cancelGen context.CancelFunc
	// landed is the latest generation whose fence has landed (indexer_fence.go).
	landed int64

	rests     map[string]*restState
	flightMu  sync.Mutex
	flights   map[string]int // per restaurant: events with writes not all answered
	quietFns  map[string]func(context.Context) error
	inFlight  int         // the sum of flights
	quiescing atomic.Bool // a quiesce waits: wake it when inFlight reaches 0
	inbox     inbox
	tasks     sync.WaitGroup
	tasksOn   atomic.Int64 // tasks started whose end is not posted yet
}

func newInflight() inflight {
	return inflight{
		rests:    make(map[string]*restState),
		flights:  make(map[string]int),
		quietFns: make(map[string]func(context.Context) error),
		inbox:    inbox{wake: make(chan struct{}, 1)},
	}
}

// rest returns the state of restaurant rid, creating it.
func (f *inflight) rest(rid string) *restState {
	rs := f.rests[rid]
	if rs == nil {
		rs = &restState{}
		f.rests[rid] = rs
	}
	return rs
}

// settle drops the state of a restaurant with nothing outstanding.
func (f *inflight) settle(rid string) {
	if rs := f.rests[rid]; rs != nil && !rs.held && len(rs.queue) == 0 && len(rs.chain) == 0 {
		delete(f.rests, rid)
	}
}

// whenQuiet holds restaurant rid and runs fn on the loop once every
// write of rid added so far is answered: now, if none is in flight. fn
// (or what it starts) ends the hold with unhold.
//
// A fn left waiting when the generation ends never runs (indexer_fence.go).
func (f *inflight) whenQuiet(ctx context.Context, rid string, fn func(context.Context) error) error {
	f.rest(rid).held = true
	f.flightMu.Lock()
	if f.flights[rid] > 0 {
		f.quietFns[rid] = f.inGen(fn)
		f.flightMu.Unlock()
		return nil
	}
	f.flightMu.Unlock()
	return fn(ctx)
}

// fly counts an event's writes, about to be added, as in flight for its
// restaurant. An event flies once.
func (f *inflight) fly(ev *event) {
	if ev.flying {
		return
	}
	ev.flying = true
	f.flightMu.Lock()
	f.flights[ev.rid]++
	f.inFlight++
	f.flightMu.Unlock()
}

// land is fly's end, once every write of the event is answered: a
// restaurant that falls quiet runs the function waiting for it.
//
// An event of an ended generation no longer counts: the fence dropped
// the generation's accounting whole (indexer_fence.go).
func (f *inflight) land(ev *event) {
	if !ev.flying {
		return
	}
	f.flightMu.Lock()
	if f.fenced(ev.gen) {
		f.flightMu.Unlock()
		return
	}
	n := f.flights[ev.rid] - 1
	var fn func(context.Context) error
	if n == 0 {
		delete(f.flights, ev.rid)
		fn = f.quietFns[ev.rid]
		delete(f.quietFns, ev.rid)
	} else {
		f.flights[ev.rid] = n
	}
	f.inFlight--
	wake := f.inFlight == 0 && f.quiescing.Load()
	f.flightMu.Unlock()
	switch {
	case fn != nil:
		f.inbox.post(fn)
	case wake:
		f.inbox.post(nil)
	}
}

// goTask runs a task on its own goroutine; the function it returns is
// run on the loop. The task runs under the generation's context: when
// the generation ends it is cancelled, and its end never runs (indexer_fence.go).
func (f *inflight) goTask(ctx context.Context, task func(context.Context) func(context.Context) error) {
	f.tasks.Add(1)
	f.tasksOn.Add(1)
	tctx, cancel := ctx, context.CancelFunc(func() {})
	if f.genCtx != nil {
		tctx, cancel = mergeDone(ctx, f.genCtx)
	}
	go func() {
		defer f.tasks.Done()
		end := task(tctx)
		cancel()
		f.tasksOn.Add(-1)
		f.inbox.post(f.inGen(end))
	}()
}

// poll runs what callbacks and tasks posted, in order.
func (f *inflight) poll(ctx context.Context) error {
	for _, fn := range f.inbox.take() {
		if fn == nil {
			continue
		}
		if err := fn(ctx); err != nil {
			return err
		}
	}
	return nil
}

// idle reports whether nothing is in flight: no write unanswered, no
// task, no restaurant held or with a chain, nothing posted.
func (f *inflight) idle() bool {
	if len(f.rests) > 0 || f.tasksOn.Load() > 0 || f.inbox.len() > 0 {
		return false
	}
	f.flightMu.Lock()
	defer f.flightMu.Unlock()
	return f.inFlight == 0
}

// quiesce runs the inbox until nothing is in flight. The loop takes no
// new event meanwhile; events queued behind held restaurants are decided
// as their holds end.
//
// It returns errGenerationEnded once the generation has ended: what is in
// flight then will never be idle (the fence drops the continuations that
// would end it), and landing it is the fence's (indexer.quiesce).
func (f *inflight) quiesce(ctx context.Context) error {
	f.quiescing.Store(true)
	defer f.quiescing.Store(false)
	for {
		if f.fenced(f.gen) {
			return errGenerationEnded
		}
		if err := f.poll(ctx); err != nil {
			return err
		}
		if f.idle() {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.inbox.wake:
		}
	}
}

// inbox is the loop's queue of functions posted by writer callbacks and
// tasks. It is unbounded: posting never waits.
type inbox struct {
	mu   sync.Mutex
	fns  []func(context.Context) error
	wake chan struct{} // holds a token while fns may be non-empty
}

// post queues fn (nil only wakes the loop).
func (b *inbox) post(fn func(context.Context) error) {
	b.mu.Lock()
	b.fns = append(b.fns, fn)
	b.mu.Unlock()
	select {
	case b.wake <- struct{}{}:
	default:
	}
}

// take returns and clears what is queued.
func (b *inbox) take() []func(context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	fns := b.fns
	b.fns = nil
	return fns
}

func (b *inbox) len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.fns)
}
