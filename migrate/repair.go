package migrate

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sort"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// RepairConfig configures Repair.
type RepairConfig struct {
	// DryRun, if set, receives the requests Repair would send, and what
	// each of their items does, and nothing is changed.
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
	// Superseded counts copies of duplicates deleted: copies of an id, in
	// either index, older than the id's newest copy there. Kept counts
	// those whose delete was refused: the copy had become as new since
	// it was read (a live write).
	Superseded, Kept int
	// Ties are the duplicates left alone: two or more copies share the
	// newest version, and which is current cannot be told.
	Ties []schema.Duplicate
	// Unlisted counts differences the verification counted but did not
	// list (over its --max-ids per shard): a new verify --ids lists them.
	Unlisted int64
}

// Repair acts on the last verification with ids: every listed missing id
// is copied from the source to its shard under the new map, every listed
// extra id is deleted from the target shard it was found on unless it
// belongs there by now, and of every listed duplicate (an id an index
// holds on two or more shards) each copy older than the newest is
// deleted, in the source or the target, whichever holds it. Then the
// verification is cleared (a verified migration goes back to
// backfilled), so cutover waits for a new one.
//
// Live dual writes go on meanwhile, so nothing Repair writes can undo
// one: copies carry the source's version as an external version (a newer
// live write makes them stale), a delete of an extra copy names the
// sequence number and primary term of the copy it read (a copy changed
// since is left), and a delete of a superseded copy carries the newest
// copy's version as an external version (a copy written since at that
// version or a newer one refuses it).
//
// The copies and the deletes are bulk items, sent as _bulk requests of
// at most repairBatch items, the copies first, then the deletes of extra
// copies, then those of superseded copies (bulk.Admin.Bulk); a dry run
// prints those very requests instead of sending them.
func (m *Migrator) Repair(ctx context.Context, cfg RepairConfig) (*RepairReport, error) {
	ctx = m.withStep(ctx, StepRepair)
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
	rep := &RepairReport{}
	if v.OK {
		return rep, nil // nothing to repair: the verification stands
	}
	r, err := m.readRepair(ctx, mig, tgtMap, v, rep)
	if err != nil {
		return nil, err
	}
	copies, err := r.copies()
	if err != nil {
		return nil, err
	}
	if cfg.DryRun != nil {
		deletes, err := r.deletes(ctx)
		if err != nil {
			return nil, err
		}
		superseded, err := r.superseded(ctx, deletes, rep)
		if err != nil {
			return nil, err
		}
		rep.Copied, rep.Deleted, rep.Superseded = len(copies.items), len(deletes.items), len(superseded.items)
		return rep, writeRepairDryRun(cfg.DryRun, m.cfg.Alias, mig.Target.Index, copies, deletes, superseded)
	}
	if err := m.sendCopies(ctx, copies.items, rep); err != nil {
		return rep, err
	}
	// The extra copies are read once the copies are made: a copy may land
	// where an extra copy of its document was found (the source's
	// geo_cell puts it there), and the copy read then belongs there.
	deletes, err := r.deletes(ctx)
	if err != nil {
		return rep, err
	}
	if err := m.sendDeletes(ctx, deletes.items, rep); err != nil {
		return rep, err
	}
	// The duplicates are read once the extra copies are deleted: an extra
	// copy can be a duplicate's, and then it is gone, or left because it
	// changed (and not deleted as superseded either).
	superseded, err := r.superseded(ctx, deletes, rep)
	if err != nil {
		return rep, err
	}
	if err := m.sendSuperseded(ctx, superseded.items, rep); err != nil {
		return rep, err
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
	m.log.Info("repaired; verify again", "step", StepRepair, "copied", rep.Copied, "stale", rep.Stale, "deleted", rep.Deleted, "changed", rep.Changed,
		"superseded", rep.Superseded, "kept", rep.Kept, "ties", len(rep.Ties), "unlisted", rep.Unlisted)
	return rep, nil
}

// repairBatch is the most items a repair sends in one _bulk request. A
// verification lists at most VerifyConfig.MaxIDs ids per shard and kind,
// so a repair is small; the bound keeps a request's body bounded as
// sourceDocs bounds its reads.
const repairBatch = 500

// repairItems are writes of a repair, each with a line that says what it
// does (index-aligned), for the dry run.
type repairItems struct {
	items []bulk.Item
	notes []string
}

func (r *repairItems) add(it bulk.Item, note string) {
	r.items = append(r.items, it)
	r.notes = append(r.notes, note)
}

// repair is what a repair acts on: the ids the verification listed, and
// the source's documents of those ids.
type repair struct {
	m       *Migrator
	mig     *schema.Migration
	tgtMap  *router.Map
	srcMap  *router.Map
	missing []string
	extras  []extraCopy
	// dups are the duplicated ids listed, by side.
	dups [2][]string
	src  map[string]bulk.Hit
}

// extraCopy is an id a verification found on a target shard it does not
// expect there.
type extraCopy struct {
	id    string
	shard int
}

// readRepair reads the source's documents of the ids the verification
// lists, and counts in rep the differences it did not list.
func (m *Migrator) readRepair(ctx context.Context, mig *schema.Migration, tgtMap *router.Map, v *schema.Verification, rep *RepairReport) (*repair, error) {
	shardOf := map[string]int{}
	for i := range tgtMap.NumShards() {
		shardOf[tgtMap.Shard(i).Name] = i
	}
	srcMap, err := sideMap(mig.Source)
	if err != nil {
		return nil, err
	}
	r := &repair{m: m, mig: mig, tgtMap: tgtMap, srcMap: srcMap}
	listed := [2]map[string]bool{{}, {}}
	for _, s := range v.Shards {
		i, ok := shardOf[s.Shard]
		if !ok {
			return nil, fmt.Errorf("migrate: repair: the verification names shard %q, which the target map has not", s.Shard)
		}
		r.missing = append(r.missing, s.MissingIDs...)
		for _, id := range s.ExtraIDs {
			r.extras = append(r.extras, extraCopy{id, i})
		}
		rep.Unlisted += s.Missing - int64(len(s.MissingIDs)) + s.Extra - int64(len(s.ExtraIDs))
		for _, d := range s.Duplicates {
			sd := inTarget
			if d.Side == schema.DuplicateInSource {
				sd = inSource
			}
			if !listed[sd][d.ID] {
				listed[sd][d.ID] = true
				r.dups[sd] = append(r.dups[sd], d.ID)
			}
		}
	}
	for sd, n := range []int64{v.SourceDuplicates, v.TargetDuplicates} {
		rep.Unlisted += max(0, n-int64(len(r.dups[sd])))
		sort.Strings(r.dups[sd])
	}
	if err := m.admin.Refresh(ctx, mig.Source.Index); err != nil {
		return nil, fmt.Errorf("migrate: repair: refresh %s: %w", mig.Source.Index, err)
	}
	ids := append([]string(nil), r.missing...)
	for _, e := range r.extras {
		ids = append(ids, e.id)
	}
	if r.src, err = m.sourceDocs(ctx, mig.Source.Index, srcMap.NumShards(), ids); err != nil {
		return nil, fmt.Errorf("migrate: repair: %w", err)
	}
	return r, nil
}

// copies are every missing id the source still has, and every extra id
// the source has (found on a shard it does not belong on, it is missing
// from the one it does), by id: each the backfill's write of the source
// document.
func (r *repair) copies() (*repairItems, error) {
	toCopy := map[string]bool{}
	for _, id := range r.missing {
		toCopy[id] = true
	}
	for _, e := range r.extras {
		toCopy[e.id] = true
	}
	ids := make([]string, 0, len(toCopy))
	for id := range toCopy {
		if _, ok := r.src[id]; ok {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	b := &backfill{m: r.m, mig: r.mig, tgtMap: r.tgtMap}
	out := &repairItems{}
	for _, id := range ids {
		it, err := b.item(r.src[id])
		if err != nil {
			return nil, fmt.Errorf("migrate: repair: %w", err)
		}
		out.add(it, fmt.Sprintf("copy %s to %s on shard %s (version %d)", id, it.Index, it.Shard, it.Version))
	}
	return out, nil
}

// deletes reads the extra copies, in real time, and deletes each unless
// the shard it is on is where its geo_cell puts it now (a live write
// placed it there since) and the source has it at this copy's version or
// an older one. (An older copy is superseded: the source's newest copy
// puts the document on another shard, where repair copies it.) A delete
// is conditioned on the copy read.
func (r *repair) deletes(ctx context.Context) (*repairItems, error) {
	index := r.mig.Target.Index
	out := &repairItems{}
	for _, e := range r.extras {
		sh := r.tgtMap.Shard(e.shard)
		doc, err := r.m.targetCopy(ctx, index, e.id, sh.Routing)
		if err != nil {
			return nil, fmt.Errorf("migrate: repair: read %s on shard %s: %w", e.id, sh.Name, err)
		}
		if doc == nil {
			continue // gone already
		}
		if belongs(r.tgtMap, doc.Source, e.shard) {
			if s, live := r.src[e.id]; live && doc.Version >= s.Version {
				continue
			}
		}
		out.add(bulk.Item{
			Action: bulk.Delete, Index: index, ID: e.id, Routing: sh.Routing, Shard: sh.Name,
			IfSeqNo: &doc.SeqNo, IfPrimaryTerm: &doc.PrimaryTerm,
		}, fmt.Sprintf("delete %s from %s shard %s (seq_no %d, primary_term %d)", e.id, index, sh.Name, doc.SeqNo, doc.PrimaryTerm))
	}
	return out, nil
}

// batches cuts items into the item lists of the _bulk requests that
// carry them, in order.
func batches(items []bulk.Item) [][]bulk.Item {
	var out [][]bulk.Item
	for len(items) > 0 {
		n := min(len(items), repairBatch)
		out = append(out, items[:n:n])
		items = items[n:]
	}
	return out
}

// sendCopies sends the copies and counts their outcomes. A copy refused
// as not newer is read back: a copy there is stale (a live write got
// there first); none means a delete's tombstone refused it (blocked).
func (m *Migrator) sendCopies(ctx context.Context, copies []bulk.Item, rep *RepairReport) error {
	for _, items := range batches(copies) {
		res, err := m.admin.Bulk(ctx, items)
		if err != nil {
			return fmt.Errorf("migrate: repair: copy %d documents: %w", len(items), err)
		}
		for _, r := range res {
			it := r.Item
			switch r.Outcome {
			case bulk.OK:
				rep.Copied++
			case bulk.Stale:
				doc, err := m.targetCopy(ctx, it.Index, it.ID, it.Routing)
				switch {
				case err != nil:
					return fmt.Errorf("migrate: repair: read %s back: %w", it.ID, err)
				case doc == nil:
					rep.Blocked++
				default:
					rep.Stale++
				}
			default:
				return fmt.Errorf("migrate: repair: copy %s: %s: %w", it.ID, r.Outcome, r.Err)
			}
		}
	}
	return nil
}

// sendDeletes sends the deletes and counts their outcomes: a copy that
// changed (or went) since it was read fails its if_seq_no with 409, and
// is left (changed).
func (m *Migrator) sendDeletes(ctx context.Context, deletes []bulk.Item, rep *RepairReport) error {
	for _, items := range batches(deletes) {
		res, err := m.admin.Bulk(ctx, items)
		if err != nil {
			return fmt.Errorf("migrate: repair: delete %d copies: %w", len(items), err)
		}
		for _, r := range res {
			switch {
			case r.Outcome == bulk.OK:
				rep.Deleted++
			case r.Outcome == bulk.NotFound:
			case r.Status == http.StatusConflict:
				rep.Changed++
			default:
				return fmt.Errorf("migrate: repair: delete %s: %s: %w", r.Item.ID, r.Outcome, r.Err)
			}
		}
	}
	return nil
}

// writeRepairDryRun prints what each item does, then the requests a
// repair would send, in order, as cutover's dry run prints its own.
func writeRepairDryRun(w io.Writer, alias, target string, copies, deletes, superseded *repairItems) error {
	var reqs []bulk.Request
	for _, items := range slices.Concat(batches(copies.items), batches(deletes.items), batches(superseded.items)) {
		r, err := bulk.BulkRequest(items)
		if err != nil {
			return fmt.Errorf("migrate: repair: %w", err)
		}
		reqs = append(reqs, r)
	}
	fmt.Fprintf(w, "# reshard repair --dry-run: alias %s, target %s; nothing was changed.\n", alias, target)
	fmt.Fprintf(w, "# Copies %d, deletes %d, superseded copies %d: these %d requests would be sent, in order, each only if the one before succeeded.\n",
		len(copies.items), len(deletes.items), len(superseded.items), len(reqs))
	fmt.Fprintf(w, "# A copy carries the source's version (version_type external): a newer live write wins.\n")
	fmt.Fprintf(w, "# A delete names the copy it read (if_seq_no, if_primary_term): a copy changed since stays.\n")
	fmt.Fprintf(w, "# A superseded copy's delete carries its id's newest version (version_type external): a copy as new or newer since stays.\n")
	fmt.Fprintf(w, "# (Repair reads the extra copies again once the copies are made, and the duplicates once the extra copies are deleted, and deletes what it reads then.)\n")
	for _, n := range slices.Concat(copies.notes, deletes.notes, superseded.notes) {
		fmt.Fprintf(w, "#   %s\n", n)
	}
	for i, r := range reqs {
		if _, err := fmt.Fprintf(w, "\n# %d\n%s", i+1, r.String()); err != nil {
			return err
		}
	}
	return nil
}

// sourceDocs reads documents of the source by id. Of an id the source
// holds on two or more shards (a duplicate) it keeps the newest copy.
func (m *Migrator) sourceDocs(ctx context.Context, index string, shards int, ids []string) (map[string]bulk.Hit, error) {
	all, err := m.readCopies(ctx, index, shards, ids)
	if err != nil {
		return nil, err
	}
	out := make(map[string]bulk.Hit, len(all))
	for id, hits := range all {
		out[id] = slices.MaxFunc(hits, func(a, b bulk.Hit) int { return cmp.Compare(a.Version, b.Version) })
	}
	return out, nil
}

// readCopies reads every copy of the ids in index, with its routing and
// version, as of the last refresh: an ids query asks every shard, and
// each answers with its own copy. An index of shards shards holds at most
// that many copies of an id, so a search of n ids asks for n·shards hits,
// at most 10,000 (index.max_result_window's default).
func (m *Migrator) readCopies(ctx context.Context, index string, shards int, ids []string) (map[string][]bulk.Hit, error) {
	out := map[string][]bulk.Hit{}
	per := max(1, min(500, 10_000/max(1, shards)))
	for len(ids) > 0 {
		n := min(len(ids), per)
		body, err := json.Marshal(map[string]any{"query": map[string]any{"ids": map[string]any{"values": ids[:n]}}, "size": n * shards, "version": true})
		if err != nil {
			return nil, err
		}
		var pg *bulk.Page
		err = retryRead(ctx, "read "+index, func() error {
			var err error
			pg, err = m.searcher().Search(ctx, index, body, bulk.SearchParams{})
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", index, err)
		}
		for _, h := range pg.Hits {
			out[h.ID] = append(out[h.ID], h)
		}
		ids = ids[n:]
	}
	return out, nil
}

// targetCopy reads the copy of id on the shard routing reaches, in real
// time; nil if there is none.
func (m *Migrator) targetCopy(ctx context.Context, index, id, routing string) (*bulk.Doc, error) {
	doc, err := m.admin.GetDocRouted(ctx, index, id, routing)
	if bulk.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if !doc.Found {
		return nil, nil
	}
	return doc, nil
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
