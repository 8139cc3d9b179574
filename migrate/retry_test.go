package migrate

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/schema"
)

// emulatorOnly skips a test that injects faults on the real node.
func emulatorOnly(t *testing.T, e *env) {
	t.Helper()
	if e.srv == nil {
		t.Skip("fault injection needs the emulator")
	}
}

func setFaults(t *testing.T, e *env, f osfake.Faults) {
	t.Helper()
	if err := e.srv.SetFaults(f); err != nil {
		t.Fatal(err)
	}
}

// A Run whose reads and writes of the migration, pages, counts, alias and
// health calls fail transiently now and then (a node lost: the next
// attempt goes to another) goes through to the cutover.
func TestRunRetriesTransientFailures(t *testing.T) {
	e := newEnv(t, 40)
	emulatorOnly(t, e)
	ctx := context.Background()
	setFaults(t, e, osfake.Faults{Seed: 7, FailRate: 0.2, FailStatus: 503,
		FailEndpoints: []string{"doc", "search", "count", "admin"}})
	mig, err := e.m.Run(ctx, RunConfig{
		Create:   CreateConfig{Map: e.dst},
		Ack:      AckConfig{Timeout: 10 * time.Second},
		Backfill: BackfillConfig{Page: 20, Slices: 4},
		Verify:   quickVerify,
	})
	failed := e.srv.FaultStats().FailedRequests
	e.srv.ClearFaults()
	if err != nil {
		t.Fatalf("Run: %v (%d requests failed)", err, failed)
	}
	if mig.Phase != schema.PhaseCutOver {
		t.Fatalf("phase %s, want %s", mig.Phase, schema.PhaseCutOver)
	}
	if failed == 0 {
		t.Fatal("no request failed: the test tests nothing")
	}
	if got := backfillTotals(mig.Backfill).Checkpointed; got != int64(len(e.docs.all())) {
		t.Errorf("checkpointed %d documents, want %d", got, len(e.docs.all()))
	}
}

// The state reads and writes alone failing a few times in a row, each
// kind: the step retries them.
func TestStateRetriesTransientFailures(t *testing.T) {
	for _, status := range []int{502, 503, 504} {
		e := newEnv(t, 10)
		emulatorOnly(t, e)
		ctx := context.Background()
		if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
			t.Fatal(err)
		}
		setFaults(t, e, osfake.Faults{FailRequests: 3, FailStatus: status, FailEndpoints: []string{"doc"}})
		if _, err := e.m.DualWrites(ctx, AckConfig{Timeout: 10 * time.Second}); err != nil {
			t.Fatalf("%d: DualWrites: %v", status, err)
		}
		if n := e.srv.FaultStats().FailedRequests; n != 3 {
			t.Errorf("%d: %d requests failed, want 3", status, n)
		}
		e.srv.ClearFaults()
		mig, err := e.m.Load(ctx)
		if err != nil || mig.Phase != schema.PhaseDualWrites {
			t.Fatalf("%d: after DualWrites: %v, %v", status, mig, err)
		}
	}
}

// A page read failing transiently is read again: the backfill copies
// everything.
func TestBackfillRetriesPageReads(t *testing.T) {
	e := newEnv(t, 30)
	emulatorOnly(t, e)
	ctx := context.Background()
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.DualWrites(ctx, AckConfig{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	var pages atomic.Int64
	e.m.search = &hookSearcher{Searcher: e.admin, onPage: func(context.Context, string, bulk.SearchParams, *bulk.Page) {
		if pages.Add(1) == 1 {
			// After the first page: the next searches fail, one per slice
			// at most (the slices read at once).
			if err := e.srv.SetFaults(osfake.Faults{FailRequests: 6, FailStatus: 502, FailEndpoints: []string{"search"}}); err != nil {
				t.Error(err)
			}
		}
	}}
	rep, err := e.m.Backfill(ctx, BackfillConfig{Page: 10, Slices: 3})
	failed := e.srv.FaultStats().FailedRequests
	e.srv.ClearFaults()
	if err != nil {
		t.Fatalf("Backfill: %v", err)
	}
	if failed != 6 {
		t.Errorf("%d searches failed, want 6", failed)
	}
	if rep.Totals.Checkpointed != int64(len(e.docs.all())) {
		t.Errorf("checkpointed %d, want %d", rep.Totals.Checkpointed, len(e.docs.all()))
	}
	if _, err := e.m.Verify(ctx, quickVerify); err != nil {
		t.Errorf("Verify: %v", err)
	}
}

// Failures that outlast the budget fail the step, with an error that
// says so and names the step.
func TestRetryBudgetExhausted(t *testing.T) {
	e := newEnv(t, 10)
	emulatorOnly(t, e)
	ctx := context.Background()
	m, err := New(e.client, Config{Alias: e.alias, PollInterval: 10 * time.Millisecond, RetryBudget: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.DualWrites(ctx, AckConfig{Timeout: 10 * time.Second}); err != nil {
		t.Fatal(err)
	}
	run := RunConfig{Create: CreateConfig{Map: e.dst}, Ack: AckConfig{Timeout: 10 * time.Second}, Backfill: BackfillConfig{Page: 10}}

	// Run's own read of the migration.
	setFaults(t, e, osfake.Faults{FailRate: 1, FailStatus: 503, FailEndpoints: []string{"doc"}})
	_, err = m.Run(ctx, run)
	e.srv.ClearFaults()
	if !errors.Is(err, ErrRetryBudget) || !strings.Contains(err.Error(), "step run, read the migration") {
		t.Fatalf("Run: %v; want %v naming step run and the read", err, ErrRetryBudget)
	}

	// In the backfill: its reads (of the heartbeats, then of pages).
	setFaults(t, e, osfake.Faults{FailRate: 1, FailStatus: 502, FailEndpoints: []string{"search"}})
	_, err = m.Run(ctx, run)
	e.srv.ClearFaults()
	var se *StepError
	if !errors.Is(err, ErrRetryBudget) || !errors.As(err, &se) || se.Step != StepBackfill || !strings.Contains(err.Error(), "step backfill") {
		t.Fatalf("Run: %v; want %v in step %s", err, ErrRetryBudget, StepBackfill)
	}

	// Once the cluster answers again, the same Run goes on.
	if mig, err := m.Run(ctx, run); err != nil || mig.Phase != schema.PhaseCutOver {
		t.Fatalf("Run after the faults: %v", err)
	}
}

// dropProxy forwards to an emulator, and for the next drops writes of the
// migration document forwards the write (the emulator applies it) but
// cuts the connection instead of answering: a node that died after it
// wrote.
type dropProxy struct {
	target string
	drops  atomic.Int64
}

func (p *dropProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/_doc/migration") && p.drops.Add(-1) >= 0 {
		panic(http.ErrAbortHandler) // the connection is closed unanswered
	}
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// A write of the migration that is applied but whose answer is lost is
// retried, gets a version conflict against itself, and is recognised as
// done: a change that would refuse the phase it moved to is not applied
// again, nor reported as a refusal.
func TestLostWriteAnswerConverges(t *testing.T) {
	e := newEnv(t, 0)
	emulatorOnly(t, e)
	ctx := context.Background()
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{target: e.url}
	proxy := httptest.NewServer(p)
	defer proxy.Close()
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{proxy.URL}})
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(bulk.NewAdmin(client), e.alias, time.Now)
	s.retry = retryPolicy{budget: time.Minute, log: slog.New(slog.DiscardHandler)}

	// Like cancel: refuses any phase it does not start from, the one it
	// moves to included.
	applied := 0
	move := func(x *schema.Migration) error {
		applied++
		if x.Phase != schema.PhaseCreated {
			return rule(StepDualWrites).refuse(e.alias, x.Phase, true)
		}
		x.Phase = schema.PhaseDualWrites
		return nil
	}
	p.drops.Store(1)
	rec, err := s.Update(ctx, move)
	if err != nil {
		t.Fatalf("Update: %v", err)
	}
	if p.drops.Load() >= 0 {
		t.Fatal("no write was dropped: the test tests nothing")
	}
	if rec.Migration.Phase != schema.PhaseDualWrites || applied != 1 {
		t.Errorf("Update: phase %s after %d applications; want %s after 1", rec.Migration.Phase, applied, schema.PhaseDualWrites)
	}
	stored, err := s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stored.Migration.Phase != schema.PhaseDualWrites || stored.SeqNo != rec.SeqNo {
		t.Errorf("stored phase %s seq_no %d; Update returned seq_no %d", stored.Migration.Phase, stored.SeqNo, rec.SeqNo)
	}

	// A checkpoint whose answer is lost: the slice keeps it.
	if _, err := s.Update(ctx, func(x *schema.Migration) error {
		x.Phase = schema.PhaseBackfilling
		x.Backfill = []schema.SliceState{{Slice: 0}}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	p.drops.Store(1)
	if _, err := s.Update(ctx, func(x *schema.Migration) error {
		x.Backfill[0] = schema.SliceState{Slice: 0, After: "dish:d0000720", Docs: 720}
		return nil
	}); err != nil {
		t.Fatalf("checkpoint: %v", err)
	}
	stored, err = s.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := stored.Migration.Backfill[0]; got.After != "dish:d0000720" || got.Docs != 720 {
		t.Errorf("checkpoint stored as %+v", got)
	}

	// Someone else's write in between is still a conflict to re-apply
	// over: a refusal stays a refusal.
	p.drops.Store(1)
	_, err = s.Update(ctx, func(x *schema.Migration) error {
		if x.Phase != schema.PhaseBackfilling {
			return rule(StepBackfill).refuse(e.alias, x.Phase, true)
		}
		if x.Backfill[0].Docs == 720 {
			// The first application: another operator cancels behind it.
			other := cloneMigration(x)
			other.Phase = schema.PhaseCancelled
			if _, err := e.hbStore.Update(ctx, func(y *schema.Migration) error { *y = *other; return nil }); err != nil {
				t.Error(err)
			}
		}
		x.Backfill[0].Docs = 721
		return nil
	})
	var pe *PhaseError
	if !errors.As(err, &pe) || pe.Phase != schema.PhaseCancelled {
		t.Errorf("Update over a cancelled migration: %v; want a refusal in phase %s", err, schema.PhaseCancelled)
	}
}
