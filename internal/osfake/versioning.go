package osfake

import (
	"bytes"
	"strconv"
	"strings"
	"time"
)

// The primary shard's part of a write: the version rules (VersionType,
// the validation of IndexRequest, DeleteRequest and UpdateRequest, and
// InternalEngine.planIndexingAsPrimary / planDeletionAsPrimary) and the
// index, delete and update that apply them (the source itself is decoded,
// checked and merged in source.go). Index and delete share one version
// check, which is what makes an externally versioned delete reject an
// older write.

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
	fields, err := decodeSource(ix.dialect, src)
	if err != nil {
		return err
	}
	if err := ix.parseDoc(src, fields, id, routing); err != nil {
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
	merged, changed, err := mergeSource(ix.dialect, d.source, u.doc, u.detectNoop)
	if err != nil {
		return err
	}
	if u.detectNoop && !changed {
		res.version, res.seqNo, res.result, res.status = d.version, d.seqNo, "noop", 200
		return nil
	}
	if routing == "" {
		routing = d.routing
	}
	reindex := newOp(opIndex)
	return ix.indexDoc(res, shardNum, &reindex, id, routing, merged, versionMatchAny, false, now)
}
