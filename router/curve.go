package router

import (
	"fmt"
	"sort"
)

// curve is the document load laid along the Hilbert curve: the non-empty
// cells of one level in curve order with their cumulative load. Planning
// works on it alone.
type curve struct {
	level int
	pos   []uint64 // curve positions of the cells with load, ascending
	cum   []int64  // cum[j] = load of the cells before pos[j]; len(cum) = len(pos)+1
}

func newCurve(loads []CellLoad, level int) (curve, error) {
	c := curve{level: level}
	type pl struct {
		p uint64
		d int64
	}
	cells := make([]pl, 0, len(loads))
	for i, l := range loads {
		if !l.Cell.IsValid() || l.Cell.Level() != level {
			return c, fmt.Errorf("router: load %d: cell %v is not a valid level-%d cell", i, l.Cell, level)
		}
		if l.Docs < 0 {
			return c, fmt.Errorf("router: load %d: cell %s has negative docs %d", i, l.Cell.ToToken(), l.Docs)
		}
		if l.Docs > 0 {
			cells = append(cells, pl{cellPos(l.Cell, level), l.Docs})
		}
	}
	if len(cells) == 0 {
		return c, fmt.Errorf("router: the loads hold no documents")
	}
	sort.Slice(cells, func(a, b int) bool { return cells[a].p < cells[b].p })
	c.cum = append(c.cum, 0)
	for _, x := range cells {
		n := len(c.pos)
		if n > 0 && c.pos[n-1] == x.p {
			c.cum[n] += x.d // the same cell twice: add up
			continue
		}
		c.pos = append(c.pos, x.p)
		c.cum = append(c.cum, c.cum[n]+x.d)
	}
	return c, nil
}

func (c *curve) total() int64 { return c.cum[len(c.pos)] }

// loadsOf returns the load of each shard when shard k starts at curve
// position starts[k].
func (c *curve) loadsOf(starts []uint64) []int64 {
	out := make([]int64, len(starts))
	for k := range starts {
		a := sort.Search(len(c.pos), func(j int) bool { return c.pos[j] >= starts[k] })
		b := len(c.pos)
		if k+1 < len(starts) {
			b = sort.Search(len(c.pos), func(j int) bool { return c.pos[j] >= starts[k+1] })
		}
		out[k] = c.cum[b] - c.cum[a]
	}
	return out
}
