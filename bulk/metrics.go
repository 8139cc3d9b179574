package bulk

import (
	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the writer's Prometheus metrics. Labels are bounded: shard
// (the shard key, a geoshard name), result and reason — never a document.
type metrics struct {
	requests *prometheus.CounterVec // result: ok, partial, failed
	items    *prometheus.CounterVec // shard, result: ok, stale, not_found, permanent, failed, coalesced
	retries  *prometheus.CounterVec // shard, reason: rejected, unavailable, server_error, request
	latency  prometheus.Histogram   // seconds per bulk request
	bytes    prometheus.Counter     // request bytes sent
	inflight *prometheus.GaugeVec   // shard
	queued   *prometheus.GaugeVec   // shard
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoshard_bulk_requests_total",
			Help: "Bulk requests sent, by result: ok (every item done), partial (some items to retry), failed (the request failed whole).",
		}, []string{"result"}),
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoshard_bulk_items_total",
			Help: "Items finished, by shard and result (ok, stale, not_found, permanent, failed, coalesced).",
		}, []string{"shard", "result"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "geoshard_bulk_retries_total",
			Help: "Item attempts that will be retried, by shard and reason (rejected: 429; unavailable: 502-504; server_error: 500; request: the request failed whole).",
		}, []string{"shard", "reason"}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "geoshard_bulk_request_duration_seconds",
			Help:    "Time from sending a bulk request to reading its response.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
		}),
		bytes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "geoshard_bulk_request_bytes_total",
			Help: "Bytes of bulk request bodies sent.",
		}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoshard_bulk_items_in_flight",
			Help: "Items in requests that have not answered yet, by shard.",
		}, []string{"shard"}),
		queued: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoshard_bulk_items_queued",
			Help: "Items waiting to be sent or resent, by shard.",
		}, []string{"shard"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.requests, m.items, m.retries, m.latency, m.bytes, m.inflight, m.queued} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}
