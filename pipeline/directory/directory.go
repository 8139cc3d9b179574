package directory

import (
	"encoding/binary"
	"hash/maphash"
	"iter"
	"math"
	"sync/atomic"

	"github.com/golang/geo/s2"
)

// Entry is what the directory knows of one restaurant.
type Entry struct {
	// Cell holds the restaurant's location: the leaf cell of its
	// location, learnt from an event or read from the index (only a stored
	// restaurant without a location, or one whose location disagrees with
	// its geo_cell, gives the map-level cell of its geo_cell). Routing
	// under any map is derived from it, so during a migration one
	// directory serves the source and the target even when their maps'
	// levels differ.
	Cell s2.CellID
	// Version is the newest version seen, of an upsert or of a delete.
	Version int64
	// Deleted: the newest version seen is a delete. The entry is kept so
	// that an older upsert replayed later is recognised as stale.
	Deleted bool
}

// Directory maps restaurant ids to their location and version. It is
// owned by one goroutine (ingest's processing goroutine, and the warm-up
// before it); only Len may be called concurrently with the others, for
// stats and metrics.
//
// It holds every restaurant of a deployment, so it is built for size: 40
// bytes a restaurant with ids like internal/datagen's r000671 (26 MB for
// 650,000 restaurants, 2% of them deleted, where a map[string]Entry
// took 94 bytes, 61 MB), 77 with 36-byte UUIDs (the map: 126), as
// measured by
//
//	go test -run '^$' -bench DirectoryMemory -count 5 ./pipeline/directory/
//
// A restaurant is a 24-byte record in one slice (grown by append: up to a
// quarter of it unused), an 8-byte slot of an open-addressing table at most
// 3/4 full (grown by doubling: 11 to 21 bytes a restaurant) and, for an id
// longer than 7 bytes, the id's bytes and length in an append-only arena
// (idArena) rather than a string on the heap of its own. Ids are
// arbitrary strings, of any length and any bytes.
//
// A deleted restaurant costs as much as a live one (its record, slot and
// id: 40 bytes with ids like r000671), and its tombstone is kept for the
// life of the process: the index shows no deleted document, so a
// restaurant read again keeps a delete newer than what was read
// (Replace). A restaurant Replace or Forget forgets keeps its record,
// unknown: Get and Lookup no longer find it.
//
// The zero Directory is empty and ready to use.
type Directory struct {
	t    table
	live atomic.Int64 // entries that are not deleted
}

// New returns an empty directory.
func New() *Directory { return &Directory{} }

// Get returns the entry of a restaurant, live or deleted.
func (d *Directory) Get(id string) (Entry, bool) {
	r := d.t.find(id)
	if r == nil || !r.known() {
		return Entry{}, false
	}
	return r.entry(), true
}

// Lookup returns the cell of a live restaurant.
func (d *Directory) Lookup(id string) (s2.CellID, bool) {
	r := d.t.find(id)
	if r == nil || !r.known() || r.deleted() {
		return 0, false
	}
	return r.cell, true
}

// Set records a live restaurant at cell with version, if version is newer
// than what the directory holds. It reports whether it changed anything.
func (d *Directory) Set(id string, cell s2.CellID, version int64) bool {
	r := d.t.record(id)
	if r.known() && version <= r.version {
		return false
	}
	if !r.known() || r.deleted() {
		d.live.Add(1)
	}
	r.put(Entry{Cell: cell, Version: version})
	return true
}

// Warm records a restaurant found in the index. Two copies of one
// restaurant (possible only if a move was interrupted between writing the
// new copy and deleting the old one) resolve to the higher version.
func (d *Directory) Warm(id string, cell s2.CellID, version int64) {
	d.Set(id, cell, version)
}

// Remove marks a restaurant deleted at version, if version is newer than
// what the directory holds. It reports whether it changed anything. The
// cell is the one the restaurant had, or 0 for one the directory did not
// know.
func (d *Directory) Remove(id string, version int64) bool {
	r := d.t.record(id)
	if r.known() && version <= r.version {
		return false
	}
	if r.known() && !r.deleted() {
		d.live.Add(-1)
	}
	r.put(Entry{Cell: r.cell, Version: version, Deleted: true})
	return true
}

// Len is the number of live restaurants. It may be called concurrently
// with the other methods.
func (d *Directory) Len() int64 { return d.live.Load() }

// All yields the restaurants the directory knows, live and deleted, in no
// particular order. Each id is a string of its own.
func (d *Directory) All() iter.Seq2[string, Entry] {
	return func(yield func(string, Entry) bool) {
		for i := range d.t.recs {
			r := &d.t.recs[i]
			if r.known() && !yield(d.t.id(r), r.entry()) {
				return
			}
		}
	}
}

// Replace sets restaurant id's entry to what nd, read from the index,
// holds of it, keeping a delete newer than that: a restaurant nd lacks
// becomes unknown.
func (d *Directory) Replace(id string, nd *Directory) {
	old := d.t.find(id)
	had := old != nil && old.known()
	n, found := nd.Get(id)
	if had && old.deleted() && (!found || n.Version < old.version) {
		return
	}
	if had && !old.deleted() {
		d.live.Add(-1)
	}
	if !found {
		if had {
			old.forget()
		}
		return
	}
	d.t.record(id).put(n)
	if !n.Deleted {
		d.live.Add(1)
	}
}

// Forget makes restaurant id unknown, whatever the directory held of it:
// a live restaurant, or a delete.
func (d *Directory) Forget(id string) {
	r := d.t.find(id)
	if r == nil || !r.known() {
		return
	}
	if !r.deleted() {
		d.live.Add(-1)
	}
	r.forget()
}

// record is a restaurant's entry as the directory stores it, in 24
// bytes: an id of at most 7 bytes, like r000671, is held in the record
// itself, a longer one in the table's arena.
type record struct {
	cell    s2.CellID
	version int64
	// key is the id and two flags:
	//
	//	bits 0-55   the id's bytes, the first lowest, if it has at most
	//	            keyInline; else the idRef of its bytes (bits 0-31)
	//	bits 56-59  the id's length if held here, keyInArena if not
	//	bit 60      keyDeleted: the entry's deleted
	//	bit 61      keyKnown: clear for a record just added or forgotten
	//	            (Replace, Forget), whose cell and version are then 0:
	//	            the directory does not know that restaurant
	key uint64
}

const (
	keyInline   = 7
	keyLenShift = 56
	keyLen      = 0xf << keyLenShift
	keyInArena  = 0xf << keyLenShift
	keyID       = 1<<60 - 1 // the bits that name the id
	keyDeleted  = 1 << 60
	keyKnown    = 1 << 61
)

// inlineKey returns the id bits of the key of an id of at most keyInline
// bytes, and false for a longer one.
func inlineKey(id string) (uint64, bool) {
	if len(id) > keyInline {
		return 0, false
	}
	k := uint64(len(id)) << keyLenShift
	for i := range len(id) {
		k |= uint64(id[i]) << (8 * i)
	}
	return k, true
}

func (r *record) known() bool   { return r.key&keyKnown != 0 }
func (r *record) deleted() bool { return r.key&keyDeleted != 0 }

func (r *record) entry() Entry {
	return Entry{Cell: r.cell, Version: r.version, Deleted: r.deleted()}
}

func (r *record) put(e Entry) {
	r.cell, r.version = e.Cell, e.Version
	r.key = r.key&keyID | keyKnown
	if e.Deleted {
		r.key |= keyDeleted
	}
}

func (r *record) forget() { *r = record{key: r.key & keyID} }

// table finds a restaurant's record by id: an open-addressing hash
// table with linear probing over slots, each 0 (empty) or a record's
// 32-bit hash above its index in recs plus one. Comparing the slot's hash
// first spares reading the record of most slots probed in vain. Records
// are never removed (forget clears one), so slots never need tombstones.
//
// The hash is maphash's, seeded afresh for each table: ids come from
// events, and an unseeded hash would let crafted ids pile onto one run of
// slots.
type table struct {
	seed  maphash.Seed
	slots []uint64 // len a power of two, at most 3/4 in use
	recs  []record
	ids   idArena // the ids longer than keyInline
}

func (t *table) hash(id string) uint32 { return uint32(maphash.String(t.seed, id)) }

// find returns id's record, or nil.
func (t *table) find(id string) *record {
	r, _, _ := t.probe(id)
	return r
}

// probe returns id's record, or nil and the empty slot where id's probe
// ended, with id's hash.
func (t *table) probe(id string) (r *record, h uint32, slot int) {
	if len(t.slots) == 0 {
		return nil, 0, 0
	}
	h = t.hash(id)
	want, inline := inlineKey(id)
	mask := len(t.slots) - 1
	for p := int(h) & mask; ; p = (p + 1) & mask {
		s := t.slots[p]
		if s == 0 {
			return nil, h, p
		}
		if uint32(s>>32) != h {
			continue
		}
		r := &t.recs[uint32(s)-1]
		if inline && r.key&keyID == want ||
			!inline && r.key&keyLen == keyInArena && t.ids.equal(idRef(r.key), id) {
			return r, h, p
		}
	}
}

// record returns id's record, adding one, unknown, if there is none. The
// pointer is valid until the next call that may add a record.
func (t *table) record(id string) *record {
	r, h, p := t.probe(id)
	if r != nil {
		return r
	}
	if 4*(len(t.recs)+1) > 3*len(t.slots) {
		t.grow()
		h = t.hash(id) // the first grow makes the seed
		p = t.vacant(h)
	}
	if len(t.recs) == math.MaxUint32 {
		panic("directory: more than 2^32-1 restaurants")
	}
	k, inline := inlineKey(id)
	if !inline {
		k = keyInArena | uint64(t.ids.add(id))
	}
	t.recs = append(t.recs, record{key: k})
	t.slots[p] = uint64(h)<<32 | uint64(len(t.recs))
	return &t.recs[len(t.recs)-1]
}

// id returns r's id, a string of its own.
func (t *table) id(r *record) string {
	if r.key&keyLen == keyInArena {
		return t.ids.str(idRef(r.key))
	}
	b := make([]byte, r.key&keyLen>>keyLenShift)
	for i := range b {
		b[i] = byte(r.key >> (8 * i))
	}
	return string(b)
}

// grow doubles the slots (the first call makes 8, and the seed), placing
// each record again by the hash its slot holds.
func (t *table) grow() {
	old := t.slots
	if old == nil {
		t.seed = maphash.MakeSeed()
	}
	t.slots = make([]uint64, max(8, 2*len(old)))
	for _, s := range old {
		if s != 0 {
			t.slots[t.vacant(uint32(s>>32))] = s
		}
	}
}

// vacant returns the first empty slot of hash h's probe.
func (t *table) vacant(h uint32) int {
	mask := len(t.slots) - 1
	p := int(h) & mask
	for t.slots[p] != 0 {
		p = (p + 1) & mask
	}
	return p
}

// idRef is where an id lies in an idArena: its chunk above the offset of
// its length there.
type idRef uint32

const (
	idChunkBits = 16
	// idChunk is the size of the arena's chunks: 64 KiB, some 8,000 ids
	// like r000671.
	idChunk = 1 << idChunkBits
	// idChunkMax is how many chunks an idRef can name: 4 GiB of ids
	// shorter than a quarter of a chunk.
	idChunkMax = 1 << (32 - idChunkBits)
)

// idArena stores ids back to back in chunks, each id as its length
// (uvarint) and its bytes. Bytes once written never move or change, so a
// reference stays valid as long as the arena. An id that does not fit in
// the rest of the current chunk starts a new one, so at most a quarter of
// a chunk is left unused: an id longer than that has a chunk of its own,
// of its size, so an id may be any length.
type idArena struct {
	chunks [][]byte
	cur    int // 1 + the index of the chunk short ids go to; 0: none yet
}

// add appends id and returns its reference.
func (a *idArena) add(id string) idRef {
	var n [binary.MaxVarintLen64]byte
	w := binary.PutUvarint(n[:], uint64(len(id)))
	var c int
	switch need := w + len(id); {
	case need > idChunk/4:
		c = a.grow(need)
	case a.cur == 0 || len(a.chunks[a.cur-1])+need > idChunk:
		c = a.grow(idChunk)
		a.cur = c + 1
	default:
		c = a.cur - 1
	}
	off := len(a.chunks[c])
	a.chunks[c] = append(append(a.chunks[c], n[:w]...), id...)
	return idRef(c<<idChunkBits | off)
}

// grow adds a chunk of size bytes and returns its index.
func (a *idArena) grow(size int) int {
	if len(a.chunks) == idChunkMax {
		panic("directory: more than 4 GiB of restaurant ids")
	}
	a.chunks = append(a.chunks, make([]byte, 0, size))
	return len(a.chunks) - 1
}

// bytes returns the id at ref, in the arena's memory.
func (a *idArena) bytes(ref idRef) []byte {
	b := a.chunks[ref>>idChunkBits][ref&(idChunk-1):]
	n, w := binary.Uvarint(b)
	return b[w : w+int(n)]
}

func (a *idArena) equal(ref idRef, id string) bool { return string(a.bytes(ref)) == id }

func (a *idArena) str(ref idRef) string { return string(a.bytes(ref)) }
