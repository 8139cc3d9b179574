package router

import (
	"fmt"
	"math"
	"sort"
	"strconv"
)

// balanceWeight prices a cut's distance from its ideal cumulative load (k
// mean loads), in mean shard loads, against the fan-out cost in extra shards
// per search. It is small enough to decide only between cuts whose fan-out
// costs are nearly equal, such as two cuts through empty land.
const balanceWeight = 1e-4

// planOptimal places k−1 cuts so that the expected number of extra shards
// per search is smallest, subject to every shard's load lying within
// ±imb of the mean.
//
// A search asks 1 + (the number of gaps between consecutive covered cells
// that hold a cut) shards. The planner prices a cut at curve position p at
// the weight of the searches with a gap containing p, which counts each
// search once per gap as long as no gap holds two cuts. Two kinds of gap
// make that exact or irrelevant:
//   - a gap with less load than the smallest allowed shard cannot hold two
//     cuts, so pricing it per cut is exact;
//   - a gap with more load than the largest allowed shard holds a cut in
//     every feasible split, so the search pays for it whatever the planner
//     does; such gaps are left out of the price.
//
// A Hilbert-curve jump puts far-apart cells of one search next to heavy
// load in curve order, so the second kind is common and leaving it out
// matters: priced per cut, such gaps would repel cuts from wherever big
// searches straddle a jump. Only gaps with between one and two shards'
// worth of load are approximated. Workload.Fanout measures the exact figure
// afterwards.
//
// Between two consecutive cells with load a cut may sit anywhere without
// changing any shard's load, so each such gap of the curve offers one
// candidate: its cheapest position (see gapCosts). The cuts are then chosen
// by dynamic programming over (cut number, gap), where the feasible
// previous gaps of a gap form a window that slides forward with it, so a
// monotone deque gives each minimum in amortised O(1): O(k·cells) in all.
func planOptimal(c *curve, w *Workload, k int, imb float64) ([]uint64, error) {
	m := len(c.pos)
	total := c.total()
	mean := float64(total) / float64(k)
	lo := int64(math.Ceil(mean * (1 - imb)))
	hi := int64(math.Floor(mean * (1 + imb)))
	if k == 1 {
		return []uint64{0}, nil
	}
	gapPos, gapCost := gapCosts(c, w, hi)

	inf := math.Inf(1)
	prev := make([]float64, m+1)
	cur := make([]float64, m+1)
	for j := range prev {
		prev[j] = inf
	}
	prev[0] = 0 // the start of shard 0
	parent := make([][]int32, k)
	dq := make([]int, 0, m)
	for s := 1; s < k; s++ {
		par := make([]int32, m+1)
		for j := range cur {
			cur[j] = inf
		}
		dq = dq[:0]
		head, i := 0, 0
		for j := 1; j < m; j++ {
			// Shard s−1 runs from gap i to gap j: admit every i whose load
			// up to j reaches lo, then drop those whose load exceeds hi.
			for i < j && c.cum[j]-c.cum[i] >= lo {
				if prev[i] < inf {
					for len(dq) > head && prev[dq[len(dq)-1]] >= prev[i] {
						dq = dq[:len(dq)-1]
					}
					dq = append(dq, i)
				}
				i++
			}
			for head < len(dq) && c.cum[j]-c.cum[dq[head]] > hi {
				head++
			}
			if head == len(dq) {
				continue
			}
			b := dq[head]
			dev := math.Abs(float64(c.cum[j])/mean - float64(s))
			cur[j] = prev[b] + gapCost[j] + balanceWeight*dev
			par[j] = int32(b)
		}
		parent[s] = par
		prev, cur = cur, prev
	}
	// The last shard runs from its cut to the end.
	last, bestCost := -1, inf
	for i := 1; i < m; i++ {
		if l := total - c.cum[i]; l >= lo && l <= hi && prev[i] < bestCost {
			last, bestCost = i, prev[i]
		}
	}
	if last < 0 {
		return nil, fmt.Errorf("router: %d shards with loads within ±%s%% of the mean %.0f: %w; allow more imbalance or choose another shard count",
			k, strconv.FormatFloat(imb*100, 'g', 3, 64), mean, ErrInfeasible)
	}
	starts := make([]uint64, k)
	for s, j := k-1, last; s >= 1; s-- {
		starts[s] = gapPos[j]
		j = int(parent[s][j])
	}
	return starts, nil
}

// gapCosts returns, for every gap j in 1..len(pos)−1 (the positions
// pos[j−1]+1 .. pos[j] between two cells with load), the cheapest cut
// position in it and that cut's cost in extra shards per search. Gaps of a
// search's covering with more than maxLoad between them are not priced
// (see planOptimal). Among
// equally cheap positions it takes a cube-face boundary if there is one,
// else the middle of the longest cheapest stretch, so the cut sits as far
// from the documents as the workload allows.
func gapCosts(c *curve, w *Workload, maxLoad int64) (pos []uint64, cost []float64) {
	type event struct {
		p uint64
		d float64
	}
	// loadBefore is the load of the cells at positions below p.
	loadBefore := func(p uint64) int64 {
		return c.cum[sort.Search(len(c.pos), func(j int) bool { return c.pos[j] >= p })]
	}
	var ev []event
	for _, q := range w.queries {
		x := q.w / w.weight
		// A cut between two covered cells costs the search one more shard:
		// inside a run of covered cells, or in the gap between two runs.
		for _, r := range q.runs {
			if r.hi > r.lo {
				ev = append(ev, event{r.lo + 1, x}, event{r.hi + 1, -x})
			}
		}
		for r := 1; r < len(q.runs); r++ {
			a, b := q.runs[r-1].hi, q.runs[r].lo // the gap (a, b]
			if loadBefore(b)-loadBefore(a+1) > maxLoad {
				// More load lies between these two covered cells than one
				// shard may hold, so every split has a cut here: the search
				// pays for this gap whatever the cuts, and no cut in it
				// costs anything more.
				continue
			}
			ev = append(ev, event{a + 1, x}, event{b + 1, -x})
		}
	}
	sort.Slice(ev, func(a, b int) bool { return ev[a].p < ev[b].p })

	m := len(c.pos)
	pos = make([]uint64, m)
	cost = make([]float64, m)
	faceLen := numPos(c.level) / 6
	var v float64
	e := 0
	for j := 1; j < m; j++ {
		a, b := c.pos[j-1]+1, c.pos[j]
		for e < len(ev) && ev[e].p <= a {
			v += ev[e].d
			e++
		}
		bestV, bestA, bestB := math.Inf(1), a, a
		face := false
		consider := func(s, t uint64, val float64) {
			// A face boundary in [s, t] (a multiple of faceLen) wins ties.
			f := (s+faceLen-1)/faceLen*faceLen <= t
			switch {
			case val < bestV-1e-12:
			case val <= bestV+1e-12 && f && !face:
			case val <= bestV+1e-12 && f == face && t-s > bestB-bestA:
			default:
				return
			}
			bestV, bestA, bestB, face = val, s, t, f
		}
		s := a
		for e < len(ev) && ev[e].p <= b {
			p := ev[e].p
			consider(s, p-1, v)
			for e < len(ev) && ev[e].p == p {
				v += ev[e].d
				e++
			}
			s = p
		}
		consider(s, b, v)
		if face {
			pos[j] = (bestA + faceLen - 1) / faceLen * faceLen
		} else {
			pos[j] = bestA + (bestB-bestA)/2
		}
		cost[j] = max(bestV, 0) // float sums may leave −1e-17
	}
	return pos, cost
}
