package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// RepairConfig configures Repair.
type RepairConfig struct {
	// DryRun, if set, receives what Repair would copy and delete, and
	// nothing is changed.
	DryRun io.Writer
}

// RepairReport is what Repair did (or, in a dry run, would do).
type RepairReport struct {
	// Copied counts documents copied from the source to the target shard
	// their geo_cell gives; Stale, copies the target already held at that
	// version or newer (a live write got there first).
	Copied, Stale int
	// Blocked counts copies a delete's tombstone on the target refuses
	// (its version is newer than the source's): they can be copied once
	// index.gc_deletes has passed, by a new verify --ids and repair.
	Blocked int
	// Deleted counts copies deleted from a target shard they do not belong
	// on (deleted in the source, or misplaced); Changed, those left alone
	// because they changed after they were read (a live write).
	Deleted, Changed int
	// Unlisted counts differences the verification counted but did not
	// list (over its --max-ids per shard): a new verify --ids lists them.
	Unlisted int64
}

// Repair acts on the last verification with ids: every listed missing id
// is copied from the source to its shard under the new map, and every
// listed extra id is deleted from the target shard it was found on unless
// it belongs there by now. Then the verification is cleared (a verified
// migration goes back to backfilled), so cutover waits for a new one.
//
// Live dual writes go on meanwhile, so nothing Repair writes can undo
// one: copies carry the source's version as an external version (a newer
// live write makes them stale), and a delete names the sequence number
// and primary term of the copy it read (a copy changed since is left).
func (m *Migrator) Repair(ctx context.Context, cfg RepairConfig) (*RepairReport, error) {
	rec, err := m.store.Load(ctx)
	if err != nil {
		return nil, err
	}
	mig := &rec.Migration
	t := rule(StepRepair)
	if !t.accepts(mig.Phase) {
		return nil, t.refuse(m.cfg.Alias, mig.Phase, false)
	}
	v := mig.Verification
	if v == nil || !v.IDs {
		return nil, errors.New("migrate: repair: no verification with ids to act on; run reshard verify --ids first")
	}
	tgtMap, err := sideMap(mig.Target)
	if err != nil {
		return nil, err
	}
	shardOf := map[string]int{}
	for i := range tgtMap.NumShards() {
		shardOf[tgtMap.Shard(i).Name] = i
	}
	rep := &RepairReport{}
	if v.OK {
		return rep, nil // nothing to repair: the verification stands
	}
	type extra struct {
		id    string
		shard int
	}
	var missing []string
	var extras []extra
	for _, s := range v.Shards {
		i, ok := shardOf[s.Shard]
		if !ok {
			return nil, fmt.Errorf("migrate: repair: the verification names shard %q, which the target map has not", s.Shard)
		}
		missing = append(missing, s.MissingIDs...)
		for _, id := range s.ExtraIDs {
			extras = append(extras, extra{id, i})
		}
		rep.Unlisted += s.Missing - int64(len(s.MissingIDs)) + s.Extra - int64(len(s.ExtraIDs))
	}
	if err := m.admin.Refresh(ctx, mig.Source.Index); err != nil {
		return nil, fmt.Errorf("migrate: repair: refresh %s: %w", mig.Source.Index, err)
	}
	ids := append([]string(nil), missing...)
	for _, e := range extras {
		ids = append(ids, e.id)
	}
	src, err := m.sourceDocs(ctx, mig.Source.Index, ids)
	if err != nil {
		return nil, fmt.Errorf("migrate: repair: %w", err)
	}
	b := &backfill{m: m, mig: mig, tgtMap: tgtMap}

	// Copies: every missing id the source still has, and every extra id
	// the source has (found on a shard it does not belong on, it is
	// missing from the one it does).
	toCopy := map[string]bool{}
	for _, id := range missing {
		toCopy[id] = true
	}
	for _, e := range extras {
		if _, ok := src[e.id]; ok {
			toCopy[e.id] = true
		}
	}
	copyIDs := make([]string, 0, len(toCopy))
	for id := range toCopy {
		if _, ok := src[id]; ok {
			copyIDs = append(copyIDs, id)
		}
	}
	sort.Strings(copyIDs)
	for _, id := range copyIDs {
		it, err := b.item(src[id])
		if err != nil {
			return nil, fmt.Errorf("migrate: repair: %w", err)
		}
		if cfg.DryRun != nil {
			fmt.Fprintf(cfg.DryRun, "copy %s to %s on shard %s (version %d)\n", id, mig.Target.Index, it.Shard, it.Version)
			rep.Copied++
			continue
		}
		q := url.Values{"routing": {it.Routing}, "version": {strconv.FormatInt(it.Version, 10)}, "version_type": {"external"}}
		req := bulk.Request{Method: http.MethodPut, Path: "/" + url.PathEscape(it.Index) + "/_doc/" + url.PathEscape(id) + "?" + q.Encode(), Body: it.Body}
		switch err := m.admin.Send(ctx, req, nil); {
		case err == nil:
			rep.Copied++
		case bulk.IsConflict(err):
			// A copy at that version or newer, or a delete's tombstone.
			doc, gerr := m.targetCopy(ctx, it.Index, id, it.Routing)
			switch {
			case gerr != nil:
				return rep, fmt.Errorf("migrate: repair: read %s back: %w", id, gerr)
			case doc == nil:
				rep.Blocked++
			default:
				rep.Stale++
			}
		default:
			return rep, fmt.Errorf("migrate: repair: copy %s: %w", id, err)
		}
	}

	// Deletes: an extra copy, unless the shard it is on is where its
	// geo_cell puts it now (a live write placed it there since).
	for _, e := range extras {
		sh := tgtMap.Shard(e.shard)
		doc, err := m.targetCopy(ctx, mig.Target.Index, e.id, sh.Routing)
		if err != nil {
			return rep, fmt.Errorf("migrate: repair: read %s on shard %s: %w", e.id, sh.Name, err)
		}
		if doc == nil {
			continue // gone already
		}
		if belongs(tgtMap, doc.Source, e.shard) {
			if _, live := src[e.id]; live {
				continue
			}
		}
		if cfg.DryRun != nil {
			fmt.Fprintf(cfg.DryRun, "delete %s from %s shard %s (seq_no %d)\n", e.id, mig.Target.Index, sh.Name, doc.SeqNo)
			rep.Deleted++
			continue
		}
		q := url.Values{"routing": {sh.Routing}, "if_seq_no": {strconv.FormatInt(doc.SeqNo, 10)}, "if_primary_term": {strconv.FormatInt(doc.PrimaryTerm, 10)}}
		req := bulk.Request{Method: http.MethodDelete, Path: "/" + url.PathEscape(mig.Target.Index) + "/_doc/" + url.PathEscape(e.id) + "?" + q.Encode()}
		switch err := m.admin.Send(ctx, req, nil); {
		case err == nil:
			rep.Deleted++
		case bulk.IsConflict(err):
			rep.Changed++
		case bulk.IsNotFound(err):
		default:
			return rep, fmt.Errorf("migrate: repair: delete %s: %w", e.id, err)
		}
	}
	if cfg.DryRun != nil {
		return rep, nil
	}
	_, err = m.store.Update(ctx, func(x *schema.Migration) error {
		x.Verification = nil
		if t.starts(x.Phase) {
			x.Phase = t.to // a verified migration is verified no more
		}
		return nil
	})
	if err != nil {
		return rep, fmt.Errorf("migrate: repair: clear the verification: %w", err)
	}
	m.log.Info("repaired; verify again", "step", StepRepair, "copied", rep.Copied, "stale", rep.Stale, "deleted", rep.Deleted, "changed", rep.Changed, "unlisted", rep.Unlisted)
	return rep, nil
}

// sourceDocs reads documents of the source by id, 500 to a search.
func (m *Migrator) sourceDocs(ctx context.Context, index string, ids []string) (map[string]bulk.Hit, error) {
	out := map[string]bulk.Hit{}
	for len(ids) > 0 {
		n := min(len(ids), 500)
		body, err := json.Marshal(map[string]any{"query": map[string]any{"ids": map[string]any{"values": ids[:n]}}, "size": n})
		if err != nil {
			return nil, err
		}
		var pg *bulk.Page
		err = retryRead(ctx, func() error {
			var err error
			pg, err = m.searcher().Search(ctx, index, body, bulk.SearchParams{})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", index, err)
		}
		for _, h := range pg.Hits {
			out[h.ID] = h
		}
		ids = ids[n:]
	}
	return out, nil
}

// storedCopy is a document as a GET returns it.
type storedCopy struct {
	Found       bool            `json:"found"`
	SeqNo       int64           `json:"_seq_no"`
	PrimaryTerm int64           `json:"_primary_term"`
	Source      json.RawMessage `json:"_source"`
}

// targetCopy reads the copy of id on the shard routing reaches, in real
// time; nil if there is none.
func (m *Migrator) targetCopy(ctx context.Context, index, id, routing string) (*storedCopy, error) {
	var doc storedCopy
	req := bulk.Request{Method: http.MethodGet, Path: "/" + url.PathEscape(index) + "/_doc/" + url.PathEscape(id) + "?" + url.Values{"routing": {routing}}.Encode()}
	err := m.admin.Send(ctx, req, &doc)
	if bulk.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !doc.Found {
		return nil, nil
	}
	return &doc, nil
}

// belongs reports whether a document's geo_cell puts it on shard under m.
func belongs(m *router.Map, source json.RawMessage, shard int) bool {
	var f copyFields
	if json.Unmarshal(source, &f) != nil {
		return false
	}
	cell, err := router.ParseCellAt(f.GeoCell, m.Level())
	return err == nil && m.LocateCell(cell) == shard
}
