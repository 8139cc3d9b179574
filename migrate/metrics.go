package migrate

import (
	"errors"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/schema"
)

// Phases lists every phase (schema.Phases, where the contract lives).
var Phases = schema.Phases

// metrics are the job's Prometheus metrics. The names are fixed: the
// dashboard in deploy/ reads them.
type metrics struct {
	// phase is 1 for the migration's current phase and 0 for the others.
	phase *prometheus.GaugeVec
	// docs counts documents the backfill copied (acknowledged writes).
	docs prometheus.Counter
	// takeovers counts the slices the backfill claimed from a worker
	// whose lease had expired.
	takeovers prometheus.Counter
	// suspectsSeen counts the verification's suspects by result:
	// confirmed, or resolved (in flight).
	suspectsSeen *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoshard_migration_phase",
			Help: "1 for the reshard migration's current phase, 0 for the others.",
		}, []string{"phase"}),
		docs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoshard_backfill_docs_total",
			Help: "Documents the reshard backfill copied to the target index (writes acknowledged, stale included).",
		}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoshard_backfill_takeovers_total",
			Help: "Backfill slices this worker claimed from another worker whose lease had expired (it died or froze); each resumes from the slice's checkpoint.",
		}),
		suspectsSeen: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoshard_verify_suspects_total",
			Help: "Missing, extra and duplicated ids the reshard verification listed, by result: confirmed (reported), or resolved in flight.",
		}, []string{"result"}),
	}
	if reg == nil {
		return m, nil
	}
	// A second Migrator on the same registry shares the first's metrics.
	if err := reg.Register(m.phase); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, err
		}
		if m.phase, err = existing[*prometheus.GaugeVec](are); err != nil {
			return nil, err
		}
	}
	if err := reg.Register(m.docs); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, err
		}
		if m.docs, err = existing[prometheus.Counter](are); err != nil {
			return nil, err
		}
	}
	if err := reg.Register(m.takeovers); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, err
		}
		if m.takeovers, err = existing[prometheus.Counter](are); err != nil {
			return nil, err
		}
	}
	if err := reg.Register(m.suspectsSeen); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return nil, err
		}
		if m.suspectsSeen, err = existing[*prometheus.CounterVec](are); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// suspects counts the verification's suspects by result.
func (m *metrics) suspects(confirmed, resolved int) {
	m.suspectsSeen.WithLabelValues("confirmed").Add(float64(confirmed))
	m.suspectsSeen.WithLabelValues("resolved").Add(float64(resolved))
}

// setPhase marks p as the current phase.
func (m *metrics) setPhase(p schema.Phase) {
	for _, q := range Phases {
		v := 0.0
		if q == p {
			v = 1
		}
		m.phase.WithLabelValues(string(q)).Set(v)
	}
}

func existing[T prometheus.Collector](are prometheus.AlreadyRegisteredError) (T, error) {
	c, ok := are.ExistingCollector.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("a collector of another type is registered: %w", are)
	}
	return c, nil
}
