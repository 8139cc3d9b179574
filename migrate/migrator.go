package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// Config configures a Migrator. Every zero field takes the default named
// in its comment.
type Config struct {
	// Alias is the alias whose index is migrated, e.g. "menu". Required.
	Alias string
	// Logger receives the steps' progress. Default: discard.
	Logger *slog.Logger
	// Registerer registers geoshard_migration_phase,
	// geoshard_backfill_docs_total and geoshard_backfill_takeovers_total.
	// Optional.
	Registerer prometheus.Registerer
	// Now is the clock of timestamps and of heartbeat liveness. Default
	// time.Now.
	Now func() time.Time
	// PollInterval is how often a wait for ingest instances re-reads their
	// heartbeats. Default 1s.
	PollInterval time.Duration
	// RetryBudget is how long one request to OpenSearch (a read or write
	// of the migration, a page, a count, an alias or health call) is
	// retried while it fails transiently — a node that died, 429, 5xx —
	// before its step fails with ErrRetryBudget. Default
	// DefaultRetryBudget.
	RetryBudget time.Duration
}

// DefaultPollInterval is Config.PollInterval's default.
const DefaultPollInterval = time.Second

// withDefaults fills every zero field with its default.
func (c Config) withDefaults() Config {
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.RetryBudget == 0 {
		c.RetryBudget = DefaultRetryBudget
	}
	return c
}

// Validate reports every bad field at once.
func (c Config) Validate() error {
	var p []string
	if c.Alias == "" {
		p = append(p, "alias: none given")
	}
	if c.PollInterval < 0 {
		p = append(p, fmt.Sprintf("poll interval %v: must not be negative", c.PollInterval))
	}
	if c.RetryBudget < 0 {
		p = append(p, fmt.Sprintf("retry budget %v: must not be negative", c.RetryBudget))
	}
	if len(p) > 0 {
		return fmt.Errorf("migrate: config: %v", joinProblems(p))
	}
	return nil
}

func joinProblems(p []string) string { return strings.Join(p, "; ") }

// Migrator runs the steps of one alias's migration. Every step is
// idempotent and resumes from the state stored in OpenSearch, so a step
// that failed or was killed is simply run again. Its methods may be called
// from several goroutines, but a migration is meant to be driven by one
// operator at a time; a second one is detected by optimistic concurrency
// on the migration document.
type Migrator struct {
	cfg    Config
	admin  *bulk.Admin
	client *opensearch.Client
	store  *stateStore
	log    *slog.Logger
	met    *metrics
	// search, if set, replaces admin for the reads of the backfill and the
	// verification (tests wrap it to stop a job mid-slice).
	search Searcher
	// clock is what the job's waits run on: wallClock, or in tests a
	// clock they move.
	clock clock
	// abandon, set by tests, makes a backfill stopped by its context
	// leave its leases as they are, as a killed process does.
	abandon bool
}

// clock is the time of the job's waits: the waits for ingest instances
// (their deadline, and the pause between two reads of the heartbeats)
// and the backfill's rate limit. It is not Config.Now, which only
// timestamps and judges heartbeats: a caller that pins Now for stable
// timestamps still sees its waits end.
type clock interface {
	Now() time.Time
	// Sleep waits d, or until ctx ends (its error).
	Sleep(ctx context.Context, d time.Duration) error
}

// wallClock is the real time.
type wallClock struct{}

func (wallClock) Now() time.Time                                   { return time.Now() }
func (wallClock) Sleep(ctx context.Context, d time.Duration) error { return sleep(ctx, d) }

// New returns a Migrator that talks to the cluster through client.
func New(client *opensearch.Client, cfg Config) (*Migrator, error) {
	if client == nil {
		return nil, errors.New("migrate: nil client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	met, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("migrate: register metrics: %w", err)
	}
	admin := bulk.NewAdmin(client)
	log := cfg.Logger.With("alias", cfg.Alias)
	store := newStore(admin, cfg.Alias, cfg.Now)
	store.retry = retryPolicy{budget: cfg.RetryBudget, log: log}
	return &Migrator{
		cfg: cfg, admin: admin, client: client,
		store: store,
		log:   log,
		met:   met,
		clock: wallClock{},
	}, nil
}

// Alias is the alias the Migrator works on.
func (m *Migrator) Alias() string { return m.cfg.Alias }

// Load returns the alias's migration as stored (ErrNoMigration if none).
func (m *Migrator) Load(ctx context.Context) (*schema.Migration, error) {
	rec, err := m.store.Load(ctx)
	if err != nil {
		return nil, err
	}
	m.met.setPhase(rec.Migration.Phase)
	return &rec.Migration, nil
}

// CheckAlias returns an error wrapping ErrUnknownAlias when the alias
// does not exist in the cluster and no migration is recorded for it.
// An alias with a migration recorded is known whatever its state: a
// migration may have to be cancelled or inspected after the alias went
// missing.
func (m *Migrator) CheckAlias(ctx context.Context) error {
	ts, err := m.admin.Alias(ctx, m.cfg.Alias)
	if err != nil && !bulk.IsNotFound(err) {
		return fmt.Errorf("migrate: read alias %q: %w", m.cfg.Alias, err)
	}
	if err == nil && len(ts) > 0 {
		return nil
	}
	if _, err := m.store.Load(ctx); !errors.Is(err, ErrNoMigration) {
		return err // recorded (nil), or unreadable
	}
	return fmt.Errorf("alias %q: %w", m.cfg.Alias, ErrUnknownAlias)
}

// sideMap parses and checks the map recorded for one side of a migration.
func sideMap(s schema.Side) (*router.Map, error) {
	m, err := s.ParseMap()
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return m, nil
}

// mapJSON is a map in compact JSON, as a migration records it.
func mapJSON(mp *router.Map) (json.RawMessage, error) {
	b, err := mp.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// checkIndexMap checks that index exists and records the map hash want in
// its _meta.
func (m *Migrator) checkIndexMap(ctx context.Context, index, want string) error {
	var ok bool
	err := m.do(ctx, "check "+index, func() (err error) {
		ok, err = m.admin.IndexExists(ctx, index)
		return err
	})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("migrate: index %s does not exist", index)
	}
	var meta json.RawMessage
	err = m.do(ctx, "read the _meta of "+index, func() (err error) {
		meta, err = m.admin.Meta(ctx, index)
		return err
	})
	if err != nil {
		return err
	}
	mp, err := schema.MapFromMeta(meta)
	if err != nil {
		return fmt.Errorf("migrate: index %s: %w", index, err)
	}
	if mp.Hash() != want {
		return fmt.Errorf("migrate: index %s was built with map %s, the migration expects %s", index, mp.ShortHash(), short(want))
	}
	return nil
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	return hash
}
