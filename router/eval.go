package router

import (
	"fmt"
	"math"
)

// Metrics describe how a map serves a load and a workload.
type Metrics struct {
	// Shards is the number of shards.
	Shards int `json:"shards"`
	// Docs is the load of each shard, in map order.
	Docs []int64 `json:"docs"`
	// CV is the coefficient of variation of the shard loads (population
	// standard deviation over mean).
	CV float64 `json:"cv"`
	// MaxOverMean is the largest shard load over the mean.
	MaxOverMean float64 `json:"max_over_mean"`
	// Fanout is the mean number of shards a search asks, weighted; 1 is
	// ideal. Zero when no workload was given.
	Fanout float64 `json:"fanout"`
	// Queries is the number of searches Fanout is taken over.
	Queries int `json:"queries"`
}

// Evaluate measures a map against loads and, if work is not nil, a
// workload. Loads in cells finer than the map's level count in their
// ancestor's shard.
func Evaluate(m *Map, loads []CellLoad, work *Workload) (Metrics, error) {
	mt := Metrics{Shards: m.NumShards(), Docs: make([]int64, m.NumShards())}
	var total int64
	for i, l := range loads {
		if !l.Cell.IsValid() || l.Cell.Level() < m.level {
			return mt, fmt.Errorf("router: load %d: cell %v is not a valid cell at level %d or finer", i, l.Cell, m.level)
		}
		mt.Docs[m.LocateCell(l.Cell)] += l.Docs
		total += l.Docs
	}
	mt.CV, mt.MaxOverMean = spread(mt.Docs, total)
	if work != nil {
		f, err := work.Fanout(m)
		if err != nil {
			return mt, err
		}
		mt.Fanout, mt.Queries = f, work.Len()
	}
	return mt, nil
}

func spread(docs []int64, total int64) (cv, maxOverMean float64) {
	if total == 0 {
		return 0, 0
	}
	mean := float64(total) / float64(len(docs))
	var ss, mx float64
	for _, d := range docs {
		x := float64(d)
		ss += (x - mean) * (x - mean)
		mx = max(mx, x)
	}
	return math.Sqrt(ss/float64(len(docs))) / mean, mx / mean
}
