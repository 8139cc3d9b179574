package pipeline

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/schema"
)

// Event results, the result label of geoshard_ingest_events_total.
const (
	resultWritten        = "written"         // every write acknowledged as applied
	resultStale          = "stale"           // a newer version was already stored (or known to the directory)
	resultNotFound       = "not_found"       // a delete of a document that was not there
	resultDeadLetter     = "dead_letter"     // sent to the dead-letter topic
	resultCoalesced      = "coalesced"       // superseded by a newer version in the same batch
	resultPendingExpired = "pending_expired" // a dish dead-lettered after waiting for its restaurant
	resultNoop           = "noop"            // nothing to write (e.g. a delete of a dish whose restaurant is unknown)
)

// metrics are the pipeline's Prometheus metrics. Labels are bounded: type,
// op, result, reason and partition ("topic/partition"); never an id.
type metrics struct {
	lag          *prometheus.GaugeVec   // partition
	events       *prometheus.CounterVec // type, op, result
	endToEnd     prometheus.Histogram   // seconds
	pending      prometheus.Gauge       // dishes waiting for their restaurant
	directory    prometheus.Gauge       // live restaurants known
	deadLetters  *prometheus.CounterVec // reason
	lastProgress prometheus.Gauge       // unix seconds
	moves        prometheus.Counter
	// refreshes counts the index refreshes the pipeline asked for.
	refreshes prometheus.Counter
	// checked counts the dish writes checked for other copies, and
	// reparented the superseded copies deleted (reparent.go).
	checked, reparented prometheus.Counter
	// parked counts the dishes parked to wait for their restaurant.
	parked prometheus.Counter
	// repartitioned counts dish events re-keyed into the repartition
	// topic (placement/repartition.go).
	repartitioned prometheus.Counter
	committed     *prometheus.GaugeVec // topic, partition
	phase         *prometheus.GaugeVec // phase

	// deadLetterRepeats counts the dead letters not written because their
	// event's place was dead-lettered already (package deadletter), by reason.
	deadLetterRepeats *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoshard_ingest_consumer_lag",
			Help: "Messages behind, per topic and partition: the high watermark of the latest fetch minus the committed offset.",
		}, []string{"topic", "partition"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoshard_ingest_events_total",
			Help: "Events finished, by type, op and result (written, stale, not_found, dead_letter, coalesced, pending_expired, noop).",
		}, []string{"type", "op", "result"}),
		endToEnd: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "geoshard_ingest_end_to_end_seconds",
			Help:    "Time from an event's Kafka timestamp to the acknowledgement of all its writes.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 16),
		}),
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "geoshard_ingest_pending_dishes",
			Help: "Dish events waiting for their restaurant.",
		}),
		directory: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "geoshard_ingest_directory_restaurants",
			Help: "Live restaurants in the routing directory.",
		}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoshard_ingest_dead_letters_total",
			Help: "Events written to the dead-letter topic, by reason.",
		}, []string{"reason"}),
		lastProgress: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "geoshard_ingest_last_progress_timestamp_seconds",
			Help: "Unix time at which an event last finished.",
		}),
		moves: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoshard_ingest_moves_total",
			Help: "Restaurants moved to another geoshard with their dishes.",
		}),
		refreshes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoshard_ingest_refreshes_total",
			Help: "Index refreshes the pipeline asked for, so that a move's, a delete's or a lookup's search sees every acknowledged write; shared by everything waiting at that moment.",
		}),
		checked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoshard_ingest_dish_checks_total",
			Help: "Dish writes answered created (or stale) that were checked for a copy of the dish under another restaurant's routing.",
		}),
		reparented: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoshard_ingest_superseded_dish_copies_deleted_total",
			Help: "Older copies of dishes that changed restaurant, deleted from the shard of their former restaurant.",
		}),
		parked: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoshard_ingest_parked_total",
			Help: "Dishes parked in the parking topic to wait for their restaurant, their offsets committed meanwhile.",
		}),
		repartitioned: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoshard_ingest_repartitioned_total",
			Help: "Dish events re-keyed by restaurant into the repartition topic (--dish-key dish).",
		}),
		committed: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoshard_ingest_committed_offset",
			Help: "Offset last committed, per topic and partition.",
		}, []string{"topic", "partition"}),
		phase: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoshard_ingest_migration_phase",
			Help: "1 for the reshard migration phase whose writes this instance performs (none without a migration), 0 for the others.",
		}, []string{"phase"}),
	}
	m.deadLetterRepeats = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "geoshard_ingest_dead_letter_repeats_total",
		Help: "Dead letters not written again, by reason: their event, decided again after a rebalance or a restart, was dead-lettered already by this instance or by a previous owner of its partition.",
	}, []string{"reason"})
	m.setPhase(phaseNone)
	for _, r := range decode.Reasons {
		m.deadLetters.WithLabelValues(string(r))
		m.deadLetterRepeats.WithLabelValues(string(r))
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.lag, m.events, m.endToEnd, m.pending, m.directory, m.deadLetters, m.lastProgress, m.moves, m.refreshes, m.checked, m.reparented, m.parked, m.repartitioned, m.committed, m.phase} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
		if err := reg.Register(m.deadLetterRepeats); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// setPhase sets the phase gauge to 1 for label and 0 for every other.
func (m *metrics) setPhase(label string) {
	m.phase.WithLabelValues(phaseNone).Set(0)
	for _, ph := range schema.Phases {
		m.phase.WithLabelValues(string(ph)).Set(0)
	}
	m.phase.WithLabelValues(label).Set(1)
}
