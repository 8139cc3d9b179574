package e2e

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/schema"
)

func sliceDocs(ss []schema.SliceState) int64 {
	var n int64
	for _, s := range ss {
		n += s.Docs
	}
	return n
}

// TestBackfillKilledAndResumed kills the job in the middle of its
// backfill, while ingest runs and events flow, and runs it again as a new
// process would (a new Migrator, new metrics): it resumes from the
// checkpoints stored in the migration, reading only what they do not
// cover, and the migration ends correct — verified, cut over, and the
// target equal to the model once the traffic stops.
func TestBackfillKilledAndResumed(t *testing.T) {
	realenv.Parallel(t)
	s := startScenario(t, 14, 700, 1500)
	e, in, f := s.e, s.in, s.f
	ctx := context.Background()
	f.start(batchSize, batchEvery)

	kill, cancel := context.WithCancel(ctx)
	defer cancel()
	var once sync.Once
	cfg := migrate.RunConfig{
		Create: migrate.CreateConfig{Map: e.m24, Target: targetIdx},
		Ack:    migrate.AckConfig{Timeout: 20 * time.Second},
		// Small pages and a limit, so the backfill lasts long enough to be
		// killed part-way.
		Backfill: migrate.BackfillConfig{
			Page: 50, MaxDocsPerSecond: 1500, ProgressInterval: 5 * time.Millisecond,
			Progress: func(p migrate.BackfillProgress) {
				if p.Total > 0 && p.Docs >= p.Total/3 {
					once.Do(cancel) // the job is killed: the pages in flight are lost
				}
			},
		},
		Verify: migrate.VerifyConfig{IDs: true, Attempts: 40, Pause: 100 * time.Millisecond},
		Switch: migrate.SwitchConfig{HealthTimeout: 10 * time.Second},
		OnStep: func(step migrate.Step, _ schema.Phase) {
			s.mark(string(step))
		},
	}
	_, err := e.migrator(nil, nil).Run(kill, cfg)
	var se *migrate.StepError
	if !errors.As(err, &se) || se.Step != "backfill" || !errors.Is(err, context.Canceled) {
		t.Fatalf("killed Run = %v, want a StepError of the backfill step wrapping context.Canceled", err)
	}
	m := e.migrator(nil, nil)
	mig, err := m.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	atKill := sliceDocs(mig.Backfill)
	doneSlices := 0
	for _, sl := range mig.Backfill {
		if sl.Done {
			doneSlices++
		}
	}
	if mig.Phase != schema.PhaseBackfilling || atKill == 0 || doneSlices == len(mig.Backfill) {
		t.Fatalf("after the kill: phase %s, %d documents checkpointed, %d of %d slices done; want backfilling, part-way",
			mig.Phase, atKill, doneSlices, len(mig.Backfill))
	}
	if err := e.admin.Refresh(ctx, sourceIdx); err != nil {
		t.Fatal(err)
	}
	inSource, err := e.admin.Count(ctx, sourceIdx, nil, bulk.SearchParams{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed after %d documents checkpointed (%d of %d slices done); the source holds %d", atKill, doneSlices, len(mig.Backfill), inSource)

	// A new job resumes. Traffic goes on; locations move again from the
	// verification on.
	reg := prometheus.NewRegistry()
	m = e.migrator(reg, nil)
	cfg.Backfill.Progress = nil
	cfg.OnStep = func(step migrate.Step, _ schema.Phase) {
		s.mark("resumed " + string(step))
		if step == migrate.StepVerify {
			// The verification takes less than the feed's pause between
			// batches: it starts once the feed has written since the
			// mark, so that it runs while writes go on.
			s.waitTraffic(t, 10*time.Second)
		}
	}
	mig, err = m.Run(ctx, cfg)
	if err != nil {
		if cur, lerr := m.Load(ctx); lerr == nil {
			logVerification(t, cur.Verification)
		}
		s.diagnose(t, "resumed Run", err)
	}
	if mig.Phase != schema.PhaseCutOver {
		t.Fatalf("resumed Run ended in phase %s, want cut_over", mig.Phase)
	}
	// The resumed run read only what the checkpoints did not cover: the
	// documents it copied (geoshard_backfill_docs_total of the new job)
	// and the checkpoints at the kill add up to the checkpoints at the
	// end, and it read fewer than a full copy would.
	resumed := int64(counterValue(t, reg, "geoshard_backfill_docs_total"))
	total := sliceDocs(mig.Backfill)
	t.Logf("resumed backfill read %d documents; %d in all over the migration", resumed, total)
	if resumed+atKill != total {
		t.Errorf("resumed backfill copied %d documents and %d were checkpointed at the kill, but the checkpoints add up to %d", resumed, atKill, total)
	}
	if resumed <= 0 || resumed >= total || resumed >= inSource {
		t.Errorf("resumed backfill read %d documents, want fewer than a full copy (%d over the migration, %d in the source)", resumed, total, inSource)
	}
	for _, sl := range mig.Backfill {
		if !sl.Done {
			t.Errorf("slice %d (source shard %d) not done after the resumed backfill", sl.Slice, sl.SourceShard)
		}
	}
	if mig.Verification == nil || !mig.Verification.OK || !mig.Verification.IDs {
		t.Errorf("verification %+v, want a passed verification of ids", mig.Verification)
	}

	e.waitApplied(t, in, mig.ID, schema.PhaseCutOver)
	f.waitProduced(f.count()+10*batchSize, 10*time.Second)
	s.mark("stop")
	s.quiesce(t)
	s.checkTrafficDuring(t, "backfill", "resumed backfill", "resumed verify")

	if got := e.aliasOn(t); got != targetIdx {
		t.Errorf("alias %s is on %s, want %s", alias, got, targetIdx)
	}
	final := buildModel(t, e.settled(t, f.log()))
	s.explain(t, targetIdx, e.checkIndex(t, targetIdx, e.m24, final.expected(e.m24)))
	s.explain(t, sourceIdx, e.checkIndex(t, sourceIdx, e.m18, final.expected(e.m18)))
	s.checkDeadLetters(t, buildModel(t, f.log()))
	if ver, err := m.Verify(ctx, migrate.VerifyConfig{IDs: true, Attempts: 1}); err != nil || !ver.OK {
		logVerification(t, ver)
		t.Errorf("verification after the traffic stopped: %v", err)
	}
}
