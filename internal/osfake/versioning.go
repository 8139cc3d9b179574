package osfake

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The primary shard's part of a write: the version rules (VersionType,
// the validation of IndexRequest, DeleteRequest and UpdateRequest, and
// InternalEngine.planIndexingAsPrimary / planDeletionAsPrimary), document
// parsing, and the update merge. Index and delete share one version check,
// which is what makes an externally versioned delete reject an older
// write.

// Sentinel versions and sequence numbers, as in Versions and
// SequenceNumbers.
const (
	versionMatchAny     int64 = -3 // no version given
	versionMatchDeleted int64 = -4 // create: the document must not exist
	versionNotFound     int64 = -1 // the engine has never seen the id
	unassignedSeqNo     int64 = -2
	unassignedTerm      int64 = 0
	// primaryTerm is the term of every primary: the emulator never fails
	// a primary over.
	primaryTerm int64 = 1
)

// versionType is VersionType: internal, external (alias external_gt) or
// external_gte.
type versionType uint8

const (
	versionInternal versionType = iota
	versionExternal
	versionExternalGTE
)

func parseVersionType(s string) (versionType, *osError) {
	switch s {
	case "internal":
		return versionInternal, nil
	case "external", "external_gt":
		return versionExternal, nil
	case "external_gte":
		return versionExternalGTE, nil
	}
	return 0, illegalArgument("No version type match [" + s + "]")
}

// String is the enum name the server prints in validation errors.
func (vt versionType) String() string {
	switch vt {
	case versionExternal:
		return "EXTERNAL"
	case versionExternalGTE:
		return "EXTERNAL_GTE"
	}
	return "INTERNAL"
}

// conflict is isVersionConflictForWrites. For the external types a
// tombstone counts as found with its version: deleted is ignored.
func (vt versionType) conflict(current, expected int64, deleted bool) bool {
	switch vt {
	case versionExternal:
		return current != versionNotFound && (expected == versionMatchAny || current >= expected)
	case versionExternalGTE:
		return current != versionNotFound && (expected == versionMatchAny || current > expected)
	}
	switch {
	case expected == versionMatchAny:
		return false
	case expected == versionMatchDeleted:
		return !deleted
	case current == versionNotFound:
		return true
	}
	return current != expected
}

// explain is explainConflictForWrites.
func (vt versionType) explain(current, expected int64) string {
	c, e := strconv.FormatInt(current, 10), strconv.FormatInt(expected, 10)
	switch vt {
	case versionExternal:
		return "current version [" + c + "] is higher or equal to the one provided [" + e + "]"
	case versionExternalGTE:
		return "current version [" + c + "] is higher than the one provided [" + e + "]"
	}
	switch {
	case expected == versionMatchDeleted:
		return "document already exists (current version [" + c + "])"
	case current == versionNotFound:
		return "document does not exist (expected version [" + e + "])"
	}
	return "current version [" + c + "] is different than the one provided [" + e + "]"
}

// next is updateVersion: the version the write stores.
func (vt versionType) next(current, expected int64) int64 {
	if vt != versionInternal {
		return expected
	}
	if current == versionNotFound {
		return 1
	}
	return current + 1
}

// validForWrites is validateVersionForWrites.
func (vt versionType) validForWrites(v int64) bool {
	if vt != versionInternal {
		return v >= 0
	}
	return v > 0 || v == versionMatchAny || v == versionMatchDeleted
}

// validationError is ActionRequestValidationException: every message of
// every request, numbered, each followed by ';'.
func validationError(msgs []string) *osError {
	var b strings.Builder
	b.WriteString("Validation Failed: ")
	for i, m := range msgs {
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(": ")
		b.WriteString(m)
		b.WriteByte(';')
	}
	return &osError{Status: 400, Type: "action_request_validation_exception", Reason: b.String()}
}

// expectedVersion is IndexRequest.resolveVersionDefaults: a create
// without a version expects the document to be absent.
func (o *op) expectedVersion() int64 {
	if o.kind == opCreate && o.version == versionMatchAny {
		return versionMatchDeleted
	}
	return o.version
}

// validate appends the messages of the request's validate() to msgs.
// A bulk merges the messages of all its items into one 400, so the whole
// request fails; nothing is applied.
func (o *op) validate(msgs []string) []string {
	if o.index == "" {
		msgs = append(msgs, "index is missing")
	}
	switch o.kind {
	case opIndex, opCreate:
		resolved := o.expectedVersion()
		if o.kind == opCreate {
			switch {
			case o.vtype != versionInternal:
				return append(msgs, "create operations only support internal versioning. use index instead")
			case resolved != versionMatchDeleted:
				return append(msgs, "create operations do not support explicit versions. use index instead")
			case o.ifSeqNo != unassignedSeqNo || o.ifTerm != unassignedTerm:
				return append(msgs, "create operations do not support compare and set. use index instead")
			}
		}
		if !o.hasID && (o.vtype != versionInternal || (resolved != versionMatchDeleted && resolved != versionMatchAny)) {
			msgs = append(msgs, "an id must be provided if version type or value are set")
		}
		msgs = o.validateCAS(msgs, resolved)
		msgs = o.validateIDLength(msgs)
	case opDelete:
		if o.id == "" {
			msgs = append(msgs, "id is missing")
		}
		msgs = o.validateCAS(msgs, o.version)
		msgs = o.validateIDLength(msgs)
	case opUpdate:
		u := o.upd
		if o.id == "" {
			msgs = append(msgs, "id is missing")
		}
		msgs = o.validateCAS(msgs, o.version)
		msgs = o.validateIDLength(msgs)
		if o.ifSeqNo != unassignedSeqNo {
			if o.retryOnConflict > 0 {
				msgs = append(msgs, "compare and write operations can not be retried")
			}
			if u.docAsUpsert {
				msgs = append(msgs, "compare and write operations can not be used with upsert")
			}
			if u.upsert != nil {
				msgs = append(msgs, "upsert requests don't support `if_seq_no` and `if_primary_term`")
			}
		}
		switch {
		case !u.script && u.doc == nil:
			msgs = append(msgs, "script or doc is missing")
		case u.script && u.doc != nil:
			msgs = append(msgs, "can't provide both script and doc")
		}
		if u.doc == nil && u.docAsUpsert {
			msgs = append(msgs, "doc must be specified if doc_as_upsert is enabled")
		}
	}
	return msgs
}

// validateCAS is DocWriteRequest.validateSeqNoBasedCASParams.
func (o *op) validateCAS(msgs []string, version int64) []string {
	if !o.vtype.validForWrites(version) {
		msgs = append(msgs, "illegal version value ["+strconv.FormatInt(version, 10)+"] for version type ["+o.vtype.String()+"]")
	}
	if o.vtype == versionInternal && version != versionMatchAny && version != versionMatchDeleted {
		msgs = append(msgs, "internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead")
	}
	if o.ifSeqNo != unassignedSeqNo && (o.vtype != versionInternal || version != versionMatchAny) {
		msgs = append(msgs, "compare and write operations can not use versioning")
	}
	if o.ifTerm == unassignedTerm && o.ifSeqNo != unassignedSeqNo {
		msgs = append(msgs, "ifSeqNo is set, but primary term is [0]")
	}
	if o.ifTerm != unassignedTerm && o.ifSeqNo == unassignedSeqNo {
		msgs = append(msgs, "ifSeqNo is unassigned, but primary term is ["+strconv.FormatInt(o.ifTerm, 10)+"]")
	}
	return msgs
}

// validateIDLength is DocWriteRequest.validateDocIdLength: ids are at most
// 512 bytes of UTF-8.
func (o *op) validateIDLength(msgs []string) []string {
	if len(o.id) > 512 {
		return append(msgs, "id ["+o.id+"] is too long, must be no longer than 512 bytes but was: "+strconv.Itoa(len(o.id)))
	}
	return msgs
}

// engineState is what the engine knows about an id on a shard.
type engineState struct {
	version int64 // versionNotFound when never seen (or its tombstone expired)
	seqNo   int64
	deleted bool // absent: never seen, or a live tombstone
}

// lookup is InternalEngine.resolveDocVersion: the live document, a
// tombstone younger than index.gc_deletes, or nothing.
func (ix *index) lookup(sh *shard, id string, now time.Time) engineState {
	v, seq, found, deleted := sh.current(id, now, ix.gcDeletes)
	if !found {
		return engineState{version: versionNotFound, seqNo: unassignedSeqNo, deleted: true}
	}
	return engineState{version: v, seqNo: seq, deleted: deleted}
}

// plan decides whether a write of o against cur goes ahead and with which
// version: first the compare-and-set of if_seq_no/if_primary_term, then
// the version type's rule. expected is the version the request carries.
func (ix *index) plan(shardNum int, o *op, id string, cur engineState, expected int64) (int64, *osError) {
	if o.ifSeqNo != unassignedSeqNo {
		if cur.deleted {
			return 0, ix.versionConflict(shardNum, id, seqConflict(o.ifSeqNo, o.ifTerm, unassignedSeqNo, 0))
		}
		if cur.seqNo != o.ifSeqNo || o.ifTerm != primaryTerm {
			return 0, ix.versionConflict(shardNum, id, seqConflict(o.ifSeqNo, o.ifTerm, cur.seqNo, primaryTerm))
		}
	}
	if o.vtype.conflict(cur.version, expected, cur.deleted) {
		return 0, ix.versionConflict(shardNum, id, o.vtype.explain(cur.version, expected))
	}
	return o.vtype.next(cur.version, expected), nil
}

func seqConflict(ifSeqNo, ifTerm, curSeqNo, curTerm int64) string {
	s := "required seqNo [" + strconv.FormatInt(ifSeqNo, 10) + "], primary term [" + strconv.FormatInt(ifTerm, 10) + "]."
	if curSeqNo == unassignedSeqNo {
		return s + " but no document was found"
	}
	return s + " current document has seqNo [" + strconv.FormatInt(curSeqNo, 10) + "] and primary term [" + strconv.FormatInt(curTerm, 10) + "]"
}

// versionConflict is VersionConflictEngineException: a shard-level error,
// so it names the index, its uuid and the shard.
func (ix *index) versionConflict(shardNum int, id, explanation string) *osError {
	return ix.shardError(shardNum, 409, "version_conflict_engine_exception", "["+id+"]: version conflict, "+explanation)
}

// shardError is an EngineException raised on a shard.
func (ix *index) shardError(shardNum, status int, typ, reason string) *osError {
	return &osError{Status: status, Type: typ, Reason: reason, Index: ix.name, UUID: ix.uuid, Shard: strconv.Itoa(shardNum)}
}

// --- the primary's part of a write ------------------------------------

// indexDoc parses and stores a document. The source is parsed and the
// mapping updated before the version check, as on the primary, so a
// conflicting write still adds its new fields to the mapping.
func (ix *index) indexDoc(res *itemResult, shardNum int, o *op, id, routing string, src []byte, expected int64, autoID bool, now time.Time) *osError {
	fields, err := decodeSource(src)
	if err != nil {
		return err
	}
	if err := ix.checkDoc(fields, id, routing); err != nil {
		return err
	}
	if err := ix.mapping.addDynamic(fields); err != nil {
		return err
	}
	sh := ix.shards[shardNum]
	cur := ix.lookup(sh, id, now)
	version := int64(1) // an auto id cannot exist yet: the engine skips the lookup
	if !autoID {
		if version, err = ix.plan(shardNum, o, id, cur, expected); err != nil {
			return err
		}
	}
	d := &doc{id: id, routing: routing, source: bytes.Clone(src), fields: fields, version: version, term: primaryTerm}
	res.seqNo = sh.put(d)
	res.version = version
	if cur.deleted {
		res.result, res.status = "created", 201
	} else {
		res.result, res.status = "updated", 200
	}
	return nil
}

// deleteDoc deletes through the same version check as an index. A delete
// of a missing document still goes through the engine: it takes a
// sequence number and leaves a tombstone with its version (1 for
// internal versioning, the given one for external), and reports
// not_found. ASSUMPTION: the reference leaves open whether the external
// case records a tombstone; InternalEngine.planDeletionAsPrimary treats a
// missing document as deleted and deleteUnderLock records the delete
// either way, so the emulator does too.
func (ix *index) deleteDoc(res *itemResult, shardNum int, o *op, id string, now time.Time) *osError {
	sh := ix.shards[shardNum]
	cur := ix.lookup(sh, id, now)
	version, err := ix.plan(shardNum, o, id, cur, o.version)
	if err != nil {
		return err
	}
	res.seqNo = sh.remove(id, version, now)
	res.version = version
	if cur.deleted {
		res.result, res.status = "not_found", 404
	} else {
		res.result, res.status = "deleted", 200
	}
	return nil
}

// updateDoc is UpdateHelper.prepare followed by the index it produces: a
// missing document is upserted (or document_missing_exception), a found
// one gets the partial doc merged in, and an unchanged merge is a noop.
func (ix *index) updateDoc(res *itemResult, shardNum int, o *op, id, routing string, now time.Time) *osError {
	u := o.upd
	if u.script {
		return &osError{Status: 501, Type: "osfake_not_implemented", Reason: "osfake does not emulate scripted updates"}
	}
	sh := ix.shards[shardNum]
	d := sh.live[id]
	if d != nil && o.ifSeqNo != unassignedSeqNo && (d.seqNo != o.ifSeqNo || o.ifTerm != primaryTerm) {
		return ix.versionConflict(shardNum, id, seqConflict(o.ifSeqNo, o.ifTerm, d.seqNo, primaryTerm))
	}
	if d == nil {
		src := u.upsert
		if u.docAsUpsert {
			src = u.doc
		}
		if src == nil {
			return ix.shardError(shardNum, 404, "document_missing_exception", "["+id+"]: document missing")
		}
		create := newOp(opCreate)
		return ix.indexDoc(res, shardNum, &create, id, routing, src, versionMatchDeleted, false, now)
	}
	merged, changed, err := mergeSource(d.source, u.doc, u.detectNoop)
	if err != nil {
		return err
	}
	if u.detectNoop && !changed {
		res.version, res.seqNo, res.result, res.status = d.version, d.seqNo, "noop", 200
		res.total, res.ok = 0, 0
		return nil
	}
	if routing == "" {
		routing = d.routing
	}
	reindex := newOp(opIndex)
	return ix.indexDoc(res, shardNum, &reindex, id, routing, merged, versionMatchAny, false, now)
}

// --- update merge ---------------------------------------------------------

// jsonField is one member of a JSON object, kept in document order.
type jsonField struct {
	key string
	val json.RawMessage
}

func objectFields(raw []byte) ([]jsonField, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	var out []jsonField
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		out = append(out, jsonField{key: tok.(string), val: v})
	}
	return out, nil
}

func isObject(raw []byte) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

// mergeSource is XContentHelper.update: changes are merged into the old
// source, objects recursively, everything else (arrays too) replaced; new
// keys go last. modified reports a change, compared by value when check
// is set (detect_noop). The result is compact JSON in document order, as
// the server re-serialises it.
func mergeSource(old, changes []byte, check bool) ([]byte, bool, *osError) {
	out, modified, err := mergeObjects(old, changes, check)
	if err != nil {
		return nil, false, mapperParsing(jsonParseError(err))
	}
	var b bytes.Buffer
	if err := json.Compact(&b, out); err != nil {
		return nil, false, mapperParsing(jsonParseError(err))
	}
	return b.Bytes(), modified, nil
}

func mergeObjects(old, changes []byte, check bool) ([]byte, bool, error) {
	of, err := objectFields(old)
	if err != nil {
		return nil, false, err
	}
	cf, err := objectFields(changes)
	if err != nil {
		return nil, false, err
	}
	modified := false
	for _, c := range cf {
		i := slicesIndex(of, c.key)
		if i < 0 {
			of = append(of, c)
			modified = true
			continue
		}
		if isObject(of[i].val) && isObject(c.val) {
			merged, m, err := mergeObjects(of[i].val, c.val, check && !modified)
			if err != nil {
				return nil, false, err
			}
			of[i].val = merged
			modified = modified || m
			continue
		}
		prev := of[i].val
		of[i].val = c.val
		if !modified {
			modified = !check || !jsonEqual(prev, c.val)
		}
	}
	b := []byte{'{'}
	for i, f := range of {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, f.key)
		b = append(b, ':')
		b = append(b, f.val...)
	}
	return append(b, '}'), modified, nil
}

func slicesIndex(fs []jsonField, key string) int {
	for i := range fs {
		if fs[i].key == key {
			return i
		}
	}
	return -1
}

// jsonEqual compares two JSON values the way Objects.equals compares the
// parsed maps: 1 and 1.0 differ.
func jsonEqual(a, b []byte) bool {
	var x, y any
	da := json.NewDecoder(bytes.NewReader(a))
	da.UseNumber()
	db := json.NewDecoder(bytes.NewReader(b))
	db.UseNumber()
	if da.Decode(&x) != nil || db.Decode(&y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// --- document parsing --------------------------------------------------

// mapperParsing is MapperParsingException("failed to parse", cause).
func mapperParsing(cause *osError) *osError {
	return &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "failed to parse", CausedBy: cause}
}

// decodeSource decodes a document source once, numbers as json.Number,
// the way DocumentParser reads it: it must be one JSON object with
// nothing after it.
func decodeSource(src []byte) (map[string]any, *osError) {
	start := bytes.TrimLeft(src, " \t\r\n")
	if len(start) == 0 || start[0] != '{' {
		return nil, &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "Malformed content, must start with an object"}
	}
	dec := json.NewDecoder(bytes.NewReader(src))
	dec.UseNumber()
	var v any // decoding into an interface avoids reflection on the map
	if err := dec.Decode(&v); err != nil {
		return nil, mapperParsing(jsonParseError(err))
	}
	fields, _ := v.(map[string]any)
	tok, err := dec.Token()
	switch {
	case err == io.EOF:
		return fields, nil
	case err != nil:
		return nil, mapperParsing(jsonParseError(err))
	}
	return nil, mapperParsing(&osError{Type: "illegal_argument_exception", Reason: "Malformed content, found extra data after parsing: " + xToken(tok)})
}

// checkDoc runs the field checks of document parsing that can fail a
// write: the join field's rules and values that do not fit a numeric or
// boolean mapping.
func (ix *index) checkDoc(fields map[string]any, id, routing string) *osError {
	if j := ix.mapping.join; j != nil {
		if v, ok := lookupPath(fields, j.name); ok && v != nil {
			if err := j.check(v, routing); err != nil {
				return mapperParsing(err)
			}
		}
	}
	var bad []string
	ix.collectBadValues("", fields, &bad)
	if len(bad) == 0 {
		return nil
	}
	// The server reports the first bad field in document order; the
	// decoded map has none, so the smallest path is reported.
	sort.Strings(bad)
	return ix.badValue(bad[0], fields, id)
}

func lookupPath(fields map[string]any, path string) (any, bool) {
	var cur any = fields
	for _, part := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// check is ParentJoinFieldMapper.parse: the value is a relation name or
// {"name":..., "parent":...}; a child needs a parent and routing.
func (j *joinField) check(v any, routing string) *osError {
	name, hasName, hasParent := "", false, false
	switch x := v.(type) {
	case string:
		name, hasName = x, true
	case map[string]any:
		for k, val := range x {
			switch val := val.(type) {
			case string:
				switch k {
				case "name":
					name, hasName = val, true
				case "parent":
					hasParent = true
				default:
					return illegalArgument("unknown field name [" + k + "] in join field [" + j.name + "]")
				}
			case json.Number:
				if k != "parent" {
					return illegalArgument("unknown field name [" + k + "] in join field [" + j.name + "]")
				}
				hasParent = true
			}
		}
	default:
		return &osError{Type: "illegal_state_exception", Reason: "[null] expected START_OBJECT or VALUE_STRING but was: " + xValueToken(v)}
	}
	if !hasName {
		name = "null"
	}
	if !j.known(name) {
		return illegalArgument("unknown join name [" + name + "] for field [" + j.name + "]")
	}
	if _, child := j.parentOf(name); child {
		if !hasParent {
			return illegalArgument("[parent] is missing for join field [" + j.name + "]")
		}
		if routing == "" {
			return illegalArgument("[routing] is missing for join field [" + j.name + "]")
		}
	}
	return nil
}

var numericTypes = map[string]bool{"long": true, "integer": true, "short": true, "byte": true,
	"double": true, "float": true, "half_float": true, "scaled_float": true}

// collectBadValues appends the paths of values their mapped type
// rejects. Only strings and booleans can be rejected, so only their paths
// are built.
func (ix *index) collectBadValues(prefix string, v map[string]any, bad *[]string) {
	for k, val := range v {
		switch x := val.(type) {
		case map[string]any:
			path := prefix + k
			if typ := ix.mapping.fieldType(path); typ == "" || typ == "object" || typ == "nested" {
				ix.collectBadValues(path+".", x, bad)
			}
		case []any:
			for _, e := range x {
				switch e := e.(type) {
				case map[string]any:
					ix.collectBadValues(prefix+k+".", e, bad)
				case string, bool:
					if scalarRejected(ix.mapping.fieldType(prefix+k), e) != nil {
						*bad = append(*bad, prefix+k)
					}
				}
			}
		case string, bool:
			if scalarRejected(ix.mapping.fieldType(prefix+k), val) != nil {
				*bad = append(*bad, prefix+k)
			}
		}
	}
}

// scalarRejected returns the cause when a mapped type rejects a value.
// Numbers accept numeric strings (coercion); booleans accept "true",
// "false" and "".
func scalarRejected(typ string, v any) *osError {
	switch {
	case numericTypes[typ]:
		switch x := v.(type) {
		case string:
			if _, err := strconv.ParseFloat(strings.TrimSpace(x), 64); err != nil {
				return &osError{Type: "number_format_exception", Reason: "For input string: \"" + x + "\""}
			}
		case bool:
			return &osError{Type: "json_parse_exception", Reason: "Current token (" + xValueToken(x) + ") not numeric, can not use numeric value accessors"}
		}
	case typ == "boolean":
		if x, ok := v.(string); ok && x != "true" && x != "false" && x != "" {
			return illegalArgument("Failed to parse value [" + x + "] as only [true] or [false] are allowed.")
		}
	}
	return nil
}

func (ix *index) badValue(path string, fields map[string]any, id string) *osError {
	v, _ := lookupPath(fields, path)
	if arr, ok := v.([]any); ok {
		for _, e := range arr {
			if scalarRejected(ix.mapping.fieldType(path), e) != nil {
				v = e
				break
			}
		}
	}
	typ := ix.mapping.fieldType(path)
	return &osError{Status: 400, Type: "mapper_parsing_exception",
		Reason:   "failed to parse field [" + path + "] of type [" + typ + "] in document with id '" + id + "'. Preview of field's value: '" + scalarString(v) + "'",
		CausedBy: scalarRejected(typ, v)}
}
