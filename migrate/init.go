package migrate

import (
	"context"
	"errors"
	"fmt"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// InitConfig says what Init creates.
type InitConfig struct {
	// Map is the geoshard map the index is built with. Required.
	Map *router.Map
	// Index is the concrete index to create, e.g. "menu-v1". Required.
	Index string
	// Alias is the alias that readers and writers use, e.g. "menu".
	// Required.
	Alias string
	// Replicas is index.number_of_replicas. Default: 1, or 0 on a
	// one-node cluster, where a replica can never be placed, the index
	// would stay yellow, and a later cutover's wait for green would never
	// end.
	Replicas *int
}

// ErrMapMismatch reports an existing index built with another map.
var ErrMapMismatch = errors.New("migrate: the index was built with another map")

// Init creates the first index of an alias: the index with the map's
// shard counts, the menu mappings and the map in its _meta, then the alias
// as its read and write alias. It is idempotent: an index that already
// exists with the same map is kept, and a missing alias is added. An alias
// that already points elsewhere is an error — Init does not move aliases;
// that is what a migration does.
func Init(ctx context.Context, a *bulk.Admin, cfg InitConfig) error {
	if cfg.Map == nil || cfg.Index == "" || cfg.Alias == "" {
		return errors.New("migrate: init needs a map, an index and an alias")
	}
	if cfg.Index == cfg.Alias {
		return fmt.Errorf("migrate: init: the index and the alias are both %q; they must differ", cfg.Index)
	}
	targets, err := a.Alias(ctx, cfg.Alias)
	switch {
	case bulk.IsNotFound(err):
		targets = nil
	case err != nil:
		return fmt.Errorf("migrate: init: %w", err)
	}
	for _, t := range targets {
		if t.Index != cfg.Index {
			return fmt.Errorf("migrate: init: alias %q already points to %q; init only creates a new alias (use a migration to move it)", cfg.Alias, t.Index)
		}
	}
	exists, err := a.IndexExists(ctx, cfg.Index)
	if err != nil {
		return fmt.Errorf("migrate: init: %w", err)
	}
	if exists {
		meta, err := a.Meta(ctx, cfg.Index)
		if err != nil {
			return fmt.Errorf("migrate: init: %w", err)
		}
		m, err := schema.MapFromMeta(meta)
		if err != nil {
			return fmt.Errorf("migrate: init: index %q exists but %w", cfg.Index, err)
		}
		if m.Hash() != cfg.Map.Hash() {
			return fmt.Errorf("%w: index %q has map %s, the given map is %s", ErrMapMismatch, cfg.Index, m.ShortHash(), cfg.Map.ShortHash())
		}
	} else {
		replicas := cfg.Replicas
		if replicas == nil {
			n, err := dataNodes(ctx, a)
			if err != nil {
				return fmt.Errorf("migrate: init: %w", err)
			}
			r := fittingReplicas(n)
			replicas = &r
		}
		body, err := schema.IndexBody(cfg.Map, schema.IndexOptions{Replicas: replicas})
		if err != nil {
			return err
		}
		if err := a.CreateIndex(ctx, cfg.Index, body); err != nil {
			return fmt.Errorf("migrate: init: create index %q: %w", cfg.Index, err)
		}
	}
	if len(targets) == 1 {
		return nil
	}
	yes := true
	err = a.UpdateAliases(ctx, []bulk.AliasAction{{Add: &bulk.AliasSpec{Index: cfg.Index, Alias: cfg.Alias, IsWriteIndex: &yes}}})
	if err != nil {
		return fmt.Errorf("migrate: init: add alias %q: %w", cfg.Alias, err)
	}
	return nil
}

var _ schema.MetaSource = (*bulk.Admin)(nil)
