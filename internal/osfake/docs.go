package osfake

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The write path shared by _bulk and the single-document APIs: one op is
// resolved, checked and applied the way TransportBulkAction (coordinating
// node) and TransportShardBulkAction (primary shard) do it, so every write
// API has the same semantics.

// opKind is a write's operation type; its String is the key of a bulk
// response item.
type opKind uint8

const (
	opIndex opKind = iota
	opCreate
	opUpdate
	opDelete
)

func (k opKind) String() string {
	return [...]string{"index", "create", "update", "delete"}[k]
}

// op is one write request: a bulk item or a single-document call.
type op struct {
	kind            opKind
	index           string // index or alias as given; "" when missing
	id              string
	hasID           bool   // false: index/create with an auto-generated id
	autoID          string // the generated id, once chosen
	routing         string // "" is no routing, as IndexRequest.routing("") does
	version         int64
	vtype           versionType
	ifSeqNo         int64
	ifTerm          int64
	retryOnConflict int
	pipeline        string
	requireAlias    bool
	source          []byte      // index and create
	upd             *updateSpec // update
}

func newOp(kind opKind) op {
	return op{kind: kind, version: versionMatchAny, ifSeqNo: unassignedSeqNo}
}

// updateSpec is the body of an update: a partial doc, an upsert, flags.
type updateSpec struct {
	doc, upsert []byte // raw JSON objects, nil when absent
	docAsUpsert bool
	detectNoop  bool
	script      bool
}

// itemResult is the outcome of one write.
type itemResult struct {
	kind      opKind
	index     string
	id        string
	idNull    bool // no id given and none generated yet: "_id":null
	version   int64
	result    string // created, updated, deleted, not_found, noop
	seqNo     int64
	total, ok int // _shards
	status    int
	forced    bool // forced_refresh
	err       *osError
}

// writeCtx is what the writes of one request share.
type writeCtx struct {
	now     time.Time
	bulk    bool // per-item fault injection applies
	touched map[*index]bool
	shards  map[*shard]bool // shards written to, for refresh=true
	wait    writeWait       // wait_for_active_shards, awaited before apply
}

func (s *Server) newWriteCtx(bulk bool) *writeCtx {
	return &writeCtx{now: s.now(), bulk: bulk, touched: map[*index]bool{}, shards: map[*shard]bool{}}
}

// newID is an auto-generated id: 20 URL-safe base64 characters like the
// server's time-based UUIDs (here from the seeded generator, so a test's
// ids repeat from run to run). Callers hold mu.
func (s *Server) newID() string {
	var b [15]byte
	for i := 0; i < len(b); i += 8 {
		v := s.rng.Uint64()
		for j := i; j < min(i+8, len(b)); j++ {
			b[j] = byte(v)
			v >>= 8
		}
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// apply performs one write. Callers hold mu. The order of checks follows
// the server: ingest pipeline, require_alias, index resolution and
// auto-creation, alias routing, required routing, empty id (coordinating
// node); then rejection, write block, document parsing, dynamic mapping
// and version planning (primary shard).
func (s *Server) apply(o *op, wc *writeCtx) itemResult {
	res := itemResult{kind: o.kind, index: o.index, id: o.id, idNull: !o.hasID}
	fail := func(e *osError) itemResult {
		res.status, res.err = e.Status, e
		return res
	}
	if (o.kind == opIndex || o.kind == opCreate) && o.pipeline != "" && o.pipeline != "_none" {
		// The emulator has no ingest pipelines.
		return fail(illegalArgument("pipeline with id [" + o.pipeline + "] does not exist"))
	}
	// Deletes do not auto-create an index unless externally versioned.
	if o.kind == opDelete && o.vtype == versionInternal && !o.requireAlias &&
		s.indices[o.index] == nil && !s.aliasExists(o.index) {
		return fail(indexNotFound(o.index))
	}
	ix, alias, err := s.resolveWrite(o.index, o.requireAlias)
	if err != nil {
		return fail(err)
	}
	res.index = ix.name
	routing, err := aliasRouting(o.index, alias, o.routing)
	if err != nil {
		return fail(err)
	}
	if routing == "" && ix.mapping.routingRequired {
		id := o.id
		if !o.hasID {
			id = "null"
		}
		return fail(&osError{Status: 400, Type: "routing_missing_exception", Index: ix.name,
			Reason: "routing is required for [" + ix.name + "]/[" + id + "]"})
	}
	id := o.id
	if o.kind == opIndex || o.kind == opCreate {
		if o.hasID && id == "" {
			return fail(illegalArgument("if _id is specified it must not be empty"))
		}
		if !o.hasID {
			if o.autoID == "" {
				o.autoID = s.newID()
			}
			id = o.autoID
			res.id, res.idNull = id, false
		}
	}
	if wc.bulk {
		if e := s.faults.rejectItem(); e != nil {
			return fail(e)
		}
	}
	if e := ix.writeBlocked(s); e != nil {
		return fail(e)
	}
	if !wc.touched[ix] {
		// A periodic refresh that fell due before this write happens
		// before it, so the write waits for the next one.
		ix.maybeRefresh(wc.now)
		wc.touched[ix] = true
	}
	shardNum := ix.shardFor(routing, id)
	sh := ix.shards[shardNum]
	if !wc.wait.count.metBy(ix) {
		return fail(wc.wait.count.unavailable(ix, shardNum, wc.wait.timeout))
	}
	// _shards.total counts every copy, unassigned replicas too
	// (ReplicationOperation adds the skipped shards to the total);
	// successful counts the copies the emulated nodes can hold.
	res.total, res.ok = 1+ix.replicas, 1+min(ix.replicas, nodes-1)
	switch o.kind {
	case opIndex, opCreate:
		err = ix.indexDoc(&res, shardNum, o, id, routing, o.source, o.expectedVersion(), !o.hasID, wc.now)
	case opDelete:
		err = ix.deleteDoc(&res, shardNum, o, id, wc.now)
	case opUpdate:
		err = ix.updateDoc(&res, shardNum, o, id, routing, wc.now)
	}
	if err != nil {
		res.total, res.ok = 0, 0
		return fail(err)
	}
	if res.result != "noop" {
		wc.shards[sh] = true
	}
	return res
}

// --- single-document APIs ------------------------------------------------
//
// The server runs index, create and delete as a bulk of one
// (TransportSingleItemBulkWriteAction) and update through the same shard
// code; here all of them go through apply. An item failure becomes the
// HTTP error with the item's status.

// setParams reads the query parameters shared by the write APIs.
func (o *op) setParams(q *request) *osError {
	o.routing = q.param("routing")
	o.pipeline = q.param("pipeline")
	var err *osError
	if v, ok := q.query["version"]; ok {
		if o.version, err = longParam("version", v); err != nil {
			return err
		}
	}
	if v, ok := q.query["version_type"]; ok {
		if o.vtype, err = parseVersionType(v); err != nil {
			return err
		}
	}
	if v, ok := q.query["if_seq_no"]; ok {
		if o.ifSeqNo, err = longParam("if_seq_no", v); err != nil {
			return err
		}
		if o.ifSeqNo < 0 && o.ifSeqNo != unassignedSeqNo {
			return illegalArgument("sequence numbers must be non negative. got [" + v + "].")
		}
	}
	if v, ok := q.query["if_primary_term"]; ok {
		if o.ifTerm, err = longParam("if_primary_term", v); err != nil {
			return err
		}
		if o.ifTerm < 0 {
			return illegalArgument("primary term must be non negative. got [" + v + "]")
		}
	}
	if v, ok := q.query["retry_on_conflict"]; ok {
		n, err := longParam("retry_on_conflict", v)
		if err != nil {
			return err
		}
		o.retryOnConflict = int(n)
	}
	o.requireAlias, err = requireAliasParam(q)
	return err
}

func longParam(name, v string) (int64, *osError) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, illegalArgument("Failed to parse long parameter [" + name + "] with value [" + v + "]")
	}
	return n, nil
}

// writeOne validates and applies a single-document write and writes its
// response.
func (s *Server) writeOne(w http.ResponseWriter, q *request, o *op) {
	refresh, err := parseRefresh(q)
	if err == nil {
		err = o.setParams(q)
	}
	var wait writeWait
	if err == nil {
		wait, err = parseWriteWait(q)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	if msgs := o.validate(nil); len(msgs) > 0 {
		writeError(w, validationError(msgs))
		return
	}
	s.awaitWrites(q.r.Context(), []op{*o}, wait)
	s.mu.Lock()
	wc := s.newWriteCtx(false)
	wc.wait = wait
	res := s.apply(o, wc)
	wc.finishWrites(refresh)
	s.mu.Unlock()
	if res.err != nil {
		writeError(w, res.err)
		return
	}
	res.forced = refresh == refreshImmediate
	if res.result == "noop" {
		// The update API answers a noop itself, without a replicated
		// write, so it reports no shards. In a bulk, a noop item reports
		// its shard's replication like every other item of that shard
		// (TransportBulkAction gives each item the shard's ShardInfo).
		res.total, res.ok = 0, 0
	}
	writeRaw(w, res.status, res.appendJSON(nil, false))
}

// handleIndexDoc serves PUT|POST /{index}/_doc/{id}, POST /{index}/_doc
// and PUT|POST /{index}/_create/{id}.
func (s *Server) handleIndexDoc(w http.ResponseWriter, q *request) {
	o := newOp(opIndex)
	o.index = q.vars["index"]
	o.id, o.hasID = q.vars["id"]
	opType, hasOpType := q.query["op_type"]
	switch {
	case q.path[1] == "_create":
		if hasOpType && strings.ToLower(opType) != "create" {
			writeError(w, illegalArgument("opType must be 'create', found: ["+opType+"]"))
			return
		}
		o.kind = opCreate
	case hasOpType:
		switch strings.ToLower(opType) {
		case "create":
			o.kind = opCreate
		case "index":
		default:
			writeError(w, illegalArgument("opType must be 'create' or 'index', found: ["+opType+"]"))
			return
		}
	case !o.hasID:
		o.kind = opCreate // POST without an id defaults to op_type=create
	}
	if len(q.body) == 0 {
		writeError(w, parseError("request body is required"))
		return
	}
	o.source = q.body
	s.writeOne(w, q, &o)
}

// handleDeleteDoc serves DELETE /{index}/_doc/{id}: 200 deleted, or 404
// with result not_found.
func (s *Server) handleDeleteDoc(w http.ResponseWriter, q *request) {
	o := newOp(opDelete)
	o.index, o.id, o.hasID = q.vars["index"], q.vars["id"], true
	s.writeOne(w, q, &o)
}

// handleUpdateDoc serves POST /{index}/_update/{id}.
func (s *Server) handleUpdateDoc(w http.ResponseWriter, q *request) {
	if q.has("version") || q.has("version_type") {
		writeError(w, validationError([]string{"internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead"}))
		return
	}
	if len(bytes.TrimSpace(q.body)) == 0 {
		writeError(w, parseError("request body is required"))
		return
	}
	o := newOp(opUpdate)
	o.index, o.id, o.hasID = q.vars["index"], q.vars["id"], true
	var err *osError
	if o.upd, err = parseUpdateBody(s.dialect, q.body); err != nil {
		writeError(w, err)
		return
	}
	s.writeOne(w, q, &o)
}

// aliasRouting is Metadata.resolveIndexRouting / resolveWriteIndexRouting:
// an alias's index routing replaces the request's, which may only repeat
// it.
func aliasRouting(name string, a *aliasMeta, routing string) (string, *osError) {
	if a == nil || a.IndexRouting == "" {
		return routing, nil
	}
	if strings.Contains(a.IndexRouting, ",") {
		return "", illegalArgument("index/alias [" + name + "] provided with routing value [" + a.IndexRouting + "] that resolved to several routing values, rejecting operation")
	}
	if routing != "" && routing != a.IndexRouting {
		return "", illegalArgument("Alias [" + name + "] has index routing associated with it [" + a.IndexRouting + "], and was provided with routing value [" + routing + "], rejecting operation")
	}
	return a.IndexRouting, nil
}

// getTarget resolves a real-time get: the index (an alias must point to
// exactly one), the shard and the document, or nil. Callers hold mu.
func (s *Server) getTarget(q *request) (*index, *doc, *osError) {
	name, id := q.vars["index"], q.vars["id"]
	ix := s.indices[name]
	var alias *aliasMeta
	if ix == nil {
		ixs := s.aliasIndices(name)
		switch len(ixs) {
		case 0:
			return nil, nil, indexNotFound(name)
		case 1:
			ix, alias = ixs[0], ixs[0].aliases[name]
		default:
			// The server lists the indices in its alias's order, which
			// comes from a hash map; these are sorted.
			names := make([]string, len(ixs))
			for i, x := range ixs {
				names[i] = x.name
			}
			sort.Strings(names)
			return nil, nil, illegalArgument("alias [" + name + "] has more than one index associated with it [" + strings.Join(names, ", ") + "], can't execute a single index op")
		}
	}
	routing, err := aliasRouting(name, alias, q.param("routing"))
	if err != nil {
		return nil, nil, err
	}
	if routing == "" && ix.mapping.routingRequired {
		return nil, nil, &osError{Status: 400, Type: "routing_missing_exception", Index: ix.name,
			Reason: "routing is required for [" + ix.name + "]/[" + id + "]"}
	}
	sh := ix.shards[ix.shardFor(routing, id)]
	if q.boolParam("refresh") {
		sh.refresh()
	}
	if q.has("realtime") && !q.boolParam("realtime") {
		ix.maybeRefresh(s.now())
		return ix, sh.searchable[id], nil
	}
	return ix, sh.live[id], nil
}

// handleGetDoc serves GET|HEAD /{index}/_doc/{id}. It reads the live
// documents (a real-time get), not the refreshed ones. The routing
// selects the shard: with a wrong routing the document is not found.
func (s *Server) handleGetDoc(w http.ResponseWriter, q *request) {
	s.mu.Lock()
	ix, d, err := s.getTarget(q)
	s.mu.Unlock()
	head := q.method == http.MethodHead
	switch {
	case err != nil && head:
		w.WriteHeader(err.Status)
		return
	case err != nil:
		writeError(w, err)
		return
	case head && d == nil:
		w.WriteHeader(404)
		return
	case head:
		w.WriteHeader(200)
		return
	}
	b := append([]byte(`{"_index":`), appendJSONString(nil, ix.name)...)
	b = append(b, `,"_id":`...)
	b = appendJSONString(b, q.vars["id"])
	if d == nil {
		writeRaw(w, 404, append(b, `,"found":false}`...))
		return
	}
	b = append(b, `,"_version":`...)
	b = strconv.AppendInt(b, d.version, 10)
	b = append(b, `,"_seq_no":`...)
	b = strconv.AppendInt(b, d.seqNo, 10)
	b = append(b, `,"_primary_term":`...)
	b = strconv.AppendInt(b, d.term, 10)
	if d.routing != "" {
		b = append(b, `,"_routing":`...)
		b = appendJSONString(b, d.routing)
	}
	b = append(b, `,"found":true`...)
	// _source_includes and _source_excludes are not emulated: the whole
	// source is returned unless _source=false.
	if q.param("_source") != "false" {
		b = append(b, `,"_source":`...)
		b = append(b, d.source...)
	}
	writeRaw(w, 200, append(b, '}'))
}

// handleGetSource serves GET|HEAD /{index}/_source/{id}: the stored
// source as it was given.
func (s *Server) handleGetSource(w http.ResponseWriter, q *request) {
	s.mu.Lock()
	ix, d, err := s.getTarget(q)
	s.mu.Unlock()
	if err == nil && d == nil {
		err = &osError{Status: 404, Type: "resource_not_found_exception",
			Reason: "Document not found [" + ix.name + "]/[" + q.vars["id"] + "]"}
	}
	switch {
	case err != nil && q.method == http.MethodHead:
		w.WriteHeader(err.Status)
	case err != nil:
		writeError(w, err)
	case q.method == http.MethodHead:
		w.WriteHeader(200)
	default:
		writeRaw(w, 200, d.source)
	}
}

// --- rendering ------------------------------------------------------------

// appendJSON renders a DocWriteResponse (with "status" in a bulk item) or
// a bulk item failure.
func (r *itemResult) appendJSON(b []byte, withStatus bool) []byte {
	b = append(b, `{"_index":`...)
	b = appendJSONString(b, r.index)
	b = append(b, `,"_id":`...)
	if r.idNull {
		b = append(b, "null"...)
	} else {
		b = appendJSONString(b, r.id)
	}
	if r.err != nil {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(r.status), 10)
		eb, _ := json.Marshal(r.err.body())
		b = append(b, `,"error":`...)
		b = append(b, eb...)
		return append(b, '}')
	}
	b = append(b, `,"_version":`...)
	b = strconv.AppendInt(b, r.version, 10)
	b = append(b, `,"result":"`...)
	b = append(b, r.result...)
	b = append(b, '"')
	if r.forced {
		b = append(b, `,"forced_refresh":true`...)
	}
	b = append(b, `,"_shards":{"total":`...)
	b = strconv.AppendInt(b, int64(r.total), 10)
	b = append(b, `,"successful":`...)
	b = strconv.AppendInt(b, int64(r.ok), 10)
	b = append(b, `,"failed":0},"_seq_no":`...)
	b = strconv.AppendInt(b, r.seqNo, 10)
	b = append(b, `,"_primary_term":`...)
	b = strconv.AppendInt(b, primaryTerm, 10)
	if withStatus {
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(r.status), 10)
	}
	return append(b, '}')
}

// appendJSONString quotes s as the server's JSON generator does: only
// quotes, backslashes and control characters are escaped. Invalid UTF-8
// becomes U+FFFD so the output stays valid JSON.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRuneInString(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, s[i:i+size]...)
			}
			i += size
			continue
		}
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c == '\n':
			b = append(b, '\\', 'n')
		case c == '\r':
			b = append(b, '\\', 'r')
		case c == '\t':
			b = append(b, '\\', 't')
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
		i++
	}
	return append(b, '"')
}

// writeRaw writes an encoded JSON body.
func writeRaw(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}
