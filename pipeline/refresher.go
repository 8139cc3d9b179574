package pipeline

import (
	"cmp"
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// refresher shares index refreshes among everything that needs one at
// the same moment. A restaurant move or delete searches the index for the
// restaurant's dishes, so it needs every acknowledged write visible; a
// refresh per move is a refresh of every shard of the index per move,
// which on a long stream queues tens of thousands of shard refreshes on
// the node's refresh threads and starves its writes. Instead, per index:
//
//   - At most one refresh is in flight. A caller that arrives while one
//     runs cannot use it (it may have started before the caller's writes
//     were acknowledged), so it joins the next round, which every caller
//     arriving until that round starts shares.
//   - Rounds start at least gap apart, so the refreshes an index gets grow
//     with time (at most one per gap), not with the number of moves; a
//     caller waits at most gap plus two refreshes.
//
// A round's refresh is retried with the pipeline's backoff (retry); its
// error, if it fails for good, is every waiter's. A round runs on a
// goroutine of its own, counted in tasks (the indexer's, which Run waits
// for), under base, the pipeline's work: not under the context of the
// caller that started it, since a task ends with its generation (indexer_fence.go)
// while the callers that joined its round go on (without base, as in
// tests, it is the starting caller's).
type refresher struct {
	// refresh refreshes one index, retrying what is transient.
	refresh func(ctx context.Context, index string) error
	gap     time.Duration
	tasks   *sync.WaitGroup
	// base is the context rounds run under (nil: the caller's). Set
	// before the first wait.
	base context.Context

	mu      sync.Mutex
	byIndex map[string]*refreshQueue
	// sent counts the refreshes sent, over every index.
	sent atomic.Int64
}

// refreshQueue is one index's rounds.
type refreshQueue struct {
	// next is the round callers join; nil when none waits. running is set
	// while a goroutine runs rounds. Both under refresher.mu.
	next    *refreshRound
	running bool
	// last is when the last round started; only the running goroutine
	// touches it.
	last time.Time
}

// refreshRound is one refresh and the callers that wait for it.
type refreshRound struct {
	done    chan struct{}
	err     error // set before done is closed
	waiters int   // callers that joined it, under refresher.mu
}

func newRefresher(gap time.Duration, tasks *sync.WaitGroup, refresh func(ctx context.Context, index string) error) *refresher {
	return &refresher{refresh: refresh, gap: gap, tasks: tasks, byIndex: make(map[string]*refreshQueue)}
}

// wait returns once a refresh of index that started after the call has
// ended: every write acknowledged before the call is then visible to
// searches.
func (r *refresher) wait(ctx context.Context, index string) error {
	r.mu.Lock()
	q := r.byIndex[index]
	if q == nil {
		q = &refreshQueue{}
		r.byIndex[index] = q
	}
	if q.next == nil {
		q.next = &refreshRound{done: make(chan struct{})}
	}
	round := q.next
	round.waiters++
	if !q.running {
		q.running = true
		r.tasks.Add(1)
		go r.run(cmp.Or(r.base, ctx), index, q)
	}
	r.mu.Unlock()
	select {
	case <-round.done:
		return round.err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run runs index's rounds, one after the other, until none waits.
func (r *refresher) run(ctx context.Context, index string, q *refreshQueue) {
	defer r.tasks.Done()
	for {
		if wait := r.gap - time.Since(q.last); !q.last.IsZero() && wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
			}
		}
		r.mu.Lock()
		round := q.next
		q.next = nil
		if round == nil {
			q.running = false
			r.mu.Unlock()
			return
		}
		r.mu.Unlock()
		if round.err = ctx.Err(); round.err == nil {
			q.last = time.Now()
			r.sent.Add(1)
			round.err = r.refresh(ctx, index)
		}
		close(round.done)
	}
}

// refresh makes every write acknowledged so far visible to searches of
// index, sharing the refresh with every other caller of the moment
// (refresher).
func (ix *indexer) refresh(ctx context.Context, index string) error {
	return ix.refresher.wait(ctx, index)
}
