package migrate

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/geoshard/geoshard/bulk"
)

// The migration's own requests to OpenSearch (the state store's reads and
// conditional writes, the backfill's pages, the verification's counts,
// the cutover's alias and health calls) are retried when they fail
// transiently (bulk.Transient: no answer — a refused or reset connection
// to a node that died —, 429, 500, 502, 503, 504) with the project's
// backoff, for at most Config.RetryBudget per request. The client sends
// each attempt to the next node, so a node lost mid-step costs retries,
// not the step. A failure outlasting the budget fails the step with
// ErrRetryBudget, naming it.

// DefaultRetryBudget is Config.RetryBudget's default.
const DefaultRetryBudget = 2 * time.Minute

// The backoff of a retried request: the ceiling doubles from
// retryInitial up to retryMax, each wait drawn below it.
const (
	retryInitial = 100 * time.Millisecond
	retryMax     = 5 * time.Second
)

// retryPolicy is how a step retries its requests: its budget, where the
// retries are logged, and the step they are logged with.
type retryPolicy struct {
	budget time.Duration
	log    *slog.Logger
	step   Step
}

type retryKey struct{}

// withStep returns ctx carrying the Migrator's retry policy for step: the
// requests made under it log their retries with the step.
func (m *Migrator) withStep(ctx context.Context, step Step) context.Context {
	return context.WithValue(ctx, retryKey{}, retryPolicy{budget: m.cfg.RetryBudget, log: m.log, step: step})
}

// do runs one request of a step, retrying transient failures under ctx's
// retry policy (the Migrator's own outside a step).
func (m *Migrator) do(ctx context.Context, op string, f func() error) error {
	return retryWith(ctx, policyFrom(ctx, m.store.retry), op, f)
}

// policyFrom is ctx's retry policy, or def when ctx carries none.
func policyFrom(ctx context.Context, def retryPolicy) retryPolicy {
	if p, ok := ctx.Value(retryKey{}).(retryPolicy); ok {
		return p
	}
	return def
}

// defaultPolicy is the policy of a request made outside any step (the
// free functions CellLoads and Balance): the default budget, unlogged.
var defaultPolicy = retryPolicy{budget: DefaultRetryBudget, log: slog.New(slog.DiscardHandler)}

// retryRead runs a request under ctx's retry policy (defaultPolicy if
// none): see retryWith.
func retryRead(ctx context.Context, op string, f func() error) error {
	return retryWith(ctx, policyFrom(ctx, defaultPolicy), op, f)
}

// retryWith calls f until it succeeds, fails with an error bulk.Transient
// refuses (returned as is), or ctx ends, retrying transient failures with
// backoff for at most p.budget, each retry logged with the step and op.
// A transient failure that outlasts the budget is returned wrapped in
// ErrRetryBudget, with the step, the op and the attempts made.
func retryWith(ctx context.Context, p retryPolicy, op string, f func() error) error {
	start := time.Now()
	attempts := 1
	err := bulk.Retry(ctx, bulk.Backoff{Initial: retryInitial, Max: retryMax, MaxElapsed: p.budget}, bulk.Transient,
		func(err error, wait time.Duration) {
			p.log.Warn("request failed; retrying", "step", p.step, "op", op, "attempt", attempts, "in", wait, "error", err)
			attempts++
		}, f)
	if err != nil && ctx.Err() == nil && bulk.Transient(err) {
		where := op
		if p.step != "" {
			where = "step " + string(p.step) + ", " + op
		}
		return fmt.Errorf("%w after %d attempts in %v (%s; budget %v): %w", ErrRetryBudget, attempts,
			time.Since(start).Round(time.Millisecond), where, p.budget, err)
	}
	return err
}
