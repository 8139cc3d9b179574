package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/schema"
)

// AckConfig bounds a wait for the ingest instances.
type AckConfig struct {
	// Timeout bounds the wait. Default 2m.
	Timeout time.Duration
	// LiveWindow: an instance is live while its last heartbeat is at most
	// this old. Default 30s (ingest writes one every poll, 5s by default).
	// Heartbeats carry the instance's clock: the job's and the instances'
	// clocks must agree to well within the window.
	LiveWindow time.Duration
}

// Defaults of AckConfig.
const (
	DefaultAckTimeout = 2 * time.Minute
	DefaultLiveWindow = 30 * time.Second
)

// withDefaults fills every zero field with its default.
func (c AckConfig) withDefaults() AckConfig {
	if c.Timeout <= 0 {
		c.Timeout = DefaultAckTimeout
	}
	if c.LiveWindow <= 0 {
		c.LiveWindow = DefaultLiveWindow
	}
	return c
}

// Instance is an ingest instance as its heartbeat shows it.
type Instance struct {
	schema.Heartbeat
	// Live: the heartbeat is recent (within AckConfig.LiveWindow).
	Live bool `json:"live"`
	// Acked: the instance has applied what the wait asked.
	Acked bool `json:"acked"`
	// Silent is how long the instance has not been heard from, when it
	// is not live.
	Silent time.Duration `json:"silent_ns,omitempty"`
	// Condition says what the instance is doing (consuming), what it
	// waits for and since when, or how long it has not been heard from;
	// empty from an instance that does not report its state.
	Condition string `json:"condition,omitempty"`
}

// AckReport is the outcome of a wait for the ingest instances.
type AckReport struct {
	// What the instances were asked to apply, e.g. "dual writes".
	What string `json:"what"`
	// Instances are every instance with a heartbeat for the alias, live or
	// not, by name.
	Instances []Instance `json:"instances"`
	// Waited is how long the wait took.
	Waited time.Duration `json:"waited_ns"`
}

// Live is the number of live instances.
func (r *AckReport) Live() int {
	n := 0
	for _, in := range r.Instances {
		if in.Live {
			n++
		}
	}
	return n
}

// Laggards are the live instances that have not acknowledged, by name.
func (r *AckReport) Laggards() []string {
	var out []string
	for _, in := range r.Instances {
		if in.Live && !in.Acked {
			out = append(out, in.Instance)
		}
	}
	return out
}

// Heartbeats reads the heartbeats of the alias's ingest instances, by
// instance name.
func (m *Migrator) Heartbeats(ctx context.Context) ([]schema.Heartbeat, error) {
	if err := m.do(ctx, "refresh "+schema.MigrationsIndex, func() error { return m.admin.Refresh(ctx, schema.MigrationsIndex) }); bulk.IsNotFound(err) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("migrate: refresh %s: %w", schema.MigrationsIndex, err)
	}
	q, _ := json.Marshal(map[string]any{
		"size": 10000,
		"query": map[string]any{"bool": map[string]any{"filter": []any{
			map[string]any{"term": map[string]any{"alias": m.cfg.Alias}},
			map[string]any{"exists": map[string]any{"field": "instance"}},
		}}},
	})
	var page *bulk.Page
	err := m.do(ctx, "read heartbeats", func() (err error) {
		page, err = m.admin.Search(ctx, schema.MigrationsIndex, q, bulk.SearchParams{})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: read heartbeats: %w", err)
	}
	prefix := schema.HeartbeatDocID(m.cfg.Alias, "")
	var out []schema.Heartbeat
	for _, h := range page.Hits {
		if !strings.HasPrefix(h.ID, prefix) {
			continue
		}
		var hb schema.Heartbeat
		if err := json.Unmarshal(h.Source, &hb); err != nil {
			m.log.Warn("unreadable heartbeat skipped", "id", h.ID, "error", err)
			continue
		}
		out = append(out, hb)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Instance < out[j].Instance })
	return out, nil
}

// instances classifies heartbeats at now.
func (m *Migrator) instances(hbs []schema.Heartbeat, window time.Duration, acked func(schema.Heartbeat) bool) []Instance {
	now := m.cfg.Now()
	out := make([]Instance, len(hbs))
	for i, hb := range hbs {
		live := now.Sub(hb.At) <= window
		out[i] = Instance{Heartbeat: hb, Live: live, Acked: acked(hb), Condition: describe(hb, live, now)}
		if !live {
			out[i].Silent = now.Sub(hb.At)
		}
	}
	return out
}

// awaitAcks waits until every live instance satisfies acked, re-reading
// the heartbeats every PollInterval. Once cfg.Timeout has passed it
// returns a *LaggardsError naming the instances that did not. With no
// live instance it returns at once. The wait runs on the Migrator's
// clock; liveness is judged by Config.Now.
func (m *Migrator) awaitAcks(ctx context.Context, what string, acked func(schema.Heartbeat) bool, cfg AckConfig) (*AckReport, error) {
	cfg = cfg.withDefaults()
	start := m.clock.Now()
	deadline := start.Add(cfg.Timeout)
	logged := ""
	for {
		hbs, err := m.Heartbeats(ctx)
		if err != nil {
			return nil, err
		}
		now := m.clock.Now()
		rep := &AckReport{What: what, Instances: m.instances(hbs, cfg.LiveWindow, acked), Waited: now.Sub(start)}
		lag := rep.Laggards()
		if len(lag) == 0 {
			if rep.Live() == 0 {
				m.log.Warn("no live ingest instance: nobody to wait for", "step", what, "heartbeats", len(hbs))
			} else {
				m.log.Info("every live ingest instance acknowledged", "step", what, "instances", rep.Live())
			}
			return rep, nil
		}
		if s := strings.Join(lag, ","); s != logged {
			m.log.Info("waiting for ingest instances", "step", what, "waiting_for", s)
			logged = s
		}
		left := deadline.Sub(now)
		if left <= 0 {
			return rep, &LaggardsError{What: what, Instances: lag}
		}
		if err := m.clock.Sleep(ctx, min(m.cfg.PollInterval, left)); err != nil {
			return rep, err
		}
	}
}

// writesBoth reports a heartbeat of an instance that dual-writes mig.
func writesBoth(mig *schema.Migration) func(schema.Heartbeat) bool {
	return func(hb schema.Heartbeat) bool { return hb.MigrationID == mig.ID && hb.Applied.DualWrites() }
}

// DualWrites announces the migration to ingest (phase dual_writes) and
// waits until every live ingest instance writes both indexes. A laggard
// after cfg.Timeout is a *LaggardsError; the phase stays dual_writes and
// running the step again waits again. Run in a later phase, it only
// checks the instances again.
func (m *Migrator) DualWrites(ctx context.Context, cfg AckConfig) (*AckReport, error) {
	ctx = m.withStep(ctx, StepDualWrites)
	rec, err := m.store.Load(ctx)
	if err != nil {
		return nil, err
	}
	mig := &rec.Migration
	switch t := rule(StepDualWrites); {
	case t.starts(mig.Phase):
		// Ingest starts writing the target the moment it reads the new
		// phase: the target must be in place (a write to a missing index
		// would create one with default settings).
		if err := m.checkIndexMap(ctx, mig.Target.Index, mig.Target.MapHash); err != nil {
			return nil, fmt.Errorf("%w (run create again)", err)
		}
		rec, err = m.store.advance(ctx, StepDualWrites)
		if err != nil {
			return nil, err
		}
		mig = &rec.Migration
		m.log.Info("dual writes announced", "step", StepDualWrites, "phase", mig.Phase, "index", mig.Target.Index)
	case !t.accepts(mig.Phase):
		return nil, t.refuse(m.cfg.Alias, mig.Phase, false)
	}
	m.met.setPhase(mig.Phase)
	return m.awaitAcks(ctx, "dual writes", writesBoth(mig), cfg)
}
