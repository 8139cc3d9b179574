package migrate

import (
	"errors"
	"fmt"
	"strings"

	"github.com/geoshard/geoshard/schema"
)

// Sentinel errors. Callers test for them with errors.Is; the wrapping
// error says which migration and step.
var (
	// ErrUnknownAlias: the alias does not exist in the cluster, and no
	// migration is recorded for it (a mistyped name, or the wrong
	// cluster).
	ErrUnknownAlias = errors.New("no such alias in the cluster")
	// ErrNoMigration: no migration is recorded for the alias.
	ErrNoMigration = errors.New("no migration is recorded for the alias")
	// ErrBusy: another migration of the alias is not finished (completed
	// or cancelled).
	ErrBusy = errors.New("another migration of the alias is not finished")
	// ErrNotVerified: cutover needs a passed verification.
	ErrNotVerified = errors.New("the last verification did not pass")
	// ErrMismatch: a verification found differences between the source and
	// the target.
	ErrMismatch = errors.New("the target does not match the source")
	// ErrConflict: the migration document kept changing under optimistic
	// concurrency (another operator is working on it).
	ErrConflict = errors.New("the migration changed concurrently")
	// ErrAliasState: the alias points somewhere a step does not expect (for
	// example at both indexes); it needs a person to look.
	ErrAliasState = errors.New("the alias is not where the migration expects it")
	// ErrRetryBudget: a request to OpenSearch kept failing transiently
	// (no answer, 429, 5xx) for longer than Config.RetryBudget.
	ErrRetryBudget = errors.New("transient failures outlasted the retry budget")
	// ErrNoDisk: the data nodes have not the room the target index needs
	// (a *DiskError says how much, and where).
	ErrNoDisk = errors.New("not enough disk for the target index")
	// ErrLeaseLost: a backfill worker's lease on a slice was taken over
	// by another worker (it had expired) or forgotten by a restart; the
	// worker stops copying the slice and writes nothing more of it.
	ErrLeaseLost = errors.New("the slice's lease is held by another claim")
)

// errNoDocID reports a document that cannot be scanned.
var errNoDocID = errors.New("document has no doc_id to page by")

// PhaseError reports a step run in a phase that does not allow it (its
// row of the transition table).
type PhaseError struct {
	Step  Step
	Alias string
	Phase schema.Phase
	// Changed: the step had started in a phase its row allows, and the
	// migration moved to Phase while it ran (another operator).
	Changed bool
	// Hint says what to run instead: the row's hint.
	Hint string
}

func (e *PhaseError) Error() string {
	s := fmt.Sprintf("migrate: %s: the migration of alias %q is in phase %s", e.Step, e.Alias, e.Phase)
	if e.Changed {
		s += fmt.Sprintf(" (it changed while %s ran)", e.Step)
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// LaggardsError reports live ingest instances that did not apply a phase
// in time.
type LaggardsError struct {
	// What the instances were asked to do, e.g. "dual writes".
	What string
	// Instances are the laggards' names, sorted.
	Instances []string
}

func (e *LaggardsError) Error() string {
	n := fmt.Sprintf("%d live ingest instances", len(e.Instances))
	if len(e.Instances) == 1 {
		n = "1 live ingest instance"
	}
	return fmt.Sprintf("migrate: %s did not apply %s in time: %s", n, e.What, strings.Join(e.Instances, ", "))
}

// SliceError is a backfill slice that stopped.
type SliceError struct {
	Slice, SourceShard int
	// After is the last checkpoint of the slice: the copy resumes after it.
	After string
	Err   error
}

func (e *SliceError) Error() string {
	return fmt.Sprintf("migrate: backfill slice %d (source shard %d, resumes after %q): %v", e.Slice, e.SourceShard, e.After, e.Err)
}

func (e *SliceError) Unwrap() error { return e.Err }

// StepError is the step at which Run stopped.
type StepError struct {
	Step  Step
	Phase schema.Phase
	Err   error
}

func (e *StepError) Error() string {
	if e.Phase == "" {
		return fmt.Sprintf("migrate: run stopped at step %s (no migration recorded yet): %v", e.Step, e.Err)
	}
	return fmt.Sprintf("migrate: run stopped at step %s (phase %s): %v", e.Step, e.Phase, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// DiskError is create's refusal of a target index that does not fit on
// the data nodes: the estimate, with its arithmetic. It wraps ErrNoDisk.
type DiskError struct {
	Target   string
	Estimate DiskEstimate
}

func (e *DiskError) Error() string {
	lines := e.Estimate.Explain()
	for i, l := range lines {
		lines[i] = strings.TrimSpace(l) // the nodes' lines are indented under "usable"
	}
	return fmt.Sprintf("migrate: create: not enough disk for %s: %s. %s. Free disk on the data nodes, or add data nodes, and create again",
		e.Target, e.Estimate.Verdict, strings.Join(lines, "; "))
}

func (e *DiskError) Unwrap() error { return ErrNoDisk }

// LeaseLostError is a write under a slice's lease refused because the
// stored slice no longer carries the worker's claim. It wraps
// ErrLeaseLost.
type LeaseLostError struct {
	Slice int
	// Worker is the worker that lost the lease; Owner and Claim, the
	// slice's holder and claim number as stored (Owner empty: released).
	Worker string
	Owner  string
	Claim  int64
}

func (e *LeaseLostError) Error() string {
	by := "no worker holds it now (another finished it, or a restart forgot the checkpoints)"
	if e.Owner != "" {
		by = fmt.Sprintf("claimed by %s (claim %d)", e.Owner, e.Claim)
	}
	return fmt.Sprintf("migrate: backfill slice %d: worker %s lost its lease: %s", e.Slice, e.Worker, by)
}

func (e *LeaseLostError) Unwrap() error { return ErrLeaseLost }
