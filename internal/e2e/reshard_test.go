package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/schema"
)

// TestReshardUnderLiveIngest reshards menu from the 18-shard map to the
// 24-shard map, step by step, while events keep flowing through the real
// pipeline: create, dual writes (acknowledged by the pipeline's own
// heartbeat), backfill, verification with ids, cutover. Once the traffic
// stops and ingest has drained, the alias is on the target, and both the
// target and the source (kept current by dual writes, as a rollback
// target) hold exactly the state the event log implies, each document on
// the shard its index's map gives it and every dish with its restaurant.
func TestReshardUnderLiveIngest(t *testing.T) {
	realenv.Parallel(t)
	s := startScenario(t, 11, 700, 1200)
	e, in := s.e, s.in
	ctx := context.Background()
	s.f.start(batchSize, batchEvery)
	m := e.migrator(nil, nil)
	s.mark("create")
	mig, err := m.Create(ctx, migrate.CreateConfig{Map: e.m24, Target: targetIdx})
	if err != nil {
		s.diagnose(t, "Create", err)
	}

	s.mark("dual-writes")
	ack, err := m.DualWrites(ctx, migrate.AckConfig{Timeout: 20 * time.Second})
	if err != nil {
		s.diagnose(t, "DualWrites", err)
	}
	// The job went on because the real pipeline said, in its heartbeat,
	// that it writes both indexes.
	if ack.Live() != 1 || len(ack.Instances) != 1 || ack.Instances[0].Instance != in.instance || !ack.Instances[0].Acked ||
		ack.Instances[0].MigrationID != mig.ID || !ack.Instances[0].Applied.DualWrites() {
		t.Errorf("DualWrites report = %+v, want %s live and acknowledging migration %s", ack, in.instance, mig.ID)
	}
	if st := in.p.Stats().Migration; st.ID != mig.ID || !st.Phase.DualWrites() {
		t.Errorf("after DualWrites, ingest applies %+v, want dual writes of %s", st, mig.ID)
	}
	writesTo(t, in, sourceIdx, targetIdx)
	s.waitTraffic(t, 10*time.Second)

	s.mark("backfill")
	// Limited to last about a second, so that restaurants move, through
	// ingest, while it copies.
	bf, err := m.Backfill(ctx, migrate.BackfillConfig{Page: 100, MaxDocsPerSecond: 1000, Ack: migrate.AckConfig{Timeout: 20 * time.Second}})
	if err != nil {
		s.diagnose(t, "Backfill", err)
	}
	t.Logf("backfill: read %d, copied %d, stale %d (live writes won), %d in all, in %v", bf.Read, bf.Copied, bf.Stale, bf.Docs, bf.Elapsed.Round(time.Millisecond))

	s.mark("verify")
	// The verification takes less than the feed's pause between batches:
	// it starts once the feed has written since the mark, so that it runs
	// while ingest writes that batch.
	s.waitTraffic(t, 10*time.Second)
	ver, err := m.Verify(ctx, migrate.VerifyConfig{IDs: true, Attempts: 40, Pause: 100 * time.Millisecond})
	if err != nil {
		logVerification(t, ver)
		s.diagnose(t, "Verify", err)
	}

	s.mark("cutover")
	if err := m.Cutover(ctx, migrate.SwitchConfig{HealthTimeout: 10 * time.Second}); err != nil {
		s.diagnose(t, "Cutover", err)
	}
	s.mark("cut over")
	// Ingest makes the target its primary and keeps writing both.
	e.waitApplied(t, in, mig.ID, schema.PhaseCutOver)
	writesTo(t, in, targetIdx, sourceIdx)
	s.f.waitProduced(s.f.count()+10*batchSize, 10*time.Second)
	s.mark("stop")
	s.quiesce(t)

	s.checkTrafficDuring(t, "dual-writes", "backfill", "verify", "cut over")
	if got := e.aliasOn(t); got != targetIdx {
		t.Errorf("alias %s is on %s after cutover, want %s", alias, got, targetIdx)
	}
	mig, err = m.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mig.Phase != schema.PhaseCutOver || mig.Verification == nil || !mig.Verification.OK || !mig.Verification.IDs {
		t.Errorf("migration after cutover: phase %s, verification %+v; want cut_over with a passed verification of ids", mig.Phase, mig.Verification)
	}

	final := buildModel(t, e.settled(t, s.f.log()))
	t.Logf("%d events produced; expected under the new map: %s", s.f.count(), summary(final.expected(e.m24)))
	s.explain(t, targetIdx, e.checkIndex(t, targetIdx, e.m24, final.expected(e.m24)))
	s.explain(t, sourceIdx, e.checkIndex(t, sourceIdx, e.m18, final.expected(e.m18)))
	s.checkDeadLetters(t, buildModel(t, s.f.log()))

	// The job's own verification agrees once the traffic has stopped.
	ver, err = m.Verify(ctx, migrate.VerifyConfig{IDs: true, Attempts: 1})
	if err != nil || !ver.OK {
		logVerification(t, ver)
		t.Errorf("verification after the traffic stopped: %v", err)
	}
}

// TestRollbackAfterCutover runs the reshard under live traffic to
// cutover, keeps writing through the cutover, then rolls back: reads
// through the alias hit the old index again, and it holds every write
// made after cutover (ingest kept writing it, second), then every write
// made after the rollback (it is the primary again).
func TestRollbackAfterCutover(t *testing.T) {
	realenv.Parallel(t)
	s := startScenario(t, 12, 700, 1000)
	e, in := s.e, s.in
	ctx := context.Background()
	s.f.start(batchSize, batchEvery)
	m := e.migrator(nil, nil)
	var steps []string
	mig, err := m.Run(ctx, migrate.RunConfig{
		Create:   migrate.CreateConfig{Map: e.m24, Target: targetIdx},
		Ack:      migrate.AckConfig{Timeout: 20 * time.Second},
		Backfill: migrate.BackfillConfig{Page: 100},
		Verify:   migrate.VerifyConfig{IDs: true, Attempts: 40, Pause: 100 * time.Millisecond},
		Switch:   migrate.SwitchConfig{HealthTimeout: 10 * time.Second},
		OnStep: func(step migrate.Step, _ schema.Phase) {
			steps = append(steps, string(step))
			s.mark(string(step))
		},
	})
	if err != nil {
		if cur, lerr := m.Load(ctx); lerr == nil {
			logVerification(t, cur.Verification)
		}
		s.diagnose(t, fmt.Sprintf("Run (steps %v)", steps), err)
	}
	if mig.Phase != schema.PhaseCutOver {
		t.Fatalf("Run ended in phase %s after steps %v, want cut_over", mig.Phase, steps)
	}
	e.waitApplied(t, in, mig.ID, schema.PhaseCutOver)
	atCutover := s.f.count()
	s.f.waitProduced(atCutover+15*batchSize, 15*time.Second)
	s.quiesce(t)

	if err := m.Rollback(ctx, migrate.SwitchConfig{HealthTimeout: 10 * time.Second}); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	if got := e.aliasOn(t); got != sourceIdx {
		t.Fatalf("alias %s is on %s after rollback, want %s", alias, got, sourceIdx)
	}
	if mig, err = m.Load(ctx); err != nil || mig.Phase != schema.PhaseRolledBack {
		t.Fatalf("after rollback: %+v, %v; want phase rolled_back", mig, err)
	}

	// The writes made after cutover are in the old index.
	final := buildModel(t, e.settled(t, s.f.log()))
	want := final.expected(e.m18)
	changed := changedBetween(buildModel(t, s.f.log()[:atCutover]).expected(e.m18), want)
	t.Logf("%d events after cutover changed %d documents", s.f.count()-atCutover, len(changed))
	if len(changed) == 0 {
		t.Fatal("no document changed after cutover: the test tests nothing")
	}
	e.checkIndex(t, sourceIdx, e.m18, want)
	if n, err := e.admin.Count(ctx, alias, nil, bulk.SearchParams{}); err != nil || n != int64(len(want)) {
		t.Errorf("count through alias %s = %d, %v; want the old index's %d", alias, n, err, len(want))
	}

	// Ingest applies rolled_back: the source is primary again, and both
	// are still written.
	e.waitApplied(t, in, mig.ID, schema.PhaseRolledBack)
	writesTo(t, in, sourceIdx, targetIdx)
	atRollback := s.f.count()
	s.f.produce(10 * batchSize)
	e.waitDrained(t, in, 30*time.Second)
	final = buildModel(t, e.settled(t, s.f.log()))
	want = final.expected(e.m18)
	t.Logf("%d events after rollback changed %d documents", s.f.count()-atRollback,
		len(changedBetween(buildModel(t, s.f.log()[:atRollback]).expected(e.m18), want)))
	e.checkIndex(t, sourceIdx, e.m18, want)
	e.checkIndex(t, targetIdx, e.m24, final.expected(e.m24))
	s.checkDeadLetters(t, buildModel(t, s.f.log()))
}
