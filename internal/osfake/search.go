package osfake

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Search and count. A search reads the searchable state of its target
// shards (as of their last refresh; due periodic refreshes run first), or
// a point in time's snapshot. Scores are constant (see query.score), so
// hits without a sort come in a deterministic order: index name, shard,
// then _id. The server breaks ties by shard and Lucene doc id instead,
// which is roughly indexing order.

const (
	defaultSize         = 10
	defaultTrackTotal   = 10000
	defaultResultWindow = 10000
)

// searchRequest is a parsed search body with its URL parameters applied.
type searchRequest struct {
	query       query
	from, size  int
	sort        []sortClause
	after       []any
	trackTotal  int // count exactly up to this many hits; -1 leaves the total out
	totalAsInt  bool
	trackScores bool
	source      sourceFilter
	aggs        []*aggSpec
	pit         *pitRef
	slice       *sliceSpec
	version     bool
	seqNoTerm   bool
}

type pitRef struct {
	id        string
	keepAlive time.Duration // 0: not given
}

type sliceSpec struct{ id, max int }

// notEmulatedSearchKeys are search body keys the server knows and the
// emulator does not implement: they answer 501.
var notEmulatedSearchKeys = map[string]bool{
	"post_filter": true, "highlight": true, "suggest": true, "collapse": true, "rescore": true,
	"script_fields": true, "docvalue_fields": true, "stored_fields": true, "fields": true,
	"min_score": true, "terminate_after": true, "ext": true, "runtime_mappings": true,
	"indices_boost": true, "search_pipeline": true, "derived": true,
}

func notEmulated(what string) *osError {
	return &osError{Status: 501, Type: "osfake_not_implemented", Reason: "osfake does not emulate " + what}
}

func searchInvalid(reason string) *osError {
	return &osError{Status: 400, Type: "action_request_validation_exception", Reason: "Validation Failed: 1: " + reason + ";"}
}

// tokenName is the parser's name for a JSON value, as it appears in the
// server's "Unknown key" messages.
func tokenName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "START_OBJECT"
	case []any:
		return "START_ARRAY"
	case string:
		return "VALUE_STRING"
	case json.Number:
		return "VALUE_NUMBER"
	case bool:
		return "VALUE_BOOLEAN"
	}
	return "VALUE_NULL"
}

func intValue(name string, v any) (int, *osError) {
	n, ok := toNum(v)
	if !ok || !n.isInt || n.i > math.MaxInt32 {
		return 0, parsingException(fmt.Sprintf("[%s] failed to parse field [%s]", "search", name))
	}
	return int(n.i), nil
}

// parseSearchRequest reads a _search body and URL parameters; URL
// parameters win, as on the server.
func parseSearchRequest(q *request) (*searchRequest, *osError) {
	var body map[string]any
	if err := decodeBody(q, &body); err != nil {
		return nil, err
	}
	req := &searchRequest{query: &matchAllQuery{boost: 1}, size: defaultSize, trackTotal: defaultTrackTotal}
	var err *osError
	for _, k := range sortedNames(body) {
		v := body[k]
		switch k {
		case "query":
			req.query, err = parseQuery(v)
		case "size":
			req.size, err = intValue(k, v)
		case "from":
			req.from, err = intValue(k, v)
		case "sort":
			req.sort, err = parseSort(v)
		case "search_after":
			arr, ok := v.([]any)
			if !ok {
				err = parsingException("[search_after] must be an array")
			}
			req.after = arr
		case "track_total_hits":
			req.trackTotal, err = parseTrackTotal(v)
		case "track_scores":
			req.trackScores = v == true
		case "_source":
			req.source, err = parseSourceFilter(v)
		case "aggs", "aggregations":
			req.aggs, err = parseAggs(v)
		case "pit":
			req.pit, err = parsePITRef(v)
		case "slice":
			req.slice, err = parseSlice(v)
		case "version":
			req.version = v == true
		case "seq_no_primary_term":
			req.seqNoTerm = v == true
		case "timeout", "explain", "profile", "stats", "_name":
		default:
			if notEmulatedSearchKeys[k] {
				err = notEmulated("the search option [" + k + "]")
			} else {
				err = parsingException("Unknown key for a " + tokenName(v) + " in [" + k + "].")
			}
		}
		if err != nil {
			return nil, err
		}
	}
	if err := req.applyParams(q); err != nil {
		return nil, err
	}
	if req.size < 0 {
		return nil, illegalArgument(fmt.Sprintf("[size] parameter cannot be negative, found [%d]", req.size))
	}
	if req.from < 0 {
		return nil, illegalArgument(fmt.Sprintf("[from] parameter cannot be negative, found [%d]", req.from))
	}
	if req.after != nil && req.from > 0 {
		return nil, searchInvalid("`from` parameter must be set to 0 when `search_after` is used")
	}
	if req.slice != nil && req.pit == nil {
		return nil, searchInvalid("using [slice] is not allowed in a non scroll context")
	}
	if req.after != nil {
		n := len(req.sort)
		if n == 0 {
			n = 1 // the implicit _score sort
		}
		if len(req.after) != n {
			return nil, illegalArgument(fmt.Sprintf("search_after has %d value(s) but sort has %d.", len(req.after), n))
		}
	}
	return req, nil
}

func (req *searchRequest) applyParams(q *request) *osError {
	var err *osError
	for _, name := range []string{"scroll", "q", "terminate_after", "min_score"} {
		if q.has(name) {
			return notEmulated("the search parameter [" + name + "]")
		}
	}
	if q.has("size") {
		req.size, err = intParam(q, "size")
	}
	if q.has("from") && err == nil {
		req.from, err = intParam(q, "from")
	}
	if q.has("sort") && err == nil {
		req.sort, err = parseSortParam(q.param("sort"))
	}
	if q.has("track_total_hits") && err == nil {
		v := q.param("track_total_hits")
		var t any = json.Number(v)
		if v == "" || v == "true" || v == "false" {
			t = v != "false"
		}
		req.trackTotal, err = parseTrackTotal(t)
	}
	if err != nil {
		return err
	}
	if q.has("_source") {
		switch v := q.param("_source"); v {
		case "", "true":
			req.source = sourceFilter{}
		case "false":
			req.source = sourceFilter{off: true}
		default:
			req.source = sourceFilter{includes: strings.Split(v, ",")}
		}
	}
	if q.has("_source_includes") {
		req.source.off, req.source.includes = false, strings.Split(q.param("_source_includes"), ",")
	}
	if q.has("_source_excludes") {
		req.source.off, req.source.excludes = false, strings.Split(q.param("_source_excludes"), ",")
	}
	req.trackScores = req.trackScores || q.boolParam("track_scores")
	req.version = req.version || q.boolParam("version")
	req.seqNoTerm = req.seqNoTerm || q.boolParam("seq_no_primary_term")
	if q.boolParam("rest_total_hits_as_int") {
		req.totalAsInt, req.trackTotal = true, math.MaxInt
	}
	return nil
}

func intParam(q *request, name string) (int, *osError) {
	n, err := strconv.Atoi(q.param(name))
	if err != nil {
		return 0, illegalArgument(fmt.Sprintf("Failed to parse int parameter [%s] with value [%s]", name, q.param(name)))
	}
	return n, nil
}

func parseTrackTotal(v any) (int, *osError) {
	switch x := v.(type) {
	case bool:
		if x {
			return math.MaxInt, nil
		}
		return -1, nil
	case json.Number:
		n, err := x.Int64()
		if err != nil || n < -1 {
			return 0, illegalArgument("[track_total_hits] parameter must be positive or equals to -1, got " + x.String())
		}
		if n == -1 {
			return math.MaxInt, nil
		}
		return int(n), nil
	}
	return 0, parsingException("[track_total_hits] must be a boolean or a number")
}

func parsePITRef(v any) (*pitRef, *osError) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, parsingException("[pit] must be an object")
	}
	p := &pitRef{}
	p.id, _ = m["id"].(string)
	if p.id == "" {
		return nil, parsingException("[pit] requires [id]")
	}
	if ka, ok := m["keep_alive"]; ok {
		d, err := parseKeepAlive(scalarString(ka))
		if err != nil {
			return nil, err
		}
		p.keepAlive = d
	}
	return p, nil
}

func parseSlice(v any) (*sliceSpec, *osError) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, parsingException("[slice] must be an object")
	}
	if f, ok := m["field"]; ok && f != "_id" {
		return nil, notEmulated("slicing on a field other than _id")
	}
	id, ok1 := toNum(m["id"])
	mx, ok2 := toNum(m["max"])
	switch {
	case !ok1 || !ok2:
		return nil, parsingException("[slice] requires [id] and [max]")
	case mx.i <= 1:
		return nil, illegalArgument("max must be greater than 1")
	case id.i < 0:
		return nil, illegalArgument("id must be greater than or equal to 0")
	case id.i >= mx.i:
		return nil, illegalArgument("max must be greater than id")
	}
	return &sliceSpec{id: int(id.i), max: int(mx.i)}, nil
}

// --- targets --------------------------------------------------------------

// shardRead is one shard a search reads: its documents (the searchable
// map, or a point in time's snapshot), the alias filter that applies, and
// for a slice of a shard, which part of its documents.
type shardRead struct {
	ix       *index
	shard    int
	docs     map[string]*doc
	filter   query // nil: no alias filter
	sliceMod int   // > 1: keep the documents whose _id hashes to sliceRem
	sliceRem int
	gone     *osError // set when a point in time's index was deleted
}

// targetIndex is an index a search expression reaches: directly (by name,
// wildcard or _all) or only through aliases.
type targetIndex struct {
	ix      *index
	direct  bool
	aliases []string
}

// resolveTargets resolves a search expression the way the server's
// IndexNameExpressionResolver does for alias filters and search routing.
// Callers hold mu.
func (s *Server) resolveTargets(expr string, ignoreUnavailable bool) ([]*targetIndex, *osError) {
	byName := map[string]*targetIndex{}
	get := func(ix *index) *targetIndex {
		t := byName[ix.name]
		if t == nil {
			t = &targetIndex{ix: ix}
			byName[ix.name] = t
		}
		return t
	}
	for _, part := range strings.Split(expr, ",") {
		part = strings.TrimSpace(part)
		ixs, err := s.resolveSearch(part, true)
		if err != nil {
			if ignoreUnavailable && err.Status == 404 {
				continue
			}
			return nil, err
		}
		for _, ix := range ixs {
			t := get(ix)
			switch {
			case part == "_all" || part == "" || part == "*":
				t.direct = true
			case strings.Contains(part, "*"):
				if wildcard(part, ix.name) {
					t.direct = true
				}
				for a := range ix.aliases {
					if wildcard(part, a) {
						t.aliases = append(t.aliases, a)
					}
				}
			case part == ix.name:
				t.direct = true
			default:
				t.aliases = append(t.aliases, part)
			}
		}
	}
	out := make([]*targetIndex, 0, len(byName))
	for _, t := range byName {
		sort.Strings(t.aliases)
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ix.name < out[j].ix.name })
	return out, nil
}

// aliasFilter is the filter of the aliases an index was reached through:
// none if it was also named directly or through an alias without a
// filter, else the filters OR-ed.
func (t *targetIndex) aliasFilter() (query, *osError) {
	if t.direct || len(t.aliases) == 0 {
		return nil, nil
	}
	var should []query
	for _, a := range t.aliases {
		f := t.ix.aliases[a].Filter
		if f == nil {
			return nil, nil
		}
		fq, err := parseQuery(f)
		if err != nil {
			return nil, err
		}
		should = append(should, fq)
	}
	if len(should) == 1 {
		return should[0], nil
	}
	return &boolQuery{should: should}, nil
}

// routings is IndexNameExpressionResolver.resolveSearchRouting for one
// index: nil means every shard. The routing parameter applies to indices
// named directly or through aliases without search routing; through
// routing aliases only, it is intersected with their search routing, and
// an empty intersection (like the server) falls back to every shard.
func (t *targetIndex) routings(param []string) []string {
	if t.direct {
		return param
	}
	var union []string
	for _, a := range t.aliases {
		sr := t.ix.aliases[a].SearchRouting
		if sr == "" {
			return param
		}
		union = append(union, strings.Split(sr, ",")...)
	}
	if param == nil {
		return union
	}
	var out []string
	for _, r := range union {
		for _, p := range param {
			if r == p {
				out = append(out, r)
			}
		}
	}
	return out
}

// parsePreference returns the shard ids of a "_shards:2,3[|...]"
// preference, nil for every shard. Other preferences only choose copies,
// which the emulator does not have.
func parsePreference(p string) (map[int]bool, *osError) {
	if p == "" {
		return nil, nil
	}
	var only map[int]bool
	if rest, ok := strings.CutPrefix(p, "_shards:"); ok {
		ids, tail, _ := strings.Cut(rest, "|")
		only = map[int]bool{}
		for _, s := range strings.Split(ids, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return nil, &osError{Status: 400, Type: "number_format_exception", Reason: "For input string: \"" + s + "\""}
			}
			only[n] = true
		}
		p = tail
	}
	if strings.HasPrefix(p, "_") {
		name, _, _ := strings.Cut(p, ":")
		switch name {
		case "_local", "_only_local", "_prefer_nodes", "_only_nodes", "_primary", "_primary_first", "_replica", "_replica_first":
		default:
			return nil, illegalArgument("no Preference for [" + name + "]")
		}
	}
	return only, nil
}

// resolveReads turns an index expression, routing and preference into the
// shards a search reads, in (index name, shard) order. Callers hold mu.
func (s *Server) resolveReads(expr, routing, preference string, ignoreUnavailable bool) ([]shardRead, []*targetIndex, *osError) {
	only, err := parsePreference(preference)
	if err != nil {
		return nil, nil, err
	}
	var param []string
	if routing != "" {
		param = strings.Split(routing, ",")
	}
	targets, err := s.resolveTargets(expr, ignoreUnavailable)
	if err != nil {
		return nil, nil, err
	}
	var reads []shardRead
	for _, t := range targets {
		filter, err := t.aliasFilter()
		if err != nil {
			return nil, nil, err
		}
		shards := map[int]bool{}
		if rs := t.routings(param); len(rs) > 0 {
			for _, r := range rs {
				shards[t.ix.shardFor(r, "")] = true
			}
		} else {
			for i := range t.ix.numShards {
				shards[i] = true
			}
		}
		for i := range t.ix.numShards {
			if shards[i] && (only == nil || only[i]) {
				reads = append(reads, shardRead{ix: t.ix, shard: i, docs: t.ix.shards[i].searchable, filter: filter})
			}
		}
	}
	return reads, targets, nil
}

// readLatency is the injected latency of reading the given shards: that of
// the slowest. Callers hold mu.
func (s *Server) readLatency(reads []shardRead) time.Duration {
	byIndex := map[string]map[int]bool{}
	for _, r := range reads {
		if byIndex[r.ix.name] == nil {
			byIndex[r.ix.name] = map[int]bool{}
		}
		byIndex[r.ix.name][r.shard] = true
	}
	var d time.Duration
	for name, shards := range byIndex {
		d = max(d, s.faults.latency(name, shards))
	}
	return d
}

// --- handlers -------------------------------------------------------------

func (s *Server) handleSearch(w http.ResponseWriter, q *request) {
	req, err := parseSearchRequest(q)
	if err != nil {
		writeError(w, err)
		return
	}
	if req.pit != nil {
		s.searchPIT(w, q, req)
		return
	}
	s.mu.Lock()
	reads, _, err := s.resolveReads(orAll(q.vars["index"]), q.param("routing"), q.param("preference"), q.boolParam("ignore_unavailable"))
	var resp *searchResponse
	var delay time.Duration
	if err == nil {
		resp, err = s.execSearch(reads, req)
		delay = s.readLatency(reads)
	}
	s.mu.Unlock()
	time.Sleep(delay)
	if err != nil {
		writeError(w, err)
		return
	}
	resp.Took = delay.Milliseconds()
	writeJSON(w, 200, resp)
}

func (s *Server) handleCount(w http.ResponseWriter, q *request) {
	var body map[string]any
	if err := decodeBody(q, &body); err != nil {
		writeError(w, err)
		return
	}
	req := &searchRequest{query: &matchAllQuery{boost: 1}, trackTotal: math.MaxInt}
	for k, v := range body {
		if k != "query" {
			writeError(w, parsingException("request does not support ["+k+"]"))
			return
		}
		qq, err := parseQuery(v)
		if err != nil {
			writeError(w, err)
			return
		}
		req.query = qq
	}
	for _, name := range []string{"q", "terminate_after", "min_score"} {
		if q.has(name) {
			writeError(w, notEmulated("the count parameter ["+name+"]"))
			return
		}
	}
	s.mu.Lock()
	reads, _, err := s.resolveReads(orAll(q.vars["index"]), q.param("routing"), q.param("preference"), q.boolParam("ignore_unavailable"))
	var res *searchResult
	var delay time.Duration
	if err == nil {
		res, err = s.collect(reads, req, false)
		delay = s.readLatency(reads)
	}
	s.mu.Unlock()
	time.Sleep(delay)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, 200, map[string]any{"count": res.total, "_shards": res.shards})
}

// handleSearchShards reports the shards a search with the given routing,
// preference and (2.19+) slice would read, in the server's shape. The
// emulator places copy c of shard s on node (s+c) mod 3; copies beyond
// the nodes are unassigned.
func (s *Server) handleSearchShards(w http.ResponseWriter, q *request) {
	var body map[string]any
	if err := decodeBody(q, &body); err != nil {
		writeError(w, err)
		return
	}
	var slice *sliceSpec
	if v, ok := body["slice"]; ok {
		sl, err := parseSlice(v)
		if err != nil {
			writeError(w, err)
			return
		}
		slice = sl
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	reads, targets, err := s.resolveReads(orAll(q.vars["index"]), q.param("routing"), q.param("preference"), q.boolParam("ignore_unavailable"))
	if err != nil {
		writeError(w, err)
		return
	}
	if slice != nil {
		reads = sliceReads(reads, slice)
	}
	nodesOut := map[string]any{}
	indices := map[string]any{}
	for _, t := range targets {
		entry := map[string]any{}
		if !t.direct && len(t.aliases) > 0 {
			entry["aliases"] = t.aliases
			var filters []any
			for _, a := range t.aliases {
				if f := t.ix.aliases[a].Filter; f != nil {
					filters = append(filters, f)
				}
			}
			if len(filters) == 1 {
				entry["filter"] = filters[0]
			} else if len(filters) > 1 {
				entry["filter"] = map[string]any{"bool": map[string]any{"should": filters}}
			}
		}
		indices[t.ix.name] = entry
	}
	shards := make([][]map[string]any, 0, len(reads))
	for _, r := range reads {
		var copies []map[string]any
		for c := 0; c <= r.ix.replicas; c++ {
			cp := map[string]any{"index": r.ix.name, "shard": r.shard, "primary": c == 0,
				"state": "STARTED", "relocating_node": nil,
				"allocation_id": map[string]any{"id": fmt.Sprintf("%s-%d-%d", r.ix.uuid, r.shard, c)}}
			if c < nodes {
				n := (r.shard + c) % nodes
				id := fmt.Sprintf("osfake-node-%d", n)
				cp["node"] = id
				nodesOut[id] = map[string]any{"name": fmt.Sprintf("osfake-%d", n), "ephemeral_id": id + "-ephemeral",
					"transport_address": fmt.Sprintf("127.0.0.1:%d", 9300+n), "attributes": map[string]any{}}
			} else {
				cp["state"], cp["node"] = "UNASSIGNED", nil
				cp["unassigned_info"] = map[string]any{"reason": "INDEX_CREATED", "at": r.ix.created.UTC().Format(time.RFC3339),
					"delayed": false, "allocation_status": "no_attempt"}
				delete(cp, "allocation_id")
			}
			copies = append(copies, cp)
		}
		shards = append(shards, copies)
	}
	writeJSON(w, 200, map[string]any{"nodes": nodesOut, "indices": indices, "shards": shards})
}

// --- execution ------------------------------------------------------------

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
	PitID    string         `json:"pit_id,omitempty"`
	Took     int64          `json:"took"`
	TimedOut bool           `json:"timed_out"`
	Shards   shardsJSON     `json:"_shards"`
	Hits     hitsJSON       `json:"hits"`
	Aggs     map[string]any `json:"aggregations,omitempty"`
}

type hitsJSON struct {
	Total    any       `json:"total,omitempty"`
	MaxScore *float64  `json:"max_score"`
	Hits     []hitJSON `json:"hits"`
}

type hitJSON struct {
	Index       string          `json:"_index"`
	ID          string          `json:"_id"`
	Version     *int64          `json:"_version,omitempty"`
	SeqNo       *int64          `json:"_seq_no,omitempty"`
	PrimaryTerm *int64          `json:"_primary_term,omitempty"`
	Score       *float64        `json:"_score"`
	Routing     string          `json:"_routing,omitempty"`
	Source      json.RawMessage `json:"_source,omitempty"`
	Sort        []any           `json:"sort,omitempty"`
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
// shard-level failures.
func (req *searchRequest) bind(r *shardRead, docOrd *docOrdinals) *boundIndex {
	b := &boundIndex{}
	if r.gone != nil {
		b.err = r.gone
		return b
	}
	if w := resultWindow(r.ix); req.from+req.size > w {
		b.err = illegalArgument(fmt.Sprintf("Result window is too large, from + size must be less than or equal to: [%d] but was [%d]. "+
			"See the scroll api for a more efficient way to request large data sets. This limit can be set by changing the "+
			"[index.max_result_window] index level setting.", w, req.from+req.size))
		return b
	}
	if b.match, b.err = req.query.bind(r.ix); b.err != nil {
		return b
	}
	if r.filter != nil {
		if b.filter, b.err = r.filter.bind(r.ix); b.err != nil {
			return b
		}
	}
	for _, c := range req.sortClauses() {
		fn, err := bindSort(c, r.ix, docOrd)
		if err != nil {
			b.err = err
			return b
		}
		b.sorts = append(b.sorts, fn)
	}
	b.err = validateAggs(req.aggs, r.ix)
	return b
}

// sortClauses is the sort, or the implicit _score sort that search_after
// pages by when there is none.
func (req *searchRequest) sortClauses() []sortClause {
	if len(req.sort) == 0 && req.after != nil {
		return []sortClause{{field: "_score", desc: true}}
	}
	return req.sort
}

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
	var first *osError
	seen := map[string]bool{}
	for pos := range reads {
		r := &reads[pos]
		b := byIndex[r.ix]
		if b == nil || r.gone != nil {
			b = req.bind(r, docOrd)
			byIndex[r.ix] = b
		}
		res.bound[pos] = b
		if b.err != nil {
			res.shards.Failed++
			if first == nil {
				first = b.err
			}
			if key := r.ix.name + "\x00" + b.err.Reason; !seen[key] {
				seen[key] = true
				res.shards.Failures = append(res.shards.Failures, map[string]any{
					"shard": r.shard, "index": r.ix.name, "node": nodeOf(r.shard), "reason": b.err.body()})
			}
			continue
		}
		for _, d := range r.docs {
			if r.sliceMod > 1 && int(sliceHash(d.id)%uint32(r.sliceMod)) != r.sliceRem {
				continue
			}
			if b.filter != nil && !b.filter(d) || !b.match(d) {
				continue
			}
			res.total++
			if keep {
				res.hits = append(res.hits, &hit{pos: pos, d: d})
			}
		}
	}
	res.shards.Successful = res.shards.Total - res.shards.Failed
	if first != nil && res.shards.Failed == res.shards.Total {
		return nil, &osError{Status: first.Status, Type: "search_phase_execution_exception", Reason: "all shards failed",
			Extra:    map[string]any{"phase": "query", "grouped": true, "failed_shards": res.shards.Failures},
			CausedBy: first}
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
	sort.Slice(hits, func(i, j int) bool { return compareHits(hits[i], hits[j], clauses) < 0 })
	if req.after != nil {
		kept := hits[:0]
		for _, h := range hits {
			if afterValues(h, req.after, clauses) {
				kept = append(kept, h)
			}
		}
		hits = kept
	}
	if req.from >= len(hits) {
		hits = nil
	} else {
		hits = hits[req.from:min(len(hits), req.from+req.size)]
	}
	if scoring && len(hits) > 0 {
		resp.Hits.MaxScore = &score
	}
	for _, h := range hits {
		r := &res.reads[h.pos]
		hj := hitJSON{Index: r.ix.name, ID: h.d.id, Routing: h.d.routing, Source: req.source.render(h.d)}
		if scoring {
			hj.Score = &score
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

// sliceHash is a stable hash of an _id that splits a shard's documents
// between the slices that share it (the server uses a murmur3 hash of the
// encoded _id term; any stable hash partitions the same way).
func sliceHash(id string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h ^= uint32(id[i])
		h *= 16777619
	}
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return h
}

// --- sort -----------------------------------------------------------------

// sortClause is one sort key. Missing values sort last unless
// missingFirst, whatever the order, as on the server.
type sortClause struct {
	field        string
	desc         bool
	missingFirst bool
	missing      any // a replacement value, or nil
	unmappedType string
	mode         string // min, max or sum; "" is min ascending, max descending
}

// sortKey is one sort value of a hit.
type sortKey struct {
	kind byte // 'i' integer, 'f' float, 's' string, 'n' missing string (null)
	i    int64
	f    float64
	s    string
}

// json renders a sort value the way the server does: integers (longs,
// dates as epoch millis, booleans as 0/1), doubles (infinities as
// strings), strings, or null for a missing keyword.
func (k sortKey) json() any {
	switch k.kind {
	case 'i':
		return k.i
	case 'f':
		if math.IsInf(k.f, 1) {
			return "Infinity"
		}
		if math.IsInf(k.f, -1) {
			return "-Infinity"
		}
		return k.f
	case 's':
		return k.s
	}
	return nil
}

type sortFn func(r *shardRead, d *doc, score float64) sortKey

func parseSort(v any) ([]sortClause, *osError) {
	items, ok := v.([]any)
	if !ok {
		items = []any{v}
	}
	var out []sortClause
	for _, it := range items {
		switch x := it.(type) {
		case string:
			out = append(out, sortClause{field: x, desc: x == "_score"})
		case map[string]any:
			for _, field := range sortedNames(x) {
				c, err := parseSortClause(field, x[field])
				if err != nil {
					return nil, err
				}
				out = append(out, c)
			}
		default:
			return nil, parsingException("[sort] malformed sort element")
		}
	}
	return out, nil
}

func parseSortClause(field string, spec any) (sortClause, *osError) {
	c := sortClause{field: field, desc: field == "_score"}
	if field == "_geo_distance" || field == "_script" {
		return c, notEmulated("[" + field + "] sort")
	}
	order := func(v any) *osError {
		switch strings.ToLower(scalarString(v)) {
		case "asc":
			c.desc = false
		case "desc":
			c.desc = true
		default:
			return illegalArgument("Unknown SortOrder [" + scalarString(v) + "]")
		}
		return nil
	}
	m, ok := spec.(map[string]any)
	if !ok {
		return c, order(spec)
	}
	for _, k := range sortedNames(m) {
		v := m[k]
		switch k {
		case "order":
			if err := order(v); err != nil {
				return c, err
			}
		case "missing":
			switch v {
			case "_last":
			case "_first":
				c.missingFirst = true
			default:
				c.missing = v
			}
		case "unmapped_type":
			c.unmappedType = scalarString(v)
		case "mode":
			c.mode = scalarString(v)
			if c.mode != "min" && c.mode != "max" && c.mode != "sum" {
				return c, notEmulated("sort mode [" + c.mode + "]")
			}
		case "numeric_type", "format":
		default:
			return c, parsingException("[" + field + "] sort does not support [" + k + "]")
		}
	}
	return c, nil
}

// parseSortParam reads the URL form "field:desc,other".
func parseSortParam(p string) ([]sortClause, *osError) {
	var out []sortClause
	for _, part := range strings.Split(p, ",") {
		field, ord, hasOrd := strings.Cut(part, ":")
		c := sortClause{field: field, desc: field == "_score"}
		if hasOrd {
			c.desc = ord == "desc"
		}
		out = append(out, c)
	}
	return out, nil
}

// docOrdinals numbers each shard's documents in _id order: the emulator's
// stand-in for Lucene doc ids in a _doc sort.
type docOrdinals struct{ byRead map[*shardRead]map[string]int }

func (o *docOrdinals) of(r *shardRead, id string) int {
	if o.byRead == nil {
		o.byRead = map[*shardRead]map[string]int{}
	}
	m := o.byRead[r]
	if m == nil {
		ids := make([]string, 0, len(r.docs))
		for k := range r.docs {
			ids = append(ids, k)
		}
		sort.Strings(ids)
		m = make(map[string]int, len(ids))
		for i, k := range ids {
			m[k] = i
		}
		o.byRead[r] = m
	}
	return m[id]
}

// bindSort resolves a sort clause against an index's mapping.
func bindSort(c sortClause, ix *index, ord *docOrdinals) (sortFn, *osError) {
	switch c.field {
	case "_score":
		return func(_ *shardRead, _ *doc, score float64) sortKey { return sortKey{kind: 'f', f: score} }, nil
	case "_doc":
		return func(r *shardRead, d *doc, _ float64) sortKey { return sortKey{kind: 'i', i: int64(ord.of(r, d.id))} }, nil
	}
	f := resolveField(ix, c.field)
	switch f.kind {
	case kindNone, kindObject:
		if c.unmappedType == "" {
			return nil, queryShardException("No mapping found for [" + c.field + "] in order to sort on")
		}
		kind, integer := typeKind(c.unmappedType)
		miss := missingSortKey(c, kind, integer || kind == kindDate || kind == kindBool, nil)
		return func(*shardRead, *doc, float64) sortKey { return miss }, nil
	case kindText:
		return nil, illegalArgument("Text fields are not optimised for operations that require per-document field data like aggregations and sorting, " +
			"so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [" + c.field +
			"] in order to load field data by uninverting the inverted index. Note that this can use significant memory.")
	case kindGeo:
		return nil, illegalArgument("can't sort on geo_point field without using specific sorting feature, like geo_distance")
	}
	if f.kind == kindKeyword {
		miss := missingSortKey(c, kindKeyword, false, nil)
		useMax := c.mode == "max" || c.mode == "" && c.desc
		return func(_ *shardRead, d *doc, _ float64) sortKey {
			k, found := sortKey{kind: 's'}, false
			f.eachKey(d, func(v string) bool {
				if !found || useMax && v > k.s || !useMax && v < k.s {
					k.s, found = v, true
				}
				return true
			})
			if !found {
				return miss
			}
			return k
		}, nil
	}
	integer := f.integer || f.kind == kindDate || f.kind == kindBool
	single := f.typ == "float" || f.typ == "half_float"
	miss := missingSortKey(c, f.kind, integer, &f)
	useMax := c.mode == "max" || c.mode == "" && c.desc
	return func(_ *shardRead, d *doc, _ float64) sortKey {
		var acc num
		found := false
		f.each(d, func(v any) bool {
			n, ok := f.docNum(v)
			switch {
			case !ok:
			case !found:
				acc, found = n, true
			case c.mode == "sum":
				if acc.isInt && n.isInt {
					acc = intNum(acc.i + n.i)
				} else {
					acc = num{f: acc.f + n.f}
				}
			case useMax && cmpNum(n, acc) > 0, !useMax && cmpNum(n, acc) < 0:
				acc = n
			}
			return true
		})
		if !found {
			return miss
		}
		return numSortKey(acc, integer, single)
	}, nil
}

func numSortKey(n num, integer, single bool) sortKey {
	switch {
	case integer:
		n = n.truncate()
		return sortKey{kind: 'i', i: n.i}
	case single:
		return sortKey{kind: 'f', f: float64(float32(n.f))}
	}
	return sortKey{kind: 'f', f: n.f}
}

// missingSortKey is the sort value of a document without the field: the
// "missing" replacement if given; else for numbers the extreme that sorts
// it last (or first), as the server substitutes Long.MAX_VALUE and the
// like; else a null that sorts last (or first).
func missingSortKey(c sortClause, kind int, integer bool, f *fieldRef) sortKey {
	if c.missing != nil {
		if kind == kindKeyword {
			s, _ := toKeyword(c.missing)
			return sortKey{kind: 's', s: s}
		}
		if f != nil {
			if n, ok := f.docNum(c.missing); ok {
				return numSortKey(n, integer, false)
			}
		}
	}
	if kind == kindKeyword || kind == kindText || kind == kindNone {
		return sortKey{kind: 'n'}
	}
	high := c.missingFirst == c.desc
	switch {
	case integer && high:
		return sortKey{kind: 'i', i: math.MaxInt64}
	case integer:
		return sortKey{kind: 'i', i: math.MinInt64}
	case high:
		return sortKey{kind: 'f', f: math.Inf(1)}
	}
	return sortKey{kind: 'f', f: math.Inf(-1)}
}

// cmpSortKey orders two values of one clause.
func cmpSortKey(a, b sortKey, c *sortClause) int {
	if a.kind == 'n' || b.kind == 'n' {
		if a.kind == b.kind {
			return 0
		}
		r := 1 // missing last
		if c.missingFirst {
			r = -1
		}
		if a.kind == 'n' {
			return r
		}
		return -r
	}
	var r int
	switch {
	case a.kind == 'i' && b.kind == 'i':
		r = cmpNum(intNum(a.i), intNum(b.i))
	case a.kind != 's' && b.kind != 's':
		r = cmpNum(num{f: a.asFloat()}, num{f: b.asFloat()})
	case a.kind == 's' && b.kind == 's':
		r = strings.Compare(a.s, b.s)
	case a.kind == 's':
		r = 1
	default:
		r = -1
	}
	if c.desc {
		return -r
	}
	return r
}

func (k sortKey) asFloat() float64 {
	if k.kind == 'i' {
		return float64(k.i)
	}
	return k.f
}

func compareHits(a, b *hit, clauses []sortClause) int {
	for i := range clauses {
		if c := cmpSortKey(a.keys[i], b.keys[i], &clauses[i]); c != 0 {
			return c
		}
	}
	if a.pos != b.pos {
		return a.pos - b.pos
	}
	return strings.Compare(a.d.id, b.d.id)
}

// afterValues reports whether h sorts strictly after the search_after
// values: a hit equal on every sort value is skipped, as on the server,
// which is why callers page on a unique tiebreaker.
func afterValues(h *hit, after []any, clauses []sortClause) bool {
	for i := range clauses {
		like := h.keys[i]
		var k sortKey
		switch like.kind {
		case 'i', 'f':
			n, ok := toNum(after[i])
			switch {
			case !ok:
				k = sortKey{kind: 's', s: scalarString(after[i])}
			case n.isInt && like.kind == 'i':
				k = sortKey{kind: 'i', i: n.i}
			default:
				k = sortKey{kind: 'f', f: n.f}
			}
		default:
			if after[i] == nil {
				k = sortKey{kind: 'n'}
			} else {
				s, _ := toKeyword(after[i])
				k = sortKey{kind: 's', s: s}
			}
		}
		if c := cmpSortKey(like, k, &clauses[i]); c != 0 {
			return c > 0
		}
	}
	return false
}

// --- _source filtering ----------------------------------------------------

// sourceFilter is the _source option: off, or include and exclude
// patterns on dotted paths, where * matches any characters. A filtered
// source is re-encoded, so its keys come out sorted.
type sourceFilter struct {
	off                bool
	includes, excludes []string
}

func parseSourceFilter(v any) (sourceFilter, *osError) {
	strs := func(v any) ([]string, *osError) {
		switch x := v.(type) {
		case string:
			return []string{x}, nil
		case []any:
			out := make([]string, 0, len(x))
			for _, e := range x {
				s, ok := e.(string)
				if !ok {
					return nil, parsingException("[_source] patterns must be strings")
				}
				out = append(out, s)
			}
			return out, nil
		case nil:
			return nil, nil
		}
		return nil, parsingException("[_source] patterns must be strings")
	}
	switch x := v.(type) {
	case bool:
		return sourceFilter{off: !x}, nil
	case string, []any:
		inc, err := strs(x)
		return sourceFilter{includes: inc}, err
	case map[string]any:
		var f sourceFilter
		var err *osError
		for k, val := range x {
			switch k {
			case "includes", "include":
				f.includes, err = strs(val)
			case "excludes", "exclude":
				f.excludes, err = strs(val)
			default:
				err = parsingException("Unknown key for a " + tokenName(val) + " in [" + k + "].")
			}
			if err != nil {
				return f, err
			}
		}
		return f, nil
	}
	return sourceFilter{}, parsingException("[_source] must be a boolean, string, array or object")
}

func (f sourceFilter) render(d *doc) json.RawMessage {
	if f.off {
		return nil
	}
	if len(f.includes) == 0 && len(f.excludes) == 0 {
		return d.source
	}
	b, err := json.Marshal(f.object(d.fields, "", len(f.includes) == 0))
	if err != nil {
		return d.source
	}
	return b
}

func anyPattern(patterns []string, path string) bool {
	for _, p := range patterns {
		if wildcard(p, path) {
			return true
		}
	}
	return false
}

// mayIncludeBelow reports whether an include pattern could match a path
// under the object at path.
func (f sourceFilter) mayIncludeBelow(path string) bool {
	pre := path + "."
	for _, p := range f.includes {
		lit, _, star := strings.Cut(p, "*")
		if strings.HasPrefix(lit, pre) || star && strings.HasPrefix(pre, lit) {
			return true
		}
	}
	return false
}

func (f sourceFilter) object(m map[string]any, prefix string, all bool) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		path := prefix + k
		if anyPattern(f.excludes, path) {
			continue
		}
		in := all || anyPattern(f.includes, path)
		if !in && !f.mayIncludeBelow(path) {
			continue
		}
		if fv, keep := f.value(v, path, in); keep {
			out[k] = fv
		}
	}
	return out
}

func (f sourceFilter) value(v any, path string, in bool) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		sub := f.object(x, path+".", in)
		return sub, in || len(sub) > 0
	case []any:
		var out []any
		for _, e := range x {
			if fv, keep := f.value(e, path, in); keep {
				out = append(out, fv)
			}
		}
		return out, in || len(out) > 0
	}
	return v, in
}
