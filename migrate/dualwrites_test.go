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
	c := &fakeClock{now: time.Now()}
	m := e.migratorOn(c)
	mig, err := m.Create(ctx, CreateConfig{Map: e.dst})
	if err != nil {
		t.Fatal(err)
	}
	// Both are live when the step looks (else it finds nobody to wait
	// for), and stay live: the clock moves only by the step's own waits,
	// far less than the live window. Only one applies the phase.
	e.heartbeat("ingest-a", mig.ID, schema.PhaseDualWrites, c.Now())
	e.heartbeat("ingest-stuck", "", "", c.Now())
	const timeout = 300 * time.Millisecond
	rep, err := m.DualWrites(ctx, AckConfig{Timeout: timeout})
	var lag *LaggardsError
	if !errors.As(err, &lag) || !reflect.DeepEqual(lag.Instances, []string{"ingest-stuck"}) {
		t.Fatalf("DualWrites = %v, want a LaggardsError naming ingest-stuck only", err)
	}
	// It gave up at the timeout, not before: its pauses between two reads
	// of the heartbeats add up to it.
	if got := c.total(); got != timeout || rep == nil || rep.Waited != timeout {
		t.Errorf("gave up after waiting %v (report: %+v), want exactly the timeout %v", got, rep, timeout)
	}
	if rep == nil || rep.Live() != 2 || !reflect.DeepEqual(rep.Laggards(), []string{"ingest-stuck"}) {
		t.Errorf("report = %+v, want 2 live instances, 1 laggard", rep)
	}
	// The phase stays dual_writes: ingest may write both; the backfill
	// refuses until every live instance does.
	if got, _ := m.Load(ctx); got.Phase != schema.PhaseDualWrites {
		t.Errorf("phase %s, want dual_writes", got.Phase)
	}
	if _, err := m.Backfill(ctx, BackfillConfig{Ack: AckConfig{Timeout: 50 * time.Millisecond}}); !errors.As(err, &lag) {
		t.Errorf("Backfill with a laggard = %v, want a LaggardsError", err)
	}
}

// The wait ends as soon as the last live instance applies the phase.
func TestDualWritesWaitsForAck(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 0)
	ctx := context.Background()
	c := &fakeClock{now: time.Now()}
	m := e.migratorOn(c)
	mig, err := m.Create(ctx, CreateConfig{Map: e.dst})
	if err != nil {
		t.Fatal(err)
	}
	e.heartbeat("ingest-a", "", "", c.Now())
	// While the step pauses between two reads of the heartbeats, ingest-a
	// polls, sees the new phase and applies it.
	c.onSleep = func(now time.Time) {
		got, err := m.Load(ctx)
		if err == nil && got.Phase.DualWrites() {
			e.heartbeat("ingest-a", mig.ID, got.Phase, now)
		}
	}
	rep, err := m.DualWrites(ctx, AckConfig{Timeout: 5 * time.Second})
	if err != nil || rep.Live() != 1 || len(rep.Laggards()) != 0 || !rep.Instances[0].Acked {
		t.Fatalf("DualWrites = %+v, %v; want ingest-a acknowledged", rep, err)
	}
	if n := len(c.sleeps()); n != 1 {
		t.Errorf("DualWrites paused %d times, want once: the read after ingest-a applied the phase ends the wait", n)
	}
	c.onSleep = nil
	// A finished migration is not announced again. Cancel waits for the
	// instance to stop writing both indexes, which it does not do.
	var lag *LaggardsError
	if err := m.Cancel(ctx, AckConfig{Timeout: 50 * time.Millisecond}); !errors.As(err, &lag) || !reflect.DeepEqual(lag.Instances, []string{"ingest-a"}) {
		t.Errorf("Cancel while ingest-a still dual-writes = %v; want it to wait for the instance, and name it", err)
	}
	e.heartbeat("ingest-a", mig.ID, schema.PhaseCancelled, c.Now())
	if err := m.Cancel(ctx, AckConfig{Timeout: time.Second}); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	var pe *PhaseError
	if _, err := m.DualWrites(ctx, AckConfig{}); !errors.As(err, &pe) {
		t.Errorf("DualWrites after cancel = %v, want a PhaseError", err)
	}
}
