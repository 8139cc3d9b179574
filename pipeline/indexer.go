package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/pipeline/directory"
	"github.com/geoshard/geoshard/pipeline/pending"
)

// indexer is the write side of the pipeline: it applies decoded change
// events to the current targets through one bulk.Writer, and keeps what
// that takes — the directory of restaurant cells, the dishes waiting for
// their restaurant — while many events are in flight at once.
//
// The processing loop calls it with each event (submit), on the expiry
// tick (expirePending), when its inbox has work (poll), and around a
// change of write mode or of consumer-group generation (quiesce,
// setTargets, gain).
//
// # What is in flight
//
//   - An event's writes: one bulk item per target (one only for a
//     restaurant's own delete), answered by the writer's workers through
//     result. An event finishes, and its offset may be committed, when
//     every one is answered or mirrored from the source's answer.
//   - During dual writes, an event's write to the source, whose answer
//     decides what goes to the other index (indexer_targets.go).
//   - Tasks: a move, a restaurant's delete with its dishes, a read of the
//     source after a stale answer. Each runs on a goroutine of its own,
//     only searches, writes and waits for the answers of its own writes
//     (Writer.Do), and hands its end back to the loop.
//
// # Who owns what
//
// The loop owns every piece of decision state: the targets, the
// directory, the pending set, and the restaurants with work outstanding
// (rests: their queues and chains). Writer callbacks and tasks never
// touch it: they post a function to the inbox, which the loop runs
// between events. The inbox is unbounded, so posting never waits: a
// writer worker never waits for the loop, and the loop may block in
// Writer.Add (the writer frees its budget on its own) without a deadlock.
// The one shared piece is the flight counts, raised by the loop and
// lowered by writer callbacks, under flightMu.
//
// # What orders what
//
// Every event belongs to a restaurant: its own, or its dish's.
//
//   - Events of different restaurants are independent: they proceed
//     together and finish in any order (the tracker commits over the
//     finished run only, tracker.go).
//   - Events of one restaurant are decided in arrival order. While a task
//     of a restaurant runs, or waits to start, the restaurant is held: its
//     later events wait in its queue, and are decided in order once the
//     task's end has been applied (unhold).
//   - A task that reads an index (a move, a delete's search for the
//     dishes), and a write that must follow the acknowledgement of the
//     restaurant's earlier writes (a re-creation on another shard), start
//     only when every earlier write of the restaurant is answered on every
//     index: when its flight count is zero (whenQuiet). No other
//     restaurant waits for it, so a slow shard holds up only the
//     restaurants on it.
//   - The writes of one document reach each index in the order they were
//     decided: the writer keeps a document's items in one lane, in Add
//     order, and during dual writes the other index's writes of a
//     restaurant are added in the order of the source writes they follow
//     (its chain is released from the head only).
//   - A mode switch, the handover of a rebalance and the drain at
//     shutdown first wait until nothing is in flight (quiesce), so every write made
//     under the old targets or the old directory is answered before any
//     is made under the new.
//
// # Lock order
//
// Nothing is held while calling into the writer: Add and Do may wait for
// callbacks, and callbacks take flightMu, the inbox's lock, an event's
// mu, the tracker's and the pipeline's mu — each a leaf, released before
// the next is taken.
type indexer struct {
	log   *slog.Logger
	admin *bulk.Admin
	met   *metrics
	host  host
	// fail stops the pipeline with a fatal error (Pipeline.fail).
	fail func(error)
	// now is the clock of pending dishes' ages (Pipeline.now).
	now func() time.Time
	// writer is set before the loop starts.
	writer *bulk.Writer

	// What is in flight (inflight.go).
	inflight

	// Owned by the loop.
	targets      []target // the current mode's, the primary first
	dir          *directory.Directory
	pend         *pending.Set[*event]
	queuedBehind int       // events waiting in the queues of held restaurants
	dirGen       int64     // the consumer-group generation the directory follows
	cold         coldState // partitions gained since the directory was read (indexer_gained.go)
	cut          fenceCut  // what the last generation's fence cut short (indexer_fence.go)

	getSlots chan struct{}
	// searchSlots bounds the dish searches of moves and deletes in
	// flight: a shared refresh releases every move waiting for it at once,
	// and a node refuses what its search queue cannot hold (429).
	searchSlots chan struct{}
	refresher   *refresher  // the refreshes of moves, deletes, lookups and checks, shared
	reparent    *reparenter // the checks of dish writes for other copies (reparent.go)
	moves       atomic.Int64
	lookups     atomic.Int64 // restaurants of gained partitions looked up (indexer_gained.go)
	warmStats   warmStats
	searchSize  int // dishes per page when moving or deleting a restaurant
	// sourceDeletesDishes: a restaurant delete leaves its dishes to their
	// own deletes (Config.SourceDeletesDishes).
	sourceDeletesDishes bool
	warmSize            int // restaurants per page when warming the directory
	// stepHook, if set, runs after each step of a move or delete, on the
	// task's goroutine; an error stops the pipeline there (tests use it to
	// crash mid-move).
	stepHook func(step moveStep) error
}

// refreshGap is the shortest time between two refreshes of one index that
// the pipeline asks for (refresher).
const refreshGap = 200 * time.Millisecond

// maxDishSearches bounds the dish searches of moves and deletes in flight.
const maxDishSearches = 8

// maxQueuedBehind bounds the events held in the queues of held restaurants:
// beyond it the loop takes no new event until tasks end.
const maxQueuedBehind = 10_000

// maxTracked bounds the fetched messages the offset tracker holds: those
// not finished, and those finished behind one that is not (a commit is
// held by its partition's oldest unfinished event, such as a restaurant
// move waiting for a refresh, while the later events go on). About 32
// bytes each; beyond it the loop takes no new event until the oldest
// finish, so a slow event costs throughput, never unbounded memory. A
// soak of 4.9 million events peaked at 785,000.
const maxTracked = 2_000_000

// host is what the indexer asks of the pipeline around it.
type host interface {
	// finish records an event as finished; false for one a redelivery
	// superseded.
	finish(ev *event, result string) bool
	// deadLetter queues an event for the dead-letter topic, waiting while
	// the queue is full. Only the loop calls it.
	deadLetter(ctx context.Context, ev *event, r decode.Reason, detail, result string) error
	// rejected dead-letters an event a write of which the index rejected.
	// It never blocks: writer callbacks call it.
	rejected(ev *event, err error)
	// park writes a dish that starts waiting for its restaurant to the
	// parking topic (parking.go). Only the loop calls it.
	park(ev *event, now time.Time)
	// committedOffsets reads the group's committed offsets from the broker
	// (nil, nil when it cannot be asked).
	committedOffsets(ctx context.Context, parts map[partKey]bool) (map[partKey]int64, error)
}

// restState is what the loop keeps of a restaurant with work outstanding;
// it is dropped when there is none (settle).
type restState struct {
	held  bool     // a task of it runs or waits to start
	queue []*event // events that came while it was held, in order
	// chain holds, during dual writes, the restaurant's source writes
	// whose other writes are not added yet, in the order they were made.
	chain []*sourceWrite
}

func newIndexer(log *slog.Logger, admin *bulk.Admin, met *metrics, h host, pend *pending.Set[*event], fail func(error)) *indexer {
	ix := &indexer{
		log: log, admin: admin, met: met, host: h, fail: fail,
		dir: directory.New(), pend: pend,
		inflight:    newInflight(),
		getSlots:    make(chan struct{}, 16),
		searchSlots: make(chan struct{}, maxDishSearches),
		searchSize:  1000,
		warmSize:    10_000,
		now:         time.Now,
	}
	ix.reparent = newReparenter(ix)
	ix.reparent.fail = fail
	ix.refresher = newRefresher(refreshGap, &ix.tasks, func(ctx context.Context, index string) error {
		ix.met.refreshes.Inc()
		return retry(ctx, ix.log, "refresh "+index, func() error { return ix.admin.Refresh(ctx, index) })
	})
	return ix
}

// setTargets makes targets the ones writes use. The loop calls it only
// when nothing is in flight (after quiesce).
func (ix *indexer) setTargets(targets []target) { ix.targets = targets }

// submit decides one event: at once, or after the events of its
// restaurant that came before it if the restaurant is held. It returns
// an error only when the pipeline cannot go on.
func (ix *indexer) submit(ctx context.Context, ev *event) error {
	if ix.needsLookup(ev) {
		// The restaurant's first event in a partition gained since the
		// directory was read: nothing of it is held (the generation began
		// with quiesce, and its events are all in that partition).
		ix.lookUp(ctx, ev.rid)
	}
	if rs := ix.rests[ev.rid]; rs != nil && rs.held {
		rs.queue = append(rs.queue, ev)
		ix.queuedBehind++
		return nil
	}
	return ix.apply(ctx, ev)
}

// apply decides an event whose restaurant is not held.
func (ix *indexer) apply(ctx context.Context, ev *event) error {
	c := ev.change
	switch {
	case c.Type == decode.TypeRestaurant && c.Op == decode.OpUpsert:
		return ix.restaurantUpsert(ctx, ev)
	case c.Type == decode.TypeRestaurant:
		return ix.restaurantDelete(ctx, ev)
	case c.Op == decode.OpUpsert:
		return ix.dishUpsert(ctx, ev)
	default:
		return ix.dishDelete(ctx, ev)
	}
}

// unhold ends the hold of restaurant rid and decides its queued events in
// order, until one holds it again.
func (ix *indexer) unhold(ctx context.Context, rid string) error {
	rs := ix.rests[rid]
	if rs == nil {
		// Dropped with a partition the group gave to another member
		// (dropPartitions): nothing of it waits here any more.
		return nil
	}
	rs.held = false
	for !rs.held && len(rs.queue) > 0 {
		ev := rs.queue[0]
		rs.queue[0] = nil
		rs.queue = rs.queue[1:]
		ix.queuedBehind--
		if err := ix.apply(ctx, ev); err != nil {
			return err
		}
	}
	ix.settle(rid)
	return nil
}

// onResult is the bulk writer's callback, called from its workers.
//
// An index that refuses a write for a reason of its own (a write block, a
// missing index) does not make the event bad: the write counts as failed,
// not rejected, so the event is neither dead-lettered nor finished, and
// the pipeline stops (ErrIndexUnwritable). With two targets this keeps
// one index from silently lacking a change the other has.
func (ix *indexer) onResult(r bulk.Result) {
	if r.Outcome == bulk.Permanent && indexRefused(r.Err) {
		err := fmt.Errorf("%w: %s %s/%s (routing %s): %w", ErrIndexUnwritable, r.Item.Action, r.Item.Index, r.Item.ID, r.Item.Routing, r.Err)
		r.Outcome, r.Err = bulk.Failed, err
		ix.fail(err)
	}
	ix.result(r)
	if r.Outcome == bulk.Failed && errors.Is(r.Err, bulk.ErrRetryBudget) {
		ix.fail(fmt.Errorf("%w: %s %s/%s (routing %s): %w", ErrWriteFailed, r.Item.Action, r.Item.Index, r.Item.ID, r.Item.Routing, r.Err))
	}
}

// indexRefused reports an item error that is about the index, not the
// document: 403 cluster_block_exception (index.blocks.write, read_only;
// the disk flood-stage block is a 429, which the writer retries) or 404
// index_not_found_exception.
func indexRefused(err error) bool {
	var ie *bulk.ItemError
	if !errors.As(err, &ie) {
		return false
	}
	return (ie.Status == 403 && ie.Type == "cluster_block_exception") ||
		(ie.Status == 404 && ie.Type == "index_not_found_exception")
}

// result routes one of the writer's results to what it answers.
func (ix *indexer) result(r bulk.Result) {
	switch ref := r.Item.Ref.(type) {
	case *event:
		ix.eventResult(ref, r)
	case *sourceWrite:
		ix.sourceAnswered(ref, r)
	}
}

// eventResult takes one answered (or mirrored) write of an event: a dish
// write that may have left another copy of the dish is checked first
// (reparent.go), and counts once its check is done.
func (ix *indexer) eventResult(ev *event, r bulk.Result) {
	if need, look := needsCheck(ev, r); need && !(look && ix.reparent.trustFirst) {
		if !look && ix.fenced(ev.gen) {
			// The spread is a decision of its own (indexer_fence.go).
			ix.abandon(ev, r)
			return
		}
		if t := ev.targetOf(r.Item.Index); t != nil {
			ix.reparent.add(dishCheck{ev: ev, r: r, t: *t, look: look})
			return
		}
	}
	ix.answered(ev, r)
}

// answered counts one answered write of an event, and finishes the event
// when it was the last.
func (ix *indexer) answered(ev *event, r bulk.Result) {
	ev.mu.Lock()
	switch r.Outcome {
	case bulk.Failed:
		ev.failed = true
	case bulk.Permanent:
		if ev.rejected == nil {
			ev.rejected = r.Err
		}
	default:
		if ev.result == "" {
			ev.result = resultOf(r)
		}
	}
	ev.outstanding--
	done := ev.outstanding == 0
	failed, rejected, result, cut := ev.failed, ev.rejected, ev.result, ev.cut
	ev.mu.Unlock()
	if !done {
		return
	}
	fenced := ix.fenced(ev.gen)
	if ev.settled != nil {
		cut = cut || fenced
		ix.inbox.post(ix.inGenOf(ev.gen, ev.settled))
	}
	switch {
	case failed:
		// An event is finished only when the writes to every target are
		// answered. A failed write leaves it unfinished: its offset is
		// never committed, so the next start writes it again. (A write
		// fails only when the pipeline stops, onResult, or when its
		// generation ended before it was sent: indexer_fence.go.)
	case fenced && (cut || rejected != nil):
		// The generation ended before the event's decision was whole: the
		// step that remains (its continuation, its spread, its dead
		// letter) is its next owner's, which decides it again.
	case rejected != nil:
		ix.host.rejected(ev, rejected)
	default:
		ix.host.finish(ev, result)
	}
	ix.land(ev)
}

// resultOf is the result an answered write finishes its event with.
func resultOf(r bulk.Result) string {
	switch {
	case r.Coalesced:
		return resultCoalesced
	case r.Outcome == bulk.Stale:
		return resultStale
	case r.Outcome == bulk.NotFound:
		return resultNotFound
	}
	return resultWritten
}

// warmStats is the progress of the last directory read, for Stats and
// Ready.
type warmStats struct {
	pages, seen, total, reads atomic.Int64
	done                      atomic.Bool
}
