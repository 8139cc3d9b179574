package e2e

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/schema"
)

// TestDualWritesWaitsForIngestHeartbeat checks that what the dual-writes
// step waits for is the heartbeat the real pipeline writes (migrate's own
// tests fake it): with no live pipeline it goes on and says so; with a
// live one it returns only once the pipeline has applied dual writes and
// said so; a live pipeline that has not applied them holds it until the
// timeout, named, and the same pipeline restarted applies them before it
// consumes anything.
func TestDualWritesWaitsForIngestHeartbeat(t *testing.T) {
	realenv.Parallel(t)
	ctx := context.Background()

	t.Run("no live instance", func(t *testing.T) {
		realenv.Parallel(t)
		e := newEnv(t)
		// An instance that ran and stopped leaves its heartbeat behind.
		in := e.startIngest(e.pipelineConfig("ingest-gone"))
		e.waitApplied(t, in, "", "")
		if err := in.Stop(t); err != nil {
			t.Fatalf("pipeline Run = %v", err)
		}
		if _, found := e.heartbeat(t, "ingest-gone"); !found {
			t.Fatal("the stopped instance left no heartbeat")
		}
		// The job's clock reads an hour on: the heartbeat is well outside
		// the live window, with no wait for it to age.
		const window = time.Minute
		later := func() time.Time { return time.Now().Add(time.Hour) }

		log, logs := capturingLogger()
		m := e.migratorAt(nil, log, later)
		mig, err := m.Create(ctx, migrate.CreateConfig{Map: e.m24, Target: targetIdx})
		if err != nil {
			t.Fatal(err)
		}
		const timeout = 10 * time.Second
		rep, err := m.DualWrites(ctx, migrate.AckConfig{Timeout: timeout, LiveWindow: window})
		if err != nil {
			t.Fatalf("DualWrites with no live ingest instance = %v, want it to go on", err)
		}
		if rep.Live() != 0 || len(rep.Instances) != 1 || rep.Instances[0].Instance != "ingest-gone" || rep.Instances[0].Live {
			t.Errorf("DualWrites report = %+v, want ingest-gone listed and not live", rep)
		}
		if rep.Waited >= timeout {
			t.Errorf("DualWrites waited out its timeout (%v) with nobody to wait for", rep.Waited)
		}
		if !strings.Contains(logs.String(), "no live ingest instance: nobody to wait for") {
			t.Errorf("DualWrites did not say that no ingest instance is live; logs:\n%s", logs)
		}
		if got, err := m.Load(ctx); err != nil || got.Phase != schema.PhaseDualWrites || got.ID != mig.ID {
			t.Errorf("migration after DualWrites = %+v, %v; want phase dual_writes", got, err)
		}
	})

	t.Run("live instance acknowledges", func(t *testing.T) {
		realenv.Parallel(t)
		e := newEnv(t)
		cfg := e.pipelineConfig("ingest-live")
		cfg.MigrationPollInterval = 300 * time.Millisecond // a wait long enough to see
		in := e.startIngest(cfg)
		e.waitApplied(t, in, "", "")
		writesTo(t, in, sourceIdx)

		log, logs := capturingLogger()
		m := e.migrator(nil, log)
		mig, err := m.Create(ctx, migrate.CreateConfig{Map: e.m24, Target: targetIdx})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := m.DualWrites(ctx, migrate.AckConfig{Timeout: 10 * time.Second})
		if err != nil {
			t.Fatalf("DualWrites = %v", err)
		}
		announced, err := m.Load(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Live() != 1 || len(rep.Laggards()) != 0 || rep.Instances[0].Instance != "ingest-live" || !rep.Instances[0].Acked ||
			rep.Instances[0].MigrationID != mig.ID || rep.Instances[0].Applied != schema.PhaseDualWrites {
			t.Errorf("DualWrites report = %+v, want ingest-live live and acknowledging dual writes of %s", rep, mig.ID)
		}
		// The acknowledgement is a heartbeat the pipeline wrote after the
		// phase was announced, and the pipeline writes both indexes.
		hb, _ := e.heartbeat(t, "ingest-live")
		if hb.MigrationID != mig.ID || hb.Applied != schema.PhaseDualWrites || hb.At.Before(announced.Updated) {
			t.Errorf("heartbeat = %+v, want dual writes of %s acknowledged after the announcement at %v", hb, mig.ID, announced.Updated)
		}
		if st := in.p.Stats().Migration; st.ID != mig.ID || st.Phase != schema.PhaseDualWrites {
			t.Errorf("pipeline applies %+v, want dual writes of %s", st, mig.ID)
		}
		writesTo(t, in, sourceIdx, targetIdx)
		if !strings.Contains(logs.String(), "every live ingest instance acknowledged") {
			t.Errorf("DualWrites did not report the acknowledgement; logs:\n%s", logs)
		}
		t.Logf("DualWrites waited %v for the pipeline's acknowledgement (it polls every %v)", rep.Waited, cfg.MigrationPollInterval)
	})

	t.Run("live instance not acknowledging", func(t *testing.T) {
		realenv.Parallel(t)
		e := newEnv(t)
		// Live (it wrote a heartbeat at start, and the live window is
		// longer than any test) but it never reads the migration state
		// again.
		cfg := e.pipelineConfig("ingest-slow")
		cfg.MigrationPollInterval = time.Hour
		in := e.startIngest(cfg)
		e.waitApplied(t, in, "", "")
		m := e.migrator(nil, nil)
		mig, err := m.Create(ctx, migrate.CreateConfig{Map: e.m24, Target: targetIdx})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		rep, err := m.DualWrites(ctx, migrate.AckConfig{Timeout: 500 * time.Millisecond, LiveWindow: time.Hour})
		var lag *migrate.LaggardsError
		if !errors.As(err, &lag) || !reflect.DeepEqual(lag.Instances, []string{"ingest-slow"}) {
			t.Fatalf("DualWrites = %v, want a LaggardsError naming ingest-slow", err)
		}
		if waited := time.Since(start); waited < 500*time.Millisecond {
			t.Errorf("DualWrites gave up after %v, before its timeout", waited)
		}
		if rep == nil || rep.Live() != 1 || !reflect.DeepEqual(rep.Laggards(), []string{"ingest-slow"}) {
			t.Errorf("DualWrites report = %+v, want ingest-slow live and lagging", rep)
		}
		if _, err := m.Backfill(ctx, migrate.BackfillConfig{Ack: migrate.AckConfig{Timeout: 200 * time.Millisecond, LiveWindow: time.Hour}}); !errors.As(err, &lag) {
			t.Errorf("Backfill with a lagging instance = %v, want a LaggardsError", err)
		}
		writesTo(t, in, sourceIdx)

		// Restarted, the instance reads the state before it consumes
		// anything and acknowledges at once.
		if err := in.Stop(t); err != nil {
			t.Fatalf("pipeline Run = %v", err)
		}
		cfg.MigrationPollInterval = 100 * time.Millisecond
		cfg.Registerer = prometheus.NewRegistry()
		in = e.startIngest(cfg)
		rep, err = m.DualWrites(ctx, migrate.AckConfig{Timeout: 10 * time.Second})
		if err != nil || rep.Live() != 1 || !rep.Instances[0].Acked {
			t.Fatalf("DualWrites after the restart = %+v, %v; want ingest-slow acknowledging", rep, err)
		}
		e.waitApplied(t, in, mig.ID, schema.PhaseDualWrites)
		writesTo(t, in, sourceIdx, targetIdx)
	})
}
