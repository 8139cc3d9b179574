package migrate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

// backfilling records a migration of the env's alias in phase backfilling
// with n fresh slices, as Backfill leaves it before its first claim.
func (e *env) backfilling(ctx context.Context, n int) {
	e.t.Helper()
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.m.DualWrites(ctx, AckConfig{}); err != nil {
		e.t.Fatal(err)
	}
	_, err := e.m.store.Update(ctx, func(x *schema.Migration) error {
		x.Phase = schema.PhaseBackfilling
		x.Backfill = make([]schema.SliceState, n)
		for i := range x.Backfill {
			x.Backfill[i] = schema.SliceState{Slice: i, SourceShard: i}
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// leaserOn is worker's leaser, through a store of its own (another
// process), on the clock c.
func (e *env) leaserOn(c *fakeClock, worker string, ttl time.Duration) *leaser {
	return &leaser{store: newStore(e.admin, e.alias, c.Now), alias: e.alias, worker: worker, ttl: ttl, now: c.Now}
}

// stored is slice i as stored.
func (e *env) slice(ctx context.Context, i int) schema.SliceState {
	e.t.Helper()
	rec, err := e.m.store.Load(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return rec.Migration.Backfill[i]
}

func none(int) bool { return false }

// Claim, renew, checkpoint, release and takeover on the stored state, the
// leases judged by a clock the test moves.
func TestLeaseLifecycle(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 0)
	ctx := context.Background()
	e.backfilling(ctx, 2)
	const ttl = 30 * time.Second
	clk := &fakeClock{now: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	a, b, c := e.leaserOn(clk, "a", ttl), e.leaserOn(clk, "b", ttl), e.leaserOn(clk, "c", ttl)

	claim := func(l *leaser, wantSlice int, wantFrom string) lease {
		t.Helper()
		got, err := l.claim(ctx, none)
		if err != nil {
			t.Fatalf("%s: claim: %v", l.worker, err)
		}
		if !got.ok || got.lease.Slice != wantSlice || got.from != wantFrom {
			t.Fatalf("%s: claim = ok %v, slice %d, from %q; want slice %d from %q", l.worker, got.ok, got.lease.Slice, got.from, wantSlice, wantFrom)
		}
		return got.lease
	}
	ha := claim(a, 0, "")
	if s := e.slice(ctx, 0); s.Owner != "a" || s.Claim != 1 || !s.LeaseUntil.Equal(clk.Now().Add(ttl)) {
		t.Errorf("slice 0 after a's claim: %+v, want owner a, claim 1, until %v", s, clk.Now().Add(ttl))
	}
	hb := claim(b, 1, "")
	if got, err := c.claim(ctx, none); err != nil || got.ok || got.done {
		t.Errorf("c's claim with both slices leased = %+v, %v; want nothing to claim, not done", got, err)
	}

	// A checkpoint renews the lease; a renewal alone does too.
	clk.Sleep(ctx, 20*time.Second)
	if _, err := a.checkpoint(ctx, ha, schema.SliceState{Slice: 0, After: "d:100", Docs: 100, Copied: 100}); err != nil {
		t.Fatal(err)
	}
	if s := e.slice(ctx, 0); s.After != "d:100" || s.Owner != "a" || !s.LeaseUntil.Equal(clk.Now().Add(ttl)) {
		t.Errorf("slice 0 after a's checkpoint: %+v, want after d:100, a's lease renewed to %v", s, clk.Now().Add(ttl))
	}

	// b never renewed: 20s + 11s after its claim, its lease has expired
	// and c takes slice 1 over from its checkpoint; a's is live.
	clk.Sleep(ctx, 11*time.Second)
	hc := claim(c, 1, "b")
	if hc.Claim != 2 {
		t.Errorf("c's claim number %d, want 2", hc.Claim)
	}
	// b finds it lost, whatever it writes, and its release leaves c's lease.
	var lost *LeaseLostError
	if _, err := b.checkpoint(ctx, hb, schema.SliceState{Slice: 1, After: "d:9", Docs: 9}); !errors.As(err, &lost) || lost.Owner != "c" || lost.Claim != 2 {
		t.Errorf("b's checkpoint after c's takeover = %v, want a LeaseLostError naming c, claim 2", err)
	}
	if _, err := b.renew(ctx, hb); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("b's renewal after c's takeover = %v, want ErrLeaseLost", err)
	}
	if err := b.release(ctx, hb); err != nil {
		t.Errorf("b's release after c's takeover = %v, want nothing to release", err)
	}
	if s := e.slice(ctx, 1); s.Owner != "c" || s.Claim != 2 || s.After != "" {
		t.Errorf("slice 1 after b's writes: %+v, want c's, unchanged", s)
	}

	// An expired lease no one has claimed is still its holder's to renew.
	clk.Sleep(ctx, time.Minute)
	if _, err := a.renew(ctx, ha); err != nil {
		t.Errorf("a's renewal of its expired, unclaimed lease = %v", err)
	}
	// A checkpoint never moves back.
	if _, err := a.checkpoint(ctx, ha, schema.SliceState{Slice: 0, After: "d:050", Docs: 50}); err == nil || !strings.Contains(err.Error(), "behind") {
		t.Errorf("a's checkpoint behind the stored one = %v, want refused", err)
	}
	// A release frees the slice at once: b claims it, no takeover.
	if err := a.release(ctx, ha); err != nil {
		t.Fatal(err)
	}
	if s := e.slice(ctx, 0); s.Owner != "" || !s.LeaseUntil.IsZero() || s.After != "d:100" || s.Claim != 1 {
		t.Errorf("slice 0 after a's release: %+v, want no owner, its checkpoint and claim number kept", s)
	}
	hb = claim(b, 0, "")
	// The last checkpoint releases the lease with the slice done.
	if _, err := b.checkpoint(ctx, hb, schema.SliceState{Slice: 0, After: "d:200", Docs: 200, Done: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.checkpoint(ctx, hc, schema.SliceState{Slice: 1, After: "d:300", Docs: 300, Done: true}); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if s := e.slice(ctx, i); !s.Done || s.Owner != "" || !s.LeaseUntil.IsZero() {
			t.Errorf("slice %d after its last checkpoint: %+v, want done, no owner", i, s)
		}
	}
	if got, err := a.claim(ctx, none); err != nil || got.ok || !got.done {
		t.Errorf("claim with every slice done = %+v, %v; want done", got, err)
	}
}

// raceAt holds every store's first write until all of them have read the
// migration: their changes are made to the same version.
func raceAt(stores ...*stateStore) {
	var arrived sync.WaitGroup
	arrived.Add(len(stores))
	for _, s := range stores {
		var once sync.Once
		s.beforePut = func() {
			once.Do(func() {
				arrived.Done()
				arrived.Wait()
			})
		}
	}
}

// Claimants that read the same version race for the one free slice:
// exactly one wins it; the others re-read and find nothing to claim.
func TestLeaseClaimRace(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 0)
	ctx := context.Background()
	e.backfilling(ctx, 1)
	clk := &fakeClock{now: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	workers := []*leaser{e.leaserOn(clk, "a", time.Minute), e.leaserOn(clk, "b", time.Minute), e.leaserOn(clk, "c", time.Minute)}
	raceAt(workers[0].store, workers[1].store, workers[2].store)
	got := make([]*claimed, len(workers))
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, w := range workers {
		wg.Go(func() { got[i], errs[i] = w.claim(ctx, none) })
	}
	wg.Wait()
	var winners []string
	for i, w := range workers {
		if errs[i] != nil {
			t.Fatalf("%s: claim: %v", w.worker, errs[i])
		}
		if got[i].ok {
			winners = append(winners, w.worker)
		} else if got[i].done {
			t.Errorf("%s: claim says done, with the slice unfinished", w.worker)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("winners %v, want exactly one", winners)
	}
	if s := e.slice(ctx, 0); s.Owner != winners[0] || s.Claim != 1 {
		t.Errorf("slice 0: %+v, want owner %s, claim 1", s, winners[0])
	}
}

// The frozen worker (lease.go): a holds slice 0 and freezes; its lease
// expires; b takes the slice over and checkpoints further; a wakes and
// tries to checkpoint. It is refused, and the checkpoint stays b's.
// Once when a's checkpoint reads the state after b's claim, once when it
// read it before (its write then meets b's claim as a conflict).
func TestLeaseFrozenWorker(t *testing.T) {
	realenv.Parallel(t)
	for _, readFirst := range []bool{false, true} {
		name := "reads after the takeover"
		if readFirst {
			name = "read before the takeover"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, 0)
			ctx := context.Background()
			e.backfilling(ctx, 1)
			const ttl = 30 * time.Second
			clk := &fakeClock{now: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
			a, b := e.leaserOn(clk, "a", ttl), e.leaserOn(clk, "b", ttl)
			c, err := a.claim(ctx, none)
			if err != nil || !c.ok {
				t.Fatalf("a's claim = %+v, %v", c, err)
			}
			ha := c.lease
			if _, err := a.checkpoint(ctx, ha, schema.SliceState{Slice: 0, After: "d:100", Docs: 100}); err != nil {
				t.Fatal(err)
			}
			clk.Sleep(ctx, ttl+time.Second) // a is frozen past its lease

			var hb lease
			takeover := func() {
				c, err := b.claim(ctx, none)
				if err != nil || !c.ok || c.from != "a" || c.state.After != "d:100" {
					t.Errorf("b's claim = %+v, %v; want slice 0 taken over from a, resumed after d:100", c, err)
					return
				}
				hb = c.lease
				if _, err := b.checkpoint(ctx, hb, schema.SliceState{Slice: 0, After: "d:300", Docs: 300}); err != nil {
					t.Error(err)
				}
			}
			if readFirst {
				// a has read the state (still its own lease) and is about
				// to write when b takes over.
				var once sync.Once
				a.store.beforePut = func() { once.Do(takeover) }
			} else {
				takeover()
			}
			_, err = a.checkpoint(ctx, ha, schema.SliceState{Slice: 0, After: "d:200", Docs: 200})
			var lost *LeaseLostError
			if !errors.As(err, &lost) || lost.Owner != "b" || lost.Worker != "a" {
				t.Errorf("a's checkpoint on waking = %v, want a LeaseLostError: b holds the slice", err)
			}
			if s := e.slice(ctx, 0); s.After != "d:300" || s.Docs != 300 || s.Owner != "b" || s.Claim != hb.Claim {
				t.Errorf("slice 0: %+v, want b's checkpoint d:300 (300 documents) under b's claim %d", s, hb.Claim)
			}
		})
	}
}

func TestBackfillLeaseConfig(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  BackfillConfig
		want string // "" valid
	}{
		{"defaults", BackfillConfig{}, ""},
		{"bounds", BackfillConfig{Lease: MinLease, Worker: "reshard-backfill-0"}, ""},
		{"max", BackfillConfig{Lease: MaxLease}, ""},
		{"short", BackfillConfig{Lease: 500 * time.Millisecond}, "lease 500ms: want 1s to 1h0m0s"},
		{"negative", BackfillConfig{Lease: -time.Second}, "lease -1s: want 1s to 1h0m0s"},
		{"long", BackfillConfig{Lease: 2 * time.Hour}, "lease 2h0m0s: want 1s to 1h0m0s"},
		{"worker", BackfillConfig{Worker: strings.Repeat("w", 300)}, "want at most 253 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if (err == nil) != (tc.want == "") || err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate(%+v) = %v, want %q", tc.cfg, err, tc.want)
			}
		})
	}
}

// A restart would forget the checkpoints under a live worker: refused
// while any holds a lease, allowed once it has expired.
func TestBackfillRestartWaitsForLeases(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 50)
	ctx := context.Background()
	e.backfilling(ctx, e.src.NumShards())
	clk := &fakeClock{now: time.Now()}
	m := e.migratorOn(clk)
	if c, err := e.leaserOn(clk, "other", time.Minute).claim(ctx, none); err != nil || !c.ok {
		t.Fatalf("claim = %+v, %v", c, err)
	}
	_, err := m.Backfill(ctx, BackfillConfig{Restart: true})
	if err == nil || !strings.Contains(err.Error(), "worker other holds slice 0") {
		t.Fatalf("restart under a live lease = %v, want refused naming the worker", err)
	}
	clk.Sleep(ctx, 2*time.Minute)
	rep, err := m.Backfill(ctx, BackfillConfig{Restart: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Docs != int64(e.docs.live()) {
		t.Errorf("restarted backfill: %d documents, want %d", rep.Docs, e.docs.live())
	}
}
