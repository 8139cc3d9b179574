package migrate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/geoshard/geoshard/schema"
)

// RunConfig configures Run: the configuration of each step.
type RunConfig struct {
	Create   CreateConfig
	Ack      AckConfig
	Backfill BackfillConfig
	Verify   VerifyConfig
	Switch   SwitchConfig
	// OnStep, if set, is called before each step with its name and the
	// phase it starts from.
	OnStep func(step Step, from schema.Phase)
}

// Run performs create, dual writes, backfill, verify and cutover in
// order, starting from the phase the migration is in, and stops at the
// first step that fails (a *StepError naming it). After create, each step
// is the one of runSteps that moves the migration on from its phase (the
// transition table), until the alias is on the target. It never
// completes a migration: that is the point of no return, and an
// operator's decision. It returns the migration as it left it.
func (m *Migrator) Run(ctx context.Context, cfg RunConfig) (*schema.Migration, error) {
	ctx = m.withStep(ctx, StepRun)
	if cfg.Create.Map == nil {
		return nil, errors.New("migrate: run: no map")
	}
	if err := m.store.ensureIndex(ctx); err != nil {
		return nil, err
	}
	rec, err := m.store.Load(ctx)
	switch {
	case err == nil && rec.Migration.Phase == rule(StepComplete).to && rec.Migration.Target.MapHash == cfg.Create.Map.Hash():
		m.log.Info("migration already completed", "step", StepRun, "index", rec.Migration.Target.Index)
		return &rec.Migration, nil
	case err != nil && !errors.Is(err, ErrNoMigration):
		return nil, err
	}
	steps := map[Step]func() error{
		StepDualWrites: func() error { _, err := m.DualWrites(ctx, cfg.Ack); return err },
		StepBackfill: func() error {
			c := cfg.Backfill
			c.Ack = cfg.Ack
			_, err := m.Backfill(ctx, c)
			return err
		},
		StepVerify:  func() error { _, err := m.Verify(ctx, cfg.Verify); return err },
		StepCutover: func() error { return m.Cutover(ctx, cfg.Switch) },
	}
	mig, err := m.Create(ctx, cfg.Create)
	if err != nil {
		return nil, &StepError{Step: StepCreate, Err: err}
	}
	for {
		from := mig.Phase
		name, ok := runStep(from)
		switch {
		case !ok && from.TargetIsPrimary():
			// Cut over, or completed meanwhile: run's work is done.
			m.log.Info("run done; complete the migration (or roll it back) when satisfied", "step", StepRun, "phase", from)
			return mig, nil
		case !ok:
			return mig, &StepError{Step: StepRun, Phase: from, Err: fmt.Errorf("nothing to run in phase %s", from)}
		}
		if cfg.OnStep != nil {
			cfg.OnStep(name, from)
		}
		m.log.Info("step", "step", name, "phase", from)
		if err := steps[name](); err != nil {
			return mig, &StepError{Step: name, Phase: from, Err: err}
		}
		if mig, err = m.Load(ctx); err != nil {
			return nil, err
		}
		if mig.Phase == from {
			return mig, &StepError{Step: StepRun, Phase: from, Err: errors.New("the step did not move the migration on")}
		}
	}
}

// Status is a migration as `reshard status` shows it.
type Status struct {
	// Alias is the alias the status is of.
	Alias string `json:"alias"`
	// Migration is the recorded migration; nil when none is.
	Migration *schema.Migration `json:"migration"`
	// Backfill sums the backfill's checkpoints: nil before it began.
	Backfill *BackfillTotals `json:"backfill,omitempty"`
	// Instances are the ingest instances with a heartbeat for the alias
	// at most StaleAfter old; Acked means the instance has applied the
	// migration's current phase (with no migration: that it writes with
	// none).
	Instances []Instance `json:"instances"`
	// Stale counts the heartbeats older than StaleAfter, left out of
	// Instances: instances stopped long ago (a replaced pod leaves its
	// heartbeat behind).
	Stale int `json:"stale"`
	// Next are the steps that go on from the migration's phase (with none
	// recorded, or a finished one: create): the transition table's steps
	// that start from the phase, the one Run would take first.
	Next []Step `json:"next"`
}

// StaleAfter is how old a heartbeat is before Status leaves its instance
// out: far beyond any live window.
const StaleAfter = time.Hour

// Status reads the migration and the ingest instances' heartbeats.
// An instance is live if its heartbeat is at most liveWindow old (0: the
// default, 30s). With no migration recorded it still lists the
// instances, and Migration is nil.
func (m *Migrator) Status(ctx context.Context, liveWindow time.Duration) (*Status, error) {
	var mig *schema.Migration
	var totals *BackfillTotals
	rec, err := m.store.Load(ctx)
	switch {
	case err == nil:
		mig = &rec.Migration
		m.met.setPhase(mig.Phase)
		if len(mig.Backfill) > 0 {
			t := backfillTotals(mig.Backfill)
			totals = &t
		}
	case !errors.Is(err, ErrNoMigration):
		return nil, err
	}
	hbs, err := m.Heartbeats(ctx)
	if err != nil {
		return nil, err
	}
	now := m.cfg.Now()
	kept := hbs[:0]
	stale := 0
	for _, hb := range hbs {
		if now.Sub(hb.At) > StaleAfter {
			stale++
			continue
		}
		kept = append(kept, hb)
	}
	window := AckConfig{LiveWindow: liveWindow}.withDefaults().LiveWindow
	in := m.instances(kept, window, func(hb schema.Heartbeat) bool {
		if mig == nil {
			return hb.MigrationID == ""
		}
		return hb.MigrationID == mig.ID && hb.Applied == mig.Phase
	})
	phase := phaseNone
	if mig != nil {
		phase = mig.Phase
	}
	return &Status{Alias: m.cfg.Alias, Migration: mig, Backfill: totals, Instances: in, Stale: stale, Next: nextSteps(phase)}, nil
}
