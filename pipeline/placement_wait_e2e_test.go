package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/pipeline/placement"
)

// fleet is instances of one configuration kept running the way a
// Kubernetes Deployment keeps its pods: one whose Run returns is started
// again, and what it returned is kept for the test to judge.
type fleet struct {
	e     *testEnv
	cfg   Config
	n     int // instances started, for their names
	slots []*running
	exits []string
}

func newFleet(e *testEnv, cfg Config, size int) *fleet {
	f := &fleet{e: e, cfg: cfg}
	for range size {
		f.slots = append(f.slots, f.startOne())
	}
	return f
}

func (f *fleet) startOne() *running {
	f.n++
	c := f.cfg
	c.Instance, c.Registerer = fmt.Sprintf("ingest-%d", f.n), prometheus.NewRegistry()
	return f.e.start(c)
}

// tend starts again every instance that has exited.
func (f *fleet) tend() {
	for i, r := range f.slots {
		if err, ok := r.Exited(); ok {
			f.exits = append(f.exits, fmt.Sprintf("%s: Run = %v", r.p.cfg.Instance, err))
			f.slots[i] = f.startOne()
		}
	}
}

// waitConsuming waits until every instance is past its start checks, so
// that nothing produced afterwards was in the topics when they started.
func (f *fleet) waitConsuming(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(realenv.Slack(timeout))
	for _, r := range f.slots {
		for !r.p.running.Load() {
			if err, ok := r.Exited(); ok {
				t.Fatalf("%s: Run = %v before it started consuming", r.p.cfg.Instance, err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s did not start consuming in %v", r.p.cfg.Instance, timeout)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// waitCaughtUp waits, tending the instances, until every event is
// committed and no dish is parked; it says why not if timeout passes
// first.
func (f *fleet) waitCaughtUp(timeout time.Duration) (ok bool, why string) {
	deadline := time.Now().Add(realenv.Slack(timeout))
	for time.Now().Before(deadline) {
		f.tend()
		if ok, why = f.e.caughtUp(context.Background()); ok {
			return true, ""
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false, why
}

func (f *fleet) stop(t *testing.T) {
	t.Helper()
	for _, r := range f.slots {
		if err := r.Stop(t); err != nil {
			f.exits = append(f.exits, fmt.Sprintf("%s: stopped: Run = %v", r.p.cfg.Instance, err))
		}
	}
}

// topicOrders are the orders in which a new deployment's sources may
// first write the two topics: the whole dish table first (a snapshot of
// it before the restaurants'), the restaurants first, or alternating
// runs of each, starting with dishes.
var topicOrders = []struct {
	name  string
	order func(evs []genEvent) []genEvent
}{
	{"dishes first", func(evs []genEvent) []genEvent { return append(eventsOf(evs, true), eventsOf(evs, false)...) }},
	{"restaurants first", func(evs []genEvent) []genEvent { return append(eventsOf(evs, false), eventsOf(evs, true)...) }},
	{"interleaved", func(evs []genEvent) []genEvent {
		const run = 40
		dishes, rests := eventsOf(evs, true), eventsOf(evs, false)
		var out []genEvent
		for len(dishes) > 0 || len(rests) > 0 {
			k := min(run, len(dishes))
			out, dishes = append(out, dishes[:k]...), dishes[k:]
			k = min(run, len(rests))
			out, rests = append(out, rests[:k]...), rests[k:]
		}
		return out
	}},
}

// eventsOf is the dish events of evs, or the restaurant events, in order.
func eventsOf(evs []genEvent, dish bool) []genEvent {
	var out []genEvent
	for _, ev := range evs {
		if ev.dish == dish {
			out = append(out, ev)
		}
	}
	return out
}

// TestNewDeploymentPlacesEveryDish: three instances started before
// anything is produced (a new deployment), with dish events keyed by
// dish, a restaurant topic placed by each client's partitioner, and the
// two topics written in each order. An instance that exits is started
// again, as a Deployment restarts its pods, but none may exit. Nothing is
// forwarded before the restaurant topic's placement is known, so every
// dish is forwarded to its restaurant's partition and handled where its
// restaurant is: every document once, on its restaurant's shard, at its
// newest version; no dead letter but the bad events'; every offset
// committed, with no dish left waiting.
func TestNewDeploymentPlacesEveryDish(t *testing.T) {
	realenv.Parallel(t)
	for _, p := range placement.Partitioners {
		for _, o := range topicOrders {
			t.Run(string(p)+"/"+o.name, func(t *testing.T) {
				realenv.Parallel(t)
				testNewDeployment(t, p, o.order)
			})
		}
	}
}

func testNewDeployment(t *testing.T, p placement.Partitioner, order func([]genEvent) []genEvent) {
	const seed = 23
	e := newEnv(t, envOptions{partitions: 6, twoTopics: true, dishKeyDish: true})
	g := defaultGen(seed, 600)
	// Across two topics the order of a restaurant's events and its
	// dishes' is undefined, here more than anywhere; a dish made without
	// a restaurant would be dead-lettered for that, not for its place.
	g.wRestDelete, g.wReplay, g.wDishOutOfOrder, g.wOrphan = 0, 0, 0, 0
	evs := order(keyDishesByDish(generate(t, g)))
	t.Logf("seed %d, restaurants placed by %s: %d events: %s", seed, p, len(evs), summarize(evs))

	cfg := e.config()
	// A dish whose restaurant is produced after it meets it as soon as
	// it is; one sent where its restaurant is not would wait out this
	// age, and the wait below ends sooner.
	cfg.PendingMaxAge = time.Hour
	f := newFleet(e, cfg, 3)
	f.waitConsuming(t, 30*time.Second)

	where := produceBy(t, e, producerBy(t, e, p), evs)
	if ok, why := f.waitCaughtUp(30 * time.Second); !ok {
		t.Errorf("not caught up after 30s: %s", why)
	}
	f.stop(t)
	for _, x := range f.exits {
		t.Errorf("instance exited: %s", x)
	}
	for _, r := range f.slots {
		if st := r.p.Stats(); st.Misplaced != 0 {
			t.Errorf("%s: %d restaurant events reported misplaced", r.p.cfg.Instance, st.Misplaced)
		}
		if k := r.p.dec.placement.Current(); k == nil || k.Partitioner().SamePlace() != p.SamePlace() {
			t.Errorf("%s placed dishes by %+v, want %s", r.p.cfg.Instance, k, p)
		}
	}
	// Every dish was forwarded to its restaurant's partition: the one
	// the restaurant topic's producer gives the restaurant id.
	misplaced := 0
	for _, m := range testenv.ReadTopic(t, e.kafka, e.repartition) {
		if m.Key != nil && m.Partition != p.Partition(m.Key, 6) {
			if misplaced++; misplaced <= 5 {
				t.Errorf("dish of restaurant %s forwarded to partition %d, want %d", m.Key, m.Partition, p.Partition(m.Key, 6))
			}
		}
	}
	if misplaced > 0 {
		t.Errorf("%d dish events forwarded elsewhere than their restaurant's partition", misplaced)
	}
	checkFinal(t, e, evs, where)
}
