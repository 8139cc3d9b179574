package directory

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/golang/geo/s2"
)

// Cells the directory tests place restaurants at.
var (
	dirSF = s2.CellIDFromLatLng(s2.LatLngFromDegrees(37.77, -122.42))
	dirNY = s2.CellIDFromLatLng(s2.LatLngFromDegrees(40.71, -74.0))
)

// dirOp is one call on a directory, and what Set and Remove must report.
type dirOp struct {
	op      string // "set", "remove" or "warm"
	id      string
	cell    s2.CellID
	version int64
	changed bool
}

// apply runs ops on d, failing t where Set or Remove reports another
// change than the op wants.
func apply(t *testing.T, d *Directory, ops []dirOp) {
	t.Helper()
	for i, o := range ops {
		var changed bool
		switch o.op {
		case "set":
			changed = d.Set(o.id, o.cell, o.version)
		case "remove":
			changed = d.Remove(o.id, o.version)
		case "warm":
			d.Warm(o.id, o.cell, o.version)
			continue
		default:
			t.Fatalf("op %d: unknown op %q", i, o.op)
		}
		if changed != o.changed {
			t.Errorf("op %d: %s(%q, v%d) = %v, want %v", i, o.op, clipID(o.id), o.version, changed, o.changed)
		}
	}
}

// checkDirectory fails t unless d holds exactly want: what Get, Lookup,
// All and Len say of it.
func checkDirectory(t *testing.T, d *Directory, want map[string]Entry) {
	t.Helper()
	live := int64(0)
	for id, w := range want {
		if !w.Deleted {
			live++
		}
		if e, ok := d.Get(id); !ok || e != w {
			t.Errorf("Get(%q) = %+v, %v; want %+v, true", clipID(id), e, ok, w)
		}
		if c, ok := d.Lookup(id); ok != !w.Deleted || ok && c != w.Cell {
			t.Errorf("Lookup(%q) = %v, %v; want %v, %v", clipID(id), c, ok, w.Cell, !w.Deleted)
		}
	}
	if n := d.Len(); n != live {
		t.Errorf("Len() = %d, want %d", n, live)
	}
	got := maps.Collect(d.All())
	for id, e := range got {
		if w, ok := want[id]; !ok || e != w {
			t.Errorf("All() yields %q: %+v; want %+v, %v", clipID(id), e, w, ok)
		}
	}
	if len(got) != len(want) {
		t.Errorf("All() yields %d restaurants, want %d", len(got), len(want))
	}
	for _, id := range []string{"never-seen", "r", ""} {
		if _, ok := want[id]; ok {
			continue
		}
		if e, ok := d.Get(id); ok {
			t.Errorf("Get(%q) = %+v, true; want unknown", id, e)
		}
		if _, ok := d.Lookup(id); ok {
			t.Errorf("Lookup(%q) found a restaurant never set", id)
		}
	}
}

// clipID shortens long ids in failure messages.
func clipID(id string) string {
	if len(id) > 40 {
		return fmt.Sprintf("%s…(%d bytes)", id[:20], len(id))
	}
	return id
}

func live(c s2.CellID, v int64) Entry { return Entry{Cell: c, Version: v} }
func deleted(c s2.CellID, v int64) Entry {
	return Entry{Cell: c, Version: v, Deleted: true}
}

// Ids the directory must hold as they are, whatever their bytes: it makes
// no assumption on their shape.
var (
	dirLongID   = strings.Repeat("long-", 30_000)           // longer than an arena chunk
	dirMediumID = strings.Repeat("m", idChunk/4)            // a chunk of its own
	dirID127    = strings.Repeat("x", 127)                  // its length in one byte
	dirID128    = strings.Repeat("x", 128)                  // its length in two
	dirUTF8ID   = "ресторан-東京-🍣"                           // non-ASCII
	dirBinaryID = "r\x00\xff\xfe" + string([]byte{0x80, 0}) // not UTF-8, NULs
)

func TestDirectory(t *testing.T) {
	for _, tc := range []struct {
		name string
		ops  []dirOp
		want map[string]Entry
	}{
		{"empty", nil, map[string]Entry{}},
		{"set new", []dirOp{{"set", "r1", dirSF, 5, true}}, map[string]Entry{"r1": live(dirSF, 5)}},
		{"set newer", []dirOp{{"set", "r1", dirSF, 5, true}, {"set", "r1", dirNY, 6, true}},
			map[string]Entry{"r1": live(dirNY, 6)}},
		{"set equal or older refused", []dirOp{{"set", "r1", dirSF, 5, true}, {"set", "r1", dirNY, 5, false}, {"set", "r1", dirNY, 4, false}},
			map[string]Entry{"r1": live(dirSF, 5)}},
		{"set at version 0", []dirOp{{"set", "r1", dirSF, 0, true}, {"set", "r1", dirNY, 0, false}},
			map[string]Entry{"r1": live(dirSF, 0)}},
		{"remove keeps the last cell", []dirOp{{"set", "r1", dirSF, 5, true}, {"remove", "r1", 0, 7, true}},
			map[string]Entry{"r1": deleted(dirSF, 7)}},
		{"remove equal or older refused", []dirOp{{"set", "r1", dirSF, 5, true}, {"remove", "r1", 0, 5, false}, {"remove", "r1", 0, 2, false}},
			map[string]Entry{"r1": live(dirSF, 5)}},
		{"remove of an unknown restaurant remembered, cell 0", []dirOp{{"remove", "r2", 0, 3, true}},
			map[string]Entry{"r2": deleted(0, 3)}},
		{"remove of a deleted one at a newer version", []dirOp{{"set", "r1", dirSF, 1, true}, {"remove", "r1", 0, 2, true}, {"remove", "r1", 0, 4, true}},
			map[string]Entry{"r1": deleted(dirSF, 4)}},
		{"upsert replayed at or below the delete's version stale", []dirOp{
			{"set", "r1", dirSF, 5, true}, {"remove", "r1", 0, 7, true}, {"set", "r1", dirNY, 7, false}, {"set", "r1", dirNY, 6, false}},
			map[string]Entry{"r1": deleted(dirSF, 7)}},
		{"re-created after its delete", []dirOp{{"set", "r1", dirSF, 5, true}, {"remove", "r1", 0, 7, true}, {"set", "r1", dirNY, 8, true}},
			map[string]Entry{"r1": live(dirNY, 8)}},
		{"warm: two copies, newer first", []dirOp{{"warm", "r3", dirNY.Parent(10), 9, false}, {"warm", "r3", dirSF.Parent(10), 4, false}},
			map[string]Entry{"r3": live(dirNY.Parent(10), 9)}},
		{"warm: two copies, older first", []dirOp{{"warm", "r3", dirSF.Parent(10), 4, false}, {"warm", "r3", dirNY.Parent(10), 9, false}},
			map[string]Entry{"r3": live(dirNY.Parent(10), 9)}},
		{"restaurants apart", []dirOp{
			{"set", "r1", dirSF, 1, true}, {"set", "r2", dirNY, 1, true}, {"remove", "r3", 0, 1, true}, {"remove", "r1", 0, 2, true}},
			map[string]Entry{"r1": deleted(dirSF, 2), "r2": live(dirNY, 1), "r3": deleted(0, 1)}},
		{"ids prefixes of each other", []dirOp{
			{"set", "r1", dirSF, 1, true}, {"set", "r10", dirNY, 2, true}, {"set", "r1\x00", dirSF, 3, true}, {"set", "r", dirNY, 4, true}},
			map[string]Entry{"r1": live(dirSF, 1), "r10": live(dirNY, 2), "r1\x00": live(dirSF, 3), "r": live(dirNY, 4)}},
		{"ids of NULs", []dirOp{
			{"set", "", dirSF, 1, true}, {"set", "\x00", dirNY, 2, true}, {"set", "\x00\x00", dirSF, 3, true},
			{"set", "\x00\x00\x00\x00\x00\x00\x00", dirNY, 4, true}, {"set", "\x00\x00\x00\x00\x00\x00\x00\x00", dirSF, 5, true}},
			map[string]Entry{"": live(dirSF, 1), "\x00": live(dirNY, 2), "\x00\x00": live(dirSF, 3),
				"\x00\x00\x00\x00\x00\x00\x00": live(dirNY, 4), "\x00\x00\x00\x00\x00\x00\x00\x00": live(dirSF, 5)}},
		{"ids held in the record and in the arena", []dirOp{
			{"set", "r000671", dirSF, 1, true}, {"set", "r0006710", dirNY, 2, true}, {"set", "\xff\xff\xff\xff\xff\xff\xff", dirSF, 3, true},
			{"remove", "r000671", 0, 2, true}, {"remove", "r0006710", 0, 1, false}},
			map[string]Entry{"r000671": deleted(dirSF, 2), "r0006710": live(dirNY, 2), "\xff\xff\xff\xff\xff\xff\xff": live(dirSF, 3)}},
		{"the empty id", []dirOp{{"set", "", dirSF, 1, true}, {"remove", "", 0, 2, true}, {"set", "", dirNY, 2, false}},
			map[string]Entry{"": deleted(dirSF, 2)}},
		{"ids of every length and byte", []dirOp{
			{"set", dirLongID, dirSF, 1, true}, {"set", "r1", dirNY, 1, true}, {"set", dirMediumID, dirNY, 2, true},
			{"set", dirID127, dirSF, 3, true}, {"set", dirID128, dirNY, 4, true}, {"set", dirUTF8ID, dirSF, 5, true},
			{"set", dirBinaryID, dirNY, 6, true}, {"remove", dirLongID, 0, 2, true}, {"set", dirUTF8ID, dirNY, 5, false}},
			map[string]Entry{
				dirLongID: deleted(dirSF, 2), "r1": live(dirNY, 1), dirMediumID: live(dirNY, 2), dirID127: live(dirSF, 3),
				dirID128: live(dirNY, 4), dirUTF8ID: live(dirSF, 5), dirBinaryID: live(dirNY, 6)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New()
			apply(t, d, tc.ops)
			checkDirectory(t, d, tc.want)
		})
	}
}

// TestDirectoryReplace: Replace takes what the index holds of one
// restaurant, keeping a newer delete; a restaurant the index lacks becomes
// unknown, as one never seen.
func TestDirectoryReplace(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new []dirOp // the directory, and what the index holds
		want     map[string]Entry
		then     []dirOp // after it
		wantThen map[string]Entry
	}{
		{"newer copy replaces a live entry",
			[]dirOp{{"set", "a", dirSF, 1, true}}, []dirOp{{"warm", "a", dirNY, 3, false}},
			map[string]Entry{"a": live(dirNY, 3)}, nil, nil},
		{"older copy replaces a live entry too",
			[]dirOp{{"set", "a", dirSF, 5, true}}, []dirOp{{"warm", "a", dirNY, 3, false}},
			map[string]Entry{"a": live(dirNY, 3)}, nil, nil},
		{"unknown restaurant found",
			nil, []dirOp{{"warm", "a", dirNY, 3, false}},
			map[string]Entry{"a": live(dirNY, 3)}, nil, nil},
		{"live restaurant the index lacks becomes unknown",
			[]dirOp{{"set", "a", dirSF, 5, true}, {"set", "b", dirSF, 1, true}}, nil,
			map[string]Entry{"b": live(dirSF, 1)},
			// Unknown: any version is taken, and a delete knows no cell.
			[]dirOp{{"remove", "a", 0, 1, true}, {"set", "a", dirNY, 2, true}, {"set", "a", dirNY, 2, false}},
			map[string]Entry{"a": live(dirNY, 2), "b": live(dirSF, 1)}},
		{"forgotten, then deleted: no cell",
			[]dirOp{{"set", "a", dirSF, 5, true}}, nil,
			map[string]Entry{},
			[]dirOp{{"remove", "a", 0, 1, true}},
			map[string]Entry{"a": deleted(0, 1)}},
		{"unknown restaurant the index lacks stays unknown",
			nil, nil, map[string]Entry{}, nil, nil},
		{"newer delete kept over an older copy",
			[]dirOp{{"set", "a", dirSF, 1, true}, {"remove", "a", 0, 9, true}}, []dirOp{{"warm", "a", dirNY, 5, false}},
			map[string]Entry{"a": deleted(dirSF, 9)}, nil, nil},
		{"newer delete kept when the index lacks it",
			[]dirOp{{"remove", "a", 0, 9, true}}, nil,
			map[string]Entry{"a": deleted(0, 9)}, nil, nil},
		{"older delete gives way to the copy",
			[]dirOp{{"remove", "a", 0, 2, true}}, []dirOp{{"warm", "a", dirNY, 5, false}},
			map[string]Entry{"a": live(dirNY, 5)}, nil, nil},
		{"delete at the copy's version gives way",
			[]dirOp{{"remove", "a", 0, 5, true}}, []dirOp{{"warm", "a", dirNY, 5, false}},
			map[string]Entry{"a": live(dirNY, 5)}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, nd := New(), New()
			apply(t, d, tc.old)
			apply(t, nd, tc.new)
			d.Replace("a", nd)
			checkDirectory(t, d, tc.want)
			if tc.then != nil {
				apply(t, d, tc.then)
				checkDirectory(t, d, tc.wantThen)
			}
		})
	}
}

// TestDirectoryManyIDs fills a directory with enough ids of varied
// lengths to cross many arena chunks and table growths, some ids longer
// than a chunk, and checks every one.
func TestDirectoryManyIDs(t *testing.T) {
	d := New()
	want := map[string]Entry{}
	const n = 60_000
	for i := range n {
		id := fmt.Sprintf("r%06d", i)
		switch {
		case i%2 == 0:
			id = "restaurant-" + id // in the arena
		case i%10_000 == 1:
			id = strings.Repeat(id, idChunk/len(id)+1) // longer than a chunk
		case i%1_000 == 2:
			id = strings.Repeat(id, 3_000) // a chunk of its own
		case i%100 == 3:
			id = strings.Repeat("é", i%300) + id // non-ASCII, 1 or 2 length bytes
		case i%7 == 4:
			id = id[:1+i%7] // short, and seen again: a newer version
		}
		c := s2.CellIDFromFacePosLevel(i%6, uint64(i)<<20, s2.MaxLevel)
		v := int64(i)
		if i%5 == 0 {
			d.Remove(id, v)
			want[id] = deleted(want[id].Cell, v)
			continue
		}
		d.Set(id, c, v)
		want[id] = live(c, v)
	}
	shared := 0 // chunks of ids not long enough for one of their own
	for _, c := range d.t.ids.chunks {
		if cap(c) == idChunk {
			shared++
		}
	}
	if shared < 5 {
		t.Fatalf("%d ids took %d shared arena chunks, want 5 or more to cross their bounds", n, shared)
	}
	checkDirectory(t, d, want)
}

// TestDirectoryHashCollision: two ids whose 32-bit hashes are equal are
// still two restaurants, each held in the record or in the arena. The
// pairs are found by trying ids under the table's seed: 2^16 of one kind,
// then some 2^16 of the other until one shares a hash with the first.
func TestDirectoryHashCollision(t *testing.T) {
	short := func(p string) func(int) string { return func(i int) string { return fmt.Sprintf("%s%x", p, i) } }
	long := func(p string) func(int) string {
		return func(i int) string { return fmt.Sprintf("%s-restaurant-%d", p, i) }
	}
	for _, tc := range []struct {
		name string
		a, b func(int) string
	}{
		{"held in the record", short("a"), short("b")},
		{"held in the record and in the arena", short("a"), long("b")},
		{"held in the arena", long("a"), long("b")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := New()
			d.Set("seeds the table", dirSF, 1)
			seen := map[uint32]string{}
			for i := range 1 << 16 {
				seen[d.t.hash(tc.a(i))] = tc.a(i)
			}
			var a, b string
			for i := 0; a == ""; i++ {
				if i == 1<<24 {
					t.Fatal("no id of 2^24 shares a hash with one of 2^16")
				}
				a, b = seen[d.t.hash(tc.b(i))], tc.b(i)
			}
			apply(t, d, []dirOp{{"set", a, dirSF, 3, true}, {"remove", b, 0, 2, true}, {"set", b, dirNY, 2, false}})
			checkDirectory(t, d, map[string]Entry{"seeds the table": live(dirSF, 1), a: live(dirSF, 3), b: deleted(0, 2)})
		})
	}
}

// TestRecordSize: the record stays 24 bytes, the figure the
// directory's memory is built on.
func TestRecordSize(t *testing.T) {
	if n := unsafe.Sizeof(record{}); n != 24 {
		t.Errorf("record is %d bytes, want 24", n)
	}
}

// TestIDArena: every id reads back as it was added, and is told apart
// from ids a byte away from it.
func TestIDArena(t *testing.T) {
	ids := []string{"", "r000671", dirLongID, "r000672", dirMediumID, dirID127, dirID128, dirUTF8ID, dirBinaryID}
	for i := range 20_000 {
		ids = append(ids, fmt.Sprintf("r%06d", i))
	}
	var a idArena
	refs := make([]idRef, len(ids))
	for i, id := range ids {
		refs[i] = a.add(id)
	}
	for i, id := range ids {
		if got := a.str(refs[i]); got != id {
			t.Fatalf("str(ref of %q) = %q", clipID(id), clipID(got))
		}
		near := []string{id + "x", id + "\x00"}
		if id != "" {
			last := id[len(id)-1]
			near = append(near, id[:len(id)-1], id[:len(id)-1]+string(last^1))
		}
		for _, other := range near {
			if a.equal(refs[i], other) {
				t.Errorf("equal(ref of %q, %q) = true", clipID(id), clipID(other))
			}
		}
		if !a.equal(refs[i], id) {
			t.Errorf("equal(ref of %q, itself) = false", clipID(id))
		}
	}
}

// TestDirectoryAgainstAMap runs random calls on a directory and on a
// plain map that follows the same rules, and compares the two.
func TestDirectoryAgainstAMap(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	ids := []string{"", "r1", "r10", dirLongID, dirMediumID, dirUTF8ID, dirBinaryID}
	for i := range 300 {
		ids = append(ids, fmt.Sprintf("r%06d", i))
	}
	pick := func() string { return ids[rng.IntN(len(ids))] }
	cell := func() s2.CellID { return s2.CellIDFromFacePosLevel(rng.IntN(6), rng.Uint64(), s2.MaxLevel) }
	d, ref := New(), map[string]Entry{}
	// read is a directory read from the index, and what it holds.
	read := func() (*Directory, map[string]Entry) {
		nd, m := New(), map[string]Entry{}
		for range rng.IntN(200) {
			id, c, v := pick(), cell(), rng.Int64N(40)
			nd.Warm(id, c, v)
			if e, ok := m[id]; !ok || v > e.Version {
				m[id] = live(c, v)
			}
		}
		return nd, m
	}
	for step := range 20_000 {
		id, v := pick(), rng.Int64N(40)
		old, ok := ref[id]
		switch k := rng.IntN(100); {
		case k < 50:
			c := cell()
			want := !ok || v > old.Version
			if want {
				ref[id] = live(c, v)
			}
			if got := d.Set(id, c, v); got != want {
				t.Fatalf("step %d: set(%q, v%d) = %v, want %v", step, clipID(id), v, got, want)
			}
		case k < 85:
			want := !ok || v > old.Version
			if want {
				ref[id] = deleted(old.Cell, v)
			}
			if got := d.Remove(id, v); got != want {
				t.Fatalf("step %d: remove(%q, v%d) = %v, want %v", step, clipID(id), v, got, want)
			}
		default:
			nd, m := read()
			n, found := m[id]
			switch {
			case ok && old.Deleted && (!found || n.Version < old.Version):
			case !found:
				delete(ref, id)
			default:
				ref[id] = n
			}
			d.Replace(id, nd)
		}
	}
	checkDirectory(t, d, ref)
}

// TestDirectorySizeWhileWritten reads the live count, as Stats does, while
// the processing goroutine writes the directory (for -race).
func TestDirectorySizeWhileWritten(t *testing.T) {
	d := New()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
				if n := d.Len(); n < 0 || n > 1000 {
					t.Errorf("Len() = %d, want 0 to 1000", n)
				}
			}
		}
	})
	for i := range 1000 {
		d.Set(fmt.Sprint(i), dirSF, 1)
	}
	close(done)
	wg.Wait()
	if n := d.Len(); n != 1000 {
		t.Errorf("Len() = %d, want 1000", n)
	}
}
