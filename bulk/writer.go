package bulk

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"sync"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"golang.org/x/sync/errgroup"
)

// Writer batches items per shard and writes them with _bulk. Its methods
// are safe for concurrent use.
//
// # State and invariants
//
// Everything below mu is guarded by it. An entry (an added item, with the
// older versions of its document coalesced into it as followers) is in
// exactly one place at any moment:
//
//   - pending in its lane (queued, or back at the front for a retry), or
//   - in flight, in the one batch its lane is sending, or
//   - finished: removed by finishLocked, its result handed to deliver.
//
// The budgets conserve: bufItems and bufBytes are the sum over pending
// and in-flight entries (followers included), raised by add and lowered
// only by finishLocked; outstanding counts entries added whose result has
// not been delivered, so it reaches zero only after the last OnResult.
//
// # A lane's states
//
//	idle      nothing pending, not in flight
//	lingering pending, waiting for FlushInterval, FlushItems/FlushBytes,
//	          a Do or Flush (urgent, flushing) or Close: timer armed
//	backing   pending after a failed attempt, waiting until notBefore
//	          (Backoff.Delay of its consecutive failures): timer armed
//	ready     in w.ready (isReady), waiting for a worker
//	sending   inflight: one batch cut from the front of pending
//
// schedule moves a lane from idle, lingering or backing to ready, or arms
// its timer; it is called with mu held after anything that can change
// the answer (an add, a settle, a Flush, Close, a timer firing). A lane
// timer is a time.AfterFunc that takes mu itself, so it never runs with
// mu held by its caller; an earlier timer already armed wins. Workers
// wait on the work condition for a ready lane, cut a batch under mu, and
// send it without mu; settle takes mu again, requeues what is retried at
// the front (order per document holds: one batch per lane at a time),
// finishes the rest and schedules the lane.
//
// # Waiting
//
// Add blocks while the budgets are full by waiting on space, a channel
// closed and replaced (under mu) whenever finishLocked releases budget,
// so every blocked Add wakes and re-checks. Flush records a waiter with
// the sequence number of the last item added before it and the count of
// those still outstanding; deliver decrements it, in sequence order, and
// closes its channel at zero. Do waits on its own call, whose items are
// urgent: their lanes send without lingering.
//
// # Close
//
// Close refuses further Adds, makes every lane ready, and waits for the
// workers to drain. If its context ends first it aborts: the writer's
// ctx is cancelled (requests in flight fail), every lane's pending
// entries fail at once with ErrClosed, and a batch still in flight is
// left to its settle, which, seeing aborted, fails what it would have
// retried instead of requeueing it. Whichever of Close and settle takes
// mu first, each entry is finished exactly once: Close takes only the
// pending entries of lanes not in flight, and settle only its batch's.
type Writer struct {
	cfg     Config
	client  *opensearch.Client
	metrics *metrics
	seed    maphash.Seed

	// sinceFirst is how long ago an item's first attempt began, as its
	// retry budget reads it: time.Since, or in tests a clock of their own
	// that runs out a budget at the attempt they choose.
	sinceFirst func(first time.Time) time.Duration

	// ctx is cancelled when Close's deadline passes, aborting requests in
	// flight.
	ctx    context.Context
	cancel context.CancelFunc
	group  errgroup.Group

	mu       sync.Mutex
	work     *sync.Cond // a lane became ready, or the writer is stopping
	shards   map[string]*shardQ
	ready    []*lane // lanes with a batch to send, first come first served
	bufItems int     // items held: queued, in flight or waiting to retry
	bufBytes int
	// outstanding counts items added whose result has not been delivered
	// yet; Flush waits for those.
	outstanding int
	space       chan struct{} // closed (and replaced) when budget is released
	seq         uint64        // last sequence number given to an item
	waiters     []*flushWaiter
	flushing    int  // Flush calls in progress: send without lingering
	closed      bool // Add refuses
	aborted     bool // Close's deadline passed: fail instead of retrying
	stats       Stats
}

// shardQ is one shard key's queue, split into lanes by document id.
type shardQ struct {
	key    string
	items  int // held items of this shard key
	lanes  []*lane
	qstats *ShardStats
}

// lane sends one batch at a time, so the operations on a document (always
// in the same lane) are written in the order they were added.
type lane struct {
	shard        *shardQ
	pending      []*entry // not yet sent, oldest first; retries go back to the front
	pendingBytes int
	urgent       int // entries in pending that a Do call waits for: send without lingering
	inflight     bool
	isReady      bool // in Writer.ready
	notBefore    time.Time
	timer        *time.Timer
	timerAt      time.Time
	failures     int // consecutive attempts that needed a retry, for backoff
}

// entry is an item the writer holds.
type entry struct {
	item      *Item
	seq       uint64
	size      int
	added     time.Time
	firstSent time.Time
	attempts  int
	lastErr   error
	// followers are older versions of the same document, coalesced into
	// this one; they end with its outcome.
	followers []*entry
	// call is the Do call waiting for this entry, and idx its place in the
	// call's items; nil for an entry added by Add.
	call *call
	idx  int
}

type flushWaiter struct {
	target    uint64
	remaining int
	done      chan struct{}
}

// New starts a writer that sends through client.
func New(client *opensearch.Client, cfg Config) (*Writer, error) {
	if client == nil {
		return nil, errors.New("bulk: nil client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("bulk: register metrics: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w := &Writer{
		cfg: cfg, client: client, metrics: m, seed: maphash.MakeSeed(), sinceFirst: time.Since,
		ctx: ctx, cancel: cancel,
		shards: make(map[string]*shardQ),
		space:  make(chan struct{}),
	}
	w.stats.Shards = make(map[string]*ShardStats)
	w.work = sync.NewCond(&w.mu)
	for range cfg.Workers {
		w.group.Go(w.worker)
	}
	return w, nil
}

// Add queues an item. It blocks while the memory budget (global, or the
// item's shard key's) is full, until there is room or ctx ends. After Close
// it returns ErrClosed. An item Add accepted always gets exactly one Result.
func (w *Writer) Add(ctx context.Context, it Item) error {
	if err := checkItem(&it); err != nil {
		return err
	}
	return w.add(ctx, &entry{item: &it, size: it.size()})
}

// Do writes items and returns their results, in the order of items, once
// every one of them is answered. It does not wait for unrelated items:
// the lanes that hold its items send them without waiting for
// FlushInterval (taking along what those lanes already hold), and only
// its own results are waited for. OnResult receives them too, as it
// receives every result. Like Add, it blocks while the budget is full.
//
// If ctx ends first, Do returns ctx's error; the items it had added still
// get their results, through OnResult only. An invalid item is refused
// before any is added.
func (w *Writer) Do(ctx context.Context, items ...Item) ([]Result, error) {
	if len(items) == 0 {
		return nil, nil
	}
	for i := range items {
		if err := checkItem(&items[i]); err != nil {
			return nil, err
		}
	}
	c := &call{results: make([]Result, len(items)), remaining: len(items), done: make(chan struct{})}
	es := make([]*entry, len(items))
	for i := range items {
		it := items[i]
		es[i] = &entry{item: &it, size: it.size(), call: c, idx: i}
	}
	if err := w.addAll(ctx, es); err != nil {
		return nil, err
	}
	select {
	case <-c.done:
		return c.results, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("bulk: do: %w", ctx.Err())
	}
}

// call is a Do call waiting for its items' results.
type call struct {
	mu        sync.Mutex
	results   []Result
	remaining int
	done      chan struct{}
}

// set records one result of the call.
func (c *call) set(i int, r Result) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.results[i] = r
	if c.remaining--; c.remaining == 0 {
		close(c.done)
	}
}

// add queues an entry, waiting for budget.
func (w *Writer) add(ctx context.Context, e *entry) error { return w.addAll(ctx, []*entry{e}) }

// addAll queues entries in order, waiting for budget. The lanes they join
// are scheduled once all are queued, or before a wait for budget (which
// only sending frees): the entries of one Do that fit go out together, so
// a worker cannot cut a batch between them, and an older version of a
// document among them coalesces into the newer one.
func (w *Writer) addAll(ctx context.Context, es []*entry) error {
	var touched []*lane
	scheduleTouched := func() {
		for _, l := range touched {
			w.schedule(l)
		}
		touched = touched[:0]
	}
	w.mu.Lock()
	for _, e := range es {
		for {
			if w.closed {
				scheduleTouched()
				w.mu.Unlock()
				return ErrClosed
			}
			sq := w.shardQueue(e.item.shardKey())
			fits := w.bufItems == 0 ||
				(w.bufItems < w.cfg.MaxBufferedItems && w.bufBytes+e.size <= w.cfg.MaxBufferedBytes)
			if fits && (sq.items == 0 || sq.items < w.cfg.MaxShardItems) {
				break
			}
			scheduleTouched()
			space := w.space
			w.mu.Unlock()
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-space:
			}
			w.mu.Lock()
		}
		touched = append(touched, w.enqueue(e))
	}
	scheduleTouched()
	w.mu.Unlock()
	return nil
}

// enqueue puts an entry that fits on its lane, unscheduled, and returns
// the lane. Callers hold mu.
func (w *Writer) enqueue(e *entry) *lane {
	it := e.item
	sq := w.shardQueue(it.shardKey())
	w.seq++
	e.seq, e.added = w.seq, time.Now()
	w.bufItems++
	w.bufBytes += e.size
	w.outstanding++
	sq.items++
	w.stats.Added++
	sq.qstats.Queued++
	w.metrics.queued.WithLabelValues(sq.key).Inc()
	l := sq.lanes[w.laneOf(it, len(sq.lanes))]
	l.pending = append(l.pending, e)
	l.pendingBytes += e.size
	if e.call != nil {
		l.urgent++
	}
	return l
}

func checkItem(it *Item) error {
	switch {
	case it.Index == "":
		return errors.New("bulk: item has no index")
	case it.ID == "":
		return fmt.Errorf("bulk: item for %s has no _id", it.Index)
	case it.Action > Update:
		return fmt.Errorf("bulk: item %s/%s: unknown action %d", it.Index, it.ID, it.Action)
	case it.Action != Delete && len(it.Body) == 0:
		return fmt.Errorf("bulk: item %s/%s: %s needs a body", it.Index, it.ID, it.Action)
	case it.Action == Delete && len(it.Body) != 0:
		return fmt.Errorf("bulk: item %s/%s: delete takes no body", it.Index, it.ID)
	case it.VersionType != Internal && (it.Action == Create || it.Action == Update):
		// The server rejects the whole request for these.
		return fmt.Errorf("bulk: item %s/%s: %s does not take external versions", it.Index, it.ID, it.Action)
	case (it.IfSeqNo == nil) != (it.IfPrimaryTerm == nil):
		return fmt.Errorf("bulk: item %s/%s: if_seq_no and if_primary_term go together", it.Index, it.ID)
	case it.IfSeqNo != nil && it.VersionType != Internal:
		// Also a whole-request rejection.
		return fmt.Errorf("bulk: item %s/%s: a conditional write does not take external versions", it.Index, it.ID)
	}
	return nil
}

// shardQueue returns the queue of a shard key, creating it. Callers hold mu.
func (w *Writer) shardQueue(key string) *shardQ {
	sq, ok := w.shards[key]
	if !ok {
		sq = &shardQ{key: key, lanes: make([]*lane, w.cfg.ShardConcurrency)}
		for i := range sq.lanes {
			sq.lanes[i] = &lane{shard: sq}
		}
		sq.qstats = &ShardStats{}
		w.stats.Shards[key] = sq.qstats
		w.shards[key] = sq
	}
	return sq
}

// laneOf picks the lane of a document: the same for every operation on it.
func (w *Writer) laneOf(it *Item, n int) int {
	if n == 1 {
		return 0
	}
	return int(maphash.String(w.seed, it.Index+"\x00"+it.Routing+"\x00"+it.ID) % uint64(n))
}

// schedule puts a lane on the ready list if it has a batch to send now, or
// arms its timer for when it will. Callers hold mu.
func (w *Writer) schedule(l *lane) {
	if l.inflight || l.isReady || len(l.pending) == 0 {
		return
	}
	now := time.Now()
	if now.Before(l.notBefore) && !w.aborted {
		w.armTimer(l, l.notBefore)
		return
	}
	due := l.pending[0].added.Add(w.cfg.FlushInterval)
	full := len(l.pending) >= w.cfg.FlushItems || l.pendingBytes >= w.cfg.FlushBytes
	if full || l.urgent > 0 || w.flushing > 0 || w.closed || !now.Before(due) {
		l.isReady = true
		w.ready = append(w.ready, l)
		w.work.Signal()
		return
	}
	w.armTimer(l, due)
}

func (w *Writer) armTimer(l *lane, at time.Time) {
	if l.timer != nil && !l.timerAt.IsZero() && !l.timerAt.After(at) {
		return // an earlier wake-up is already set
	}
	if l.timer != nil {
		l.timer.Stop()
	}
	l.timerAt = at
	l.timer = time.AfterFunc(time.Until(at), func() {
		w.mu.Lock()
		l.timerAt = time.Time{}
		w.schedule(l)
		w.mu.Unlock()
	})
}

// worker sends ready batches until the writer has stopped and holds
// nothing more.
func (w *Writer) worker() error {
	for {
		w.mu.Lock()
		for len(w.ready) == 0 && !(w.closed && w.bufItems == 0) {
			w.work.Wait()
		}
		if len(w.ready) == 0 {
			w.mu.Unlock()
			return nil
		}
		l := w.ready[0]
		w.ready[0] = nil
		w.ready = w.ready[1:]
		l.isReady = false
		b := w.cutBatch(l)
		withdrawn := w.finishLocked(b.withdrawn, func(*entry) Result {
			return Result{Outcome: Failed, Err: ErrWithdrawn}
		})
		w.mu.Unlock()
		w.deliver(withdrawn)
		w.send(l, b)
	}
}

// Flush sends everything queued without waiting for FlushInterval and
// returns when every item added before the call has its outcome, or when
// ctx ends.
func (w *Writer) Flush(ctx context.Context) error {
	w.mu.Lock()
	if w.outstanding == 0 {
		w.mu.Unlock()
		return nil
	}
	fw := &flushWaiter{target: w.seq, remaining: w.outstanding, done: make(chan struct{})}
	w.waiters = append(w.waiters, fw)
	w.flushing++
	w.scheduleAll()
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.flushing--
		for i, x := range w.waiters {
			if x == fw {
				w.waiters = append(w.waiters[:i], w.waiters[i+1:]...)
				break
			}
		}
		w.mu.Unlock()
	}()
	select {
	case <-fw.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("bulk: flush: %w", ctx.Err())
	}
}

// scheduleAll re-examines every lane. Callers hold mu.
func (w *Writer) scheduleAll() {
	for _, sq := range w.shards {
		for _, l := range sq.lanes {
			w.schedule(l)
		}
	}
}

// Close stops accepting items, sends everything held (retries included)
// and returns when all items have their outcomes. If ctx ends first, the
// requests in flight are cancelled and every item not yet finished ends
// Failed with ErrClosed; Close then returns ctx's error. Calling Close
// again waits for the first call's work.
func (w *Writer) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closed = true
	w.scheduleAll()
	w.work.Broadcast()
	w.mu.Unlock()

	done := make(chan struct{})
	go func() {
		w.group.Wait()
		close(done)
	}()
	select {
	case <-done:
		w.cancel()
		return nil
	case <-ctx.Done():
	}
	w.cancel()
	w.mu.Lock()
	w.aborted = true
	var failed []*entry
	for _, sq := range w.shards {
		for _, l := range sq.lanes {
			if l.timer != nil {
				l.timer.Stop()
			}
			if !l.inflight {
				for _, e := range l.pending {
					n := 1 + len(e.followers)
					sq.qstats.Queued -= n
					w.metrics.queued.WithLabelValues(sq.key).Sub(float64(n))
				}
				failed = append(failed, l.pending...)
				l.pending, l.pendingBytes, l.urgent = nil, 0, 0
			}
		}
	}
	// Lanes in w.ready whose pending was just taken are skipped by workers
	// (cutBatch of an empty lane sends nothing).
	results := w.finishLocked(failed, func(e *entry) Result {
		return Result{Outcome: Failed, Err: fmt.Errorf("%w before the item was written", ErrClosed)}
	})
	w.work.Broadcast()
	w.mu.Unlock()
	w.deliver(results)
	<-done
	return fmt.Errorf("bulk: close: %w", ctx.Err())
}

// urgency is the number of Do calls among an entry and its followers
// that wait for it: the lane's urgent count it accounts for.
func (e *entry) urgency() int {
	n := 0
	if e.call != nil {
		n++
	}
	for _, f := range e.followers {
		if f.call != nil {
			n++
		}
	}
	return n
}
