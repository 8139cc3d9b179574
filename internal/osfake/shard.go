package osfake

import (
	"encoding/json"
	"time"
)

// doc is one stored document version.
type doc struct {
	id      string
	routing string // "" when indexed without routing
	source  json.RawMessage
	fields  map[string]any // source decoded with UseNumber
	version int64
	seqNo   int64
	term    int64
}

// tombstone remembers a delete for index.gc_deletes, so that an older
// externally versioned write cannot bring the document back while it lasts.
type tombstone struct {
	version int64
	seqNo   int64
	at      time.Time
}

// shard is one primary shard. live is what writes see; searchable is what
// search, count and _cat see: the state as of the last refresh. Writes
// since the last refresh are listed in pending, so a refresh costs only the
// changed documents. A point in time holds a searchable map; the shard
// then copies the map before its next refresh changes it (copy on write).
type shard struct {
	num        int
	live       map[string]*doc
	tombs      map[string]tombstone
	searchable map[string]*doc
	shared     bool
	pending    map[string]struct{}
	seqNo      int64 // last assigned sequence number; -1 before the first
	// deletedDocs counts deletes and overwrites since creation, for _cat
	// and _stats-like reporting.
	deletedDocs int64
}

func newShard(num int) *shard {
	return &shard{
		num:        num,
		live:       make(map[string]*doc),
		tombs:      make(map[string]tombstone),
		searchable: make(map[string]*doc),
		pending:    make(map[string]struct{}),
		seqNo:      -1,
	}
}

// current returns the live version of id for a versioned write: the
// document, or a tombstone younger than gcDeletes (found with the delete's
// version), or not found. Older tombstones are pruned here, the way the
// engine prunes them: after that the id reads as never seen.
func (sh *shard) current(id string, now time.Time, gcDeletes time.Duration) (version, seqNo int64, found, deleted bool) {
	if d, ok := sh.live[id]; ok {
		return d.version, d.seqNo, true, false
	}
	if t, ok := sh.tombs[id]; ok {
		if gcDeletes >= 0 && now.Sub(t.at) < gcDeletes {
			return t.version, t.seqNo, true, true
		}
		delete(sh.tombs, id)
	}
	return 0, 0, false, false
}

// put stores a document version and returns its sequence number.
func (sh *shard) put(d *doc) int64 {
	sh.seqNo++
	d.seqNo = sh.seqNo
	if _, ok := sh.live[d.id]; ok {
		sh.deletedDocs++
	}
	sh.live[d.id] = d
	delete(sh.tombs, d.id)
	sh.pending[d.id] = struct{}{}
	return d.seqNo
}

// remove deletes id, leaving a tombstone with the delete's version, and
// returns the delete's sequence number.
func (sh *shard) remove(id string, version int64, now time.Time) int64 {
	sh.seqNo++
	if _, ok := sh.live[id]; ok {
		sh.deletedDocs++
	}
	delete(sh.live, id)
	sh.tombs[id] = tombstone{version: version, seqNo: sh.seqNo, at: now}
	sh.pending[id] = struct{}{}
	return sh.seqNo
}

// refresh makes every write so far visible to search.
func (sh *shard) refresh() {
	if len(sh.pending) == 0 {
		return
	}
	if sh.shared {
		cp := make(map[string]*doc, len(sh.searchable)+len(sh.pending))
		for k, v := range sh.searchable {
			cp[k] = v
		}
		sh.searchable, sh.shared = cp, false
	}
	for id := range sh.pending {
		if d, ok := sh.live[id]; ok {
			sh.searchable[id] = d
		} else {
			delete(sh.searchable, id)
		}
	}
	clear(sh.pending)
}

// snapshot returns the searchable documents for a point in time; the
// shard will not change the returned map.
func (sh *shard) snapshot() map[string]*doc {
	sh.shared = true
	return sh.searchable
}
