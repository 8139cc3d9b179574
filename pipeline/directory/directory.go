package directory

import (
	"iter"
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
