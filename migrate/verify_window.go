package migrate

import (
	"math/big"
	"strings"
	"unicode/utf8"
)

// An id stream reads its documents in doc_id order a page at a time. A
// page that only says where to start (search_after, or a range with a
// lower bound alone) costs the node in proportion to what is left of the
// shard, not to the page: every document after the bound is a candidate
// of the sort, and a keyword sort prunes nothing. A shard read so costs
// the square of its size: 196–291 ms a page of 5,000 on a shard of 1.17
// million documents, 579–630 ms on one of 3.23 million, and a pass over
// the seed's 55 million documents most of two hours.
//
// So a stream reads a window at a time: a range of doc_id with an upper
// bound too, which the node answers from the terms in the range, in
// proportion to the ids in it. The bound is estimated from the ids read
// so far: doc_ids are read as base-256 fractions, and the next window
// spans what about a window's ids (idStream.window) spanned last, from where the stream
// stands. The estimate only sets the cost of a page, never what a stream
// reads: a window that holds more than a page is read a page at a time,
// each page re-estimating the bound from its own ids, and one that holds
// fewer ends early and the next starts at its bound. So ids of any
// shape, clustered or sparse, are each read once and in order; a
// lopsided estimate costs one dear page or a few cheap ones.

// idCursor is where a stream's next page starts and the window it is in.
type idCursor struct {
	from     string // lower bound of doc_id; "" for none
	fromIncl bool   // from starts a window; otherwise it was read already
	to       string // upper bound, exclusive; "" for none
}

// idRange is the cursor as a range query's bounds of doc_id.
func (c idCursor) idRange() map[string]string {
	r := map[string]string{}
	switch {
	case c.from == "":
	case c.fromIncl:
		r["gte"] = c.from
	default:
		r["gt"] = c.from
	}
	if c.to != "" {
		r["lt"] = c.to
	}
	return r
}

// maxIDWidth caps the bytes of a doc_id the estimate reads: past them
// ids count as equal, which makes an estimate coarse, never wrong.
const maxIDWidth = 64

// boundAfter estimates a window bound after s that holds about want ids,
// given that n ids were found between a and b (a < b). It returns a
// string greater than s, or "" (no bound) when there is none to give: a
// and b that cannot be told apart, or a bound past every string of the
// width read.
func boundAfter(a, b string, n int, s string, want int) string {
	width := min(max(len(a), len(b), len(s))+8, maxIDWidth)
	span := new(big.Int).Sub(idNum(b, width), idNum(a, width))
	if span.Sign() <= 0 {
		return ""
	}
	if n <= 0 {
		span.Lsh(span, 3) // nothing there: look eight times as far
	} else {
		span.Mul(span, big.NewInt(int64(want)))
		span.Quo(span, big.NewInt(int64(n)))
	}
	if span.Sign() == 0 {
		span.SetInt64(1)
	}
	h := span.Add(span, idNum(s, width))
	if h.BitLen() > 8*width {
		return ""
	}
	bound := validBound(strings.TrimRight(string(h.FillBytes(make([]byte, width))), "\x00"))
	if bound <= s {
		return ""
	}
	return bound
}

// idNum reads the first width bytes of id as a base-256 number, the bytes
// past its end as zeros: numbers of one width order as their strings.
func idNum(id string, width int) *big.Int {
	b := make([]byte, width)
	copy(b, id)
	return new(big.Int).SetBytes(b)
}

// validBound makes a bound computed byte-wise valid UTF-8, so that it
// crosses JSON unchanged: the valid prefix, followed, if a byte past it
// was not valid, by the highest code point. The bound so made may be
// lower or higher than the one computed; either is a bound.
func validBound(s string) string {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return s[:i] + string(utf8.MaxRune)
		}
		i += size
	}
	return s
}
