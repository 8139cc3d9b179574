package migrate

import (
	"github.com/geoshard/geoshard/schema"
)

// The workflow's rules are one table: for each step, the phases it starts
// from, the phase it leaves the migration in, the phases it also runs in
// without moving the migration, and what a refusal says. Every step
// checks its phase against its row (and re-checks it in the conditional
// write that moves the migration, which is how a second operator is
// noticed), Run picks its next step from the table, and Status reports
// the steps a phase allows from it. The package doc's diagram draws the
// same table, and lists it row by row (TestTransitionsDoc renders the
// table and keeps that listing the same).

// phaseNone stands for no migration, or none unfinished: the phase a new
// migration starts from.
const phaseNone schema.Phase = ""

// transition is one step's row of the table.
type transition struct {
	step Step
	// from are the phases the step starts from; it leaves the migration
	// in to. A step started in to itself continues (or repeats) it.
	from []schema.Phase
	to   schema.Phase
	// running is the phase while the step runs, when it is not to (the
	// backfill is backfilling until every slice is copied).
	running schema.Phase
	// also are the phases the step runs in without moving the migration:
	// it resumes a run cut short, re-checks, or only reports.
	also []schema.Phase
	// hint says what to run instead when the step is refused.
	hint string
}

// transitions is the table, in the order of a migration that goes
// forward, then the ways back. A verification that fails moves a
// verified migration back to where the backfill left it (backfilled), as
// a repair does: neither is a row, both read the backfill's.
var transitions = []transition{
	{
		step: StepCreate,
		from: []schema.Phase{phaseNone, schema.PhaseCompleted, schema.PhaseCancelled},
		to:   schema.PhaseCreated,
		also: []schema.Phase{schema.PhaseCreated, schema.PhaseDualWrites, schema.PhaseBackfilling, schema.PhaseBackfilled,
			schema.PhaseVerified, schema.PhaseCutOver, schema.PhaseRolledBack},
		// No hint: create runs in every phase. A migration under another
		// map is refused with ErrBusy, which says how to finish it.
	},
	{
		step: StepDualWrites,
		from: []schema.Phase{schema.PhaseCreated},
		to:   schema.PhaseDualWrites,
		also: []schema.Phase{schema.PhaseDualWrites, schema.PhaseBackfilling, schema.PhaseBackfilled, schema.PhaseVerified,
			schema.PhaseCutOver, schema.PhaseRolledBack},
		hint: "dual writes apply from create to complete",
	},
	{
		step:    StepBackfill,
		from:    []schema.Phase{schema.PhaseDualWrites, schema.PhaseBackfilling},
		to:      schema.PhaseBackfilled,
		running: schema.PhaseBackfilling,
		also:    []schema.Phase{schema.PhaseBackfilled, schema.PhaseVerified, schema.PhaseCutOver, schema.PhaseRolledBack},
		hint:    "backfill follows dual-writes, and is over once verified",
	},
	{
		step: StepVerify,
		from: []schema.Phase{schema.PhaseBackfilled, schema.PhaseVerified, schema.PhaseRolledBack},
		to:   schema.PhaseVerified,
		also: []schema.Phase{schema.PhaseCutOver},
		hint: "verify runs once the backfill is done, until complete",
	},
	{
		step: StepRepair,
		from: []schema.Phase{schema.PhaseBackfilled, schema.PhaseVerified},
		to:   schema.PhaseBackfilled,
		also: []schema.Phase{schema.PhaseRolledBack},
		hint: "repair runs after the backfill and before cutover (or after a rollback)",
	},
	{
		step: StepCutover,
		from: []schema.Phase{schema.PhaseVerified},
		to:   schema.PhaseCutOver,
		also: []schema.Phase{schema.PhaseCutOver},
		hint: "cutover follows a passed verify",
	},
	{
		step: StepComplete,
		from: []schema.Phase{schema.PhaseCutOver},
		to:   schema.PhaseCompleted,
		also: []schema.Phase{schema.PhaseCompleted},
		hint: "complete follows a cutover",
	},
	{
		step: StepRollback,
		from: []schema.Phase{schema.PhaseCutOver},
		to:   schema.PhaseRolledBack,
		also: []schema.Phase{schema.PhaseRolledBack},
		hint: "rollback follows a cutover",
	},
	{
		step: StepCancel,
		from: []schema.Phase{schema.PhaseCreated, schema.PhaseDualWrites, schema.PhaseBackfilling, schema.PhaseBackfilled,
			schema.PhaseVerified, schema.PhaseRolledBack},
		to:   schema.PhaseCancelled,
		also: []schema.Phase{schema.PhaseCancelled},
		hint: "cancel is for before cutover; roll back first",
	},
}

// runSteps are the steps Run chains after create, in order: each starts
// from the phase the one before leaves.
var runSteps = []Step{StepDualWrites, StepBackfill, StepVerify, StepCutover}

// rule is a step's row; a step with none (run, retire) has the zero row,
// which starts from and runs in no phase.
func rule(s Step) transition {
	for _, t := range transitions {
		if t.step == s {
			return t
		}
	}
	return transition{step: s}
}

// starts reports whether the step starts from phase p, moving the
// migration to t.to.
func (t transition) starts(p schema.Phase) bool { return isOneOf(p, t.from) }

// accepts reports whether the step runs in phase p at all.
func (t transition) accepts(p schema.Phase) bool { return t.starts(p) || isOneOf(p, t.also) }

// moves reports whether the step moves the migration on from p: it
// starts from p and leaves it elsewhere.
func (t transition) moves(p schema.Phase) bool { return t.starts(p) && p != t.to }

// refuse is the step's refusal in phase p. changed says that the phase
// changed while the step ran: it had started in one its row allows.
func (t transition) refuse(alias string, p schema.Phase, changed bool) *PhaseError {
	return &PhaseError{Step: t.step, Alias: alias, Phase: p, Changed: changed, Hint: t.hint}
}

// runStep is the step Run takes in phase p: the one of runSteps that
// moves the migration on from p. ok is false when none does.
func runStep(p schema.Phase) (s Step, ok bool) {
	for _, s := range runSteps {
		if rule(s).moves(p) {
			return s, true
		}
	}
	return "", false
}

// nextSteps are the steps that start from phase p: Run's step first, then
// the others in the table's order. A migration in p goes on with one of
// them; the steps that only run in p (rule.also) are left out.
func nextSteps(p schema.Phase) []Step {
	var out []Step
	first, ok := runStep(p)
	if ok {
		out = append(out, first)
	}
	for _, t := range transitions {
		if t.starts(p) && t.step != first {
			out = append(out, t.step)
		}
	}
	return out
}
