package migrate

import (
	"context"
	"fmt"
	"net/http"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/schema"
)

// superseded reads, after a refresh, every copy of the duplicates the
// verification lists, in the index that holds them, and deletes each copy
// older than its id's newest: with its own routing, at the newest copy's
// version with version_type external, so that a copy that has become as
// new or newer since is refused. Copies tied at the newest version are
// left, and listed in rep.Ties. The extra copies deletes (the deletes of
// extra copies) names are not counted as copies: a dry run has not
// deleted them, and a repair has, unless one changed since it was read.
func (r *repair) superseded(ctx context.Context, deletes *repairItems, rep *RepairReport) (*repairItems, error) {
	out := &repairItems{}
	gone := map[string]bool{} // the extra copies' deletes, by target id and routing
	for _, it := range deletes.items {
		gone[it.ID+"\x00"+it.Routing] = true
	}
	for _, s := range []side{inSource, inTarget} {
		ids := r.dups[s]
		if len(ids) == 0 {
			continue
		}
		index, mp := r.mig.Source.Index, r.srcMap
		if s == inTarget {
			index, mp = r.mig.Target.Index, r.tgtMap
		}
		if err := r.m.admin.Refresh(ctx, index); err != nil {
			return nil, fmt.Errorf("migrate: repair: refresh %s: %w", index, err)
		}
		all, err := r.m.readCopies(ctx, index, mp.NumShards(), ids)
		if err != nil {
			return nil, fmt.Errorf("migrate: repair: %w", err)
		}
		names := shardsByRouting(mp)
		for _, id := range ids {
			var cs []schema.Copy
			for _, h := range all[id] {
				if s == inTarget && gone[id+"\x00"+h.Routing] {
					continue
				}
				cs = append(cs, schema.Copy{Shard: names[h.Routing], Routing: h.Routing, Version: h.Version})
			}
			if len(cs) < 2 {
				continue // one copy left: no duplicate any more
			}
			d := judge(schema.Duplicate{Side: s.String(), Index: index, ID: id, Copies: cs})
			if d.Tie() {
				rep.Ties = append(rep.Ties, d)
				out.notes = append(out.notes, "leave "+d.String()+": which of the tied copies is current cannot be told")
			}
			top := d.Copies[0].Version
			for _, c := range d.Copies {
				if c.Status != schema.CopySuperseded {
					continue
				}
				out.add(bulk.Item{
					Action: bulk.Delete, Index: index, ID: id, Routing: c.Routing, Shard: c.Shard,
					Version: top, VersionType: bulk.External,
				}, fmt.Sprintf("delete superseded %s from %s shard %s (version %d; the newest is version %d)", id, index, c.Where(), c.Version, top))
			}
		}
	}
	return out, nil
}

// judge marks a duplicate's copies current, superseded or tied, and
// orders them the highest version first.
func judge(d schema.Duplicate) schema.Duplicate {
	sortCopies(d.Copies)
	top := d.Copies[0].Version
	atTop := 0
	for _, c := range d.Copies {
		if c.Version == top {
			atTop++
		}
	}
	for k := range d.Copies {
		c := &d.Copies[k]
		switch {
		case c.Version < top:
			c.Status = schema.CopySuperseded
		case atTop == 1:
			c.Status = schema.CopyCurrent
		default:
			c.Status = schema.CopyTied
		}
	}
	return d
}

// sendSuperseded sends the deletes of superseded copies and counts their
// outcomes: a copy that has become as new as the newest, or newer, since
// it was read refuses its delete with 409 and is kept.
func (m *Migrator) sendSuperseded(ctx context.Context, deletes []bulk.Item, rep *RepairReport) error {
	for _, items := range batches(deletes) {
		res, err := m.admin.Bulk(ctx, items)
		if err != nil {
			return fmt.Errorf("migrate: repair: delete %d superseded copies: %w", len(items), err)
		}
		for _, r := range res {
			switch {
			case r.Outcome == bulk.OK:
				rep.Superseded++
			case r.Outcome == bulk.NotFound:
			case r.Outcome == bulk.Stale || r.Status == http.StatusConflict:
				rep.Kept++
			default:
				return fmt.Errorf("migrate: repair: delete superseded %s: %s: %w", r.Item.ID, r.Outcome, r.Err)
			}
		}
	}
	return nil
}
