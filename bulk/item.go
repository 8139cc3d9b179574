package bulk

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// Action is a bulk operation.
type Action uint8

const (
	// Index creates or replaces a document.
	Index Action = iota
	// Delete removes a document.
	Delete
	// Create creates a document that must not exist yet.
	Create
	// Update applies a partial document ({"doc":{...}} body).
	Update
)

func (a Action) String() string {
	switch a {
	case Index:
		return "index"
	case Delete:
		return "delete"
	case Create:
		return "create"
	case Update:
		return "update"
	}
	return "action(" + strconv.Itoa(int(a)) + ")"
}

// VersionType is OpenSearch's version_type.
type VersionType uint8

const (
	// Internal versioning: the server counts versions itself.
	Internal VersionType = iota
	// External: the write succeeds only if its version is greater than the
	// stored one.
	External
	// ExternalGTE: the write succeeds if its version is greater than or
	// equal to the stored one.
	ExternalGTE
)

func (v VersionType) String() string {
	switch v {
	case External:
		return "external"
	case ExternalGTE:
		return "external_gte"
	}
	return "internal"
}

// Item is one operation to write.
type Item struct {
	Action Action
	// Index is the index or alias to write to.
	Index string
	// ID is the document _id; required.
	ID string
	// Routing is the routing value; empty means none.
	Routing string
	// Version and VersionType: with External or ExternalGTE, Version is the
	// document's version in the source system.
	Version     int64
	VersionType VersionType
	// IfSeqNo and IfPrimaryTerm, set together, make the item apply only
	// while the stored document is still at that sequence number and
	// primary term (optimistic concurrency, as DocOptions does for one
	// document): a document changed since, or gone, fails with 409, which
	// Classify makes Permanent (Result.Status 409). Not with external
	// versioning.
	IfSeqNo, IfPrimaryTerm *int64
	// Body is the document source (Index, Create) or the update body
	// (Update), raw JSON passed through untouched. Delete has none.
	Body []byte
	// Shard is the geoshard the item belongs to: its queue and its metrics
	// label. Empty means Index + "/" + Routing.
	Shard string
	// Ref is the caller's own reference, returned in the Result.
	Ref any
}

func (it *Item) external() bool { return it.VersionType != Internal }

// shardKey is the item's queue.
func (it *Item) shardKey() string {
	if it.Shard != "" {
		return it.Shard
	}
	return it.Index + "/" + it.Routing
}

// size is the item's share of the memory budget: its body and its action
// line, estimated.
func (it *Item) size() int {
	return len(it.Body) + len(it.Index) + len(it.ID) + len(it.Routing) + 96
}

// Outcome is how an item ended.
type Outcome uint8

const (
	// OK: the server applied the item.
	OK Outcome = iota
	// Stale: 409 under external versioning — the shard holds the item's
	// version or a newer one: a newer write superseded the item, or an
	// earlier attempt of this very item was applied though its answer was
	// lost (Result.Stored equal to Item.Version). Success either way.
	Stale
	// NotFound: a delete of a document that was not there; success.
	NotFound
	// Permanent: the server rejected the item for good; Err is an
	// *ItemError. Send it to a dead-letter queue.
	Permanent
	// Failed: the writer gave up — retry budget exhausted or closed first
	// — or Admin.Bulk, which sends once, met a refusal worth resending.
	// Err says why. The item may or may not have been applied.
	Failed
)

func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Stale:
		return "stale"
	case NotFound:
		return "not_found"
	case Permanent:
		return "permanent"
	case Failed:
		return "failed"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// Succeeded reports whether the outcome means the document is as the item
// wanted it (or newer): OK, Stale or NotFound.
func (o Outcome) Succeeded() bool { return o == OK || o == Stale || o == NotFound }

// Result is the outcome of one item.
type Result struct {
	Item    *Item
	Outcome Outcome
	// Err is an *ItemError for Permanent, and wraps ErrRetryBudget or
	// ErrClosed for Failed (from Admin.Bulk: the *ItemError).
	Err error
	// Status is the server's status for the item (0 if none was received).
	Status int
	// Stored is, for a Stale item, the version the shard holds (a
	// document's or a delete's tombstone), read from the conflict's reason;
	// 0 when it does not say. Equal to Item.Version, it is the item's own
	// write, landed by an attempt whose answer was lost.
	Stored int64
	// Attempts is the number of requests that carried the item (or the
	// newer version that superseded it).
	Attempts int
	// Coalesced is true when a newer version of the same document in the
	// same batch was sent instead; the outcome is that version's.
	Coalesced bool
	// Latency is the time from Add to the outcome.
	Latency time.Duration

	seq  uint64 // the item's place in Add order, for Flush
	call *call  // the Do call waiting for the result, if any
	idx  int    // the item's place in that call
}

// appendActionLine appends the NDJSON action line of an item, without
// reflection: {"index":{"_index":"menu","_id":"r1","routing":"ares","version":17,"version_type":"external"}}\n
// (a conditional item ends with "if_seq_no":12,"if_primary_term":1).
func appendActionLine(b []byte, it *Item) []byte {
	b = append(b, `{"`...)
	b = append(b, it.Action.String()...)
	b = append(b, `":{"_index":`...)
	b = appendJSONString(b, it.Index)
	b = append(b, `,"_id":`...)
	b = appendJSONString(b, it.ID)
	if it.Routing != "" {
		b = append(b, `,"routing":`...)
		b = appendJSONString(b, it.Routing)
	}
	if it.VersionType != Internal {
		b = append(b, `,"version":`...)
		b = strconv.AppendInt(b, it.Version, 10)
		b = append(b, `,"version_type":"`...)
		b = append(b, it.VersionType.String()...)
		b = append(b, '"')
	}
	if it.IfSeqNo != nil {
		b = append(b, `,"if_seq_no":`...)
		b = strconv.AppendInt(b, *it.IfSeqNo, 10)
	}
	if it.IfPrimaryTerm != nil {
		b = append(b, `,"if_primary_term":`...)
		b = strconv.AppendInt(b, *it.IfPrimaryTerm, 10)
	}
	return append(b, "}}\n"...)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
