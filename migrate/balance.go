package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/schema"
)

// ImbalanceAlert is the max/mean document count above which the live map
// no longer fits its data: the threshold of the GeoshardMapImbalanced
// alert (deploy/prometheus/alerts.yaml) and of the verdict of `reshard
// plan --from-index`. The planner keeps a new map within ±10% of the mean
// (max/mean 1.10), so 1.5 is the largest shard holding half again its
// share: a drift no single metro opening or closing produces.
const ImbalanceAlert = 1.5

// DefaultBalanceInterval is how often a BalanceWatch counts.
const DefaultBalanceInterval = 5 * time.Minute

// ShardBalance is one geoshard's documents now and as planned.
type ShardBalance struct {
	Name string `json:"name"`
	// Docs is the number of documents on the geoshard's physical shard of
	// the write index now (as of its last refresh).
	Docs int64 `json:"docs"`
	// MapDocs is the load the map was planned with (the map file's docs).
	MapDocs int64 `json:"map_docs"`
	// Planned is MapDocs scaled so that the planned total equals the
	// current total: the geoshard's planned share in today's documents.
	Planned float64 `json:"planned"`
}

// BalanceReport is how the documents of an alias's write index spread over
// its map's geoshards, beside how the map planned them.
type BalanceReport struct {
	Alias   string `json:"alias"`
	Index   string `json:"index"`
	MapHash string `json:"map_hash"`
	// Docs is the number of documents of the write index.
	Docs   int64          `json:"docs"`
	Shards []ShardBalance `json:"shards"`
	// Imbalance is the largest geoshard's documents over the mean (1 is an
	// even spread; 0 when the index is empty).
	Imbalance float64 `json:"imbalance"`
	// PlannedImbalance is the same figure of the planned shares.
	PlannedImbalance float64 `json:"planned_imbalance"`
}

// BalanceSource is what Balance reads from a cluster; *bulk.Admin is one.
type BalanceSource interface {
	schema.MetaSource
	// Count counts the documents matching query (nil: all).
	Count(ctx context.Context, index string, query json.RawMessage, p bulk.SearchParams) (int64, error)
}

var _ BalanceSource = (*bulk.Admin)(nil)

// Balance reads the map of the alias's write index (its _meta) and counts
// the documents on each of the index's physical shards: geoshard i's
// routing key sends it to physical shard i alone, so a count with
// preference _shards:i is exactly geoshard i's documents, dishes
// included, with one small request per shard.
func Balance(ctx context.Context, src BalanceSource, alias string) (*BalanceReport, error) {
	m, index, err := schema.LoadMap(ctx, src, alias)
	if err != nil {
		return nil, fmt.Errorf("migrate: balance of %s: %w", alias, err)
	}
	r := &BalanceReport{Alias: alias, Index: index, MapHash: m.Hash(), Shards: make([]ShardBalance, m.NumShards())}
	var planned int64
	for i, s := range m.Shards() {
		var n int64
		err := retryRead(ctx, "count shard "+strconv.Itoa(i), func() error {
			var err error
			n, err = src.Count(ctx, index, nil, bulk.SearchParams{Preference: "_shards:" + strconv.Itoa(i)})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("migrate: balance of %s: count shard %d (%s) of %s: %w", alias, i, s.Name, index, err)
		}
		r.Shards[i] = ShardBalance{Name: s.Name, Docs: n, MapDocs: s.Docs}
		r.Docs += n
		planned += s.Docs
	}
	counts := make([]float64, len(r.Shards))
	shares := make([]float64, len(r.Shards))
	for i := range r.Shards {
		sh := &r.Shards[i]
		if planned > 0 {
			sh.Planned = float64(sh.MapDocs) * float64(r.Docs) / float64(planned)
		} else {
			// A map without planned loads plans an even split.
			sh.Planned = float64(r.Docs) / float64(len(r.Shards))
		}
		counts[i], shares[i] = float64(sh.Docs), sh.Planned
	}
	r.Imbalance, r.PlannedImbalance = maxOverMean(counts), maxOverMean(shares)
	return r, nil
}

// maxOverMean is the largest of xs over their mean; 0 if they sum to 0.
func maxOverMean(xs []float64) float64 {
	var sum, mx float64
	for _, x := range xs {
		sum += x
		mx = max(mx, x)
	}
	if sum == 0 {
		return 0
	}
	return mx / (sum / float64(len(xs)))
}

// BalanceWatchConfig configures a BalanceWatch.
type BalanceWatchConfig struct {
	// Alias whose write index is counted, e.g. "menu". Required.
	Alias string
	// Registerer registers geoshard_shard_documents,
	// geoshard_shard_planned_documents and geoshard_map_imbalance.
	// Required.
	Registerer prometheus.Registerer
	// Logger receives failed counts (Warn) and each refresh (Debug).
	// Default: discard.
	Logger *slog.Logger
	// Interval between counts. Default DefaultBalanceInterval (5m); at
	// least 1s.
	Interval time.Duration
}

// Validate reports every bad field at once.
func (c BalanceWatchConfig) Validate() error {
	var errs []error
	if c.Alias == "" {
		errs = append(errs, errors.New("alias: none given"))
	}
	if c.Registerer == nil {
		errs = append(errs, errors.New("registerer: none given"))
	}
	if c.Interval != 0 && c.Interval < time.Second {
		errs = append(errs, fmt.Errorf("interval %v: want 0 (default %v) or at least 1s", c.Interval, DefaultBalanceInterval))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("migrate: balance watch config: %w", err)
	}
	return nil
}

// BalanceWatch exports Balance as gauges, refreshed every interval.
type BalanceWatch struct {
	cfg       BalanceWatchConfig
	src       BalanceSource
	docs      *prometheus.GaugeVec
	planned   *prometheus.GaugeVec
	imbalance prometheus.Gauge
	// mu serialises Refresh's updates of the gauges and shown, the
	// geoshards of the last count.
	mu    sync.Mutex
	shown map[string]bool
}

// NewBalanceWatch registers the balance gauges on cfg.Registerer. Nothing
// is counted until Run.
func NewBalanceWatch(client *opensearch.Client, cfg BalanceWatchConfig) (*BalanceWatch, error) {
	if client == nil {
		return nil, errors.New("migrate: balance watch: nil client")
	}
	return newBalanceWatch(bulk.NewAdmin(client), cfg)
}

func newBalanceWatch(src BalanceSource, cfg BalanceWatchConfig) (*BalanceWatch, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultBalanceInterval
	}
	w := &BalanceWatch{
		cfg: cfg, src: src,
		docs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoshard_shard_documents",
			Help: "Documents on each geoshard of the alias's write index, as of the last count.",
		}, []string{"shard"}),
		planned: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "geoshard_shard_planned_documents",
			Help: "Each geoshard's planned load in the map, scaled so the planned total equals the current total.",
		}, []string{"shard"}),
		imbalance: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "geoshard_map_imbalance",
			Help: "The largest geoshard's documents over the mean (max/mean); 1 is an even spread, 0 an empty index.",
		}),
	}
	for _, c := range []prometheus.Collector{w.docs, w.planned, w.imbalance} {
		if err := cfg.Registerer.Register(c); err != nil {
			return nil, fmt.Errorf("migrate: balance watch: register metrics: %w", err)
		}
	}
	return w, nil
}

// Run counts now and then every interval until ctx ends. A failed count is
// logged and leaves the gauges at the last good count; Run never fails.
func (w *BalanceWatch) Run(ctx context.Context) {
	t := time.NewTicker(w.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := w.Refresh(ctx); err != nil && ctx.Err() == nil {
			w.cfg.Logger.Warn("balance count failed", "alias", w.cfg.Alias, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Refresh counts once and sets the gauges; it is safe to call while Run
// runs. The series of geoshards no longer in the map (after a cutover)
// are dropped.
func (w *BalanceWatch) Refresh(ctx context.Context) (*BalanceReport, error) {
	r, err := Balance(ctx, w.src, w.cfg.Alias)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	// Set before deleting, not Reset: a scrape in between sees every
	// geoshard of one map or the other, never none.
	now := make(map[string]bool, len(r.Shards))
	for _, s := range r.Shards {
		w.docs.WithLabelValues(s.Name).Set(float64(s.Docs))
		w.planned.WithLabelValues(s.Name).Set(s.Planned)
		now[s.Name] = true
	}
	for name := range w.shown {
		if !now[name] {
			w.docs.DeleteLabelValues(name)
			w.planned.DeleteLabelValues(name)
		}
	}
	w.shown = now
	w.imbalance.Set(r.Imbalance)
	w.cfg.Logger.Debug("balance counted", "alias", r.Alias, "index", r.Index, "map_hash", r.MapHash[:12], "docs", r.Docs, "imbalance", r.Imbalance)
	return r, nil
}
