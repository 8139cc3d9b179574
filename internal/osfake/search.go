package osfake

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
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
	storedNone  bool     // stored_fields _none_: no _id, _routing or _source
	docValues   []string // docvalue_fields: keyword fields read into a hit's fields
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
	"script_fields": true, "fields": true,
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
			req.after, err = parseSearchAfter(v)
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
		case "stored_fields":
			req.storedNone, err = parseStoredFields(v)
		case "docvalue_fields":
			req.docValues, err = parseDocValueFields(v)
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

// parseStoredFields reads stored_fields: the emulator has only _none_,
// which leaves the stored fields (_id, _routing, _source) out of the hits.
func parseStoredFields(v any) (bool, *osError) {
	if l, ok := v.([]any); ok && len(l) == 1 {
		v = l[0]
	}
	if v == "_none_" {
		return true, nil
	}
	return false, notEmulated("stored_fields other than _none_")
}

// parseDocValueFields reads docvalue_fields: the emulator has fields named
// as strings, without a format.
func parseDocValueFields(v any) ([]string, *osError) {
	l, ok := v.([]any)
	if !ok {
		return nil, parsingException("[docvalue_fields] must be an array")
	}
	out := make([]string, 0, len(l))
	for _, f := range l {
		name, ok := f.(string)
		if !ok {
			return nil, notEmulated("docvalue_fields given as objects")
		}
		out = append(out, name)
	}
	return out, nil
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
			if s.dialect.searchOnly {
				cp["searchOnly"] = false
			}
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
