package directory

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"testing"

	"github.com/golang/geo/s2"
)

// benchDirRestaurants is how many restaurants a deployment's directory
// holds.
const benchDirRestaurants = 650_000

// benchDeletedEvery: one restaurant in benchDeletedEvery is a tombstone.
const benchDeletedEvery = 50

// benchRestaurantID is the id internal/datagen gives restaurant i
// (0-based) of n: "r" and the 1-based number, zero-padded to at least 6
// digits (r000001).
func benchRestaurantID(i, n int) string {
	return fmt.Sprintf("r%0*d", max(6, len(strconv.Itoa(n))), i+1)
}

// fillDirectory makes a directory of n restaurants, restaurant i (0-based)
// named id(i, n), each at a random leaf cell of the contiguous US at
// version 1, one in benchDeletedEvery of them deleted at version 2. Each id
// is a string of its own, made here and dropped once handed to the
// directory, as ids decoded from events are: what the directory keeps of
// them counts against it.
func fillDirectory(n int, id func(i, n int) string) *Directory {
	rng := rand.New(rand.NewPCG(1, 2))
	d := New()
	for i := range n {
		id := id(i, n)
		d.Set(id, benchCell(rng), 1)
		if i%benchDeletedEvery == 0 {
			d.Remove(id, 2)
		}
	}
	return d
}

// benchUUID is a 36-byte id, as a source system keyed by UUIDs would give.
func benchUUID(i, _ int) string {
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rand.Uint32(), i>>16&0xffff, i&0xfff, i>>12&0xfff, i)
}

// benchCell is a random leaf cell of the contiguous US.
func benchCell(rng *rand.Rand) s2.CellID {
	return s2.CellIDFromLatLng(s2.LatLngFromDegrees(25+rng.Float64()*23, -124+rng.Float64()*57))
}

// BenchmarkDirectoryMemory reports what the directory of a deployment's
// 650,000 restaurants (2% of them deleted) holds on the heap, ids
// included, per restaurant: with ids like internal/datagen's (r000671),
// and with UUIDs, which the records cannot hold and the arena does:
//
//	go test -run '^$' -bench DirectoryMemory -count 5 ./pipeline/directory/
func BenchmarkDirectoryMemory(b *testing.B) {
	for _, ids := range []struct {
		name string
		id   func(i, n int) string
	}{
		{"r000671", benchRestaurantID},
		{"uuid", benchUUID},
	} {
		b.Run("ids="+ids.name, func(b *testing.B) {
			b.ReportAllocs()
			var held uint64
			for range b.N {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				d := fillDirectory(benchDirRestaurants, ids.id)
				runtime.GC()
				runtime.ReadMemStats(&after)
				runtime.KeepAlive(d)
				if want := int64(benchDirRestaurants - (benchDirRestaurants+benchDeletedEvery-1)/benchDeletedEvery); d.Len() != want {
					b.Fatalf("directory holds %d live restaurants, want %d", d.Len(), want)
				}
				held += after.HeapAlloc - before.HeapAlloc
			}
			perRun := float64(held) / float64(b.N)
			b.ReportMetric(perRun/benchDirRestaurants, "bytes/restaurant")
			b.ReportMetric(perRun/1e6, "MB")
		})
	}
}

// BenchmarkDirectoryLookup times the calls the processing goroutine makes
// per event against the directory of 650,000 restaurants, in random
// order:
//
//	go test -run '^$' -bench DirectoryLookup -count 5 ./pipeline/directory/
func BenchmarkDirectoryLookup(b *testing.B) {
	n := benchDirRestaurants
	d := fillDirectory(n, benchRestaurantID)
	rng := rand.New(rand.NewPCG(3, 4))
	ids := make([]string, n)
	missing := make([]string, n)
	for i, j := range rng.Perm(n) {
		ids[i] = benchRestaurantID(j, n)
		missing[i] = "s" + ids[i][1:]
	}
	cell := benchCell(rng)
	b.Run("lookup/hit", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			d.Lookup(ids[i%n])
			i++
		}
	})
	b.Run("lookup/miss", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if _, ok := d.Lookup(missing[i%n]); ok {
				b.Fatal("found a restaurant the directory never held")
			}
			i++
		}
	})
	b.Run("get", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			d.Get(ids[i%n])
			i++
		}
	})
	b.Run("set/stale", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if d.Set(ids[i%n], cell, 1) {
				b.Fatal("a stale version was taken")
			}
			i++
		}
	})
	// Versions rise with each call, across the runs of set/newer: every
	// one is newer.
	version := int64(10)
	b.Run("set/newer", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if !d.Set(ids[i%n], cell, version) {
				b.Fatal("a newer version was refused")
			}
			i++
			version++
		}
	})
}
