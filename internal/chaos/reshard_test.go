package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/migrate"
)

// A reshard during a schedule: the real job (package migrate) moves menu
// from the 18-shard map to the 24-shard map — create, dual writes, a
// backfill, a verification of ids, the cutover — on a goroutine of its
// own, while the schedule's steps go on around it. At the end both
// indexes are judged, each under its own map: the target, which the
// alias now names, and the source, which dual writes keep current for a
// rollback.

const targetIndex = "menu-v2"

// reshardWait bounds the whole job; past it the schedule fails.
const reshardWait = 90 * time.Second

// reshard is a job running in the background.
type reshard struct {
	done chan struct{}
	step string // the step that failed, or "" once cut over
	err  error
}

// startReshard starts the job. The job's requests do not go through any
// member's gate, and meet the emulator's faults like every other client:
// it retries them (migrate.Config.RetryBudget).
func (w *world) startReshard() {
	w.t.Helper()
	mg, err := migrate.New(w.client, migrate.Config{Alias: testAlias, Logger: testenv.Logger("CHAOS_TEST_LOG").With("component", "reshard"), PollInterval: 50 * time.Millisecond})
	if err != nil {
		w.t.Fatal(err)
	}
	r := &reshard{done: make(chan struct{})}
	w.reshard = r
	m24 := testenv.LoadMap(w.t, testenv.MapUS24)
	w.m24 = m24
	go func() {
		defer close(r.done)
		ctx, cancel := context.WithTimeout(context.Background(), reshardWait)
		defer cancel()
		// A member killed or frozen stops writing its heartbeat: it is gone
		// once its last one is older than the live window, which a
		// heartbeat every 100ms keeps well clear of a live member's.
		ack := migrate.AckConfig{Timeout: reshardWait, LiveWindow: 2 * time.Second}
		fail := func(step string, err error) bool {
			if err != nil {
				r.step, r.err = step, err
				return true
			}
			return false
		}
		if _, err := mg.Create(ctx, migrate.CreateConfig{Map: m24, Target: targetIndex}); fail("create", err) {
			return
		}
		if _, err := mg.DualWrites(ctx, ack); fail("dual writes", err) {
			return
		}
		if _, err := mg.Backfill(ctx, migrate.BackfillConfig{Page: 100, Ack: ack}); fail("backfill", err) {
			return
		}
		if _, err := mg.Verify(ctx, migrate.VerifyConfig{IDs: true, Attempts: 40, Pause: 100 * time.Millisecond}); fail("verify", err) {
			return
		}
		fail("cutover", mg.Cutover(ctx, migrate.SwitchConfig{HealthTimeout: 10 * time.Second}))
	}()
}

// waitReshard waits for the job and reports its failure as an anomaly.
func (w *world) waitReshard() []anomaly {
	r := w.reshard
	if r == nil {
		return nil
	}
	select {
	case <-r.done:
	case <-time.After(reshardWait + 10*time.Second):
		return []anomaly{{kind: kindReshard, detail: fmt.Sprintf("the reshard did not end within %v", reshardWait)}}
	}
	if r.err != nil {
		return []anomaly{{kind: kindReshard, detail: fmt.Sprintf("%s: %v", r.step, r.err)}}
	}
	return nil
}
