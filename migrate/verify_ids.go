package migrate

import (
	"cmp"
	"container/heap"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// The id comparison reads streams of (doc_id, _version) sorted by
// doc_id: one of every source shard, and one of every target shard it
// checks. It reads them from doc values alone (stored_fields _none_): a
// hit's stored fields (_id, _routing) cost the node a compressed block
// read per hit, most of a page's time. A source copy's geo_cell, a doc
// value too, says which target shard's range (row) it is in and its
// routing under the source map (ingest and the backfill write every
// document so); a target copy's row and routing are its shard's. A source
// shard is read whole, its copies kept for the rows checked: a query of a
// row's range of cells would cost the node the range's documents on
// every page. It merges all of those streams at once, by doc_id, so that
// every copy of an id, in either index and in any of the shards checked,
// is at the head of its stream at the same moment:
//
//   - an id with two or more copies in one index is a duplicate. Its copy
//     with the highest _version is current, the others are superseded;
//     copies at the same highest version are tied.
//   - an id counts once in each index, in the shard (row) of its current
//     copy, or of each tied copy; superseded copies count only as
//     duplicates. Then an id in a row's source range and not on its target
//     shard is missing there, and one on the target shard and not in the
//     source range is extra there.
//
// Memory: the merge keeps nothing per document. It holds two pages per
// stream (the one it reads, and the next, already being fetched) of
// idPage hits at about 90 bytes each (two string headers, a version and
// a row, the doc_id's bytes; the routings are the maps' strings): with 18
// source and 24 target shards, 42 streams × 2 × 5,000 × 90 B ≈ 38 MB,
// whatever the size of the indexes.
// A set of the ids seen, the other way to find an id on two shards, would
// cost some 50 bytes per document and index: 5.5 GB at 55 million
// documents in each of two indexes.

// side is an index of a migration.
type side int

const (
	inSource side = iota
	inTarget
)

func (s side) String() string {
	if s == inSource {
		return schema.DuplicateInSource
	}
	return schema.DuplicateInTarget
}

// dupCounts counts duplicated ids by side.
type dupCounts [2]int64

// idHit is what the comparison reads of a document.
type idHit struct {
	id      string // doc_id, the sort key, which repeats _id
	routing string
	version int64
	row     int // the target shard whose range holds it
}

// idCopy is a copy of an id found by the merge: the shard (row) whose
// stream it came from, and the hit.
type idCopy struct {
	row int
	idHit
}

// compareIDs compares the ids of the shards rows in one merge of their
// streams, adding to their reports the counts of source and target ids,
// the missing and extra ids and the duplicates; it returns how many
// duplicated ids it found in each index.
func (v *verifier) compareIDs(ctx context.Context, rows []int, reports []schema.ShardReport) (dupCounts, error) {
	sem := make(chan struct{}, v.cfg.Parallel)
	checked := make([]bool, v.tgtMap.NumShards())
	for _, i := range rows {
		checked[i] = true
	}
	streams := make([]*idStream, 0, v.srcMap.NumShards()+len(rows))
	for j := range v.srcMap.NumShards() {
		streams = append(streams, &idStream{s: v.s, sem: sem, side: inSource, index: v.mig.Source.Index, p: onShard(j),
			cells: v.srcMap, rows: v.tgtMap, keep: checked, page: v.cfg.idPage})
	}
	for _, i := range rows {
		streams = append(streams, &idStream{s: v.s, sem: sem, side: inTarget, row: i, index: v.mig.Target.Index, p: onShard(i),
			routing: v.tgtMap.Shard(i).Routing, page: v.cfg.idPage})
	}
	defer func() {
		for _, st := range streams {
			st.close()
		}
	}()
	var h streamHeap
	for _, st := range streams {
		st.start(ctx)
	}
	for _, st := range streams {
		if st.next(ctx) {
			h = append(h, st)
		}
	}
	heap.Init(&h)
	var dups dupCounts
	var copies [2][]idCopy
	v.suspects, v.unconfirmed = v.suspects[:0], 0
	for len(h) > 0 {
		id := h[0].cur.id
		copies[inSource], copies[inTarget] = copies[inSource][:0], copies[inTarget][:0]
		for len(h) > 0 && h[0].cur.id == id {
			st := h[0]
			copies[st.side] = append(copies[st.side], idCopy{st.cur.row, st.cur})
			if st.next(ctx) {
				heap.Fix(&h, 0)
			} else {
				heap.Pop(&h)
			}
		}
		v.account(id, &copies, reports, &dups)
	}
	for _, st := range streams {
		if st.err != nil {
			return dups, st.err
		}
	}
	return dups, nil
}

// account records one id's copies in the reports of their rows.
func (v *verifier) account(id string, copies *[2][]idCopy, reports []schema.ShardReport, dups *dupCounts) {
	// The rows where the id counts, by side, in arrays on the stack: an id
	// has one copy in each index but for the few duplicates.
	var inBuf [2][4]int
	var rowBuf [8]int
	in := [2][]int{inBuf[0][:0], inBuf[1][:0]}
	for s, cs := range copies {
		if len(cs) == 0 {
			continue
		}
		top := slices.MaxFunc(cs, func(a, b idCopy) int { return cmp.Compare(a.version, b.version) }).version
		for _, c := range cs {
			if c.version == top && !slices.Contains(in[s], c.row) {
				in[s] = append(in[s], c.row)
			}
		}
		if len(cs) > 1 {
			dups[s]++
			v.duplicate(side(s), id, cs, reports)
		}
	}
	rows := append(rowBuf[:0], in[inSource]...)
	for _, r := range in[inTarget] {
		if !slices.Contains(rows, r) {
			rows = append(rows, r)
		}
	}
	for _, row := range rows {
		r := &reports[row]
		src, tgt := slices.Contains(in[inSource], row), slices.Contains(in[inTarget], row)
		switch {
		case src && tgt:
			r.Source++
			r.Target++
		case src:
			r.Source++
			r.Missing++
			if len(r.MissingIDs) < v.cfg.MaxIDs {
				r.MissingIDs = append(r.MissingIDs, id)
			}
			v.suspect(suspectMissing, inSource, id, []int{row}, copiesOn(copies[inSource], row))
		default:
			r.Target++
			r.Extra++
			if len(r.ExtraIDs) < v.cfg.MaxIDs {
				r.ExtraIDs = append(r.ExtraIDs, id)
			}
			v.suspect(suspectExtra, inTarget, id, []int{row}, copiesOn(copies[inTarget], row))
		}
	}
}

// duplicate records an id that side holds on two or more shards in the
// rows of its copies: once per row, however many of its copies the row
// has (two source copies can fall in one target shard's range). It is a
// suspect of every one of those rows, listed there or not: resolved, it
// leaves all of their counts.
func (v *verifier) duplicate(s side, id string, cs []idCopy, reports []schema.ShardReport) {
	var d *schema.Duplicate
	var seen []int
	for _, c := range cs {
		if slices.Contains(seen, c.row) {
			continue
		}
		seen = append(seen, c.row)
		r := &reports[c.row]
		if s == inSource {
			r.SourceDuplicates++
		} else {
			r.TargetDuplicates++
		}
		if len(r.Duplicates) >= v.cfg.MaxIDs {
			continue
		}
		if d == nil {
			d = v.describe(s, id, cs)
		}
		r.Duplicates = append(r.Duplicates, *d)
	}
	v.suspect(suspectDuplicate, s, id, seen, cs)
}

// describe is a duplicate as the report lists it: each copy named by the
// shard it is on, the highest version first.
func (v *verifier) describe(s side, id string, cs []idCopy) *schema.Duplicate {
	d := schema.Duplicate{Side: s.String(), Index: v.mig.Source.Index, ID: id, Copies: make([]schema.Copy, len(cs))}
	if s == inTarget {
		d.Index = v.mig.Target.Index
	}
	for k, c := range cs {
		d.Copies[k] = schema.Copy{Shard: v.srcShard[c.routing], Routing: c.routing, Version: c.version}
		if s == inTarget {
			d.Copies[k].Shard = v.tgtMap.Shard(c.row).Name // the stream read that shard
		}
	}
	d = judge(d)
	return &d
}

// sortCopies orders copies by version, the highest first, then by shard.
func sortCopies(cs []schema.Copy) {
	slices.SortFunc(cs, func(a, b schema.Copy) int {
		if c := cmp.Compare(b.Version, a.Version); c != 0 {
			return c
		}
		return cmp.Or(cmp.Compare(a.Shard, b.Shard), cmp.Compare(a.Routing, b.Routing))
	})
}

// streamHeap orders streams by the doc_id at their heads.
type streamHeap []*idStream

func (h streamHeap) Len() int           { return len(h) }
func (h streamHeap) Less(i, j int) bool { return h[i].cur.id < h[j].cur.id }
func (h streamHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *streamHeap) Push(x any)        { *h = append(*h, x.(*idStream)) }
func (h *streamHeap) Pop() any {
	old := *h
	st := old[len(old)-1]
	*h = old[:len(old)-1]
	return st
}

// idStream reads the doc_ids of a shard in order, a page at a time, the
// next page fetched while the merge reads the last one. Its fetches take
// a slot of sem, which bounds the reads in flight of all streams.
type idStream struct {
	s     Searcher
	sem   chan struct{}
	side  side
	index string
	p     bulk.SearchParams
	page  int // hits a page reads: idPage, or fewer in tests
	// A hit's row and routing: row and routing, or, with cells, those of
	// its geo_cell under rows and cells; then only the hits of the rows
	// keep marks are kept.
	row     int
	routing string
	cells   *router.Map
	rows    *router.Map
	keep    []bool

	cur   idHit   // the head, after next returned true
	buf   []idHit // the page read, after cur
	ahead chan idPageResult
	err   error
}

// idPage is the number of hits a stream reads at a time.
const idPage = 5000

// window is how many ids a window aims to hold (verify_window.go): a page
// costs the node about the ids between its start and the window's bound,
// so a window of a few pages keeps a page's cost at a few pages' worth.
func (st *idStream) window() int { return 4 * st.page }

type idPageResult struct {
	hits []idHit
	next idCursor // where the next page starts
	more bool     // false when this page is the stream's last
	err  error
}

// start fetches the first page.
func (st *idStream) start(ctx context.Context) { st.fetch(ctx, idCursor{}) }

// fetch reads the page at cur in a goroutine, which next or close waits
// for.
func (st *idStream) fetch(ctx context.Context, cur idCursor) {
	ahead := make(chan idPageResult, 1)
	st.ahead = ahead
	go func() {
		select {
		case st.sem <- struct{}{}:
		case <-ctx.Done():
			ahead <- idPageResult{err: ctx.Err()}
			return
		}
		pg := st.read(ctx, cur)
		<-st.sem
		ahead <- pg
	}()
}

// next moves to the next hit, false at the end or on an error (in err).
func (st *idStream) next(ctx context.Context) bool {
	for len(st.buf) == 0 {
		if st.ahead == nil {
			return false
		}
		pg := <-st.ahead
		st.ahead = nil
		if pg.err != nil {
			st.err = pg.err
			return false
		}
		st.buf = pg.hits
		if pg.more {
			st.fetch(ctx, pg.next)
		}
	}
	st.cur, st.buf = st.buf[0], st.buf[1:]
	return true
}

// close waits for a fetch still under way.
func (st *idStream) close() {
	if st.ahead != nil {
		<-st.ahead
		st.ahead = nil
	}
}

// cellPlace is where a hit's geo_cell (its docvalue field) puts it: its
// routing under cells (ingest and the backfill write every document so;
// suspects.go's routingOf reads the same) and its row, the shard of rows
// whose range holds it. A hit without a geo_cell is in no range (-1), as
// a range query of geo_cell would find it in none.
func cellPlace(cells, rows *router.Map, h bulk.Hit) (string, int, error) {
	vs := h.Fields[schema.FieldGeoCell]
	if len(vs) == 0 {
		return "", -1, nil
	}
	var tok string
	if len(vs) != 1 || json.Unmarshal(vs[0], &tok) != nil {
		return "", 0, fmt.Errorf("want one %s, found %d", schema.FieldGeoCell, len(vs))
	}
	cell, err := router.ParseCellAt(tok, cells.Level())
	if err != nil {
		return "", 0, err
	}
	return cells.Shard(cells.LocateCell(cell)).Routing, rows.LocateCell(cell), nil
}

// read reads the page at cur (verify_window.go): the ids of the stream's
// shard in cur's range of doc_id, in order.
//
// A full page ends before the copies of its last doc_id, and the next
// page starts at them: were a search to hold that doc_id more than once
// (a duplicate), a next page after it would skip the copies this one did
// not reach. A page shorter than the stream's has read its window to the
// end, and the next window starts at its bound.
func (st *idStream) read(ctx context.Context, cur idCursor) idPageResult {
	body := map[string]any{
		"size": st.page, "stored_fields": "_none_", "version": true, "track_total_hits": false,
		"sort": []any{map[string]string{schema.FieldDocID: "asc"}},
	}
	if r := cur.idRange(); len(r) > 0 {
		body["query"] = map[string]any{"range": map[string]any{schema.FieldDocID: r}}
	}
	if st.cells != nil {
		body["docvalue_fields"] = []string{schema.FieldGeoCell}
	}
	req, _ := json.Marshal(body)
	var pg *bulk.Page
	err := retryRead(ctx, "read ids of "+st.index, func() error {
		var err error
		pg, err = st.s.Search(ctx, st.index, req, st.p)
		return err
	})
	if err != nil {
		return idPageResult{err: err}
	}
	hits := make([]idHit, len(pg.Hits))
	for k, h := range pg.Hits {
		id, err := sortAfter(h)
		if err != nil {
			return idPageResult{err: err}
		}
		hits[k] = idHit{id: id, routing: st.routing, version: h.Version, row: st.row}
		if st.cells != nil {
			if hits[k].routing, hits[k].row, err = cellPlace(st.cells, st.rows, h); err != nil {
				return idPageResult{err: fmt.Errorf("%s: %w", id, err)}
			}
		}
	}
	res := st.advance(hits, cur)
	res.hits = st.kept(res.hits)
	return res
}

// kept are the hits of the rows the stream keeps.
func (st *idStream) kept(hits []idHit) []idHit {
	if st.keep == nil {
		return hits
	}
	out := hits[:0]
	for _, h := range hits {
		if h.row >= 0 && st.keep[h.row] {
			out = append(out, h)
		}
	}
	return out
}

// advance is the page of hits read at cur, and where the next page starts.
func (st *idStream) advance(hits []idHit, cur idCursor) idPageResult {
	if len(hits) < st.page {
		if cur.to == "" {
			return idPageResult{hits: hits}
		}
		// The window is read: the next starts at its bound, and spans
		// what this one would have, scaled by what it held.
		lo := cur.from
		if lo == "" && len(hits) > 0 {
			lo = hits[0].id
		}
		next := idCursor{from: cur.to, fromIncl: true}
		if lo != "" {
			next.to = boundAfter(lo, cur.to, len(hits), cur.to, st.window())
		}
		return idPageResult{hits: hits, next: next, more: true}
	}
	last := hits[len(hits)-1].id
	end := len(hits)
	for end > 0 && hits[end-1].id == last {
		end--
	}
	if end == 0 { // a whole page of one doc_id: more copies than shards
		return idPageResult{hits: hits, next: idCursor{from: last, to: cur.to}, more: true}
	}
	// The window holds more: the rest of it, to a bound estimated again
	// from the ids of this page; ids it cannot tell apart (copies of one)
	// keep the window's bound.
	after := hits[end-1].id
	next := idCursor{from: after, to: boundAfter(hits[0].id, last, len(hits)-1, after, st.window())}
	if next.to == "" {
		next.to = cur.to
	}
	return idPageResult{hits: hits[:end:end], next: next, more: true}
}
