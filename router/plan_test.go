package router

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// fixture reads a file under the repository's testdata/.
func fixture(t testing.TB, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatalf("fixture: %v (regenerate with make fixtures)", err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func fixtureLoads(t testing.TB, name string) []CellLoad {
	t.Helper()
	loads, err := ReadLoads(fixture(t, name), DefaultLevel)
	if err != nil {
		t.Fatal(err)
	}
	return loads
}

func fixtureQueries(t testing.TB, name string, n int) []Query {
	t.Helper()
	qs, err := ReadQueries(fixture(t, name))
	if err != nil {
		t.Fatal(err)
	}
	if n > 0 && n < len(qs) {
		qs = qs[:n]
	}
	return qs
}

func totalDocs(loads []CellLoad) (n int64) {
	for _, l := range loads {
		n += l.Docs
	}
	return n
}

// The planner's acceptance figure: on held-out US-like data with 18 shards
// and max-imbalance 0.10, the optimal map asks at least 20% fewer extra
// shards per search than greedy, with max/mean load at most 1.10.
func TestOptimalBeatsGreedyOnHeldOutData(t *testing.T) {
	loads := fixtureLoads(t, "loads/us.csv")
	heldLoads := fixtureLoads(t, "loads/us-heldout.csv")
	n := 0
	if testing.Short() {
		n = 4000
	}
	held, err := NewWorkload(fixtureQueries(t, "queries/us-heldout.csv", n), DefaultLevel)
	if err != nil {
		t.Fatal(err)
	}
	cfg := PlanConfig{Shards: 18, MaxImbalance: 0.10}
	opt, err := Plan(loads, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Strategy = Greedy
	greedy, err := Plan(loads, nil, cfg)
	if err != nil {
		t.Fatal(err)
	}
	mo, _ := Evaluate(opt, loads, held)
	mg, _ := Evaluate(greedy, loads, held)
	ho, _ := Evaluate(opt, heldLoads, nil)
	t.Logf("optimal: fan-out %.4f, max/mean %.4f (held-out loads %.4f), cv %.4f", mo.Fanout, mo.MaxOverMean, ho.MaxOverMean, mo.CV)
	t.Logf("greedy:  fan-out %.4f, max/mean %.4f, cv %.4f", mg.Fanout, mg.MaxOverMean, mg.CV)
	if gain := 1 - (mo.Fanout-1)/(mg.Fanout-1); gain < 0.20 {
		t.Errorf("optimal asks %.1f%% fewer extra shards than greedy, want at least 20%%", 100*gain)
	}
	if mo.MaxOverMean > 1.10 {
		t.Errorf("optimal max/mean = %.4f, want <= 1.10", mo.MaxOverMean)
	}
}

func TestPlanKeepsEveryShardWithinTheBound(t *testing.T) {
	loads := fixtureLoads(t, "loads/us.csv")
	work, err := DeriveWorkload(loads, DefaultLevel, 500)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		shards int
		imb    float64
	}{{12, 0.10}, {18, 0.10}, {18, 0.05}, {24, 0.10}, {36, 0.15}} {
		m, err := Plan(loads, work, PlanConfig{Shards: tc.shards, MaxImbalance: tc.imb})
		if err != nil {
			t.Fatalf("Plan(%d shards, ±%v): %v", tc.shards, tc.imb, err)
		}
		mean := float64(totalDocs(loads)) / float64(tc.shards)
		met, _ := Evaluate(m, loads, nil)
		for i, d := range met.Docs {
			if r := float64(d) / mean; r < 1-tc.imb-1e-9 || r > 1+tc.imb+1e-9 {
				t.Errorf("Plan(%d shards, ±%v): shard %d load %.4f of the mean", tc.shards, tc.imb, i, r)
			}
			if d != m.Shard(i).Docs {
				t.Errorf("shard %d records docs %d, its loads add up to %d", i, m.Shard(i).Docs, d)
			}
		}
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	loads := fixtureLoads(t, "loads/us.csv")
	shuffled := append([]CellLoad(nil), loads...)
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, s := range []Strategy{Optimal, Greedy} {
		a, err := Plan(loads, nil, PlanConfig{Strategy: s})
		if err != nil {
			t.Fatal(err)
		}
		b, err := Plan(shuffled, nil, PlanConfig{Strategy: s})
		if err != nil {
			t.Fatal(err)
		}
		if a.Hash() != b.Hash() {
			t.Errorf("%s: the same loads in another order planned map %s, then %s", s, a.ShortHash(), b.ShortHash())
		}
	}
}

// Greedy is the reference bucket filling: there is one capacity C for which
// every shard holds at most C and every shard but the last would exceed C
// with its next cell.
func TestGreedyIsBucketFilling(t *testing.T) {
	loads := fixtureLoads(t, "loads/us.csv")
	c, err := newCurve(loads, DefaultLevel)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []int{12, 18, 36} {
		starts := planGreedy(&c, k)
		if len(starts) != k {
			t.Fatalf("planGreedy(%d) gave %d shards", k, len(starts))
		}
		docs := c.loadsOf(starts)
		var capLo, capHi int64 = 0, math.MaxInt64
		for i, d := range docs {
			capLo = max(capLo, d)
			if i+1 < k {
				j := sort.Search(len(c.pos), func(j int) bool { return c.pos[j] >= starts[i+1] })
				capHi = min(capHi, d+c.cum[j+1]-c.cum[j])
			}
		}
		if capLo >= capHi {
			t.Errorf("planGreedy(%d): no single capacity explains the split (max load %d, smallest overflow %d)", k, capLo, capHi)
		}
	}
}

// On a small curve the dynamic programme finds the same optimum as trying
// every split.
func TestOptimalMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 30; trial++ {
		// 14 cells with random loads, spread over a stretch of face 4.
		var loads []CellLoad
		base := 4 * numPos(DefaultLevel) / 6
		p := base
		for j := 0; j < 14; j++ {
			p += 1 + uint64(rng.IntN(40))
			loads = append(loads, CellLoad{Cell: posCell(p, DefaultLevel), Docs: 50 + int64(rng.IntN(100))})
		}
		var qs []Query
		for q := 0; q < 40; q++ {
			l := loads[rng.IntN(len(loads))].Cell.LatLng()
			qs = append(qs, Query{Lat: l.Lat.Degrees(), Lng: l.Lng.Degrees(), RadiusM: 5000 + rng.Float64()*60000})
		}
		work, err := NewWorkload(qs, DefaultLevel)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := newCurve(loads, DefaultLevel)
		const k, imb = 3, 0.3
		_, cost := gapCosts(&c, work, int64(math.Floor(float64(c.total())/k*(1+imb))))
		got, err := planOptimal(&c, work, k, imb)
		mean := float64(c.total()) / k
		lo, hi := int64(math.Ceil(mean*(1-imb))), int64(math.Floor(mean*(1+imb)))
		best := math.Inf(1)
		m := len(c.pos)
		for a := 1; a < m; a++ {
			for b := a + 1; b < m; b++ {
				ok := true
				for _, l := range []int64{c.cum[a], c.cum[b] - c.cum[a], c.total() - c.cum[b]} {
					ok = ok && l >= lo && l <= hi
				}
				if ok {
					best = min(best, cost[a]+cost[b])
				}
			}
		}
		if math.IsInf(best, 1) {
			if !errors.Is(err, ErrInfeasible) {
				t.Errorf("trial %d: no feasible split, but planOptimal = %v, %v", trial, got, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("trial %d: planOptimal: %v", trial, err)
		}
		var sum float64
		for _, s := range got[1:] {
			j := sort.Search(m, func(j int) bool { return c.pos[j] >= s })
			sum += cost[j]
		}
		if sum > best+1e-3 { // the balance tie-break may spend up to ~1e-4
			t.Errorf("trial %d: planOptimal cost %.6f, brute force %.6f", trial, sum, best)
		}
	}
}

// Workload.Fanout counts, for every search, exactly the shards that Cover
// names.
func TestFanoutAgreesWithCover(t *testing.T) {
	m := worldMap(t, 36, 0)
	rng := rand.New(rand.NewPCG(3, 4))
	var qs []Query
	for i := 0; i < 300; i++ {
		qs = append(qs, Query{
			Lat: math.Asin(2*rng.Float64()-1) * 180 / math.Pi, Lng: rng.Float64()*360 - 180,
			RadiusM: 1000 + rng.Float64()*400_000,
		})
	}
	work, err := NewWorkload(qs, DefaultLevel)
	if err != nil {
		t.Fatal(err)
	}
	var want float64
	for _, q := range qs {
		cov, err := m.CoverCircle(q.Lat, q.Lng, q.RadiusM)
		if err != nil {
			t.Fatal(err)
		}
		want += float64(len(cov.Shards))
	}
	want /= float64(len(qs))
	got, err := work.Fanout(m)
	if err != nil || math.Abs(got-want) > 1e-9 {
		t.Errorf("Fanout = %v, %v; counting Cover's shards gives %v", got, err, want)
	}
}

func TestShardCount(t *testing.T) {
	cases := []struct {
		cfg   PlanConfig
		total int64
		want  int
	}{
		{PlanConfig{}, 55_900_000, 18},
		{PlanConfig{}, 1000, 12},
		{PlanConfig{}, 430_000_000, 36},
		{PlanConfig{Shards: 7}, 55_900_000, 7},
		{PlanConfig{TargetDocsPerShard: 2_000_000}, 55_900_000, 28},
		{PlanConfig{MinShards: 20, MaxShards: 24}, 55_900_000, 20},
	}
	for _, tc := range cases {
		if got := tc.cfg.ShardCount(tc.total); got != tc.want {
			t.Errorf("%+v.ShardCount(%d) = %d, want %d", tc.cfg, tc.total, got, tc.want)
		}
	}
}

func TestPlanErrors(t *testing.T) {
	loads := fixtureLoads(t, "loads/us.csv")
	if _, err := Plan(loads, nil, PlanConfig{Shards: 18, MaxImbalance: 0.01}); !errors.Is(err, ErrInfeasible) {
		t.Errorf("Plan(±1%%) error = %v, want ErrInfeasible", err)
	}
	bad := PlanConfig{Shards: -1, MinShards: 9, MaxShards: 3, MaxImbalance: 2, Strategy: "best"}
	err := bad.Validate()
	for _, frag := range []string{"shards -1", "min-shards 9", "max-imbalance 2", `strategy "best"`} {
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("Validate() = %v, want it to mention %q", err, frag)
		}
	}
	if _, err := Plan([]CellLoad{{Cell: posCell(5, 9), Docs: 3}}, nil, PlanConfig{}); err == nil {
		t.Errorf("Plan(level-9 cell) succeeded, want an error")
	}
	if _, err := Plan(loads[:5], nil, PlanConfig{Shards: 18}); err == nil {
		t.Errorf("Plan(5 cells, 18 shards) succeeded, want an error")
	}
}

func TestDeriveWorkload(t *testing.T) {
	loads := fixtureLoads(t, "loads/us.csv")
	w, err := DeriveWorkload(loads, DefaultLevel, 1000)
	if err != nil {
		t.Fatal(err)
	}
	// 1000 centres at 5 radii each: the weights add up to 5000, whatever
	// merging of repeated centres happened.
	if math.Abs(w.weight-5000) > 1e-9 || w.Len() > 5000 || w.Len()%5 != 0 {
		t.Errorf("DeriveWorkload(1000) weight %v over %d searches, want weight 5000 in at most 5000", w.weight, w.Len())
	}
	// The heaviest cell attracts the most centres.
	heaviest := loads[0]
	for _, l := range loads {
		if l.Docs > heaviest.Docs {
			heaviest = l
		}
	}
	var maxW float64
	for _, q := range w.queries {
		maxW = max(maxW, q.w)
	}
	if want := float64(heaviest.Docs) / float64(totalDocs(loads)) * 1000; maxW < want-1 {
		t.Errorf("the heaviest centre has weight %v, want at least %v (the heaviest cell's share)", maxW, want-1)
	}
}
