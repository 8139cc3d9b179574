package osfake

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// _bulk: the NDJSON body is parsed exactly as BulkRequestParser parses
// it, validated as BulkRequest.validate does (any error fails the whole
// request, nothing applied), and then each item is applied on its own
// through the write path in docs.go, with its own status in the response.

// refreshPolicy is WriteRequest.RefreshPolicy.
type refreshPolicy uint8

const (
	refreshNone refreshPolicy = iota
	refreshImmediate
	refreshWaitFor
)

func parseRefresh(q *request) (refreshPolicy, *osError) {
	v, ok := q.query["refresh"]
	switch {
	case !ok || v == "false":
		return refreshNone, nil
	case v == "" || v == "true":
		return refreshImmediate, nil
	case v == "wait_for":
		return refreshWaitFor, nil
	}
	return refreshNone, illegalArgument("Unknown value for refresh: [" + v + "].")
}

// finishWrites refreshes the shards a request wrote to, for refresh=true
// and refresh=wait_for. wait_for does not wait for the periodic refresh:
// the emulator refreshes at once, which a client cannot tell from a
// refresh interval that happened to end just then. Callers hold mu.
func (wc *writeCtx) finishWrites(p refreshPolicy) {
	if p == refreshNone {
		return
	}
	for sh := range wc.shards {
		sh.refresh()
	}
}

func (s *Server) handleBulk(w http.ResponseWriter, q *request) {
	start := time.Now()
	refresh, err := parseRefresh(q)
	if err != nil {
		writeError(w, err)
		return
	}
	wait, err := parseWriteWait(q)
	if err != nil {
		writeError(w, err)
		return
	}
	def := bulkDefaults{index: q.vars["index"], routing: q.param("routing"), pipeline: q.param("pipeline")}
	if def.requireAlias, err = requireAliasParam(q); err != nil {
		writeError(w, err)
		return
	}
	if len(q.body) == 0 {
		writeError(w, parseError("request body is required"))
		return
	}
	ops, err := parseBulk(s.dialect, q.body, def)
	if err != nil {
		writeError(w, err)
		return
	}
	var msgs []string
	if len(ops) == 0 {
		msgs = append(msgs, "no requests added")
	}
	for i := range ops {
		msgs = ops[i].validate(msgs)
	}
	if len(msgs) > 0 {
		writeError(w, validationError(msgs))
		return
	}
	if d := s.bulkLatency(ops); d > 0 {
		time.Sleep(d)
	}
	s.awaitWrites(q.r.Context(), ops, wait)

	s.mu.Lock()
	wc := s.newWriteCtx(true)
	wc.wait = wait
	results := make([]itemResult, len(ops))
	for i := range ops {
		results[i] = s.apply(&ops[i], wc)
	}
	wc.finishWrites(refresh)
	drop := s.faults.takeDrop()
	s.mu.Unlock()

	b := renderBulk(time.Since(start), results, refresh == refreshImmediate)
	if drop {
		writeTruncated(w, 200, json.RawMessage(b))
		return
	}
	writeRaw(w, 200, b)
}

// requireAliasParam reads ?require_alias; an empty value is the default,
// false (RestRequest.paramAsBoolean with a null default).
func requireAliasParam(q *request) (bool, *osError) {
	if v := q.param("require_alias"); v != "" {
		return strictBool(v)
	}
	return false, nil
}

// bulkLatency is the injected delay of a bulk: for each index, the set of
// shards its items write to, and the largest delay over them. It takes
// the lock briefly; the caller sleeps without it. Auto ids are chosen here
// so that the shard is known.
func (s *Server) bulkLatency(ops []op) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.faults.f.ShardLatency) == 0 {
		return 0
	}
	touched := map[string]map[int]bool{}
	for i := range ops {
		o := &ops[i]
		name, shardNum := o.index, 0 // a missing index is created with one shard
		routing := o.routing
		if s.indices[name] != nil || s.aliasExists(name) {
			ix, alias, err := s.resolveWrite(name, false)
			if err != nil {
				continue
			}
			if alias != nil && alias.IndexRouting != "" {
				routing = alias.IndexRouting
			}
			id := o.id
			if !o.hasID {
				if o.autoID == "" {
					o.autoID = s.newID()
				}
				id = o.autoID
			}
			name, shardNum = ix.name, ix.shardFor(routing, id)
		}
		if touched[name] == nil {
			touched[name] = map[int]bool{}
		}
		touched[name][shardNum] = true
	}
	var d time.Duration
	for name, shards := range touched {
		d = max(d, s.faults.latency(name, shards))
	}
	return s.faults.held(d)
}

// --- response rendering --------------------------------------------------
//
// Items are written by hand, in the server's key order, with the stored
// values as they are: a 1,000-item response costs one buffer.

func renderBulk(took time.Duration, results []itemResult, forced bool) []byte {
	b := make([]byte, 0, 64+len(results)*200)
	errs := false
	for i := range results {
		errs = errs || results[i].err != nil
	}
	b = append(b, `{"took":`...)
	b = strconv.AppendInt(b, took.Milliseconds(), 10)
	b = append(b, `,"errors":`...)
	b = strconv.AppendBool(b, errs)
	b = append(b, `,"items":[`...)
	for i := range results {
		if i > 0 {
			b = append(b, ',')
		}
		r := &results[i]
		r.forced = forced && r.err == nil
		b = append(b, `{"`...)
		b = append(b, r.kind.String()...)
		b = append(b, `":`...)
		b = r.appendJSON(b, true)
		b = append(b, '}')
	}
	return append(b, "]}"...)
}
