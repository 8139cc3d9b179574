package migrate

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

func (e *env) aliasOn(ctx context.Context) string {
	e.t.Helper()
	w, err := e.admin.WriteIndex(ctx, e.alias)
	if err != nil {
		e.t.Fatal(err)
	}
	ts, _ := e.admin.Alias(ctx, e.alias)
	if len(ts) != 1 {
		e.t.Fatalf("alias menu points to %v", ts)
	}
	// A read through the alias, too.
	pg, err := e.admin.Search(ctx, e.alias, []byte(`{"size":1}`), bulk.SearchParams{})
	if err != nil {
		e.t.Fatal(err)
	}
	if len(pg.Hits) == 1 && pg.Hits[0].Index != w {
		e.t.Fatalf("a search through the alias read %s, its write index is %s", pg.Hits[0].Index, w)
	}
	return w
}

func (e *env) phase(ctx context.Context) schema.Phase {
	e.t.Helper()
	mig, err := e.m.Load(ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	return mig.Phase
}

func (e *env) setting(ctx context.Context, index, key string) string {
	e.t.Helper()
	s, err := e.admin.Settings(ctx, index)
	if err != nil {
		e.t.Fatal(err)
	}
	return s[key]
}

// dualWrite writes docs to both indexes, as ingest does during a
// migration.
func (e *env) dualWrite(ctx context.Context, docs ...*testDoc) {
	e.t.Helper()
	for _, d := range docs {
		e.docs.mu.Lock()
		if _, ok := e.docs.byID[d.ID]; !ok {
			e.docs.byID[d.ID] = d
			e.docs.order = append(e.docs.order, d.ID)
		} else {
			*e.docs.byID[d.ID] = *d
		}
		e.docs.mu.Unlock()
	}
	if err := e.docs.write(ctx, e.client, e.v1, e.src, docs); err != nil {
		e.t.Fatal(err)
	}
	if err := e.docs.write(ctx, e.client, e.v2, e.dst, docs); err != nil {
		e.t.Fatal(err)
	}
}

func TestCutoverRollbackComplete(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 200)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})

	// A dry run changes nothing.
	var dry bytes.Buffer
	if err := e.m.Cutover(ctx, SwitchConfig{DryRun: &dry}); err != nil {
		t.Fatal(err)
	}
	if e.aliasOn(ctx) != e.v1 || e.phase(ctx) != schema.PhaseVerified || e.setting(ctx, e.v2, "index.number_of_replicas") != "0" {
		t.Fatalf("the dry run changed something")
	}
	if !strings.Contains(dry.String(), "POST /_aliases") || !strings.Contains(dry.String(), "PUT /"+e.v2+"/_settings") {
		t.Errorf("dry run:\n%s", dry.String())
	}

	if err := e.m.Cutover(ctx, SwitchConfig{}); err != nil {
		t.Fatal(err)
	}
	if got := e.aliasOn(ctx); got != e.v2 || e.phase(ctx) != schema.PhaseCutOver {
		t.Fatalf("after cutover: alias on %s, phase %s", got, e.phase(ctx))
	}
	if r, ri := e.setting(ctx, e.v2, "index.number_of_replicas"), e.setting(ctx, e.v2, "index.refresh_interval"); r != strconv.Itoa(e.replicas) || ri != "1s" {
		t.Errorf("target after cutover: replicas %s, refresh_interval %s; want %d (the source's) and 1s", r, ri, e.replicas)
	}
	if err := e.m.Cutover(ctx, SwitchConfig{}); err != nil {
		t.Errorf("second Cutover = %v, want a no-op", err)
	}
	var pe *PhaseError
	if err := e.m.Cancel(ctx, AckConfig{}); !errors.As(err, &pe) {
		t.Errorf("Cancel after cutover = %v, want a refusal", err)
	}

	// Writes after cutover reach both indexes (dual writes continue).
	all := e.docs.all()
	upd := *all[0]
	upd.Version++
	del := *all[1]
	del.Deleted, del.Version = true, del.Version+1
	added := &testDoc{ID: "dish:after-cutover", Relation: schema.RelationDish, Rest: all[0].Rest, Lat: all[0].Lat, Lng: all[0].Lng, Version: 1}
	e.dualWrite(ctx, &upd, &del, added)

	if err := e.m.Rollback(ctx, SwitchConfig{}); err != nil {
		t.Fatal(err)
	}
	if got := e.aliasOn(ctx); got != e.v1 || e.phase(ctx) != schema.PhaseRolledBack {
		t.Fatalf("after rollback: alias on %s, phase %s", got, e.phase(ctx))
	}
	// Reads through the alias see the writes made after cutover.
	e.admin.Refresh(ctx, e.alias)
	for _, c := range []struct {
		name  string
		d     *testDoc
		found bool
	}{
		{"updated after cutover", &upd, true},
		{"deleted after cutover", &del, false},
		{"added after cutover", added, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			routing := e.src.Shard(e.src.LocateCell(c.d.cell(e.src.Level()))).Routing
			_, v, found, err := e.admin.Get(ctx, e.alias, c.d.ID, routing)
			if err != nil || found != c.found || (found && v != c.d.Version) {
				t.Errorf("Get(menu, %s) after rollback = version %d, found %v, %v; want found %v at version %d", c.d.ID, v, found, err, c.found, c.d.Version)
			}
		})
	}
	if err := e.m.Rollback(ctx, SwitchConfig{}); err != nil {
		t.Errorf("second Rollback = %v, want a no-op", err)
	}
	// A new cutover needs a new verification.
	if err := e.m.Cutover(ctx, SwitchConfig{}); !errors.As(err, &pe) {
		t.Errorf("Cutover after rollback without verify = %v, want a refusal", err)
	}
	if err := e.m.Complete(ctx, CompleteConfig{}); !errors.As(err, &pe) {
		t.Errorf("Complete after rollback = %v, want a refusal", err)
	}
	if _, err := e.m.Verify(ctx, quickVerify); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Cutover(ctx, SwitchConfig{}); err != nil {
		t.Fatal(err)
	}
	e.checkTarget(ctx, e.v2)

	// Complete: an instance still writing both holds the deletion of the
	// old index, not the completion. The wait for it runs on a clock that
	// moves only by the wait's own pauses: the instance stays live, and
	// the wait ends at its timeout, not before.
	mig, _ := e.m.Load(ctx)
	c := &fakeClock{now: time.Now()}
	e.heartbeat("ingest-a", mig.ID, schema.PhaseCutOver, c.Now())
	var lag *LaggardsError
	const ackTimeout = 50 * time.Millisecond
	if err := e.migratorOn(c).Complete(ctx, CompleteConfig{DeleteOld: true, Ack: AckConfig{Timeout: ackTimeout}}); !errors.As(err, &lag) || !slices.Equal(lag.Instances, []string{"ingest-a"}) {
		t.Fatalf("Complete with a dual-writing instance = %v, want a LaggardsError naming ingest-a", err)
	}
	if got := c.total(); got != ackTimeout {
		t.Errorf("Complete gave up after waiting %v, want exactly the timeout %v", got, ackTimeout)
	}
	if ok, _ := e.admin.IndexExists(ctx, e.v1); !ok || e.phase(ctx) != schema.PhaseCompleted {
		t.Fatalf("after the refused deletion: %s exists %v, phase %s", e.v1, ok, e.phase(ctx))
	}
	e.heartbeat("ingest-a", mig.ID, schema.PhaseCompleted, time.Now())
	if err := e.m.Complete(ctx, CompleteConfig{DeleteOld: true}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := e.admin.IndexExists(ctx, e.v1); ok {
		t.Errorf("%s still exists after complete --delete-old", e.v1)
	}
	if gc := e.setting(ctx, e.v2, "index.gc_deletes"); gc != "60s" {
		t.Errorf("target gc_deletes after complete = %q, want 60s", gc)
	}
	if e.aliasOn(ctx) != e.v2 {
		t.Errorf("alias moved by complete")
	}
}

func TestCompleteRestoresGCDeletes(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 50)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	if err := e.m.Complete(ctx, CompleteConfig{}); err == nil {
		t.Errorf("Complete before cutover succeeded")
	}
	if err := e.m.Cutover(ctx, SwitchConfig{}); err != nil {
		t.Fatal(err)
	}
	if a, b := e.setting(ctx, e.v1, "index.gc_deletes"), e.setting(ctx, e.v2, "index.gc_deletes"); a != "1h" || b != "1h" {
		t.Fatalf("gc_deletes during the migration: %s, %s; want 1h on both", a, b)
	}
	if err := e.m.Complete(ctx, CompleteConfig{}); err != nil {
		t.Fatal(err)
	}
	for _, ix := range []string{e.v1, e.v2} {
		if gc := e.setting(ctx, ix, "index.gc_deletes"); gc != "60s" {
			t.Errorf("%s gc_deletes after complete = %q, want 60s", ix, gc)
		}
	}
	if err := e.m.Complete(ctx, CompleteConfig{}); err != nil {
		t.Errorf("second Complete = %v, want the cleanup again", err)
	}
}

func TestCancel(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 50)
	ctx := context.Background()
	if err := e.admin.PutSettings(ctx, e.v1, map[string]any{"gc_deletes": "2m"}); err != nil {
		t.Fatal(err)
	}
	e.migrateTo(ctx, BackfillConfig{})
	if gc := e.setting(ctx, e.v1, "index.gc_deletes"); gc != "1h" {
		t.Fatalf("source gc_deletes %q during the migration, want 1h", gc)
	}
	if err := e.m.Cancel(ctx, AckConfig{}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := e.admin.IndexExists(ctx, e.v2); ok {
		t.Errorf("cancel left the target")
	}
	if gc := e.setting(ctx, e.v1, "index.gc_deletes"); gc != "2m" {
		t.Errorf("source gc_deletes after cancel = %q, want 2m (the value before)", gc)
	}
	if e.phase(ctx) != schema.PhaseCancelled || e.aliasOn(ctx) != e.v1 {
		t.Errorf("after cancel: phase %s", e.phase(ctx))
	}
	if err := e.m.Cancel(ctx, AckConfig{}); err != nil {
		t.Errorf("second Cancel = %v, want the cleanup again", err)
	}
	var pe *PhaseError
	if err := e.m.Cutover(ctx, SwitchConfig{}); !errors.As(err, &pe) {
		t.Errorf("Cutover after cancel = %v, want a refusal", err)
	}
}

// A job killed after recording cut_over but before the swap finishes the
// swap when run again; complete refuses meanwhile.
func TestCutoverResumesSwap(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 50)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	if _, err := e.m.store.setPhase(ctx, "test", schema.PhaseCutOver, schema.PhaseVerified); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Complete(ctx, CompleteConfig{}); !errors.Is(err, ErrAliasState) {
		t.Errorf("Complete with the alias still on the source = %v, want ErrAliasState", err)
	}
	var dry bytes.Buffer
	if err := e.m.Cutover(ctx, SwitchConfig{DryRun: &dry}); err != nil || !strings.Contains(dry.String(), "POST /_aliases") || strings.Contains(dry.String(), schema.MigrationsIndex) {
		t.Errorf("dry run of the resumed cutover (%v):\n%s\nwant the swap and no state write", err, dry.String())
	}
	if err := e.m.Cutover(ctx, SwitchConfig{}); err != nil {
		t.Fatal(err)
	}
	if e.aliasOn(ctx) != e.v2 {
		t.Errorf("alias not moved by the resumed cutover")
	}
}

// Another operator moving the migration on is noticed: the backfill stops
// at its next checkpoint, and a change applies to what the other wrote.
func TestConcurrentOperator(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 200)
	ctx := context.Background()
	e.dualWriting(t)
	other := e.migrator(nil)
	moved := false
	e.m.search = &hookSearcher{Searcher: e.admin, onPage: func(ctx context.Context, index string, _ bulk.SearchParams, pg *bulk.Page) {
		if index == e.v1 && len(pg.Hits) > 0 && !moved {
			moved = true
			// Not Cancel: that would also delete the target under the
			// running backfill. Only the phase moves.
			if _, err := other.store.setPhase(ctx, "test", schema.PhaseCancelled, schema.PhaseBackfilling); err != nil {
				t.Error(err)
			}
		}
	}}
	var pe *PhaseError
	if _, err := e.m.Backfill(ctx, BackfillConfig{Slices: 1, Page: 50}); !errors.As(err, &pe) || pe.Phase != schema.PhaseCancelled {
		t.Fatalf("Backfill after another operator cancelled = %v, want a PhaseError in phase cancelled", err)
	}

	// A write between a change's read and its write is a conflict: the
	// change is applied again to the newer document.
	calls := 0
	rec, err := e.m.store.Update(ctx, func(m *schema.Migration) error {
		calls++
		if calls == 1 {
			if _, err := other.store.Update(ctx, func(o *schema.Migration) error { o.Restore.TargetReplicas = 7; return nil }); err != nil {
				t.Error(err)
			}
		}
		m.Restore.TargetRefreshInterval = "5s"
		return nil
	})
	if err != nil || calls != 2 || rec.Migration.Restore.TargetReplicas != 7 || rec.Migration.Restore.TargetRefreshInterval != "5s" {
		t.Errorf("Update under a concurrent write: %d calls, %+v, %v; want 2 calls keeping both changes", calls, rec, err)
	}
}

// A rollback cut short after recording its phase leaves the alias on the
// target; verify and cutover then only record the phase.
func TestSwitchAfterInterruptedRollback(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 50)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	if err := e.m.Cutover(ctx, SwitchConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.store.setPhase(ctx, "test", schema.PhaseRolledBack, schema.PhaseCutOver); err != nil {
		t.Fatal(err)
	}
	if err := e.m.Cancel(ctx, AckConfig{}); !errors.Is(err, ErrAliasState) {
		t.Errorf("Cancel with the alias on the target = %v, want ErrAliasState", err)
	}
	if _, err := e.m.Verify(ctx, quickVerify); err != nil {
		t.Fatal(err)
	}
	var dry bytes.Buffer
	if err := e.m.Cutover(ctx, SwitchConfig{DryRun: &dry}); err != nil || strings.Contains(dry.String(), "/_aliases") {
		t.Errorf("dry run (%v):\n%s\nwant no alias change", err, dry.String())
	}
	if err := e.m.Cutover(ctx, SwitchConfig{}); err != nil {
		t.Fatal(err)
	}
	if e.aliasOn(ctx) != e.v2 || e.phase(ctx) != schema.PhaseCutOver {
		t.Errorf("alias on %s, phase %s; want %s, cut_over", e.aliasOn(ctx), e.phase(ctx), e.v2)
	}
}

// Cutover restores the target's replicas and waits for green. With as
// many replicas as the cluster has data nodes, one copy of each shard can
// never be placed (never two copies on one node): the index stays yellow,
// and cutover gives up after HealthTimeout, the alias and the phase
// unchanged.
func TestCutoverWaitsForGreen(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 20)
	ctx := context.Background()
	nodes, err := dataNodes(ctx, e.admin)
	if err != nil || nodes < 1 {
		t.Fatalf("data nodes: %d, %v", nodes, err)
	}
	e.migrateTo(ctx, BackfillConfig{})
	if _, err := e.m.store.Update(ctx, func(x *schema.Migration) error { x.Restore.TargetReplicas = nodes; return nil }); err != nil {
		t.Fatal(err)
	}
	err = e.m.Cutover(ctx, SwitchConfig{HealthTimeout: time.Second})
	if err == nil || !strings.Contains(err.Error(), "did not turn green") {
		t.Fatalf("Cutover with %d replicas on %d data nodes = %v, want a wait for green that times out", nodes, nodes, err)
	}
	if got := e.aliasOn(ctx); got != e.v1 || e.phase(ctx) != schema.PhaseVerified {
		t.Errorf("after the refused cutover: alias on %s, phase %s; want %s, verified", got, e.phase(ctx), e.v1)
	}
	if r := e.setting(ctx, e.v2, "index.number_of_replicas"); r != strconv.Itoa(nodes) {
		t.Errorf("target replicas %s, want %d (restored before the wait)", r, nodes)
	}
}
