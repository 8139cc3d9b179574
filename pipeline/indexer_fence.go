package pipeline

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/geoshard/geoshard/bulk"
)

// Ownership is fenced by generation.
//
// The invariant: once this member's consumer-group generation g has ended
// (member.handOver sets member.ended to g before anything else), the
// member makes no new decision for g's events. Whatever g left undecided
// stays undecided, unfinished, and is delivered again to the partition's
// next owner (this member, for a partition it keeps), which reads it from
// the group's committed offset. The member only lands what it had already
// sent: a request on the wire when g ends may land late, and external
// versions make a late landing an old version like any other; a new
// decision by a member that no longer owns the partition is what they
// cannot make harmless (it is made with a directory that no longer
// follows the partition's restaurants, after the new owner may have moved
// them).
//
// Where each decision is stopped:
//
//   - A message of g not taken yet: skipped (loop.ended).
//   - An event queued behind a held restaurant, a restaurant waiting for
//     its lookup: dropped at the fence (dropDecisions).
//   - A task (a move, a delete with its dishes, a lookup, a read of the
//     source): it runs under g's context (genCtx), cancelled at the fence,
//     and its end, which would decide what follows it, never runs (inGen).
//     A move cut between its steps leaves what a crash leaves, which the
//     move decided again repairs (indexer_moves.go, planLeftovers included).
//   - A function waiting for its restaurant to fall quiet (whenQuiet), an
//     event's continuation once its writes are answered (event.settled),
//     the release of a dual-write chain after the source's answer: never
//     run (inGen).
//   - The spread of a dish write (reparent.go) and the dead letter of a
//     write the index rejected: not made; the event stays unfinished, and
//     its next owner makes them (answered, abandon).
//   - The expiry of waiting dishes: not run (loop.process, expirePending).
//   - A write queued in the bulk writer but not on the wire yet:
//     withdrawn, never sent (withdrawn, bulk.Config.Withdraw); it ends
//     failed, and its event unfinished.
//
// What still happens: the answers of the requests on the wire are
// counted, and an event whose decision they complete is finished, so the
// handover's commit can pass it. The looks for other copies of new
// dishes (reparent.look) go on too: they delete only copies older than
// the newest one they see, which is right whoever owns the dish.
//
// Landing (landFenced), when the handover asks the loop to settle or a
// quiesce finds the generation ended: cancel g's tasks and wait for them,
// drop the decisions under way, wait until every write the writer holds
// has its answer (withdrawn or landed), drop what the tasks and callbacks
// posted. The restaurants whose decisions were cut (held, queued behind,
// with writes in flight) may have directory entries that their withdrawn
// writes never made true: at the next generation (enterGen) they are
// forgotten and looked up in the index at their next event, the waiting
// dishes are forgotten and read back from the parking topic, as a member
// that restarts does. A member with nothing under way when g ends keeps
// its directory and its waiting dishes whole.
//
// A handover that runs out of time (member.handOver) lets the member join
// the next generation while landFenced still waits for the requests on
// the wire: that is a crash as far as the next owners can tell, and
// redelivery covers it (the requests land late, or fail).
//
// The residue: a decision checks the fence when it is made, and the
// member learns that g ended when the coordinator says so; between the
// two, a decision made at the last moment is sent as the group moves on.
// It is one more request on the wire.

// errGenerationEnded: the consumer-group generation the loop decides in
// has ended, so what is in flight will not end by itself
// (inflight.quiesce); indexer.quiesce lands it instead.
var errGenerationEnded = errors.New("pipeline: the consumer-group generation has ended")

// genTag is the Ref of the writes a task or a spread sends: the
// generation they belong to, so that the writer withdraws them once it
// ends. (Event writes are known by their event.)
type genTag int64

// fenced reports whether generation g has ended. Generation 0 is none:
// in tests that run no consumer group nothing is ever fenced.
func (f *inflight) fenced(g int64) bool {
	return f.ended != nil && g > 0 && g <= f.ended.Load()
}

// inGen guards fn, a decision posted for the loop to run later, by the
// generation it is posted in: fn runs only while that generation lasts.
func (f *inflight) inGen(fn func(context.Context) error) func(context.Context) error {
	return f.inGenOf(f.gen, fn)
}

// inGenOf guards fn by generation g.
func (f *inflight) inGenOf(g int64, fn func(context.Context) error) func(context.Context) error {
	if fn == nil {
		return nil
	}
	return func(ctx context.Context) error {
		if f.fenced(g) {
			return nil
		}
		return fn(ctx)
	}
}

// withdrawn is the bulk writer's Withdraw: a write of an ended generation
// is not sent.
func (ix *indexer) withdrawn(it *bulk.Item) bool {
	switch ref := it.Ref.(type) {
	case *event:
		return ix.fenced(ref.gen)
	case *sourceWrite:
		return ix.fenced(ref.ev.gen)
	case genTag:
		return ix.fenced(int64(ref))
	}
	return false
}

// abandon counts an answered write of ev without taking the step that
// should follow it (its generation has ended): ev is never finished here.
func (ix *indexer) abandon(ev *event, r bulk.Result) {
	ev.mu.Lock()
	ev.cut = true
	ev.mu.Unlock()
	ix.answered(ev, r)
}

// quiesce runs the loop's inbox until nothing is in flight
// (inflight.quiesce), or, once the generation has ended, lands what was
// sent (landFenced).
func (ix *indexer) quiesce(ctx context.Context) error {
	err := ix.inflight.quiesce(ctx)
	if errors.Is(err, errGenerationEnded) {
		return ix.landFenced(ctx)
	}
	return err
}

// fenceCut is what a fence cut short, for the next generation to repair.
type fenceCut struct {
	// rests are the restaurants whose decisions were cut.
	rests map[string]bool
	// any: something was cut (the waiting dishes are read back whole).
	any bool
}

// landFenced is the loop's side of the fence (see above): it runs on the
// loop once the generation ix.gen has ended, and once for it.
func (ix *indexer) landFenced(ctx context.Context) error {
	if ix.landed == ix.gen {
		return nil
	}
	start := time.Now()
	tasks := ix.tasksOn.Load()
	if ix.cancelGen != nil {
		ix.cancelGen()
	}
	queued := ix.dropDecisions()
	if err := waitCtx(ctx, &ix.tasks); err != nil {
		return err
	}
	if ix.writer != nil {
		if err := ix.writer.Flush(ctx); err != nil {
			return err
		}
	}
	dropped := 0
	for _, fn := range ix.inbox.take() {
		if fn != nil { // nil only wakes the loop
			dropped++
		}
	}
	flying := ix.dropFlights()
	if queued+dropped+flying > 0 || tasks > 0 {
		ix.cut.any = true
	}
	ix.landed = ix.gen
	ix.log.Info("consumer-group generation ended: what was sent has landed, the rest is left to the partitions' next owners",
		"generation", ix.gen, "tasks_cancelled", tasks, "queued_dropped", queued, "continuations_dropped", dropped,
		"events_in_flight", flying, "restaurants_cut", len(ix.cut.rests), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// dropDecisions forgets the restaurants with work under way: their holds,
// the events queued behind them, their dual-write chains and the lookups
// waiting. It returns how many events were queued.
func (ix *indexer) dropDecisions() (queued int) {
	for rid, rs := range ix.rests {
		ix.cutRest(rid)
		queued += len(rs.queue)
	}
	ix.rests = make(map[string]*restState)
	ix.queuedBehind = 0
	for _, rid := range ix.cold.queue {
		ix.cutRest(rid)
	}
	ix.cold.queue, ix.cold.running = nil, false
	return queued
}

// dropFlights forgets the flight counts and the functions waiting for
// quiet restaurants (every write sent has its answer by now, and the
// events of the ended generation no longer land: inflight.land). It
// returns how many events were in flight.
func (ix *indexer) dropFlights() (flying int) {
	ix.flightMu.Lock()
	defer ix.flightMu.Unlock()
	for rid, n := range ix.flights {
		ix.cutRest(rid)
		flying += n
	}
	ix.flights = make(map[string]int)
	ix.quietFns = make(map[string]func(context.Context) error)
	ix.inFlight = 0
	return flying
}

func (ix *indexer) cutRest(rid string) {
	if ix.cut.rests == nil {
		ix.cut.rests = map[string]bool{}
	}
	ix.cut.rests[rid] = true
	ix.cut.any = true
}

// enterGen makes gen the generation the loop decides in, and repairs what
// the fence of the previous one cut: the restaurants cut are forgotten by
// the directory and looked up at their next event, and it reports whether
// the waiting dishes must be read back whole (the caller forgets them and
// reads the parking topic again).
//
// The previous generation has ended (kafka-go starts the next only once
// every function of the previous has returned, the handover included,
// which records the end first), but it may not have been landed: a
// handover that found the loop not deciding yet asks for nothing, and
// the loop may have decided meanwhile (the parked dishes it read back).
// Its caller lands it first (landFenced).
func (ix *indexer) enterGen(gen int64) (rereadParked bool) {
	ix.gen = gen
	if ix.cancelGen != nil {
		ix.cancelGen()
	}
	// Tasks run under their caller's context too (goTask): this one only
	// ends the generation's.
	ix.genCtx, ix.cancelGen = context.WithCancel(context.Background())
	if !ix.cut.any {
		return false
	}
	if ix.cold.rests == nil {
		ix.cold.rests = map[string]bool{}
	}
	for rid := range ix.cut.rests {
		ix.dir.Forget(rid)
		ix.cold.rests[rid] = true
	}
	ix.cut = fenceCut{}
	return true
}

// waitCtx waits for wg, or for ctx to end.
func waitCtx(ctx context.Context, wg *sync.WaitGroup) error {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
