package migrate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// CreateConfig says what Create makes.
type CreateConfig struct {
	// Map is the new map. Required. Its level must be the source map's:
	// the backfill routes by the geo_cell token stored in each document,
	// which is at the source map's level.
	Map *router.Map
	// Target is the new index's name. Default <alias>-v<N>, N one more
	// than any <alias>-v<K> that exists or that the last migration used.
	Target string
	// GCDeletes is index.gc_deletes on both indexes while the migration
	// runs. Default DefaultGCDeletes.
	GCDeletes string
	// Replicas is the target's number_of_replicas after loading (set at
	// cutover). Default: the source's.
	Replicas *int
	// SkipDiskCheck creates the target without checking that the data
	// nodes have room for it (see EstimateDisk). Default false: a target
	// that does not fit is refused with a *DiskError before anything is
	// recorded or created.
	SkipDiskCheck bool
}

// DefaultGCDeletes keeps delete tombstones for an hour: far longer than a
// backfill page takes from read to acknowledged write, which is the window
// in which a copy could resurrect a document deleted by a live write.
const DefaultGCDeletes = "1h"

// withDefaults fills every zero field with its default (Target's and
// Replicas' depend on the cluster, and are found by Create).
func (c CreateConfig) withDefaults() CreateConfig {
	if c.GCDeletes == "" {
		c.GCDeletes = DefaultGCDeletes
	}
	return c
}

// Defaults of the settings a migration restores when the source does not
// set them (OpenSearch's defaults).
const (
	defaultReplicas        = 1
	defaultRefreshInterval = "1s"
	defaultGCDeletes       = "60s"
)

// Create starts a migration: it records it (phase created), creates the
// target index for the new map (the source's mappings, the map in _meta,
// no replicas and no refresh while loading) and raises index.gc_deletes
// on both indexes, remembering the old values to restore them at the
// end. Run again, it finishes what a killed run left. It refuses while
// another migration of the alias is not finished, and, unless
// cfg.SkipDiskCheck, when the data nodes have not the room the target
// will take (ErrNoDisk).
func (m *Migrator) Create(ctx context.Context, cfg CreateConfig) (*schema.Migration, error) {
	ctx = m.withStep(ctx, StepCreate)
	if cfg.Map == nil {
		return nil, errors.New("migrate: create: no map")
	}
	cfg = cfg.withDefaults()
	if _, err := parseTimeValue(cfg.GCDeletes); err != nil {
		return nil, fmt.Errorf("migrate: create: gc_deletes: %w", err)
	}
	if cfg.Replicas != nil && *cfg.Replicas < 0 {
		return nil, fmt.Errorf("migrate: create: replicas %d: must not be negative", *cfg.Replicas)
	}
	if cfg.Target != "" {
		// Before anything is recorded: a migration to an index that can
		// never be created could only be cancelled.
		if err := schema.CheckIndexName(cfg.Target); err != nil {
			return nil, fmt.Errorf("migrate: create: target: %w", err)
		}
	}
	if err := m.store.ensureIndex(ctx); err != nil {
		return nil, err
	}
	for range maxConflicts {
		prev, err := m.store.Load(ctx)
		if err != nil && !errors.Is(err, ErrNoMigration) {
			return nil, err
		}
		if prev != nil && !rule(StepCreate).starts(prev.Migration.Phase) {
			return m.resumeCreate(ctx, prev, cfg)
		}
		mig, err := m.newMigration(ctx, prev, cfg)
		if err != nil {
			return nil, err
		}
		if err := m.checkDisk(ctx, mig, cfg); err != nil {
			return nil, err
		}
		rec, err := m.store.Insert(ctx, prev, mig)
		if bulk.IsConflict(err) {
			continue // another operator started one: look again
		}
		if err != nil {
			return nil, fmt.Errorf("migrate: create: record the migration: %w", err)
		}
		m.log.Info("migration recorded", "step", StepCreate, "index", mig.Target.Index, "map_hash", mig.Target.MapHash, "phase", mig.Phase)
		return m.finishCreate(ctx, rec, cfg)
	}
	return nil, fmt.Errorf("migrate: create: %w", ErrConflict)
}

// resumeCreate handles a migration that exists and is not finished: the
// same map continues it, another map is refused.
func (m *Migrator) resumeCreate(ctx context.Context, rec *record, cfg CreateConfig) (*schema.Migration, error) {
	mig := &rec.Migration
	if mig.Target.MapHash != cfg.Map.Hash() || (cfg.Target != "" && cfg.Target != mig.Target.Index) {
		next := "complete or cancel it first"
		if !rule(StepCancel).starts(mig.Phase) {
			next = "complete it, or roll it back and cancel it, first"
		}
		return nil, fmt.Errorf("migrate: create: %w: %s to %s (map %s) is in phase %s; %s",
			ErrBusy, mig.Source.Index, mig.Target.Index, short(mig.Target.MapHash), mig.Phase, next)
	}
	if mig.Phase != rule(StepCreate).to {
		m.log.Info("migration already created", "step", StepCreate, "index", mig.Target.Index, "phase", mig.Phase)
		m.met.setPhase(mig.Phase)
		return mig, nil
	}
	return m.finishCreate(ctx, rec, cfg)
}

// newMigration describes a new migration of the alias from its write
// index to a new target under cfg.Map.
func (m *Migrator) newMigration(ctx context.Context, prev *record, cfg CreateConfig) (*schema.Migration, error) {
	alias := m.cfg.Alias
	var targets []bulk.AliasTarget
	err := m.do(ctx, "read alias "+alias, func() (err error) {
		targets, err = m.admin.Alias(ctx, alias)
		return err
	})
	if bulk.IsNotFound(err) {
		return nil, fmt.Errorf("migrate: create: alias %q does not exist (reshard init creates it)", alias)
	}
	if err != nil {
		return nil, fmt.Errorf("migrate: create: %w", err)
	}
	if len(targets) != 1 {
		return nil, fmt.Errorf("migrate: create: %w: alias %q points to %d indices; a migration starts from exactly one", ErrAliasState, alias, len(targets))
	}
	var srcMap *router.Map
	var source string
	err = m.do(ctx, "read the map of "+alias, func() (err error) {
		srcMap, source, err = schema.LoadMap(ctx, m.admin, alias)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: create: %w", err)
	}
	switch {
	case srcMap.Hash() == cfg.Map.Hash():
		return nil, fmt.Errorf("migrate: create: index %s already uses map %s", source, cfg.Map.ShortHash())
	case srcMap.Level() != cfg.Map.Level():
		return nil, fmt.Errorf("migrate: create: the new map is at level %d, the source's at level %d; documents store their cell at the source's level, so a migration keeps the level", cfg.Map.Level(), srcMap.Level())
	}
	target := cfg.Target
	if target == "" {
		if target, err = m.nextTarget(ctx, prev); err != nil {
			return nil, err
		}
	}
	if target == source || target == alias {
		return nil, fmt.Errorf("migrate: create: target %q must differ from the source and the alias", target)
	}
	var ok bool
	err = m.do(ctx, "check "+target, func() (err error) {
		ok, err = m.admin.IndexExists(ctx, target)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: create: %w", err)
	} else if ok {
		return nil, fmt.Errorf("migrate: create: index %q already exists; name another target or delete it", target)
	}
	var set map[string]string
	err = m.do(ctx, "read the settings of "+source, func() (err error) {
		set, err = m.admin.Settings(ctx, source)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: create: settings of %s: %w", source, err)
	}
	replicas, err := replicasOf(source, set)
	if err != nil {
		return nil, fmt.Errorf("migrate: create: %w", err)
	}
	if cfg.Replicas != nil {
		replicas = *cfg.Replicas
	}
	srcJSON, err := mapJSON(srcMap)
	if err != nil {
		return nil, err
	}
	tgtJSON, err := mapJSON(cfg.Map)
	if err != nil {
		return nil, err
	}
	now := m.cfg.Now().UTC()
	gc := settingOr(set, "index.gc_deletes", defaultGCDeletes)
	return &schema.Migration{
		Alias:   alias,
		ID:      target + "@" + now.Format("20060102T150405Z"),
		Phase:   rule(StepCreate).to,
		Source:  schema.Side{Index: source, MapHash: srcMap.Hash(), Map: srcJSON},
		Target:  schema.Side{Index: target, MapHash: cfg.Map.Hash(), Map: tgtJSON},
		Created: now,
		Restore: schema.RestoreSettings{
			TargetReplicas:        replicas,
			TargetRefreshInterval: settingOr(set, "index.refresh_interval", defaultRefreshInterval),
			SourceGCDeletes:       gc,
			// The target ends as the source was.
			TargetGCDeletes: gc,
		},
	}, nil
}

func settingOr(set map[string]string, key, def string) string {
	if v, ok := set[key]; ok && v != "" {
		return v
	}
	return def
}

// nextTarget is <alias>-v<N> with N one more than any version in use: an
// existing index, or an index the last migration named (it may have been
// deleted by a cancel, and a name is better not reused).
func (m *Migrator) nextTarget(ctx context.Context, prev *record) (string, error) {
	prefix := m.cfg.Alias + "-v"
	var names []string
	err := m.do(ctx, "list "+prefix+"*", func() (err error) {
		names, err = m.admin.IndexNames(ctx, prefix+"*")
		return err
	})
	if err != nil {
		return "", fmt.Errorf("migrate: create: list %s*: %w", prefix, err)
	}
	if prev != nil {
		names = append(names, prev.Migration.Source.Index, prev.Migration.Target.Index)
	}
	n := 0
	for _, name := range names {
		if v, err := strconv.Atoi(strings.TrimPrefix(name, prefix)); err == nil && strings.HasPrefix(name, prefix) && v > n {
			n = v
		}
	}
	return prefix + strconv.Itoa(n+1), nil
}

// finishCreate makes what a recorded migration in phase created needs:
// the target index and the raised gc_deletes on both indexes. Each part
// checks before it acts, so it runs any number of times.
func (m *Migrator) finishCreate(ctx context.Context, rec *record, cfg CreateConfig) (*schema.Migration, error) {
	mig := &rec.Migration
	tm, err := sideMap(mig.Target)
	if err != nil {
		return nil, err
	}
	var exists bool
	err = m.do(ctx, "check "+mig.Target.Index, func() (err error) {
		exists, err = m.admin.IndexExists(ctx, mig.Target.Index)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("migrate: create: %w", err)
	}
	if !exists {
		body, err := schema.IndexBody(tm, schema.IndexOptions{Loading: true, GCDeletes: raisedGC(mig.Restore.SourceGCDeletes, cfg.GCDeletes)})
		if err != nil {
			return nil, err
		}
		// A retried create whose first answer was lost finds the index
		// made: resource_already_exists, as when another job made it.
		err = m.do(ctx, "create "+mig.Target.Index, func() error { return m.admin.CreateIndex(ctx, mig.Target.Index, body) })
		if err != nil && !bulk.IsAlreadyExists(err) {
			return nil, fmt.Errorf("migrate: create index %s: %w", mig.Target.Index, err)
		}
		m.log.Info("target index created", "step", StepCreate, "index", mig.Target.Index, "shards", tm.NumShards(), "map_hash", tm.Hash())
	}
	// An index of that name that someone else made with another map is
	// never adopted.
	if err := m.checkIndexMap(ctx, mig.Target.Index, mig.Target.MapHash); err != nil {
		return nil, err
	}
	gc := raisedGC(mig.Restore.SourceGCDeletes, cfg.GCDeletes)
	for _, index := range []string{mig.Target.Index, mig.Source.Index} {
		err := m.do(ctx, "raise gc_deletes of "+index, func() error {
			return m.admin.PutSettings(ctx, index, map[string]any{"gc_deletes": gc})
		})
		if err != nil {
			return nil, fmt.Errorf("migrate: create: raise gc_deletes of %s: %w", index, err)
		}
	}
	m.log.Info("migration created", "step", StepCreate, "index", mig.Target.Index, "gc_deletes", gc,
		"source", mig.Source.Index, "phase", mig.Phase)
	m.met.setPhase(mig.Phase)
	return mig, nil
}

// raisedGC is the gc_deletes a migration sets: want, or the current
// value if that is longer already (a migration never shortens it).
func raisedGC(current, want string) string {
	c, err1 := parseTimeValue(current)
	w, err2 := parseTimeValue(want)
	if err1 == nil && err2 == nil && c > w {
		return current
	}
	return want
}

// parseTimeValue parses an OpenSearch time value such as "60s", "1h",
// "500ms" or "2d".
func parseTimeValue(v string) (time.Duration, error) {
	units := []struct {
		suffix string
		d      time.Duration
	}{{"nanos", time.Nanosecond}, {"micros", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			n, err := strconv.ParseFloat(num, 64)
			if err != nil || n < 0 {
				break
			}
			return time.Duration(n * float64(u.d)), nil
		}
	}
	return 0, fmt.Errorf("time value %q: want a number and a unit (ms, s, m, h, d)", v)
}
