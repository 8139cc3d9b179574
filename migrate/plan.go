package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// CellLoads counts the documents of an index (or alias) per cell: a
// composite aggregation over geo_cell, paged with its after key. Cells
// must be at level; the loads come sorted by cell.
func CellLoads(ctx context.Context, admin *bulk.Admin, index string, level int) ([]router.CellLoad, error) {
	const name, pageSize = "cells", 10000
	var out []router.CellLoad
	var after json.RawMessage
	for {
		comp := map[string]any{
			"size":    pageSize,
			"sources": []any{map[string]any{"cell": map[string]any{"terms": map[string]any{"field": schema.FieldGeoCell}}}},
		}
		if after != nil {
			comp["after"] = after
		}
		body, _ := json.Marshal(map[string]any{
			"size": 0, "track_total_hits": false,
			"aggs": map[string]any{name: map[string]any{"composite": comp}},
		})
		var pg *bulk.CompositePage
		err := retryRead(ctx, func() error {
			var err error
			pg, err = admin.Composite(ctx, index, name, body, bulk.SearchParams{})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("migrate: cell loads of %s: %w", index, err)
		}
		for _, b := range pg.Buckets {
			var tok string
			if err := json.Unmarshal(b.Key["cell"], &tok); err != nil {
				return nil, fmt.Errorf("migrate: cell loads of %s: bucket key %s: %w", index, b.Key["cell"], err)
			}
			cell, err := router.ParseCellAt(tok, level)
			if err != nil {
				return nil, fmt.Errorf("migrate: cell loads of %s: %s %q of %d documents: %w", index, schema.FieldGeoCell, tok, b.DocCount, err)
			}
			out = append(out, router.CellLoad{Cell: cell, Docs: b.DocCount})
		}
		if len(pg.Buckets) < pageSize || len(pg.AfterKey) == 0 {
			break
		}
		after = pg.AfterKey
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Cell < out[j].Cell })
	return out, nil
}

// ShardChange is a shard present in both maps whose range changed.
type ShardChange struct {
	Name string `json:"name"`
	// Old and new ranges: start token, and the next shard's start ("" for
	// the end of the curve).
	OldStart string `json:"old_start"`
	OldEnd   string `json:"old_end"`
	NewStart string `json:"new_start"`
	NewEnd   string `json:"new_end"`
	// OldDocs and NewDocs are its documents under each map.
	OldDocs int64 `json:"old_docs"`
	NewDocs int64 `json:"new_docs"`
}

// Diff compares a new map with the live one over the current loads.
type Diff struct {
	OldHash   string        `json:"old_map_hash"`
	NewHash   string        `json:"new_map_hash"`
	OldShards int           `json:"old_shards"`
	NewShards int           `json:"new_shards"`
	Added     []string      `json:"added"`
	Removed   []string      `json:"removed"`
	Resized   []ShardChange `json:"resized"`
	Unchanged []string      `json:"unchanged"`
	// Docs is the number of documents; Moved those whose shard (by name)
	// changes. Every document is copied to the new index either way.
	Docs  int64 `json:"docs"`
	Moved int64 `json:"moved"`
}

// DiffMaps compares next with live: shards by name added, removed, with
// another range, or the same; and the documents of loads that change
// shard.
func DiffMaps(live, next *router.Map, loads []router.CellLoad) Diff {
	d := Diff{OldHash: live.Hash(), NewHash: next.Hash(), OldShards: live.NumShards(), NewShards: next.NumShards(),
		Added: []string{}, Removed: []string{}, Resized: []ShardChange{}, Unchanged: []string{}}
	oldDocs := make([]int64, live.NumShards())
	newDocs := make([]int64, next.NumShards())
	for _, l := range loads {
		o, n := live.LocateCell(l.Cell), next.LocateCell(l.Cell)
		oldDocs[o] += l.Docs
		newDocs[n] += l.Docs
		d.Docs += l.Docs
		if live.Shard(o).Name != next.Shard(n).Name {
			d.Moved += l.Docs
		}
	}
	end := func(m *router.Map, i int) string {
		if i+1 < m.NumShards() {
			return m.Shard(i + 1).Start
		}
		return ""
	}
	for i, s := range next.Shards() {
		j, ok := live.Index(s.Name)
		if !ok {
			d.Added = append(d.Added, s.Name)
			continue
		}
		c := ShardChange{Name: s.Name, OldStart: live.Shard(j).Start, OldEnd: end(live, j), NewStart: s.Start, NewEnd: end(next, i),
			OldDocs: oldDocs[j], NewDocs: newDocs[i]}
		if c.OldStart == c.NewStart && c.OldEnd == c.NewEnd {
			d.Unchanged = append(d.Unchanged, s.Name)
		} else {
			d.Resized = append(d.Resized, c)
		}
	}
	for _, s := range live.Shards() {
		if _, ok := next.Index(s.Name); !ok {
			d.Removed = append(d.Removed, s.Name)
		}
	}
	return d
}

// LiveLoads reads the map of the alias's write index and the current
// load per cell of the alias, for planning a migration.
func LiveLoads(ctx context.Context, admin *bulk.Admin, alias string) (*router.Map, string, []router.CellLoad, error) {
	live, index, err := schema.LoadMap(ctx, admin, alias)
	if err != nil {
		return nil, "", nil, err
	}
	loads, err := CellLoads(ctx, admin, alias, live.Level())
	if err != nil {
		return nil, "", nil, err
	}
	return live, index, loads, nil
}
