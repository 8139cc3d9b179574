package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

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
		err := retryRead(ctx, "read cell loads", func() error {
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

// The verdict's thresholds besides ImbalanceAlert.
const (
	// WorthImbalanceDrop: a new map whose max/mean is lower by at least
	// this much is worth a migration even below the alert threshold. A
	// migration copies every document, so a small gain in balance does not
	// pay for it: 0.20 is twice the planner's default ±10% bound.
	WorthImbalanceDrop = 0.20
	// WorthFanoutDrop: a new map whose searches ask at least this many
	// fewer shards each, on average, is worth a migration.
	WorthFanoutDrop = 0.10
)

// Figures are a map's balance and search cost on the current loads and a
// workload.
type Figures struct {
	// Imbalance is the largest shard's load over the mean (max/mean).
	Imbalance float64 `json:"imbalance"`
	// Fanout is the mean number of shards a search asks.
	Fanout float64 `json:"fanout"`
}

// Verdict says whether moving an alias from its live map to a planned one
// is worth a migration.
type Verdict struct {
	Now      Figures `json:"now"`
	Proposed Figures `json:"proposed"`
	// Docs is the number of documents; Moved those whose physical shard
	// (position in the map) differs between the maps.
	Docs  int64 `json:"docs"`
	Moved int64 `json:"moved_docs"`
	// The thresholds applied: ImbalanceAlert, WorthImbalanceDrop,
	// WorthFanoutDrop.
	AlertImbalance     float64 `json:"alert_imbalance"`
	WorthImbalanceDrop float64 `json:"worth_imbalance_drop"`
	WorthFanoutDrop    float64 `json:"worth_fanout_drop"`
	Worth              bool    `json:"worth"`
	// Reason is the verdict in one line, starting "worth a migration: " or
	// "not worth a migration: ".
	Reason string `json:"reason"`
}

// english prints numbers as people read them: 25,485.
var english = message.NewPrinter(language.English)

// Judge measures the live map and next on the current loads and work, and
// decides: a migration is worth it when next lowers the max/mean and the
// live one is above ImbalanceAlert, or next lowers it by at least
// WorthImbalanceDrop, or next's searches ask at least WorthFanoutDrop
// fewer shards each without leaving max/mean above the alert threshold.
func Judge(live, next *router.Map, loads []router.CellLoad, work *router.Workload) (Verdict, error) {
	v := Verdict{AlertImbalance: ImbalanceAlert, WorthImbalanceDrop: WorthImbalanceDrop, WorthFanoutDrop: WorthFanoutDrop}
	for _, p := range []struct {
		m   *router.Map
		out *Figures
	}{{live, &v.Now}, {next, &v.Proposed}} {
		met, err := router.Evaluate(p.m, loads, work)
		if err != nil {
			return v, fmt.Errorf("migrate: judge map %s: %w", p.m.ShortHash(), err)
		}
		*p.out = Figures{Imbalance: met.MaxOverMean, Fanout: met.Fanout}
	}
	for _, l := range loads {
		v.Docs += l.Docs
		if live.LocateCell(l.Cell) != next.LocateCell(l.Cell) {
			v.Moved += l.Docs
		}
	}
	now, prop := v.Now, v.Proposed
	// Compared as printed, in hundredths, so that the verdict agrees with
	// the figures beside it (and 1.30 - 1.10 is not 0.1999…).
	c := func(x float64) int64 { return int64(math.Round(x * 100)) }
	alert, minImb, minFan := c(ImbalanceAlert), c(WorthImbalanceDrop), c(WorthFanoutDrop)
	dImb, dFan := c(now.Imbalance)-c(prop.Imbalance), c(now.Fanout)-c(prop.Fanout)
	moved := english.Sprintf("%d of %d documents change shard", v.Moved, v.Docs)
	switch {
	case c(now.Imbalance) > alert && dImb > 0:
		v.Worth = true
		v.Reason = fmt.Sprintf("worth a migration: max/mean %.2f is above the alert threshold %.2f and the new map brings it to %.2f; %s",
			now.Imbalance, ImbalanceAlert, prop.Imbalance, moved)
	case dImb >= minImb:
		v.Worth = true
		v.Reason = fmt.Sprintf("worth a migration: max/mean drops from %.2f to %.2f, by at least %.2f; %s",
			now.Imbalance, prop.Imbalance, WorthImbalanceDrop, moved)
	case dFan >= minFan && c(prop.Imbalance) <= alert:
		v.Worth = true
		v.Reason = fmt.Sprintf("worth a migration: fan-out drops from %.2f to %.2f shards per search, by at least %.2f; %s",
			now.Fanout, prop.Fanout, WorthFanoutDrop, moved)
	default:
		v.Reason = fmt.Sprintf("not worth a migration: max/mean %.2f → %.2f is within the alert threshold %.2f and drops by less than %.2f; fan-out %.2f → %.2f drops by less than %.2f",
			now.Imbalance, prop.Imbalance, ImbalanceAlert, WorthImbalanceDrop, now.Fanout, prop.Fanout, WorthFanoutDrop)
		if c(now.Imbalance) > alert {
			v.Reason = fmt.Sprintf("not worth a migration: max/mean %.2f is above the alert threshold %.2f but the new map does not lower it (%.2f); plan with another shard count or --max-imbalance",
				now.Imbalance, ImbalanceAlert, prop.Imbalance)
		}
	}
	if v.Worth && c(prop.Fanout) > c(now.Fanout) {
		v.Reason += fmt.Sprintf("; fan-out rises from %.2f to %.2f", now.Fanout, prop.Fanout)
	}
	return v, nil
}
