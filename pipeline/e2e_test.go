package pipeline

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/router"
)

// checkFinal compares the index, the dead letters and the committed
// offsets with what the model predicts from the event log.
func checkFinal(t *testing.T, e *testEnv, evs []genEvent, where []produced) {
	t.Helper()
	checkFinalOpts(t, e, evs, where, false)
}

// checkFinalOpts is checkFinal; with extraPending, unexpected dead letters
// of reason unknown_restaurant are logged, not failed: after a rebalance,
// an instance that lost a partition may dead-letter a waiting dish that
// the partition's new owner finished (a duplicate; the index is checked
// as strictly).
func checkFinalOpts(t *testing.T, e *testEnv, evs []genEvent, where []produced, extraPending bool) {
	t.Helper()
	m := runModel(evs)
	got := checkIndexDocs(t, e, testIndex, e.m, m.expectedDocs(e.m))

	// Every event the model dead-letters is in the dead-letter topic with
	// its reason, and nothing else is (redelivery may repeat one).
	dl := e.readDLQ(t)
	byPlace := map[produced][]string{}
	for _, r := range dl {
		byPlace[r.src] = append(byPlace[r.src], r.reason)
	}
	for i, reason := range m.deadLetters {
		reasons := byPlace[where[i]]
		if len(reasons) == 0 {
			t.Errorf("event %d (%s/%d@%d, %.80s) not dead-lettered, want reason %s", i, where[i].topic, where[i].partition, where[i].offset, evs[i].value, reason)
			continue
		}
		for _, r := range reasons {
			if r != string(reason) {
				t.Errorf("event %d (%.80s) dead-lettered with reason %s, want %s", i, evs[i].value, r, reason)
			}
		}
		delete(byPlace, where[i])
	}
	index := map[produced]int{}
	for i, w := range where {
		index[w] = i
	}
	details := map[produced]string{}
	for _, r := range dl {
		details[r.src] = r.detail
	}
	tolerated := 0
	for src, reasons := range byPlace {
		if extraPending && len(reasons) > 0 && reasons[0] == string(decode.ReasonUnknownRestaurant) {
			tolerated++
			continue
		}
		i := index[src]
		mr := m.rests[evs[i].rid]
		t.Errorf("unexpected dead letter %v (%s) from %s/%d@%d: event %d %.120s; the model's restaurant: %+v", reasons, details[src], src.topic, src.partition, src.offset, i, evs[i].value, mr)
	}
	if tolerated > 0 {
		t.Logf("%d extra unknown_restaurant dead letters from a rebalance (tolerated)", tolerated)
	}
	if ok, why := e.caughtUp(context.Background()); !ok {
		t.Errorf("committed offsets behind the high watermarks: %s", why)
	}
	t.Logf("final state: %d documents, %d dead letters (%d expected)", len(got), len(dl), len(m.deadLetters))
}

// checkIndexDocs compares an index built with map gm with the documents
// the model predicts under that map: ids, routing, sources, and the count
// of every physical shard (asked with preference=_shards:i), which shows
// each document on the shard its routing says. It returns what it read.
func checkIndexDocs(t *testing.T, e *testEnv, index string, gm *router.Map, want map[string]storedDoc) map[string]storedDoc {
	t.Helper()
	got := e.scanIndexOf(t, index)
	mismatches := 0
	report := func(format string, args ...any) {
		mismatches++
		if mismatches <= 15 {
			t.Errorf(index+": "+format, args...)
		}
	}
	for _, id := range testenv.SortedKeys(want) {
		w := want[id]
		g, ok := got[id]
		switch {
		case !ok:
			report("%s missing from the index (want routing %s, version %v)", id, w.routing, w.source["version"])
		case g.routing != w.routing:
			report("%s stored with routing %q, want %q", id, g.routing, w.routing)
		case !reflect.DeepEqual(g.source, roundTrip(w.source)):
			report("%s source = %v\nwant %v", id, g.source, roundTrip(w.source))
		}
	}
	for _, id := range testenv.SortedKeys(got) {
		if _, ok := want[id]; !ok {
			report("%s is in the index (routing %s, version %v) but should not be", id, got[id].routing, got[id].source["version"])
		}
	}
	if mismatches > 15 {
		t.Errorf("%s: … %d mismatches in all", index, mismatches)
	}
	wantCounts := make([]int64, gm.NumShards())
	for _, d := range want {
		for i := range gm.NumShards() {
			if gm.Shard(i).Routing == d.routing {
				wantCounts[i]++
			}
		}
	}
	if gotCounts := e.shardCountsOf(t, index, gm.NumShards()); !reflect.DeepEqual(gotCounts, wantCounts) {
		t.Errorf("%s: documents per shard = %v, want %v", index, gotCounts, wantCounts)
	}
	return got
}

func summarize(evs []genEvent) string {
	counts := map[string]int{}
	for _, ev := range evs {
		k := ev.typ + "/" + ev.op
		if ev.poison != "" {
			k = "poison/" + string(ev.poison)
		}
		counts[k]++
	}
	var parts []string
	for _, k := range testenv.SortedKeys(counts) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
	}
	return strings.Join(parts, " ")
}

func TestEndToEnd(t *testing.T) {
	realenv.Parallel(t)
	const seed = 1
	e := newEnv(t, envOptions{partitions: 4})
	evs := generate(t, defaultGen(seed, 3000))
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	where := e.produce(context.Background(), evs)
	// An early dish waits for its restaurant however long the machine
	// takes to bring it (waitForever); the orphans go once the log is
	// committed.
	cfg := e.config()
	cfg.PendingMaxAge = waitForever
	r := e.start(cfg)
	e.waitCommitted(t, r, 40*time.Second)
	st := r.p.Stats()
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	t.Logf("stats: fetched %d finished %d moves %d pending %d directory %d events %v dead %v", st.Fetched, st.Finished, st.Moves, st.Pending, st.Directory, st.Events, st.DeadLetters)
	e.expireOrphans(t, evs, where)
	checkFinal(t, e, evs, where)
}

// TestEndToEndTwoTopics reads restaurants and dishes from two topics, so
// their relative order is not defined: a dish may come before its
// restaurant, or after a move. The stream has no deletes of restaurants
// and no replays, whose outcome would depend on that order.
func TestEndToEndTwoTopics(t *testing.T) {
	realenv.Parallel(t)
	const seed = 2
	e := newEnv(t, envOptions{partitions: 3, twoTopics: true})
	g := defaultGen(seed, 1500)
	g.wRestDelete, g.wReplay, g.wDishOutOfOrder = 0, 0, 0
	evs := generate(t, g)
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	where := e.produce(context.Background(), evs)
	// The two topics are consumed independently, so the restaurants can
	// fall behind the dishes by any time on a busy machine (on the real
	// node every move costs two refreshes of the index): a dish must not
	// give up on a restaurant that is only late.
	cfg := e.config()
	cfg.PendingMaxAge = waitForever
	r := e.start(cfg)
	e.waitCommitted(t, r, 40*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	e.expireOrphans(t, evs, where)
	checkFinal(t, e, evs, where)
}

// TestTopicsWithDifferentPartitionCounts: event topics whose partition
// counts differ cannot be consumed co-partitioned; Run refuses them at
// start, naming both, before it consumes anything.
func TestTopicsWithDifferentPartitionCounts(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 3, twoTopics: true, dishPartitions: 2})
	r := e.start(e.config())
	err := r.Wait(t, 20*time.Second)
	var pm *PartitionMismatchError
	if !errors.As(err, &pm) {
		t.Fatalf("Run = %v, want a *PartitionMismatchError", err)
	}
	if pm.Counts[e.restaurantTopic] != 3 || pm.Counts[e.dishTopic] != 2 {
		t.Errorf("counts %v, want %s 3 and %s 2", pm.Counts, e.restaurantTopic, e.dishTopic)
	}
	if f := r.p.Stats().Fetched; f != 0 {
		t.Errorf("%d events fetched before the refusal, want none", f)
	}
}

// TestKillAndResume cancels consumers mid-stream without draining (their
// writes in flight are abandoned, nothing more is committed) and starts
// another in the same group each time: the last one reaches the same
// final state, and nothing is lost. A dish that waits for a restaurant
// later in its partition keeps its first parking time across the kills,
// so its wait includes every restart: the instances wait without a
// limit (waitForever), and the orphans go once the log is committed.
func TestKillAndResume(t *testing.T) {
	realenv.Parallel(t)
	const seed = 3
	e := newEnv(t, envOptions{partitions: 4})
	evs := generate(t, defaultGen(seed, 2500))
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	where := e.produce(context.Background(), evs)
	patient := e.config()
	patient.PendingMaxAge = waitForever
	for i, frac := range []float64{0.2, 0.5, 0.8} {
		cfg := patient
		cfg.Registerer = prometheus.NewRegistry()
		cfg.DrainTimeout = time.Nanosecond
		r := e.start(cfg)
		target := int64(frac * float64(len(evs)))
		deadline := time.Now().Add(30 * time.Second)
		for r.p.Stats().Finished < target && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		if err := r.Stop(t); err != nil {
			t.Fatalf("kill %d: Run = %v", i, err)
		}
		st := r.p.Stats()
		t.Logf("kill %d at %d finished events: bulk added %d, %d ok; pending %d", i, st.Finished, st.Bulk.Added, st.Bulk.OK, st.Pending)
	}
	patient.Registerer = prometheus.NewRegistry()
	r := e.start(patient)
	e.waitCommitted(t, r, 40*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	e.expireOrphans(t, evs, where)
	checkFinal(t, e, evs, where)
}

// TestRebalance runs two instances in one group: the second joins
// mid-stream, then the first leaves. Partitions move both ways, with
// redelivery, and each instance must see the restaurants the other wrote.
func TestRebalance(t *testing.T) {
	realenv.Parallel(t)
	const seed = 4
	e := newEnv(t, envOptions{partitions: 4})
	evs := generate(t, defaultGen(seed, 2400))
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	third := len(evs) / 3
	where := e.produce(context.Background(), evs[:third])
	// A dish parked by the instance that loses its partition keeps its
	// first parking time at the next owner, which counts the rebalance
	// against its wait: the instances wait without a limit.
	patient := func() Config {
		cfg := e.config()
		cfg.PendingMaxAge = waitForever
		return cfg
	}
	a := e.start(patient())
	e.waitCommitted(t, a, 30*time.Second)
	b := e.start(patient())
	where = append(where, e.produce(context.Background(), evs[third:2*third])...)
	e.waitCommitted(t, b, 30*time.Second)
	if err := a.Stop(t); err != nil {
		t.Fatalf("first instance: Run = %v", err)
	}
	where = append(where, e.produce(context.Background(), evs[2*third:])...)
	e.waitCommitted(t, b, 30*time.Second)
	if err := b.Stop(t); err != nil {
		t.Fatalf("second instance: Run = %v", err)
	}
	e.expireOrphans(t, evs, where)
	sa, sb := a.p.Stats(), b.p.Stats()
	t.Logf("first instance finished %d, second %d", sa.Finished, sb.Finished)
	if sa.Finished == 0 || sb.Finished == 0 {
		t.Errorf("an instance finished nothing: %d and %d", sa.Finished, sb.Finished)
	}
	checkFinalOpts(t, e, evs, where, true)
}

// TestScaleOut runs a group of instances on a restaurant topic and a dish
// topic of six partitions each: three start together, one is killed
// mid-stream (its writes in flight abandoned, nothing more committed), a
// fourth joins later. Partition N of both topics always goes to one
// member, so every dish is handled where its restaurant is: the index
// ends equal to the model of the event log, every document on its
// shard, and nothing is dead-lettered that should not be.
func TestScaleOut(t *testing.T) {
	realenv.Parallel(t)
	const seed = 11
	e := newEnv(t, envOptions{partitions: 6, twoTopics: true})
	g := defaultGen(seed, 3000)
	// As in TestEndToEndTwoTopics: across two topics the order of a
	// restaurant's events and its dishes' is undefined.
	g.wRestDelete, g.wReplay, g.wDishOutOfOrder = 0, 0, 0
	evs := generate(t, g)
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	ctx := context.Background()
	third, twoThirds := cutAt(evs, len(evs)/3), cutAt(evs, 2*len(evs)/3)
	where := e.produce(ctx, evs[:third])

	// As in TestEndToEndTwoTopics, a dish waits for its restaurant
	// without a limit; and one parked by the killed instance keeps its
	// first parking time at its next owner.
	cfg := e.config()
	cfg.PendingMaxAge = waitForever
	n := 0
	instance := func(c Config) Config { // its own name and metrics
		n++
		c.Instance, c.Registerer = fmt.Sprintf("ingest-%d", n), prometheus.NewRegistry()
		return c
	}
	killed := cfg
	killed.DrainTimeout = time.Nanosecond
	a, b, c := e.start(instance(cfg)), e.start(instance(killed)), e.start(instance(cfg))
	e.waitCommitted(t, a, 40*time.Second)

	where = append(where, e.produce(ctx, evs[third:twoThirds])...)
	before := b.p.Stats().Finished
	deadline := time.Now().Add(realenv.Slack(20 * time.Second))
	for b.p.Stats().Finished < before+50 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := b.Stop(t); err != nil {
		t.Fatalf("killed instance: Run = %v", err)
	}
	d := e.start(instance(cfg))
	where = append(where, e.produce(ctx, evs[twoThirds:])...)
	e.waitCommitted(t, a, 60*time.Second)
	for i, r := range []*running{a, c, d} {
		if err := r.Stop(t); err != nil {
			t.Fatalf("instance %d: Run = %v", i, err)
		}
	}
	e.expireOrphans(t, evs, where)
	var finished []int64
	for _, r := range []*running{a, b, c, d} {
		finished = append(finished, r.p.Stats().Finished)
	}
	t.Logf("finished per instance: %v", finished)
	checkFinal(t, e, evs, where)
}

// TestMetricsFollowOwnership: once a second instance joins and takes
// half the partitions, the first stops reporting the partitions it lost,
// in its Stats and in its per-partition metrics, and the two report
// disjoint partitions that cover the topic.
func TestMetricsFollowOwnership(t *testing.T) {
	realenv.Parallel(t)
	const seed = 12
	e := newEnv(t, envOptions{partitions: 4})
	evs := generate(t, defaultGen(seed, 1200))
	half := len(evs) / 2
	ctx := context.Background()
	where := e.produce(ctx, evs[:half])
	regA, regB := prometheus.NewRegistry(), prometheus.NewRegistry()
	cfgA, cfgB := e.config(), e.config()
	cfgA.Instance, cfgA.Registerer = "ingest-a", regA
	cfgB.Instance, cfgB.Registerer = "ingest-b", regB
	// As in TestRebalance, the dishes wait without a limit.
	cfgA.PendingMaxAge, cfgB.PendingMaxAge = waitForever, waitForever
	a := e.start(cfgA)
	e.waitCommitted(t, a, 30*time.Second)
	if n := len(a.p.Stats().Partitions); n != 4 {
		t.Fatalf("the only instance reports %d partitions, want 4", n)
	}
	b := e.start(cfgB)
	// Once both hold partitions, every partition gets events again.
	waitJoined(t, []*testMember{{r: a}, {r: b}})
	where = append(where, e.produce(ctx, evs[half:])...)
	e.waitCommitted(t, b, 30*time.Second)

	lagSeries := func(reg *prometheus.Registry) map[string]bool {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]bool{}
		for _, mf := range mfs {
			if mf.GetName() != "geoshard_ingest_consumer_lag" {
				continue
			}
			for _, m := range mf.GetMetric() {
				var topic, part string
				for _, l := range m.GetLabel() {
					switch l.GetName() {
					case "topic":
						topic = l.GetValue()
					case "partition":
						part = l.GetValue()
					}
				}
				out[topic+"/"+part] = true
			}
		}
		return out
	}
	keys := func(m map[string]PartitionStats) map[string]bool {
		out := map[string]bool{}
		for k := range m {
			out[k] = true
		}
		return out
	}
	deadline := time.Now().Add(realenv.Slack(20 * time.Second))
	for {
		pa, pb := keys(a.p.Stats().Partitions), keys(b.p.Stats().Partitions)
		la, lb := lagSeries(regA), lagSeries(regB)
		disjoint := len(pa) > 0 && len(pb) > 0 && len(pa)+len(pb) == 4
		for k := range pa {
			disjoint = disjoint && !pb[k]
		}
		same := func(x, y map[string]bool) bool {
			if len(x) != len(y) {
				return false
			}
			for k := range x {
				if !y[k] {
					return false
				}
			}
			return true
		}
		if disjoint && same(pa, la) && same(pb, lb) {
			t.Logf("first instance reports %v, second %v", pa, pb)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the rebalance: first instance reports %v (lag series %v), second %v (lag series %v); want disjoint partitions covering the topic, each in the metrics", pa, la, pb, lb)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, r := range []*running{a, b} {
		if err := r.Stop(t); err != nil {
			t.Fatal(err)
		}
	}
	e.expireOrphans(t, evs, where)
	checkFinalOpts(t, e, evs, where, true)
}
