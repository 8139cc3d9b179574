package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// simIngest stands in for an ingest instance: it follows the migration
// document as ingest does (poll, apply the phase, heartbeat) and keeps
// changing documents — updates, new dishes, dish deletes and restaurant
// moves with their dishes — writing every change with external versions
// to the source, and to the target as well while the phase has dual
// writes. It is the one writer of e.docs while it runs.
type simIngest struct {
	e    *env
	rng  *rand.Rand
	w    *bulk.Writer
	errs chan error

	// stopped is closed when run returns.
	stopped chan struct{}

	mu      sync.Mutex
	applied schema.Phase
	ops     map[string]int
	// byPhase counts changes by the phase ingest had applied.
	byPhase map[schema.Phase]int
	// rounds counts, by the phase ingest had applied, the rounds of
	// changes written and flushed without an error; progress is closed
	// (and replaced) at the end of each.
	rounds   map[schema.Phase]int
	progress chan struct{}
}

func newSimIngest(e *env, seed uint64) *simIngest {
	s := &simIngest{e: e, rng: rand.New(rand.NewPCG(seed, 2)), errs: make(chan error, 1), stopped: make(chan struct{}),
		ops: map[string]int{}, byPhase: map[schema.Phase]int{}, rounds: map[schema.Phase]int{}, progress: make(chan struct{})}
	w, err := bulk.New(e.client, bulk.Config{FlushInterval: time.Millisecond, OnResult: func(r bulk.Result) {
		if !r.Outcome.Succeeded() {
			select {
			case s.errs <- fmt.Errorf("%s %s %s: %v %v", r.Item.Action, r.Item.Index, r.Item.ID, r.Outcome, r.Err):
			default:
			}
		}
	}})
	if err != nil {
		e.t.Fatal(err)
	}
	s.w = w
	return s
}

type simTarget struct {
	index string
	mp    *router.Map
}

// poll reads the migration as ingest does and returns the indexes to
// write, the primary first.
func (s *simIngest) poll(ctx context.Context) ([]simTarget, string, schema.Phase, error) {
	src := simTarget{s.e.v1, s.e.src}
	d, err := s.e.admin.GetDoc(ctx, schema.MigrationsIndex, schema.MigrationDocID(s.e.alias))
	if bulk.IsNotFound(err) || (err == nil && !d.Found) {
		return []simTarget{src}, "", "", nil
	}
	if err != nil {
		return nil, "", "", err
	}
	var mig schema.Migration
	if err := json.Unmarshal(d.Source, &mig); err != nil {
		return nil, "", "", err
	}
	dst := simTarget{mig.Target.Index, s.e.dst}
	switch {
	case mig.Phase.TargetIsPrimary() && mig.Phase.DualWrites():
		return []simTarget{dst, src}, mig.ID, mig.Phase, nil
	case mig.Phase.DualWrites():
		return []simTarget{src, dst}, mig.ID, mig.Phase, nil
	}
	return []simTarget{src}, mig.ID, mig.Phase, nil
}

// run changes documents until ctx ends.
func (s *simIngest) run(ctx context.Context) error {
	defer close(s.stopped)
	for ctx.Err() == nil {
		targets, id, phase, err := s.poll(ctx)
		if ctx.Err() != nil {
			return nil // stopping
		}
		if err != nil {
			return err
		}
		// Every write made under the previous phase was flushed at the end
		// of the previous round: only now is the new phase acknowledged.
		s.e.heartbeat("sim-ingest", id, phase, time.Now())
		s.mu.Lock()
		s.applied = phase
		s.mu.Unlock()
		for range 4 {
			s.change(ctx, targets)
		}
		if err := s.w.Flush(ctx); err != nil {
			return nil // stopping
		}
		select {
		case err := <-s.errs:
			return err
		default:
		}
		s.mu.Lock()
		s.rounds[phase]++
		close(s.progress)
		s.progress = make(chan struct{})
		s.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
		// Bursts with quiet moments, as real traffic has: a verification
		// compares the source and the target at two refreshes, and on a
		// real node a shard that a write hits every few milliseconds
		// never holds still between them. A new phase ends the quiet at
		// once, so that every phase sees changes, however short.
		if s.rng.IntN(8) == 0 {
			s.quiet(ctx, phase, time.Duration(50+s.rng.IntN(200))*time.Millisecond)
		}
	}
	return nil
}

// quiet writes nothing for d, or until the migration leaves phase.
func (s *simIngest) quiet(ctx context.Context, phase schema.Phase, d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
		if _, _, p, err := s.poll(ctx); err == nil && p != phase {
			return
		}
	}
}

// wroteIn waits until ingest has written a round of changes, flushed,
// under phase, and fails if ingest stops first or ctx ends.
func (s *simIngest) wroteIn(ctx context.Context, phase schema.Phase) error {
	for {
		s.mu.Lock()
		n, progress := s.rounds[phase], s.progress
		s.mu.Unlock()
		if n > 0 {
			return nil
		}
		select {
		case <-progress:
		case <-s.stopped:
			return fmt.Errorf("simulated ingest stopped before it wrote in phase %s", phase)
		case <-ctx.Done():
			return fmt.Errorf("simulated ingest wrote nothing in phase %s: %w", phase, ctx.Err())
		}
	}
}

// change makes one random change and adds its writes.
func (s *simIngest) change(ctx context.Context, targets []simTarget) {
	docs := s.e.docs
	docs.mu.Lock()
	id := docs.order[s.rng.IntN(len(docs.order))]
	d := docs.byID[id]
	var writes [][2]*testDoc // {old, new}: old's copy is deleted if new's routing differs
	kind := ""
	switch p := s.rng.IntN(10); {
	case d.Deleted:
		kind = "revive"
		n := *d
		n.Deleted, n.Version = false, d.Version+1
		writes = append(writes, [2]*testDoc{nil, &n})
	case p < 4:
		kind = "update"
		n := *d
		n.Version++
		writes = append(writes, [2]*testDoc{nil, &n})
	case p < 6 && d.Relation == schema.RelationDish:
		kind = "delete"
		n := *d
		n.Deleted, n.Version = true, d.Version+1
		writes = append(writes, [2]*testDoc{nil, &n})
	case p < 8:
		kind = "add"
		n := &testDoc{ID: schema.DishID(fmt.Sprintf("%s-new%d", d.Rest, s.rng.IntN(1<<30))), Relation: schema.RelationDish,
			Rest: d.Rest, Lat: d.Lat, Lng: d.Lng, Version: 1}
		writes = append(writes, [2]*testDoc{nil, n})
	default:
		// The restaurant moves to another restaurant's place, with its
		// dishes; every copy at the old place is deleted.
		kind = "move"
		far := docs.byID[docs.order[s.rng.IntN(len(docs.order))]]
		rest := docs.byID[schema.RestaurantID(d.Rest)]
		group := append([]string{rest.ID}, docs.dishes[d.Rest]...)
		for _, gid := range group {
			old := docs.byID[gid]
			n := *old
			n.Lat, n.Lng, n.Version = far.Lat, far.Lng, old.Version+1
			o := *old
			writes = append(writes, [2]*testDoc{&o, &n})
		}
	}
	for _, w := range writes {
		n := w[1]
		if _, ok := docs.byID[n.ID]; !ok {
			docs.order = append(docs.order, n.ID)
			docs.dishes[n.Rest] = append(docs.dishes[n.Rest], n.ID)
			docs.byID[n.ID] = &testDoc{}
		}
		*docs.byID[n.ID] = *n
	}
	docs.mu.Unlock()
	s.mu.Lock()
	s.ops[kind]++
	s.byPhase[s.applied]++
	s.mu.Unlock()

	for _, t := range targets {
		for _, w := range writes {
			old, n := w[0], w[1]
			it := docItem(t.index, t.mp, n)
			s.w.Add(ctx, it)
			if old != nil && !old.Deleted {
				gone := *old
				gone.Deleted, gone.Version = true, n.Version
				if del := docItem(t.index, t.mp, &gone); del.Routing != it.Routing {
					s.w.Add(ctx, del)
				}
			}
		}
	}
}

// The migration runs while documents keep changing, written to both
// indexes as ingest does: at the end the target holds exactly the current
// state, each document on the shard the new map gives it.
func TestMigrationUnderLiveWrites(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 500)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	sim := newSimIngest(e, seed)
	simCtx, stopSim := context.WithCancel(ctx)
	simDone := make(chan error, 1)
	go func() { simDone <- sim.run(simCtx) }()
	stop := func() {
		stopSim()
		if err := <-simDone; err != nil {
			t.Fatalf("simulated ingest: %v", err)
		}
		if err := sim.w.Close(ctx); err != nil {
			t.Fatal(err)
		}
	}

	// Each phase the test wants changes in holds the migration until
	// ingest has written some under it: backfilling at the copy's first
	// page, backfilled before the verification, cut_over once Run is
	// done. A phase is then as short as the job makes it, and still sees
	// changes. The deadline only bounds a wait that would otherwise hang.
	wroteIn := func(phase schema.Phase) error {
		wctx, cancel := context.WithTimeout(ctx, realenv.Slack(time.Minute))
		defer cancel()
		return sim.wroteIn(wctx, phase)
	}
	var copying sync.Once
	e.m.search = &hookSearcher{Searcher: e.admin, onPage: func(context.Context, string, bulk.SearchParams, *bulk.Page) {
		copying.Do(func() {
			if err := wroteIn(schema.PhaseBackfilling); err != nil {
				t.Error(err)
			}
		})
	}}
	var steps []string
	mig, err := e.m.Run(ctx, RunConfig{
		Create: CreateConfig{Map: e.dst},
		Ack:    AckConfig{Timeout: 10 * time.Second},
		// Slow enough for many changes to land during the copy.
		Backfill: BackfillConfig{Page: 50, Slices: 4, MaxDocsPerSecond: 8000},
		Verify:   VerifyConfig{Attempts: 40, Pause: 20 * time.Millisecond},
		OnStep: func(step Step, from schema.Phase) {
			steps = append(steps, string(step))
			if from == schema.PhaseBackfilled {
				if err := wroteIn(from); err != nil {
					t.Error(err)
				}
			}
		},
	})
	if err != nil {
		stop()
		t.Errorf("Run: %v (steps %v)", err, steps)
		if got, _ := e.m.Load(ctx); got != nil && got.Verification != nil {
			for _, r := range got.Verification.Shards {
				if !r.OK {
					t.Logf("under live writes, shard %s: %+v", r.Shard, r)
				}
			}
		}
		// Without live writes: a transient difference is gone, a lost
		// or misrouted document is named.
		ver, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1})
		if ver != nil {
			for _, r := range ver.Shards {
				if !r.OK {
					t.Logf("after the writes stopped, shard %s: %+v", r.Shard, r)
				}
			}
		}
		t.Fatalf("verification after the writes stopped: %v", err)
	}
	if mig.Phase != schema.PhaseCutOver || fmt.Sprint(steps) != "[dual-writes backfill verify cutover]" {
		t.Errorf("Run ended in phase %s after steps %v", mig.Phase, steps)
	}
	// Let ingest apply cut_over and write some more, target first.
	if err := wroteIn(schema.PhaseCutOver); err != nil {
		stop()
		t.Fatal(err)
	}
	stop()
	t.Logf("changes while migrating: %v; by phase: %v", sim.ops, sim.byPhase)
	for _, p := range []schema.Phase{schema.PhaseBackfilling, schema.PhaseBackfilled, schema.PhaseCutOver} {
		if sim.byPhase[p] == 0 {
			t.Errorf("no change was made in phase %s", p)
		}
	}

	e.checkTarget(ctx, e.v2)
	if e.aliasOn(ctx) != e.v2 {
		t.Errorf("alias not on the target")
	}
	// The source stayed current too (a rollback target).
	ver, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1})
	if err != nil || !ver.OK {
		t.Errorf("final verification: %v", err)
	}
	// Run again: nothing left to do.
	if again, err := e.m.Run(ctx, RunConfig{Create: CreateConfig{Map: e.dst}}); err != nil || again.Phase != schema.PhaseCutOver {
		t.Errorf("second Run = %v, %v", again, err)
	}
}
