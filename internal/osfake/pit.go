package osfake

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// Point in time, with OpenSearch 2.4+ semantics. A PIT holds the
// searchable documents of each shard it targets as they were when it was
// opened (shard.snapshot: the shard copies its map before the next refresh
// changes it), so later writes and refreshes do not show through it.
//
// A PIT expires when it goes unused for longer than its keep-alive, which
// a search can lengthen but never shorten (ReaderContext.keepAlive keeps
// the larger value). The server reaps expired contexts on a timer
// (search.keep_alive_interval, 1m), so a real PIT may outlive its
// keep-alive by up to that long; the emulator drops it exactly on time.
//
// OpenSearch adds no implicit tiebreaker to a PIT search, 3.9 as 2.19:
// callers sort on a unique field themselves (the _shard_doc sort, which
// 3.3 brought, is asked for, not added).

const (
	// maxPITKeepAlive is point_in_time.max_keep_alive's default.
	maxPITKeepAlive = 24 * time.Hour
	// maxOpenPITs is search.max_open_pit_context's default.
	maxOpenPITs = 300
)

// pitSeq numbers reader contexts, whose ids the server's "No search
// context found for id [N]" names. It is global so that ids stay unique
// across servers in one test binary.
var pitSeq atomic.Int64

// pit is an open point in time.
type pit struct {
	id        string
	ctxID     int64
	created   time.Time
	lastUsed  time.Time
	keepAlive time.Duration
	reads     []shardRead // in (index name, shard) order; docs are snapshots
}

func (p *pit) expired(now time.Time) bool { return now.Sub(p.lastUsed) > p.keepAlive }

// reapPITs drops expired points in time. Callers hold mu.
func (s *Server) reapPITs(now time.Time) {
	for id, p := range s.pits {
		if p.expired(now) {
			delete(s.pits, id)
		}
	}
}

const pitIDPrefix = "osfake-pit:"

func encodePITID(ctxID int64, nonce uint64) string {
	return base64.URLEncoding.EncodeToString(fmt.Appendf(nil, "%s%d:%016x", pitIDPrefix, ctxID, nonce))
}

// pitContextID decodes the reader context id from a pit_id.
func pitContextID(id string) (int64, *osError) {
	b, err := base64.URLEncoding.DecodeString(id)
	rest, ok := strings.CutPrefix(string(b), pitIDPrefix)
	num, _, _ := strings.Cut(rest, ":")
	n, perr := strconv.ParseInt(num, 10, 64)
	if err != nil || !ok || perr != nil {
		return 0, illegalArgument("invalid pit id [" + id + "]")
	}
	return n, nil
}

// formatTimeValue renders a duration the way TimeValue.toString does: in
// the largest unit, with at most one decimal that is dropped when zero.
func formatTimeValue(d time.Duration) string {
	units := []struct {
		suffix string
		d      time.Duration
	}{{"d", 24 * time.Hour}, {"h", time.Hour}, {"m", time.Minute}, {"s", time.Second}, {"ms", time.Millisecond}}
	for _, u := range units {
		if d >= u.d {
			tenths := int64(d * 10 / u.d)
			if tenths%10 == 0 {
				return strconv.FormatInt(tenths/10, 10) + u.suffix
			}
			return fmt.Sprintf("%d.%d%s", tenths/10, tenths%10, u.suffix)
		}
	}
	return strconv.FormatInt(d.Nanoseconds(), 10) + "nanos"
}

func parseKeepAlive(v string) (time.Duration, *osError) {
	d, err := parseTimeValue("keep_alive", v)
	if err != nil {
		return 0, err
	}
	if d < 0 {
		return 0, illegalArgument("failed to parse setting [keep_alive] with value [" + v + "] as a time value: negative durations are not supported")
	}
	if d > maxPITKeepAlive {
		return 0, illegalArgument(fmt.Sprintf("Keep alive for request (%s) is too large. It must be less than (%s). "+
			"This limit can be set by changing the [point_in_time.max_keep_alive] cluster level setting.",
			formatTimeValue(d), formatTimeValue(maxPITKeepAlive)))
	}
	return d, nil
}

// pitMissing is the error of a search on an unknown or expired PIT: every
// shard fails with search_context_missing_exception, so the request fails
// with 404.
func pitMissing(ctxID int64) *osError {
	cause := &osError{Status: 404, Type: "search_context_missing_exception",
		Reason: fmt.Sprintf("No search context found for id [%d]", ctxID)}
	return allShardsFailed("query", []any{map[string]any{"shard": -1, "index": nil, "reason": cause.body()}}, []*osError{cause})
}

func (s *Server) handleCreatePIT(w http.ResponseWriter, q *request) {
	if q.param("keep_alive") == "" {
		writeError(w, searchInvalid("keep alive not specified"))
		return
	}
	keepAlive, err := parseKeepAlive(q.param("keep_alive"))
	if err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.reapPITs(now)
	reads, _, err := s.resolveReads(q.vars["index"], q.param("routing"), q.param("preference"), q.boolParam("ignore_unavailable"))
	if err != nil {
		writeError(w, err)
		return
	}
	if len(s.pits) >= maxOpenPITs {
		writeError(w, &osError{Status: 429, Type: "rejected_execution_exception", Reason: fmt.Sprintf(
			"Trying to create too many Point In Time contexts. Must be less than or equal to: [%d]. "+
				"This limit can be set by changing the [search.max_open_pit_context] setting.", maxOpenPITs)})
		return
	}
	for i := range reads {
		reads[i].docs = reads[i].ix.shards[reads[i].shard].snapshot()
	}
	ctxID := pitSeq.Add(1)
	p := &pit{id: encodePITID(ctxID, s.rng.Uint64()), ctxID: ctxID, created: now, lastUsed: now,
		keepAlive: keepAlive, reads: reads}
	s.pits[p.id] = p
	n := len(reads)
	writeJSON(w, 200, map[string]any{"pit_id": p.id,
		"_shards":       shardsJSON{Total: n, Successful: n},
		"creation_time": now.UnixMilli()})
}

// searchPIT runs a search on a point in time.
func (s *Server) searchPIT(w http.ResponseWriter, q *request, req *searchRequest) {
	var invalid []string
	if q.vars["index"] != "" {
		invalid = append(invalid, "[indices] cannot be used with point in time")
	}
	for _, p := range []string{"routing", "preference"} {
		if q.has(p) {
			invalid = append(invalid, "["+p+"] cannot be used with point in time")
		}
	}
	if len(invalid) > 0 {
		var b strings.Builder
		b.WriteString("Validation Failed: ")
		for i, r := range invalid {
			fmt.Fprintf(&b, "%d: %s;", i+1, r)
		}
		writeError(w, &osError{Status: 400, Type: "action_request_validation_exception", Reason: b.String()})
		return
	}
	ctxID, err := pitContextID(req.pit.id)
	if err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	now := s.now()
	s.reapPITs(now)
	p := s.pits[req.pit.id]
	if p == nil {
		s.mu.Unlock()
		writeError(w, pitMissing(ctxID))
		return
	}
	p.keepAlive = max(p.keepAlive, req.pit.keepAlive)
	p.lastUsed = now
	reads := append([]shardRead(nil), p.reads...)
	for i := range reads {
		if s.indices[reads[i].ix.name] != reads[i].ix {
			reads[i].gone = &osError{Status: 404, Type: "search_context_missing_exception",
				Reason: fmt.Sprintf("No search context found for id [%d]", ctxID)}
		}
	}
	if req.slice != nil {
		reads = sliceFilter(reads, req.slice)
	}
	resp, err := s.execSearch(reads, req)
	delay := s.readLatency(reads)
	s.mu.Unlock()
	time.Sleep(delay)
	if err != nil {
		writeError(w, err)
		return
	}
	resp.PitID, resp.Took = p.id, delay.Milliseconds()
	writeJSON(w, 200, resp)
}

func (s *Server) handleDeletePIT(w http.ResponseWriter, q *request) {
	var body map[string]any
	if err := decodeBody(q, &body); err != nil {
		writeError(w, err)
		return
	}
	var ids []string
	switch x := body["pit_id"].(type) {
	case string:
		ids = []string{x}
	case []any:
		for _, e := range x {
			if id, ok := e.(string); ok {
				ids = append(ids, id)
			}
		}
	}
	if len(ids) == 0 {
		writeError(w, searchInvalid("no pit ids specified"))
		return
	}
	for _, id := range ids {
		if _, err := pitContextID(id); err != nil {
			writeError(w, err)
			return
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reapPITs(s.now())
	// A PIT that is already gone counts as deleted, as on the server.
	out := make([]any, 0, len(ids))
	for _, id := range ids {
		delete(s.pits, id)
		out = append(out, map[string]any{"pit_id": id, "successful": true})
	}
	writeJSON(w, 200, map[string]any{"pits": out})
}

// handleAllPITs lists (GET) or deletes (DELETE) every open PIT. A listed
// keep_alive is in milliseconds.
func (s *Server) handleAllPITs(w http.ResponseWriter, q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reapPITs(s.now())
	pits := make([]*pit, 0, len(s.pits))
	for _, p := range s.pits {
		pits = append(pits, p)
	}
	sort.Slice(pits, func(i, j int) bool { return pits[i].ctxID < pits[j].ctxID })
	out := make([]any, 0, len(pits))
	for _, p := range pits {
		if q.method == http.MethodDelete {
			delete(s.pits, p.id)
			out = append(out, map[string]any{"pit_id": p.id, "successful": true})
			continue
		}
		out = append(out, map[string]any{"pit_id": p.id, "creation_time": p.created.UnixMilli(),
			"keep_alive": p.keepAlive.Milliseconds()})
	}
	writeJSON(w, 200, map[string]any{"pits": out})
}
