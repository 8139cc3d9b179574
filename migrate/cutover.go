package migrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/schema"
)

// Direction is the way an alias switch goes.
type Direction int

const (
	// Forward moves the alias from the source to the target: cutover.
	Forward Direction = iota
	// Reverse moves it back from the target to the source: rollback.
	Reverse
)

func (d Direction) String() string {
	if d == Reverse {
		return "rollback"
	}
	return "cutover"
}

// SwitchConfig configures Cutover and Rollback.
type SwitchConfig struct {
	// DryRun, if set, receives the requests the step would send, and the
	// step changes nothing.
	DryRun io.Writer
	// Verbose, with DryRun, prints the migration state document the step
	// would write in full (both maps and every backfill slice); without
	// it that request is one line.
	Verbose bool
	// HealthTimeout bounds the wait for the index to turn green. Default
	// 5m.
	HealthTimeout time.Duration
}

// DefaultHealthTimeout is SwitchConfig.HealthTimeout's default.
const DefaultHealthTimeout = 5 * time.Minute

// withDefaults fills every zero field with its default.
func (c SwitchConfig) withDefaults() SwitchConfig {
	if c.HealthTimeout <= 0 {
		c.HealthTimeout = DefaultHealthTimeout
	}
	return c
}

// Cutover moves the alias, readers and writers, to the target: it
// restores the target's replicas and refresh interval, waits for green,
// records phase cut_over and moves the alias in one atomic _aliases call.
// It needs a passed verification. Ingest keeps writing both indexes (by
// the dual-write rules in package pipeline's doc), so Rollback stays
// possible until Complete.
func (m *Migrator) Cutover(ctx context.Context, cfg SwitchConfig) error {
	return m.switchAlias(ctx, Forward, cfg)
}

// Rollback is Cutover in reverse: the alias goes back to the source
// (phase rolled_back). Dual writes go on, so a later cutover (after a new
// verification) is possible.
func (m *Migrator) Rollback(ctx context.Context, cfg SwitchConfig) error {
	return m.switchAlias(ctx, Reverse, cfg)
}

// switchPlan is what a switch in one direction does.
type switchPlan struct {
	// rule is the step's row: the phases it starts from, and the phase it
	// records (rule.to; started there, it resumes a switch cut short).
	rule     transition
	from, to string
	// settings are put on the index that becomes the alias's (none in
	// reverse: the source's were never changed).
	settings map[string]any
}

func planSwitch(mig *schema.Migration, dir Direction) switchPlan {
	if dir == Reverse {
		return switchPlan{rule: rule(StepRollback), from: mig.Target.Index, to: mig.Source.Index}
	}
	replicas, refresh := mig.Restore.TargetReplicas, mig.Restore.TargetRefreshInterval
	if refresh == "" { // never recorded: OpenSearch's defaults
		replicas, refresh = defaultReplicas, defaultRefreshInterval
	}
	return switchPlan{rule: rule(StepCutover), from: mig.Source.Index, to: mig.Target.Index,
		settings: map[string]any{"number_of_replicas": replicas, "refresh_interval": refresh}}
}

// aliasAt reports where the alias is: on from only (the switch is to be
// made), on to only as its write index (made), or elsewhere
// (ErrAliasState).
func (m *Migrator) aliasAt(ctx context.Context, from, to string) (switched bool, err error) {
	var ts []bulk.AliasTarget
	err = m.do(ctx, "read alias "+m.cfg.Alias, func() (err error) {
		ts, err = m.admin.Alias(ctx, m.cfg.Alias)
		return err
	})
	if err != nil && !bulk.IsNotFound(err) {
		return false, err
	}
	if len(ts) == 1 && ts[0].Index == from {
		return false, nil
	}
	if len(ts) == 1 && ts[0].Index == to && (ts[0].IsWriteIndex == nil || *ts[0].IsWriteIndex) {
		return true, nil
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Index
	}
	return false, fmt.Errorf("%w: alias %q points to %v, want %s (before) or %s (after)", ErrAliasState, m.cfg.Alias, names, from, to)
}

// switchAlias is Cutover (Forward) and Rollback (Reverse): one procedure,
// the direction choosing which index is left and which is joined.
func (m *Migrator) switchAlias(ctx context.Context, dir Direction, cfg SwitchConfig) error {
	cfg = cfg.withDefaults()
	if dir == Reverse {
		ctx = m.withStep(ctx, StepRollback)
	} else {
		ctx = m.withStep(ctx, StepCutover)
	}
	rec, err := m.store.Load(ctx)
	if err != nil {
		return err
	}
	mig := &rec.Migration
	p := planSwitch(mig, dir)
	resuming, err := m.checkSwitch(mig, p, dir)
	if err != nil {
		return err
	}
	switched, err := m.aliasAt(ctx, p.from, p.to)
	if err != nil {
		return fmt.Errorf("migrate: %s: %w", p.rule.step, err)
	}
	if resuming && switched {
		return m.switchDone(cfg.DryRun, p, mig.Phase)
	}
	reqs, err := m.buildSwitchRequests(rec, p, cfg.HealthTimeout, resuming, switched)
	if err != nil {
		return err
	}
	if cfg.DryRun != nil {
		list, state := reqs.inOrder()
		return writeDryRun(cfg.DryRun, p.rule.step, m.cfg.Alias, p.from, p.to, list, state, p.rule.to, cfg.Verbose)
	}
	if reqs.settings != nil {
		if err := m.restoreSettings(ctx, p, *reqs.settings); err != nil {
			return err
		}
	}
	if err := m.waitGreen(ctx, reqs.health, p.to, cfg.HealthTimeout); err != nil {
		return fmt.Errorf("migrate: %s: %w", p.rule.step, err)
	}
	if !resuming {
		if err := m.recordSwitch(ctx, p, dir); err != nil {
			return err
		}
	}
	return m.moveAlias(ctx, p, reqs.swap)
}

// checkSwitch refuses a switch the migration's phase does not allow, and
// reports whether the switch resumes one cut short (the phase is p.rule.to
// already).
func (m *Migrator) checkSwitch(mig *schema.Migration, p switchPlan, dir Direction) (resuming bool, err error) {
	resuming = mig.Phase == p.rule.to
	if !resuming && !p.rule.starts(mig.Phase) {
		return false, p.rule.refuse(m.cfg.Alias, mig.Phase, false)
	}
	if dir == Forward && !resuming && (mig.Verification == nil || !mig.Verification.OK) {
		return false, fmt.Errorf("migrate: cutover: %w", ErrNotVerified)
	}
	return resuming, nil
}

// switchDone ends a resumed switch whose alias had moved already: the
// phase and the alias both say it is made, so there is nothing to send.
func (m *Migrator) switchDone(dryRun io.Writer, p switchPlan, phase schema.Phase) error {
	if dryRun != nil {
		_, err := fmt.Fprintf(dryRun, "# reshard %s --dry-run: alias %s is already on %s (phase %s); nothing to send.\n", p.rule.step, m.cfg.Alias, p.to, phase)
		return err
	}
	m.log.Info("alias already switched", "step", p.rule.step, "index", p.to, "phase", phase)
	m.met.setPhase(phase)
	return nil
}

// switchRequests are the requests of a switch, one field per stage. A
// dry run prints them; a real run sends these very values (the phase
// write is re-derived by stateStore.Update, which re-checks the phase, and
// is the same request unless someone else wrote meanwhile).
type switchRequests struct {
	// settings puts back the settings of the index that becomes the
	// alias's; nil when there are none to put (reverse).
	settings *bulk.Request
	// health waits for that index to turn green.
	health bulk.Request
	// state records the phase; nil when resuming, as it is recorded.
	state *bulk.Request
	// swap is the atomic _aliases call; nil when the alias is on p.to
	// already (a switch the other way was cut short): then only the phase
	// moves.
	swap *bulk.Request
}

// inOrder lists the requests in the order they are sent, and the
// position of the state write in the list (-1 if none).
func (r switchRequests) inOrder() (reqs []bulk.Request, state int) {
	state = -1
	if r.settings != nil {
		reqs = append(reqs, *r.settings)
	}
	reqs = append(reqs, r.health)
	if r.state != nil {
		state = len(reqs)
		reqs = append(reqs, *r.state)
	}
	if r.swap != nil {
		reqs = append(reqs, *r.swap)
	}
	return reqs, state
}

// buildSwitchRequests builds the requests of a switch from the migration
// as loaded.
func (m *Migrator) buildSwitchRequests(rec *record, p switchPlan, healthTimeout time.Duration, resuming, switched bool) (switchRequests, error) {
	var reqs switchRequests
	if p.settings != nil {
		r, err := bulk.PutSettingsRequest(p.to, p.settings)
		if err != nil {
			return reqs, err
		}
		reqs.settings = &r
	}
	reqs.health = bulk.HealthRequest(p.to, "green", formatTimeValue(healthTimeout))
	next := cloneMigration(&rec.Migration)
	next.Phase, next.Updated = p.rule.to, m.cfg.Now().UTC()
	if !resuming {
		w, err := m.store.writeRequest(rec, next)
		if err != nil {
			return reqs, err
		}
		reqs.state = &w
	}
	yes := true
	swap, err := bulk.UpdateAliasesRequest([]bulk.AliasAction{
		{Remove: &bulk.AliasSpec{Index: p.from, Alias: m.cfg.Alias, MustExist: &yes}},
		{Add: &bulk.AliasSpec{Index: p.to, Alias: m.cfg.Alias, IsWriteIndex: &yes}},
	})
	if err != nil {
		return reqs, err
	}
	if !switched {
		reqs.swap = &swap
	}
	return reqs, nil
}

// restoreSettings puts back the settings the target was loaded without
// (its replicas and refresh interval).
func (m *Migrator) restoreSettings(ctx context.Context, p switchPlan, settings bulk.Request) error {
	err := m.do(ctx, "restore the settings of "+p.to, func() error { return m.admin.Send(ctx, settings, nil) })
	if err != nil {
		return fmt.Errorf("migrate: %s: restore the settings of %s: %w", p.rule.step, p.to, err)
	}
	m.log.Info("settings restored", "step", p.rule.step, "index", p.to, "replicas", p.settings["number_of_replicas"], "refresh_interval", p.settings["refresh_interval"])
	return nil
}

// recordSwitch records phase p.rule.to before the alias moves: from here on
// no other operator can cancel (cancel deletes the target) or switch, and
// a job killed before the swap finds phase p.rule.to with the alias still
// on p.from, and makes the swap when run again.
func (m *Migrator) recordSwitch(ctx context.Context, p switchPlan, dir Direction) error {
	_, err := m.store.Update(ctx, func(x *schema.Migration) error {
		if x.Phase == p.rule.to {
			return errUnchanged
		}
		if !p.rule.starts(x.Phase) || (dir == Forward && (x.Verification == nil || !x.Verification.OK)) {
			return p.rule.refuse(m.cfg.Alias, x.Phase, true)
		}
		x.Phase = p.rule.to
		return nil
	})
	return err
}

// moveAlias makes the switch (swap nil: the alias is on p.to already, and
// only the phase was to move).
func (m *Migrator) moveAlias(ctx context.Context, p switchPlan, swap *bulk.Request) error {
	// ── The switch ────────────────────────────────────────────────────
	// One atomic _aliases call: readers and writers of the alias move
	// from p.from to p.to together, or nothing changes (must_exist makes
	// the call fail if the alias has left p.from meanwhile, rather than
	// leave it on both). This is NOT the point of no return: ingest goes
	// on writing both indexes, so the reverse switch (rollback) brings
	// readers back to an index that is current. The point of no return
	// is Complete, which stops the dual writes.
	if swap == nil {
		m.met.setPhase(p.rule.to)
		m.log.Info("alias already on the index; phase recorded", "step", p.rule.step, "index", p.to, "phase", p.rule.to)
		return nil
	}
	// A swap that failed transiently is sent again; the failed attempt
	// may have been applied, its answer lost, and then the next one fails
	// (must_exist: the alias has left p.from). So a failure after such an
	// attempt asks where the alias is: on p.to, the swap is made.
	unknown := false
	err := m.do(ctx, "move alias "+m.cfg.Alias, func() error {
		err := m.admin.Send(ctx, *swap, nil)
		if bulk.Transient(err) {
			unknown = true
		}
		return err
	})
	if err != nil && unknown && ctx.Err() == nil {
		if switched, aerr := m.aliasAt(ctx, p.from, p.to); aerr == nil && switched {
			err = nil
		}
	}
	if err != nil {
		return fmt.Errorf("migrate: %s: move alias %s from %s to %s: %w", p.rule.step, m.cfg.Alias, p.from, p.to, err)
	}
	m.met.setPhase(p.rule.to)
	m.log.Info("alias switched", "step", p.rule.step, "from", p.from, "index", p.to, "phase", p.rule.to)
	return nil
}

// waitGreen sends the health wait and checks its answer.
func (m *Migrator) waitGreen(ctx context.Context, health bulk.Request, index string, timeout time.Duration) error {
	var out struct {
		Status   string `json:"status"`
		TimedOut bool   `json:"timed_out"`
	}
	err := m.do(ctx, "health of "+index, func() error { return m.admin.Send(ctx, health, &out) })
	var ae *bulk.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusRequestTimeout {
		return fmt.Errorf("index %s did not turn green within %v", index, timeout)
	}
	if err != nil {
		return fmt.Errorf("health of %s: %w", index, err)
	}
	if out.TimedOut || out.Status != "green" {
		return fmt.Errorf("index %s is %s, not green, after %v", index, out.Status, timeout)
	}
	return nil
}

func isOneOf(p schema.Phase, ps []schema.Phase) bool {
	for _, q := range ps {
		if p == q {
			return true
		}
	}
	return false
}

// formatTimeValue writes a duration as an OpenSearch time value, in the
// largest whole unit: 5m, 90s, 1500ms.
func formatTimeValue(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// writeDryRun prints the requests of a switch, in the order they would be
// sent. The state write (reqs[state], if state >= 0) is one line unless
// verbose: its body is the whole migration document.
func writeDryRun(w io.Writer, step Step, alias, from, to string, reqs []bulk.Request, state int, phase schema.Phase, verbose bool) error {
	fmt.Fprintf(w, "# reshard %s --dry-run: alias %s from %s to %s; nothing was changed.\n", step, alias, from, to)
	fmt.Fprintf(w, "# These %d requests would be sent, in order, each only if the one before succeeded.\n", len(reqs))
	fmt.Fprintf(w, "# The _aliases call moves readers and writers at once. Dual writes go on, so this is not\n")
	fmt.Fprintf(w, "# the point of no return: that is reshard complete.\n")
	for i, r := range reqs {
		text := r.String()
		if i == state && !verbose {
			text = fmt.Sprintf("%s %s\n(the migration document with phase %s; --verbose prints it)\n", r.Method, r.Path, phase)
		}
		if _, err := fmt.Fprintf(w, "\n# %d\n%s", i+1, text); err != nil {
			return err
		}
	}
	return nil
}

// CompleteConfig configures Complete.
type CompleteConfig struct {
	// DeleteOld deletes the source once every live ingest instance has
	// stopped writing it.
	DeleteOld bool
	// Ack bounds that wait.
	Ack AckConfig
}

// Complete ends a migration after cutover: phase completed (ingest stops
// writing the source), gc_deletes restored on the remaining indexes, and
// with DeleteOld the source deleted. Run again, it finishes the cleanup.
func (m *Migrator) Complete(ctx context.Context, cfg CompleteConfig) error {
	ctx = m.withStep(ctx, StepComplete)
	rec, err := m.store.Load(ctx)
	if err != nil {
		return err
	}
	mig := &rec.Migration
	switch t := rule(StepComplete); {
	case !t.accepts(mig.Phase):
		return t.refuse(m.cfg.Alias, mig.Phase, false)
	case t.starts(mig.Phase):
		switched, err := m.aliasAt(ctx, mig.Source.Index, mig.Target.Index)
		if err != nil {
			return fmt.Errorf("migrate: complete: %w", err)
		}
		if !switched {
			return fmt.Errorf("migrate: complete: %w: alias %q is still on %s (run cutover again)", ErrAliasState, m.cfg.Alias, mig.Source.Index)
		}
		// ══ POINT OF NO RETURN ════════════════════════════════════════
		// Phase completed tells ingest to stop writing the source. From
		// the moment the first instance applies it, the source misses
		// changes: a rollback would serve stale data, so none is offered
		// after this write. Everything before it (create, dual writes,
		// backfill, verify, cutover, rollback) can be undone.
		rec, err = m.store.advance(ctx, StepComplete)
		if err != nil {
			return err
		}
		mig = &rec.Migration
		m.log.Info("migration completed: dual writes stop", "step", StepComplete, "index", mig.Target.Index, "phase", mig.Phase)
	}
	m.met.setPhase(mig.Phase)
	if cfg.DeleteOld {
		if err := m.retire(ctx, mig, mig.Source.Index, cfg.Ack); err != nil {
			return fmt.Errorf("migrate: complete: %w", err)
		}
	}
	return m.restoreGC(ctx, mig, StepComplete)
}

// Cancel abandons a migration before cutover (or after a rollback):
// phase cancelled (ingest stops writing the target), the target deleted
// once no live instance writes it, and the source's gc_deletes restored.
// Run again, it finishes the cleanup.
func (m *Migrator) Cancel(ctx context.Context, ack AckConfig) error {
	ctx = m.withStep(ctx, StepCancel)
	rec, err := m.store.Load(ctx)
	if err != nil {
		return err
	}
	mig := &rec.Migration
	switch t := rule(StepCancel); {
	case !t.accepts(mig.Phase):
		return t.refuse(m.cfg.Alias, mig.Phase, false)
	case t.starts(mig.Phase):
		back, err := m.aliasAt(ctx, mig.Target.Index, mig.Source.Index)
		if err != nil {
			return fmt.Errorf("migrate: cancel: %w", err)
		}
		if !back {
			return fmt.Errorf("migrate: cancel: %w: alias %q is on %s (run rollback again)", ErrAliasState, m.cfg.Alias, mig.Target.Index)
		}
		rec, err = m.store.Update(ctx, func(x *schema.Migration) error {
			// Unlike advance, this refuses a migration another operator
			// cancelled meanwhile: their cancel cleans up.
			if !t.starts(x.Phase) {
				return t.refuse(m.cfg.Alias, x.Phase, true)
			}
			x.Phase = t.to
			return nil
		})
		if err != nil {
			return err
		}
		mig = &rec.Migration
		m.log.Info("migration cancelled: dual writes stop", "step", StepCancel, "index", mig.Target.Index, "phase", mig.Phase)
	}
	m.met.setPhase(mig.Phase)
	if err := m.retire(ctx, mig, mig.Target.Index, ack); err != nil {
		return fmt.Errorf("migrate: cancel: %w", err)
	}
	return m.restoreGC(ctx, mig, StepCancel)
}

// IndexExists reports whether the cluster has the index.
func (m *Migrator) IndexExists(ctx context.Context, index string) (bool, error) {
	return m.admin.IndexExists(ctx, index)
}

// retire deletes the index a finished migration left behind, once no
// live ingest instance writes it any more (a write to a deleted index
// would create it again, with default settings). It never deletes an
// index the alias points to.
func (m *Migrator) retire(ctx context.Context, mig *schema.Migration, index string, ack AckConfig) error {
	var ok bool
	err := m.do(ctx, "check "+index, func() (err error) {
		ok, err = m.admin.IndexExists(ctx, index)
		return err
	})
	if err != nil || !ok {
		return err
	}
	var ts []bulk.AliasTarget
	err = m.do(ctx, "read alias "+m.cfg.Alias, func() (err error) {
		ts, err = m.admin.Alias(ctx, m.cfg.Alias)
		return err
	})
	if err != nil && !bulk.IsNotFound(err) {
		return err
	}
	for _, t := range ts {
		if t.Index == index {
			return fmt.Errorf("%w: alias %q still points to %s; not deleting it", ErrAliasState, m.cfg.Alias, index)
		}
	}
	both := writesBoth(mig)
	if _, err := m.awaitAcks(ctx, "the end of dual writes", func(hb schema.Heartbeat) bool { return !both(hb) }, ack); err != nil {
		return err
	}
	err = m.do(ctx, "delete "+index, func() error { return m.admin.Send(ctx, bulk.DeleteIndexRequest(index), nil) })
	if err != nil && !bulk.IsNotFound(err) {
		return fmt.Errorf("delete %s: %w", index, err)
	}
	m.log.Info("index deleted", "step", StepRetire, "index", index)
	return nil
}

// restoreGC puts gc_deletes back on the indexes that remain.
func (m *Migrator) restoreGC(ctx context.Context, mig *schema.Migration, step Step) error {
	for _, s := range []struct{ index, value string }{
		{mig.Source.Index, mig.Restore.SourceGCDeletes},
		{mig.Target.Index, mig.Restore.TargetGCDeletes},
	} {
		if s.value == "" {
			s.value = defaultGCDeletes
		}
		err := m.do(ctx, "restore gc_deletes of "+s.index, func() error {
			return m.admin.PutSettings(ctx, s.index, map[string]any{"gc_deletes": s.value})
		})
		if bulk.IsNotFound(err) {
			continue // deleted
		}
		if err != nil {
			return fmt.Errorf("migrate: %s: restore gc_deletes of %s: %w", step, s.index, err)
		}
		m.log.Info("gc_deletes restored", "step", step, "index", s.index, "gc_deletes", s.value)
	}
	return nil
}
