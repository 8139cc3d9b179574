package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// target is one index the pipeline writes to, with the map it was built
// with. Outside a migration there is one: the alias's write index. During
// the dual writes of a reshard migration there are two, the primary
// first (see modes.go), and each receives every change under its own
// map's routing; everything that computes routing goes through emit (and
// the moves), which loop over the targets.
type target struct {
	index string
	m     *router.Map
	// role is the target's side of a migration during dual writes;
	// roleNone otherwise.
	role role
	// labels are the bulk queue keys (and metric labels) of the shards.
	labels []string
}

// role is a target's side of a migration.
type role uint8

const (
	roleNone role = iota
	roleSource
	roleTarget
)

// String is the role as Stats and the logs spell it: "source", "target",
// or "" outside a migration.
func (r role) String() string {
	switch r {
	case roleSource:
		return "source"
	case roleTarget:
		return "target"
	}
	return ""
}

func newTarget(index string, m *router.Map, primary bool) target {
	t := target{index: index, m: m, labels: make([]string, m.NumShards())}
	for i := range t.labels {
		t.labels[i] = m.Shard(i).Name
		if !primary {
			// Shard names may repeat across maps; a second target's queues
			// must not share the first's.
			t.labels[i] = index + "/" + t.labels[i]
		}
	}
	return t
}

// routing returns the shard of cell under the target's map and its routing
// key.
func (t *target) routing(cell s2.CellID) (shard int, routing string) {
	shard = t.m.LocateCell(cell)
	return shard, t.m.Shard(shard).Routing
}

// labelOf returns the queue label of the shard routing names under the
// target's map; a routing of no shard of it gets a label of its own.
func (t *target) labelOf(routing string) string {
	for i := range t.labels {
		if t.m.Shard(i).Routing == routing {
			return t.labels[i]
		}
	}
	return t.index + "/" + routing
}

// targetOf returns the target of ev's writes to index (nil: none).
func (ev *event) targetOf(index string) *target {
	for i := range ev.targets {
		if ev.targets[i].index == index {
			return &ev.targets[i]
		}
	}
	return nil
}

// loadTarget resolves the alias to its write index and reads that index's
// map from its _meta. With want set, a map of another hash is refused.
func loadTarget(ctx context.Context, src schema.MetaSource, alias, want string) (target, error) {
	m, index, err := schema.LoadMap(ctx, src, alias)
	if err != nil {
		return target{}, fmt.Errorf("pipeline: load the map of alias %q: %w", alias, err)
	}
	if want != "" && m.Hash() != want {
		return target{}, &MapMismatchError{Index: index, Expected: want, Actual: m.Hash()}
	}
	return newTarget(index, m, true), nil
}

// docWrite is one document change, before routing.
type docWrite struct {
	action bulk.Action
	vtype  bulk.VersionType
	// id is the document _id; version its external version.
	id      string
	version int64
	// cell is the restaurant's location (for a dish, its restaurant's).
	cell s2.CellID
	// body, for an index action, builds the source for a map level (the
	// geo_cell token depends on it).
	body func(level int) []byte
}

// emit writes an event's change w to every one of targets, routed under
// each target's map. The event counts one outstanding write per target,
// and flies (indexer.go) until all are answered.
//
// During dual writes the other index's write follows the source's
// answer (sourceAnswered), by the dual-write rules (doc.go).
func (ix *indexer) emit(ctx context.Context, targets []target, ev *event, w docWrite) error {
	ev.expect(len(targets))
	ix.fly(ev)
	if len(targets) > 1 {
		si := sourceIndex(targets)
		sw := &sourceWrite{ev: ev, w: w, targets: targets, si: si}
		rs := ix.rest(ev.rid)
		rs.chain = append(rs.chain, sw)
		if err := ix.writer.Add(ctx, targets[si].item(w, sw)); err != nil {
			return fmt.Errorf("pipeline: add %s to %s: %w", w.id, targets[si].index, err)
		}
		return nil
	}
	for i := range targets {
		if err := ix.writer.Add(ctx, targets[i].item(w, ev)); err != nil {
			return fmt.Errorf("pipeline: add %s to %s: %w", w.id, targets[i].index, err)
		}
	}
	return nil
}

// item is w routed under the target, with ref as its Ref.
func (t *target) item(w docWrite, ref any) bulk.Item {
	shard, routing := t.routing(w.cell)
	it := bulk.Item{
		Action: w.action, Index: t.index, ID: w.id, Routing: routing,
		Version: w.version, VersionType: w.vtype, Shard: t.labels[shard], Ref: ref,
	}
	if w.action != bulk.Delete {
		it.Body = w.body(t.m.Level())
	}
	return it
}

// sourceIndex returns the position in targets of the migration's source,
// the index with the complete data (every delete's tombstone included);
// without a migration, the only target.
func sourceIndex(targets []target) int {
	for i := range targets {
		if targets[i].role == roleSource {
			return i
		}
	}
	return 0
}

// sourceWrite is an event's write to the source during dual writes,
// waiting in its restaurant's chain until the source has answered and
// the writes that follow it are added.
//
// The other targets are written only if the source took the write
// (written, or not found for a delete), or answered Stale to a write
// sourceHolds lets through (a delete, or this very upsert delivered
// again). The source holds the tombstone of every delete, those made
// before dual writes began included; the other index may not: a change
// the source refuses as stale is finished as stale on every index
// without writing the others, so a replay older than a delete cannot
// resurrect a document there. A rejected or failed source write is
// mirrored too: the event is dead-lettered, or never finished. Each
// target's answer, real or mirrored, counts as one of the event's
// outstanding writes, so the event finishes only when all are settled.
//
// The chain is released from its head only, so the other index receives
// a restaurant's writes in the order the source did.
type sourceWrite struct {
	ev      *event
	w       docWrite
	targets []target
	si      int

	// Set on the loop.
	answered bool
	r        bulk.Result
	// checked: sourceHolds has answered (holds); checking: it is asked.
	checking, checked, holds bool
}

// sourceAnswered is the callback of a source write: the answer counts as
// one of the event's writes, and the loop releases the chain.
func (ix *indexer) sourceAnswered(sw *sourceWrite, r bulk.Result) {
	ix.eventResult(sw.ev, r)
	ix.inbox.post(ix.inGenOf(sw.ev.gen, func(ctx context.Context) error {
		sw.answered, sw.r = true, r
		return ix.releaseChain(ctx, sw.ev.rid)
	}))
}

// releaseChain adds the other writes of the answered source writes at the
// head of restaurant rid's chain, in order, up to the first that is not
// answered or whose source must be read first.
func (ix *indexer) releaseChain(ctx context.Context, rid string) error {
	rs := ix.rests[rid]
	if rs == nil {
		return nil
	}
	for len(rs.chain) > 0 {
		sw := rs.chain[0]
		if !sw.answered {
			break
		}
		r := sw.r
		write := r.Outcome == bulk.OK || r.Outcome == bulk.NotFound
		if r.Outcome == bulk.Stale {
			if sw.w.action == bulk.Delete {
				write = true
			} else if !sw.checked {
				if !sw.checking {
					sw.checking = true
					ix.askSource(ctx, sw)
				}
				break
			}
			write = write || sw.holds
		}
		rs.chain[0] = nil
		rs.chain = rs.chain[1:]
		for i := range sw.targets {
			if i == sw.si {
				continue
			}
			t := &sw.targets[i]
			if write {
				if err := ix.writer.Add(ctx, t.item(sw.w, sw.ev)); err != nil {
					return fmt.Errorf("pipeline: add %s to %s: %w", sw.w.id, t.index, err)
				}
				continue
			}
			// Stale, rejected or failed at the source: the same here,
			// without a write.
			it := t.item(sw.w, sw.ev)
			ix.eventResult(sw.ev, bulk.Result{Item: &it, Outcome: r.Outcome, Err: r.Err})
		}
	}
	ix.settle(rid)
	return nil
}

// askSource reads, on a task, whether the source holds sw's document at
// exactly its version, and releases the chain with the answer.
func (ix *indexer) askSource(ctx context.Context, sw *sourceWrite) {
	ix.goTask(ctx, func(ctx context.Context) func(context.Context) error {
		select {
		case ix.getSlots <- struct{}{}:
		case <-ctx.Done():
			return func(context.Context) error { return ctx.Err() }
		}
		holds, err := ix.sourceHolds(ctx, &sw.targets[sw.si], sw.w)
		<-ix.getSlots
		return func(ctx context.Context) error {
			if err != nil {
				return err
			}
			sw.checked, sw.holds = true, holds
			return ix.releaseChain(ctx, sw.ev.rid)
		}
	})
}

// sourceHolds reports whether an upsert the source answered Stale must
// still go to the other index: only when the source holds the document
// live at exactly its version, which is this very change delivered again
// after it reached the source and not the other index. An upsert older
// than the source's copy, or than its delete tombstone, does not. (A
// delete always goes: deleting what the source no longer holds live
// cannot make the other index hold more than the source.)
func (ix *indexer) sourceHolds(ctx context.Context, src *target, w docWrite) (bool, error) {
	_, routing := src.routing(w.cell)
	var version int64
	var found bool
	err := retry(ctx, ix.log, "read "+w.id+" from "+src.index, func() error {
		var err error
		_, version, found, err = ix.admin.Get(ctx, src.index, w.id, routing)
		return err
	})
	if err != nil {
		return false, err
	}
	return found && version == w.version, nil
}

// The index document of an event is the event's doc with the fields the
// pipeline owns removed, plus those fields: relation, geo_cell, version,
// doc_id, and location (restaurant) or restaurant_id (dish). A doc cannot
// override them: they are stripped from it first (at the top level, which
// is where they live).
var reservedFields = []string{
	schema.FieldRelation, schema.FieldGeoCell, schema.FieldVersion,
	schema.FieldDocID, schema.FieldLocation, schema.FieldRestaurantID,
}

func isReserved(k string) bool {
	for _, r := range reservedFields {
		if k == r {
			return true
		}
	}
	return false
}

// docMembers returns the members of a JSON object without its braces and
// without the reserved fields, ready to be followed by more members. doc
// is valid JSON that starts with '{' (Decode checked both).
func docMembers(doc []byte) ([]byte, error) {
	doc = bytes.TrimSpace(doc)
	if len(doc) < 2 || doc[0] != '{' || doc[len(doc)-1] != '}' {
		return nil, fmt.Errorf("doc is not an object")
	}
	fast := bytes.IndexByte(doc, '\\') < 0
	for _, r := range reservedFields {
		if !fast {
			break
		}
		fast = !bytes.Contains(doc, []byte(`"`+r+`"`))
	}
	if fast {
		return bytes.TrimSpace(doc[1 : len(doc)-1]), nil
	}
	// Slow path: walk the members, keeping their order.
	dec := json.NewDecoder(bytes.NewReader(doc))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var out []byte
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		k := tok.(string)
		if isReserved(k) {
			continue
		}
		if len(out) > 0 {
			out = append(out, ',')
		}
		kb, _ := json.Marshal(k)
		out = append(out, kb...)
		out = append(out, ':')
		out = append(out, v...)
	}
	return out, nil
}

// cellAt returns the cell at level that contains c: its parent when c is
// finer, c itself when it is already at that level or coarser (a warmed
// map-level cell asked for a finer level can say no more).
func cellAt(c s2.CellID, level int) s2.CellID {
	if c.Level() > level {
		return c.Parent(level)
	}
	return c
}

// expect counts n writes about to be added for ev.
func (ev *event) expect(n int) {
	ev.mu.Lock()
	ev.outstanding += n
	ev.mu.Unlock()
}
