package osfake

import (
	"encoding/base64"
	"encoding/binary"
	"math/bits"
)

// Sliced searches (a point in time with "slice": {"id": i, "max": n}),
// split as the server's SliceBuilder splits them: per index, by shard
// position, and within a shard that several slices share, by the
// TermsSliceQuery hash of each document's encoded _id. Every shard of the
// search is still asked (a shard outside the slice matches nothing), so
// _shards counts them all.

// sliceFilter marks what each read contributes to the slice. Shards are
// numbered by their position among the index's shards the search reads.
func sliceFilter(reads []shardRead, sl *sliceSpec) []shardRead {
	out := append([]shardRead(nil), reads...)
	byIndex := map[*index][]int{}
	var order []*index
	for i, r := range out {
		if byIndex[r.ix] == nil {
			order = append(order, r.ix)
		}
		byIndex[r.ix] = append(byIndex[r.ix], i)
	}
	for _, ix := range order {
		positions := byIndex[ix]
		n := len(positions)
		for pos, i := range positions {
			r := &out[i]
			switch {
			case n == 1:
				r.sliceMod, r.sliceRem = sl.max, sl.id
			case sl.max >= n:
				target := sl.id % n
				if target != pos {
					r.sliceNone = true
					continue
				}
				perShard := sl.max / n
				if sl.max%n > target {
					perShard++
				}
				if perShard > 1 {
					r.sliceMod, r.sliceRem = perShard, sl.id/n
				}
			case pos%sl.max != sl.id:
				r.sliceNone = true
			}
		}
	}
	return out
}

// inSlice reports whether a document of r belongs to its slice.
func (r *shardRead) inSlice(id string) bool {
	if r.sliceNone {
		return false
	}
	if r.sliceMod <= 1 {
		return true
	}
	h := int64(murmur3x86(encodeID(id), 7919)) // TermsSliceQuery.SEED
	m := int64(r.sliceMod)
	return ((h%m)+m)%m == int64(r.sliceRem)
}

// sliceReads keeps the shards a slice reads, as _search_shards reports
// them: with max <= shards, position p belongs to slice p mod max; with
// more slices than shards, slice id reads the shard at position id mod
// shards.
func sliceReads(reads []shardRead, sl *sliceSpec) []shardRead {
	n := len(reads)
	if n == 0 {
		return nil
	}
	if sl.max <= n {
		var out []shardRead
		for pos, r := range reads {
			if pos%sl.max == sl.id {
				out = append(out, r)
			}
		}
		return out
	}
	return []shardRead{reads[sl.id%n]}
}

// encodeID is the server's Uid.encodeId, the _id term as the index
// stores it: digits packed two to a byte, URL-safe base64 decoded, and
// anything else as UTF-8, each behind a marker byte where needed.
func encodeID(id string) []byte {
	switch {
	case id == "":
		return nil
	case isPositiveNumeric(id):
		b := make([]byte, 1+(len(id)+1)/2)
		b[0] = 0xfe
		for i := 0; i < len(id); i += 2 {
			lo := byte(0x0f) // end marker
			if i+1 < len(id) {
				lo = id[i+1] - '0'
			}
			b[1+i/2] = (id[i]-'0')<<4 | lo
		}
		return b
	case isURLBase64WithoutPadding(id):
		b, err := base64.RawURLEncoding.DecodeString(id)
		if err == nil && len(b) > 0 {
			if b[0] >= 0xfd {
				b = append([]byte{0xfd}, b...)
			}
			return b
		}
	}
	return append([]byte{0xff}, id...)
}

func isPositiveNumeric(id string) bool {
	for i := 0; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return false
		}
	}
	return true
}

// isURLBase64WithoutPadding accepts what decodes to the same bytes it
// encodes back to: URL-safe characters, a length that is not 1 mod 4,
// and unused low bits of the last character zero.
func isURLBase64WithoutPadding(id string) bool {
	n := len(id)
	last := id[n-1]
	switch n & 3 {
	case 1:
		return false
	case 2:
		if last != 'A' && last != 'Q' && last != 'g' && last != 'w' {
			return false
		}
	case 3:
		switch last {
		case 'A', 'E', 'I', 'M', 'Q', 'U', 'Y', 'c', 'g', 'k', 'o', 's', 'w', '0', '4', '8':
		default:
			return false
		}
	}
	for i := 0; i < n; i++ {
		c := id[i]
		if !(c >= '0' && c <= '9' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// murmur3x86 is MurmurHash3_x86_32 (Lucene's StringHelper.murmurhash3_x86_32).
func murmur3x86(data []byte, seed uint32) int32 {
	const c1, c2 = 0xcc9e2d51, 0x1b873593
	h := seed
	n := len(data) &^ 3
	for i := 0; i < n; i += 4 {
		k := binary.LittleEndian.Uint32(data[i:])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	var k uint32
	switch len(data) & 3 {
	case 3:
		k = uint32(data[n+2]) << 16
		fallthrough
	case 2:
		k |= uint32(data[n+1]) << 8
		fallthrough
	case 1:
		k |= uint32(data[n])
		k *= c1
		k = bits.RotateLeft32(k, 15)
		k *= c2
		h ^= k
	}
	h ^= uint32(len(data))
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return int32(h)
}
