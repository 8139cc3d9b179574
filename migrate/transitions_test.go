package migrate

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

var update = flag.Bool("update", false, "rewrite the transition listing in doc.go")

// Every phase of the contract is reached from no migration by the table's
// steps (and a failed verify or a repair, which go back to where the
// backfill left the migration), and the table names no other phase.
func TestTransitionsReachEveryPhase(t *testing.T) {
	reached := map[schema.Phase]bool{phaseNone: true}
	back := rule(StepBackfill).to
	for changed := true; changed; {
		changed = false
		reach := func(p schema.Phase) {
			if !reached[p] {
				reached[p], changed = true, true
			}
		}
		for _, tr := range transitions {
			for _, p := range tr.from {
				if !reached[p] {
					continue
				}
				if tr.running != "" {
					reach(tr.running)
				}
				reach(tr.to)
				if tr.step == StepVerify || tr.step == StepRepair {
					reach(back)
				}
			}
		}
	}
	for _, p := range schema.Phases {
		if !reached[p] {
			t.Errorf("phase %s is reached by no step from no migration", p)
		}
	}
	for _, tr := range transitions {
		for _, p := range slices.Concat(tr.from, tr.also, []schema.Phase{tr.to}) {
			if !p.Valid() && !(tr.step == StepCreate && p == phaseNone) {
				t.Errorf("%s: phase %q is not in schema.Phases", tr.step, p)
			}
		}
		if tr.running != "" && !tr.running.Valid() {
			t.Errorf("%s: running phase %q is not in schema.Phases", tr.step, tr.running)
		}
	}
}

// Each row is consistent on its own: a step accepts the phase it leaves
// (run again, it continues or repeats), and its phases are not listed
// twice. Every step but create and run has a hint.
func TestTransitionRows(t *testing.T) {
	seen := map[Step]bool{}
	for _, tr := range transitions {
		if seen[tr.step] {
			t.Errorf("%s has two rows", tr.step)
		}
		seen[tr.step] = true
		if !tr.accepts(tr.to) {
			t.Errorf("%s leaves phase %s but does not run in it", tr.step, tr.to)
		}
		for _, p := range tr.from {
			if isOneOf(p, tr.also) {
				t.Errorf("%s: phase %s both starts it and is in also", tr.step, p)
			}
		}
		if tr.hint == "" && tr.step != StepCreate {
			t.Errorf("%s has no hint for its refusals", tr.step)
		}
	}
	for _, s := range []Step{StepRun, StepRetire} {
		if tr := rule(s); tr.accepts(schema.PhaseCreated) {
			t.Errorf("rule(%s) = %+v, want none", s, tr)
		}
	}
}

// The table agrees with the contract's own predicates: dual-writes runs
// in the phases ingest writes both indexes in, or moves it there from
// created; create starts a new migration from none or a finished one,
// and runs in every other phase.
func TestTransitionsAgreeWithSchema(t *testing.T) {
	dw, create := rule(StepDualWrites), rule(StepCreate)
	for _, p := range schema.Phases {
		if got, want := dw.accepts(p), p == dw.from[0] || p.DualWrites(); got != want {
			t.Errorf("dual-writes accepts %s: %v, want %v (the phases ingest dual-writes in, and created)", p, got, want)
		}
		if got, want := create.starts(p), p.Done(); got != want {
			t.Errorf("create starts from %s: %v, want %v (a finished migration)", p, got, want)
		}
		if !create.accepts(p) {
			t.Errorf("create refuses phase %s: want it to start anew or resume", p)
		}
	}
	if !create.starts(phaseNone) {
		t.Errorf("create does not start from no migration")
	}
}

// Run's chain: create, then each step of runSteps starts from the phase
// the one before leaves, and is the step Run takes there; after the last
// the alias is on the target and Run takes none.
func TestRunOrder(t *testing.T) {
	chain := append([]Step{StepCreate}, runSteps...)
	for i, s := range chain[:len(chain)-1] {
		to, next := rule(s).to, chain[i+1]
		if !rule(next).starts(to) {
			t.Errorf("%s leaves phase %s, which %s does not start from", s, to, next)
		}
		if got, ok := runStep(to); !ok || got != next {
			t.Errorf("runStep(%s) = %q, %v; want %s", to, got, ok, next)
		}
	}
	last := rule(chain[len(chain)-1]).to
	if s, ok := runStep(last); ok || !last.TargetIsPrimary() {
		t.Errorf("after %s (phase %s): runStep = %q, %v; want none, with the alias on the target", chain[len(chain)-1], last, s, ok)
	}
	// Every phase Run can be in has a step, or is run's end, or is
	// cancelled (Run stops with an error there).
	for _, p := range schema.Phases {
		if _, ok := runStep(p); !ok && !p.TargetIsPrimary() && p != schema.PhaseCancelled {
			t.Errorf("Run has no step in phase %s", p)
		}
	}
}

func TestNextSteps(t *testing.T) {
	for _, c := range []struct {
		phase schema.Phase
		want  []Step
	}{
		{phaseNone, []Step{StepCreate}},
		{schema.PhaseCreated, []Step{StepDualWrites, StepCancel}},
		{schema.PhaseDualWrites, []Step{StepBackfill, StepCancel}},
		{schema.PhaseBackfilling, []Step{StepBackfill, StepCancel}},
		{schema.PhaseBackfilled, []Step{StepVerify, StepRepair, StepCancel}},
		{schema.PhaseVerified, []Step{StepCutover, StepVerify, StepRepair, StepCancel}},
		{schema.PhaseCutOver, []Step{StepComplete, StepRollback}},
		{schema.PhaseRolledBack, []Step{StepVerify, StepCancel}},
		{schema.PhaseCompleted, []Step{StepCreate}},
		{schema.PhaseCancelled, []Step{StepCreate}},
	} {
		if got := nextSteps(c.phase); !reflect.DeepEqual(got, c.want) {
			t.Errorf("nextSteps(%q) = %v, want %v", c.phase, got, c.want)
		}
	}
}

// Every step refuses every phase its row does not accept, before it
// changes anything, with a PhaseError carrying the row's hint.
func TestStepsRefuseWhatTheTableRefuses(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 0)
	ctx := context.Background()
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		t.Fatal(err)
	}
	run := map[Step]func() error{
		StepDualWrites: func() error { _, err := e.m.DualWrites(ctx, AckConfig{}); return err },
		StepBackfill:   func() error { _, err := e.m.Backfill(ctx, BackfillConfig{}); return err },
		StepVerify:     func() error { _, err := e.m.Verify(ctx, quickVerify); return err },
		StepRepair:     func() error { _, err := e.m.Repair(ctx, RepairConfig{}); return err },
		StepCutover:    func() error { return e.m.Cutover(ctx, SwitchConfig{}) },
		StepComplete:   func() error { return e.m.Complete(ctx, CompleteConfig{}) },
		StepRollback:   func() error { return e.m.Rollback(ctx, SwitchConfig{}) },
		StepCancel:     func() error { return e.m.Cancel(ctx, AckConfig{}) },
	}
	for _, tr := range transitions {
		if tr.step == StepCreate {
			continue // it runs in every phase (TestTransitionsAgreeWithSchema)
		}
		if run[tr.step] == nil {
			t.Fatalf("no call of step %s", tr.step)
		}
		for _, p := range schema.Phases {
			if tr.accepts(p) {
				continue
			}
			if _, err := e.m.store.Update(ctx, func(m *schema.Migration) error { m.Phase = p; return nil }); err != nil {
				t.Fatal(err)
			}
			err := run[tr.step]()
			var pe *PhaseError
			if !errors.As(err, &pe) || pe.Step != tr.step || pe.Phase != p || pe.Hint != tr.hint || pe.Changed {
				t.Errorf("%s in phase %s = %v, want a PhaseError of the step with hint %q", tr.step, p, err, tr.hint)
			}
			if got := e.phase(ctx); got != p {
				t.Errorf("%s refused in phase %s, and left the migration in %s", tr.step, p, got)
			}
		}
	}
}

// The listing in the package doc is the table's rendering; go test -run
// TestTransitionsDoc -update rewrites it.
func TestTransitionsDoc(t *testing.T) {
	const intro = "// (resuming, re-checking or only reporting):\n//\n"
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, intro)
	if i < 0 {
		t.Fatalf("doc.go has no %q before the listing", intro)
	}
	start := i + len(intro)
	end := start
	for strings.HasPrefix(doc[end:], "//\t") {
		end += strings.IndexByte(doc[end:], '\n') + 1
	}
	var want strings.Builder
	for line := range strings.Lines(describeTransitions()) {
		want.WriteString("//\t" + line)
	}
	if doc[start:end] == want.String() {
		return
	}
	if *update {
		if err := os.WriteFile("doc.go", []byte(doc[:start]+want.String()+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("doc.go lists the transitions as\n%s\nthe table renders as\n%s\n(go test -run TestTransitionsDoc -update)", doc[start:end], want.String())
}

// describeTransitions renders the table, one step a line (and one more
// for the phases it also runs in).
func describeTransitions() string {
	names := func(ps []schema.Phase) string {
		s := make([]string, len(ps))
		for i, p := range ps {
			s[i] = string(p)
			if p == phaseNone {
				s[i] = "(none)"
			}
		}
		return strings.Join(s, ", ")
	}
	var b strings.Builder
	for _, t := range transitions {
		fmt.Fprintf(&b, "%-12s %s ─▶ %s", t.step, names(t.from), t.to)
		if t.running != "" {
			fmt.Fprintf(&b, " (%s while it runs)", t.running)
		}
		b.WriteString("\n")
		if len(t.also) > 0 {
			fmt.Fprintf(&b, "%-12s also runs in %s\n", "", names(t.also))
		}
	}
	return b.String()
}
