package router

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Strategy names a planning algorithm.
type Strategy string

const (
	// Optimal chooses cut points that as few searches as possible cross,
	// within the balance bound. The default.
	Optimal Strategy = "optimal"
	// Greedy is the reference bucket-filling algorithm: walk the cells in
	// curve order, fill a shard up to a capacity, start the next; of every
	// capacity that gives an allowed shard count keep the split with the
	// smallest standard deviation of load.
	Greedy Strategy = "greedy"
)

// PlanConfig configures the planner. The zero value plans with the
// defaults; every field's comment names its default.
type PlanConfig struct {
	// Level is the S2 level of the map's cells. Default 10.
	Level int
	// Shards fixes the number of shards. Default 0: choose it within
	// MinShards..MaxShards as the fewest shards whose mean load is at most
	// TargetDocsPerShard.
	Shards int
	// MinShards and MaxShards bound the chosen shard count. Default 12, 36.
	MinShards, MaxShards int
	// TargetDocsPerShard is the mean load per shard the chosen count aims
	// at. Default 3,200,000 documents, which gives 18 shards for 55 million.
	TargetDocsPerShard int64
	// MaxImbalance bounds every shard's load to within ±MaxImbalance of the
	// mean (Optimal only; Greedy minimises the spread instead). Default 0.10.
	MaxImbalance float64
	// Strategy is the algorithm. Default Optimal.
	Strategy Strategy
	// RoutingNumShards is the index.number_of_routing_shards of the index
	// the map is for. Default 0: equal to the shard count. It must be a
	// multiple of the shard count.
	RoutingNumShards int
	// DerivedCentres is the number of search centres of the workload
	// derived from the loads when none is given. Default 2,000.
	DerivedCentres int
}

// Defaults of PlanConfig.
const (
	DefaultMinShards          = 12
	DefaultMaxShards          = 36
	DefaultTargetDocsPerShard = 3_200_000
	DefaultMaxImbalance       = 0.10
	DefaultDerivedCentres     = 2000
)

// withDefaults returns the configuration with every zero field set to its
// default.
func (c PlanConfig) withDefaults() PlanConfig {
	if c.Level == 0 {
		c.Level = DefaultLevel
	}
	if c.MinShards == 0 {
		c.MinShards = DefaultMinShards
	}
	if c.MaxShards == 0 {
		c.MaxShards = DefaultMaxShards
	}
	if c.TargetDocsPerShard == 0 {
		c.TargetDocsPerShard = DefaultTargetDocsPerShard
	}
	if c.MaxImbalance == 0 {
		c.MaxImbalance = DefaultMaxImbalance
	}
	if c.Strategy == "" {
		c.Strategy = Optimal
	}
	if c.DerivedCentres == 0 {
		c.DerivedCentres = DefaultDerivedCentres
	}
	return c
}

// Validate reports every bad field at once.
func (c PlanConfig) Validate() error {
	c = c.withDefaults()
	var p []string
	if c.Level < 1 || c.Level > 30 {
		p = append(p, fmt.Sprintf("level %d: want 1 to 30", c.Level))
	}
	if c.Shards < 0 || c.Shards > 4096 {
		p = append(p, fmt.Sprintf("shards %d: want 1 to 4096, or 0 to choose", c.Shards))
	}
	if c.MinShards < 1 || c.MaxShards < c.MinShards || c.MaxShards > 4096 {
		p = append(p, fmt.Sprintf("min-shards %d, max-shards %d: want 1 <= min <= max <= 4096", c.MinShards, c.MaxShards))
	}
	if c.TargetDocsPerShard < 1 {
		p = append(p, fmt.Sprintf("target docs per shard %d: want a positive number", c.TargetDocsPerShard))
	}
	if !(c.MaxImbalance > 0 && c.MaxImbalance < 1) {
		p = append(p, fmt.Sprintf("max-imbalance %v: want more than 0 and less than 1", c.MaxImbalance))
	}
	if c.Strategy != Optimal && c.Strategy != Greedy {
		p = append(p, fmt.Sprintf("strategy %q: want %q or %q", c.Strategy, Optimal, Greedy))
	}
	if c.RoutingNumShards < 0 || (c.RoutingNumShards > 0 && c.Shards > 0 && c.RoutingNumShards%c.Shards != 0) {
		p = append(p, fmt.Sprintf("routing-num-shards %d: want a multiple of the shard count", c.RoutingNumShards))
	}
	if c.DerivedCentres < 1 {
		p = append(p, fmt.Sprintf("derived centres %d: want at least 1", c.DerivedCentres))
	}
	if len(p) > 0 {
		return errors.New("router: plan config: " + strings.Join(p, "; "))
	}
	return nil
}

// Defaults returns c with every zero field at its default.
func (c PlanConfig) Defaults() PlanConfig { return c.withDefaults() }

// ShardCount is the number of shards a plan of total documents gets: Shards
// if set, else ⌈total / TargetDocsPerShard⌉ clamped to MinShards..MaxShards.
func (c PlanConfig) ShardCount(total int64) int {
	c = c.withDefaults()
	if c.Shards > 0 {
		return c.Shards
	}
	n := int((total + c.TargetDocsPerShard - 1) / c.TargetDocsPerShard)
	return min(max(n, c.MinShards), c.MaxShards)
}

// Plan computes a map from the load per cell. The workload is the searches
// the map should serve; nil derives one from the loads (see
// DeriveWorkload). Greedy ignores the workload. The result is deterministic.
func Plan(loads []CellLoad, work *Workload, cfg PlanConfig) (*Map, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	c, err := newCurve(loads, cfg.Level)
	if err != nil {
		return nil, err
	}
	k := cfg.ShardCount(c.total())
	if int64(k) > int64(len(c.pos)) {
		return nil, fmt.Errorf("router: %d shards but only %d cells hold documents", k, len(c.pos))
	}
	var starts []uint64
	switch cfg.Strategy {
	case Greedy:
		starts = planGreedy(&c, k)
	case Optimal:
		if work == nil {
			if work, err = DeriveWorkload(loads, cfg.Level, cfg.DerivedCentres); err != nil {
				return nil, err
			}
		}
		if work.level != cfg.Level {
			return nil, fmt.Errorf("router: workload level %d differs from plan level %d", work.level, cfg.Level)
		}
		if starts, err = planOptimal(&c, work, k, cfg.MaxImbalance); err != nil {
			return nil, err
		}
	}
	return mapFromStarts(&c, starts, cfg.RoutingNumShards)
}

// mapFromStarts names the shards in curve order, chooses their routing
// keys and records their planned loads.
func mapFromStarts(c *curve, starts []uint64, rns int) (*Map, error) {
	k := len(starts)
	if rns == 0 {
		rns = k
	}
	if rns%k != 0 {
		return nil, fmt.Errorf("router: routing_num_shards %d is not a multiple of %d shards", rns, k)
	}
	docs := c.loadsOf(starts)
	shards := make([]Shard, k)
	for i, p := range starts {
		name := ShardName(i)
		shards[i] = Shard{
			Name:    name,
			Start:   posCell(p, c.level).ToToken(),
			Routing: RoutingKey(name, i, rns, k),
			Docs:    docs[i],
		}
	}
	return New(c.level, rns, shards)
}

// planGreedy is the reference: for each capacity, fill shards in curve order
// (a shard takes the next cell while it stays within capacity; a cell
// heavier than the capacity gets a shard alone), and keep, of the
// capacities that give exactly k shards, the split with the smallest
// standard deviation. Capacities are tried on a grid of 20,000 steps from
// total/k to 2·total/k; a new shard starts at its first non-empty cell.
func planGreedy(c *curve, k int) []uint64 {
	total := float64(c.total())
	const steps = 20000
	best, bestSD := []int(nil), math.Inf(1)
	cuts := make([]int, 0, k)
	for s := 0; s <= steps; s++ {
		capacity := int64(total / float64(k) * (1 + float64(s)/steps))
		cuts = cuts[:0]
		cuts = append(cuts, 0)
		for j := 0; j < len(c.pos) && len(cuts) <= k; {
			// The shard from j takes cells while cum stays within capacity.
			limit := c.cum[j] + capacity
			end := upperBound(c.cum, limit) - 1 // last e with cum[e] <= limit
			if end <= j {
				end = j + 1 // a cell heavier than the capacity
			}
			if end >= len(c.pos) {
				break
			}
			cuts = append(cuts, end)
			j = end
		}
		if len(cuts) != k {
			continue
		}
		if sd := stddev(c, cuts); sd < bestSD {
			best, bestSD = append([]int(nil), cuts...), sd
		}
	}
	if best == nil {
		// No capacity on the grid gives k shards (very lumpy loads): fall
		// back to equal cumulative quantiles, which always do.
		best = quantileCuts(c, k)
	}
	starts := make([]uint64, k)
	for i, j := range best {
		starts[i] = c.pos[j]
	}
	starts[0] = 0
	return starts
}

// upperBound is the first index e with a[e] > v.
func upperBound(a []int64, v int64) int {
	lo, hi := 0, len(a)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if a[mid] <= v {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo
}

// quantileCuts splits at the cells nearest to k equal load quantiles,
// keeping every shard non-empty.
func quantileCuts(c *curve, k int) []int {
	cuts := []int{0}
	for i := 1; i < k; i++ {
		target := c.total() * int64(i) / int64(k)
		j := max(upperBound(c.cum, target)-1, cuts[i-1]+1)
		j = min(j, len(c.pos)-(k-i))
		cuts = append(cuts, j)
	}
	return cuts
}

// stddev of shard loads when shard i starts at non-empty cell cuts[i].
func stddev(c *curve, cuts []int) float64 {
	mean := float64(c.total()) / float64(len(cuts))
	var ss float64
	for i, j := range cuts {
		end := len(c.pos)
		if i+1 < len(cuts) {
			end = cuts[i+1]
		}
		d := float64(c.cum[end]-c.cum[j]) - mean
		ss += d * d
	}
	return math.Sqrt(ss / float64(len(cuts)))
}
