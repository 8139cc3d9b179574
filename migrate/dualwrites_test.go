package migrate

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

func TestDualWritesWithoutInstances(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 0)
	ctx := context.Background()
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		t.Fatal(err)
	}
	// An instance that stopped long ago is not live: nobody to wait for.
	e.heartbeat("ingest-gone", "", "", time.Now().Add(-time.Hour))
	rep, err := e.m.DualWrites(ctx, AckConfig{Timeout: time.Second})
	if err != nil || rep.Live() != 0 || len(rep.Instances) != 1 {
		t.Fatalf("DualWrites = %+v, %v; want no live instance and no wait", rep, err)
	}
	mig, _ := e.m.Load(ctx)
	if mig.Phase != schema.PhaseDualWrites {
		t.Errorf("phase %s, want dual_writes", mig.Phase)
	}
}

// An ingest instance whose heartbeat is live but stuck on no migration
// holds dual-writes until the timeout, and is named.
func TestDualWritesRefusesLaggard(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 0)
	ctx := context.Background()
	mig, err := e.m.Create(ctx, CreateConfig{Map: e.dst})
	if err != nil {
		t.Fatal(err)
	}
	beat := func() {
		e.heartbeat("ingest-a", mig.ID, schema.PhaseDualWrites, time.Now())
		e.heartbeat("ingest-stuck", "", "", time.Now())
	}
	// Both are live before the step looks (else it finds nobody to wait
	// for), and keep their heartbeats fresh; only one applies the phase.
	beat()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			beat()
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	defer func() { close(stop); <-done }()
	start := time.Now()
	rep, err := e.m.DualWrites(ctx, AckConfig{Timeout: 300 * time.Millisecond})
	var lag *LaggardsError
	if !errors.As(err, &lag) || !reflect.DeepEqual(lag.Instances, []string{"ingest-stuck"}) {
		t.Fatalf("DualWrites = %v, want a LaggardsError naming ingest-stuck only", err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("gave up after %v, before the timeout", waited)
	}
	if rep == nil || rep.Live() != 2 || !reflect.DeepEqual(rep.Laggards(), []string{"ingest-stuck"}) {
		t.Errorf("report = %+v, want 2 live instances, 1 laggard", rep)
	}
	// The phase stays dual_writes: ingest may write both; the backfill
	// refuses until every live instance does.
	if got, _ := e.m.Load(ctx); got.Phase != schema.PhaseDualWrites {
		t.Errorf("phase %s, want dual_writes", got.Phase)
	}
	if _, err := e.m.Backfill(ctx, BackfillConfig{Ack: AckConfig{Timeout: 50 * time.Millisecond}}); !errors.As(err, &lag) {
		t.Errorf("Backfill with a laggard = %v, want a LaggardsError", err)
	}
}

// The wait ends as soon as the last live instance applies the phase.
func TestDualWritesWaitsForAck(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 0)
	ctx := context.Background()
	mig, err := e.m.Create(ctx, CreateConfig{Map: e.dst})
	if err != nil {
		t.Fatal(err)
	}
	e.heartbeat("ingest-a", "", "", time.Now())
	go func() {
		// ingest-a polls, sees the new phase and applies it.
		for {
			time.Sleep(20 * time.Millisecond)
			got, err := e.m.Load(ctx)
			if err == nil && got.Phase.DualWrites() {
				e.heartbeat("ingest-a", mig.ID, got.Phase, time.Now())
				return
			}
		}
	}()
	rep, err := e.m.DualWrites(ctx, AckConfig{Timeout: 5 * time.Second})
	if err != nil || rep.Live() != 1 || len(rep.Laggards()) != 0 || !rep.Instances[0].Acked {
		t.Fatalf("DualWrites = %+v, %v; want ingest-a acknowledged", rep, err)
	}
	// A finished migration is not announced again.
	if err := e.m.Cancel(ctx, AckConfig{Timeout: 50 * time.Millisecond}); err == nil {
		t.Errorf("Cancel while ingest-a still dual-writes succeeded; want it to wait for the instance")
	}
	e.heartbeat("ingest-a", mig.ID, schema.PhaseCancelled, time.Now())
	if err := e.m.Cancel(ctx, AckConfig{Timeout: time.Second}); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	var pe *PhaseError
	if _, err := e.m.DualWrites(ctx, AckConfig{}); !errors.As(err, &pe) {
		t.Errorf("DualWrites after cancel = %v, want a PhaseError", err)
	}
}
