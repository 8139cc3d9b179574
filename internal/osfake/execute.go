package osfake

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
)

// Search execution: a request is bound to each index it reads (query,
// alias filter, sort), every shard's documents are matched and counted,
// and the hits are sorted, paged by from, size and search_after, and
// rendered in the server's response shape.

// hit is a matching document and its sort values.
type hit struct {
	pos  int // position of its shard in the reads: the tiebreak
	d    *doc
	keys []sortKey
}

// boundIndex is a request bound to one index: the query, the alias
// filter and the sort, or the shard-level error that fails its shards.
type boundIndex struct {
	match  matcher
	filter matcher
	sorts  []sortFn
	err    *osError
	phase  string // "can_match" when err is a failure of that phase
}

type shardsJSON struct {
	Total      int   `json:"total"`
	Successful int   `json:"successful"`
	Skipped    int   `json:"skipped"`
	Failed     int   `json:"failed"`
	Failures   []any `json:"failures,omitempty"`
}

// searchResult is what a search found, before the response is shaped.
type searchResult struct {
	reads  []shardRead
	bound  []*boundIndex // by read position
	hits   []*hit
	total  int
	shards shardsJSON
}

type searchResponse struct {
	PitID           string         `json:"pit_id,omitempty"`
	Took            int64          `json:"took"`
	TimedOut        bool           `json:"timed_out"`
	TerminatedEarly bool           `json:"terminated_early,omitempty"`
	Shards          shardsJSON     `json:"_shards"`
	Hits            hitsJSON       `json:"hits"`
	Aggs            map[string]any `json:"aggregations,omitempty"`
}

type hitsJSON struct {
	Total    any          `json:"total,omitempty"`
	MaxScore *json.Number `json:"max_score"`
	Hits     []hitJSON    `json:"hits"`
}

type hitJSON struct {
	Index       string          `json:"_index"`
	ID          string          `json:"_id,omitempty"` // none with stored_fields _none_
	Version     *int64          `json:"_version,omitempty"`
	SeqNo       *int64          `json:"_seq_no,omitempty"`
	PrimaryTerm *int64          `json:"_primary_term,omitempty"`
	Score       *json.Number    `json:"_score"`
	Routing     string          `json:"_routing,omitempty"`
	Source      json.RawMessage `json:"_source,omitempty"`
	Fields      map[string]any  `json:"fields,omitempty"`
	Sort        []any           `json:"sort,omitempty"`
}

// anyShardHoldsDocuments reports whether a shard the search ran on
// holds a searchable document: on 3.x a search of size 0 with
// aggregations stops collecting early on every shard that has a segment,
// and says so. (A shard whose documents were all deleted keeps its
// segments on the server, and reports it there; the emulator keeps no
// segments.)
func (res *searchResult) anyShardHoldsDocuments() bool {
	for pos, r := range res.reads {
		if res.bound[pos].err == nil && len(r.docs) > 0 {
			return true
		}
	}
	return false
}

// resultWindow is the index's index.max_result_window: the largest
// from+size a search may ask for.
func resultWindow(ix *index) int {
	if v, ok := ix.settings["index.max_result_window"]; ok {
		if n, err := strconv.Atoi(v); err == nil {
			return n
		}
	}
	return defaultResultWindow
}

// bind prepares req for the index of r. Errors are the server's
// shard-level failures, in its order: the query, the alias filter, the
// sort, the aggregations, then the paging checks. When the server runs its
// can_match phase first (see inCanMatch), that phase builds the sort and
// converts search_after, so their failures come before the others.
func (req *searchRequest) bind(r *shardRead, docOrd *docOrdinals, canMatch bool) *boundIndex {
	b := &boundIndex{}
	defer func() { b.err = onIndex(b.err, r.ix) }()
	if r.gone != nil {
		b.err = r.gone
		return b
	}
	if canMatch {
		if b.sorts, b.err = req.bindSorts(r.ix, docOrd); b.err == nil && req.after != nil {
			b.err = req.afterChecks(r.ix)
		}
		if b.err != nil {
			b.phase = "can_match"
			return b
		}
	}
	if b.match, b.err = req.query.bind(r.ix); b.err != nil {
		return b
	}
	if r.filter != nil {
		if b.filter, b.err = r.filter.bind(r.ix); b.err != nil {
			return b
		}
	}
	if !canMatch {
		if b.sorts, b.err = req.bindSorts(r.ix, docOrd); b.err != nil {
			return b
		}
	}
	if b.err = validateAggs(req.aggs, r.ix); b.err == nil {
		b.err = req.pagingChecks(r.ix, canMatch)
	}
	return b
}

func (req *searchRequest) bindSorts(ix *index, docOrd *docOrdinals) ([]sortFn, *osError) {
	var sorts []sortFn
	for _, c := range req.sortClauses() {
		fn, err := bindSort(c, ix, docOrd)
		if err != nil {
			return nil, err
		}
		sorts = append(sorts, fn)
	}
	return sorts, nil
}

// onIndex names the index in a QueryShardException, as the server's
// does (it is raised with the shard's context).
func onIndex(err *osError, ix *index) *osError {
	if err != nil && err.Type == "query_shard_exception" && err.Index == "" {
		err.Index, err.UUID = ix.name, ix.uuid
	}
	return err
}

// sortClauses is the sort.
func (req *searchRequest) sortClauses() []sortClause { return req.sort }

// nodeOf is the node holding a shard's primary, as _cat/shards and
// _search_shards place it.
func nodeOf(shard int) string { return fmt.Sprintf("osfake-node-%d", shard%nodes) }

// collect runs the query over every read and counts the matches; keep
// also returns them. A shard whose binding fails is reported in
// _shards.failures (one entry per index and reason, as the server groups
// them); if every shard fails, so does the request, with the server's
// search_phase_execution_exception and the first failure's status.
func (s *Server) collect(reads []shardRead, req *searchRequest, keep bool) (*searchResult, *osError) {
	res := &searchResult{reads: reads, bound: make([]*boundIndex, len(reads))}
	res.shards.Total = len(reads)
	docOrd := &docOrdinals{}
	byIndex := map[*index]*boundIndex{}
	var groups []*osError
	seen := map[string]bool{}
	canMatch := req.inCanMatch(len(reads))
	phase := "can_match"
	for pos := range reads {
		r := &reads[pos]
		b := byIndex[r.ix]
		if b == nil || r.gone != nil {
			b = req.bind(r, docOrd, canMatch)
			byIndex[r.ix] = b
		}
		res.bound[pos] = b
		if b.err != nil {
			res.shards.Failed++
			if key := r.ix.name + "\x00" + b.err.Reason; !seen[key] {
				seen[key] = true
				groups = append(groups, b.err)
				if b.phase == "" {
					phase = "query"
				}
				res.shards.Failures = append(res.shards.Failures, map[string]any{
					"shard": r.shard, "index": r.ix.name, "node": nodeOf(r.shard), "reason": b.err.body()})
			}
			continue
		}
		take := func(d *doc) {
			if !r.inSlice(d.id) {
				return
			}
			if b.filter != nil && !b.filter(d) || !b.match(d) {
				return
			}
			res.total++
			if keep {
				res.hits = append(res.hits, &hit{pos: pos, d: d})
			}
		}
		if ids, ok := idsOf(req.query); ok {
			// A query of ids alone reads those documents, not the shard:
			// the same matches, without a scan of every document.
			for _, id := range ids {
				if d := r.docs[id]; d != nil {
					take(d)
				}
			}
			continue
		}
		for _, d := range r.docs {
			take(d)
		}
	}
	res.shards.Successful = res.shards.Total - res.shards.Failed
	if len(groups) > 0 && res.shards.Failed == res.shards.Total {
		return nil, allShardsFailed(phase, res.shards.Failures, groups)
	}
	return res, nil
}

// execSearch runs a search over reads and shapes the response.
func (s *Server) execSearch(reads []shardRead, req *searchRequest) (*searchResponse, *osError) {
	keep := req.size > 0 || len(req.aggs) > 0
	res, err := s.collect(reads, req, keep)
	if err != nil {
		return nil, err
	}
	clauses := req.sortClauses()
	score := req.query.score()
	scoring := len(clauses) == 0 || req.trackScores
	for _, c := range clauses {
		scoring = scoring || c.field == "_score"
	}
	resp := &searchResponse{Shards: res.shards, Hits: hitsJSON{Hits: []hitJSON{}}}
	switch {
	case req.trackTotal < 0:
	case req.totalAsInt:
		resp.Hits.Total = res.total
	case res.total > req.trackTotal:
		resp.Hits.Total = map[string]any{"value": req.trackTotal, "relation": "gte"}
	default:
		resp.Hits.Total = map[string]any{"value": res.total, "relation": "eq"}
	}
	if len(req.aggs) > 0 {
		resp.Aggs = runAggs(req.aggs, res)
	}
	if req.size == 0 {
		resp.TerminatedEarly = s.dialect.sizeZeroAggsTerminateEarly && len(req.aggs) > 0 && res.anyShardHoldsDocuments()
		return resp, nil
	}
	hits := res.hits
	for _, h := range hits {
		b := res.bound[h.pos]
		h.keys = make([]sortKey, len(b.sorts))
		for i, fn := range b.sorts {
			h.keys[i] = fn(&res.reads[h.pos], h.d, score)
		}
	}
	if req.after != nil {
		kept := hits[:0]
		for _, h := range hits {
			if afterValues(h, req.after, clauses) {
				kept = append(kept, h)
			}
		}
		hits = kept
	}
	hits = firstHits(hits, req.from+req.size, clauses)
	if req.from >= len(hits) {
		hits = nil
	} else {
		hits = hits[req.from:min(len(hits), req.from+req.size)]
	}
	// Scores are floats, spelled as the server spells them (1.0).
	scoreText := json.Number(javaFloat(float32(score)))
	if scoring && len(hits) > 0 {
		resp.Hits.MaxScore = &scoreText
	}
	for _, h := range hits {
		r := &res.reads[h.pos]
		hj := hitJSON{Index: r.ix.name, ID: h.d.id, Routing: h.d.routing, Source: req.source.render(h.d)}
		if req.storedNone {
			hj.ID, hj.Routing, hj.Source = "", "", nil
		}
		var ferr *osError
		if hj.Fields, ferr = docValueFields(r.ix, h.d, req.docValues); ferr != nil {
			return nil, ferr
		}
		if scoring {
			hj.Score = &scoreText
		}
		if req.version {
			v := h.d.version
			hj.Version = &v
		}
		if req.seqNoTerm {
			seqNo, term := h.d.seqNo, max(h.d.term, 1)
			hj.SeqNo, hj.PrimaryTerm = &seqNo, &term
		}
		if len(req.sort) > 0 {
			hj.Sort = make([]any, len(h.keys))
			for i, k := range h.keys {
				hj.Sort[i] = k.json()
			}
		}
		resp.Hits.Hits = append(resp.Hits.Hits, hj)
	}
	return resp, nil
}

// docValueFields are the values of a hit's docvalue_fields, as the
// server's doc values hold them: a keyword field's distinct values,
// sorted; a field the document does not have is left out.
func docValueFields(ix *index, d *doc, names []string) (map[string]any, *osError) {
	var out map[string]any
	for _, name := range names {
		f := resolveField(ix, name)
		switch f.kind {
		case kindKeyword:
		case kindNone:
			continue
		default:
			return nil, notEmulated("docvalue_fields of a " + f.typ + " field")
		}
		var vals []string
		f.eachKey(d, func(k string) bool {
			vals = append(vals, k)
			return true
		})
		if len(vals) == 0 {
			continue
		}
		slices.Sort(vals)
		vals = slices.Compact(vals)
		if out == nil {
			out = map[string]any{}
		}
		out[name] = vals
	}
	return out, nil
}

// firstHits returns the first n hits in sort order, sorted: a page needs
// only those, and a page deep into a large result (search_after through
// a whole index) would otherwise sort every match again.
func firstHits(hits []*hit, n int, clauses []sortClause) []*hit {
	less := func(a, b *hit) bool { return compareHits(a, b, clauses) < 0 }
	if n <= 0 || n >= len(hits)/2 {
		sort.Slice(hits, func(i, j int) bool { return less(hits[i], hits[j]) })
		return hits
	}
	// A max-heap of the n smallest so far: its root is the largest of
	// them, replaced by any hit that sorts before it.
	h := &hitHeap{less: less, hits: append([]*hit(nil), hits[:n]...)}
	heap.Init(h)
	for _, x := range hits[n:] {
		if less(x, h.hits[0]) {
			h.hits[0] = x
			heap.Fix(h, 0)
		}
	}
	out := h.hits
	sort.Slice(out, func(i, j int) bool { return less(out[i], out[j]) })
	return out
}

// hitHeap is a max-heap of hits under less.
type hitHeap struct {
	less func(a, b *hit) bool
	hits []*hit
}

func (h *hitHeap) Len() int           { return len(h.hits) }
func (h *hitHeap) Less(i, j int) bool { return h.less(h.hits[j], h.hits[i]) }
func (h *hitHeap) Swap(i, j int)      { h.hits[i], h.hits[j] = h.hits[j], h.hits[i] }
func (h *hitHeap) Push(x any)         { h.hits = append(h.hits, x.(*hit)) }
func (h *hitHeap) Pop() any {
	x := h.hits[len(h.hits)-1]
	h.hits = h.hits[:len(h.hits)-1]
	return x
}

// idsOf returns the distinct ids of a query that is an ids query (or a
// term or terms query on _id) and nothing else.
func idsOf(q query) ([]string, bool) {
	t, ok := q.(*termQuery)
	if !ok || t.field != "_id" {
		return nil, false
	}
	ids := make([]string, 0, len(t.values))
	seen := make(map[string]bool, len(t.values))
	for _, v := range t.values {
		id, ok := v.(string)
		if !ok {
			return nil, false
		}
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids, true
}
