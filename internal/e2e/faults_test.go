//go:build realcluster

package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/cluster"
	"github.com/geoshard/geoshard/internal/kafkatest"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/migrate"
)

// The fault suite runs the real pipeline (and the reshard) on the cluster
// profile of deploy/local/real.sh — three OpenSearch nodes and three KRaft
// brokers — and hurts one process at a time while events flow: a node
// killed and back, a node frozen, the busiest partition leader killed, a
// node killed in the middle of a backfill, a rolling restart. Each test
// then judges the index against the model of the event log, shard by
// shard, and the consumer group against the broker (every offset
// committed), and logs how long ingest took to recover as figures: what
// it asserts is what happened, never how long it took.
//
//	GEOSHARD_CLUSTER=3 GEOSHARD_REQUIRE_REAL=1 GEOSHARD_REAL_DIR=/tmp/gs-b \
//		deploy/local/real.sh run go test -tags realcluster -run TestFault -count=1 -timeout 30m -v ./internal/e2e
//
// The index has one replica (migrate.Init's default on a cluster of more
// than one node, set here explicitly), the topics three (the brokers'
// min.insync.replicas 2): a single fault loses nothing acknowledged.

// faultDownVar names how long a killed node or broker stays down before it
// is started again: a Go duration, default faultDownDefault. 20s is enough
// for the cluster to promote the replicas and for ingest to go on without
// the node, which is what CI needs; the 60s default also outlasts a
// search context's keep-alive and the client's request timeout.
const (
	faultDownVar     = "GEOSHARD_FAULT_DOWN"
	faultDownDefault = 60 * time.Second
	// faultFrozen is how long a node stays frozen under SIGSTOP.
	faultFrozen = 30 * time.Second
	// faultWait bounds every wait for a cluster or a group to come back:
	// generous, since a failing wait is a finding, not a slow machine.
	faultWait = 5 * time.Minute
)

// faultDown is the down time of a killed node or broker.
func faultDown(t testing.TB) time.Duration {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(faultDownVar))
	if v == "" {
		return faultDownDefault
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		t.Fatalf("%s=%q: want a duration such as 20s", faultDownVar, v)
	}
	return d
}

// faultCluster skips t unless a cluster profile of three runs
// (GEOSHARD_CLUSTER=3), and returns it once it is green with three nodes.
func faultCluster(t *testing.T) *cluster.Cluster {
	t.Helper()
	if os.Getenv(cluster.ClusterVar) != "3" {
		t.Skipf("fault suite: needs the three-node cluster profile (%s=3, REAL_CLUSTER=3 deploy/local/real.sh up)", cluster.ClusterVar)
	}
	c, err := cluster.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 3 || len(c.Brokers) != 3 {
		t.Fatalf("fault suite: %d nodes and %d brokers, want 3 of each", len(c.Nodes), len(c.Brokers))
	}
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	// An earlier test may have left the cluster recovering.
	if err := c.WaitGreen(ctx, 3); err != nil {
		t.Fatal(err)
	}
	return c
}

// newFaultEnv is newEnv on the cluster: a client that knows the three
// nodes (the pipeline and the job go on when one of them dies), the event
// and dead-letter topics created with three replicas, and menu-v1 created
// with one replica.
func newFaultEnv(t *testing.T, c *cluster.Cluster) *env {
	t.Helper()
	ctx := context.Background()
	e := &env{
		t:   t,
		m18: testenv.LoadMap(t, testenv.MapUS18),
		m24: testenv.LoadMap(t, testenv.MapUS24),
	}
	e.topic, e.dlq, e.group = realenv.Unique(eventTopic), realenv.Unique(dlqTopic), realenv.Unique(group)
	createReplicatedTopics(t, c.Brokers, map[string]int{e.topic: partitions, e.dlq: 2})
	e.kafka = kafkatest.Start(t)
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: c.Nodes, RequestTimeout: testenv.RequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	e.url, e.client, e.admin = c.Nodes[0], client, bulk.NewAdmin(client)
	clearCluster(t, c)
	t.Cleanup(func() {
		if !t.Failed() {
			clearCluster(t, c)
		}
	})
	one := 1
	if err := migrate.Init(ctx, e.admin, migrate.InitConfig{Map: e.m18, Index: sourceIdx, Alias: alias, Replicas: &one}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, faultWait)
	defer cancel()
	if err := c.WaitGreen(wctx, 3); err != nil {
		t.Fatalf("menu-v1 with one replica: %v", err)
	}
	return e
}

// clearCluster deletes the menu indexes and the migration state, asking
// each node in turn (one may be down).
func clearCluster(t testing.TB, c *cluster.Cluster) {
	t.Helper()
	path := "/" + url.PathEscape(strings.Join(realenv.MenuIndexes, ",")) + "?ignore_unavailable=true&allow_no_indices=true&expand_wildcards=all"
	var errs []string
	for _, node := range c.Nodes {
		req, err := http.NewRequest(http.MethodDelete, node+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNotFound {
			return
		}
		errs = append(errs, fmt.Sprintf("%s: %s", node, resp.Status))
	}
	t.Fatalf("clear the cluster: %s", strings.Join(errs, "; "))
}

// createReplicatedTopics creates each topic with min(3, brokers) replicas,
// two of them in sync for a write, waits until every partition has a
// leader that lists its offsets, and deletes them at the end of the test.
func createReplicatedTopics(t *testing.T, brokers []string, topics map[string]int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	adm := kadm.NewClient(cl)
	rf := int16(min(3, len(brokers)))
	minISR := fmt.Sprint(min(2, int(rf)))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var names []string
	for name, n := range topics {
		resp, err := adm.CreateTopic(ctx, int32(n), rf, map[string]*string{"min.insync.replicas": &minISR}, name)
		if err != nil {
			cl.Close()
			t.Fatalf("create topic %s: %v (%s)", name, err, resp.ErrMessage)
		}
		names = append(names, name)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		adm.DeleteTopics(ctx, names...) //nolint:errcheck // best effort: the names are unique to the run
		cl.Close()
	})
	for _, name := range names {
		for {
			ends, err := adm.ListEndOffsets(ctx, name)
			if err == nil {
				err = ends.Error()
			}
			if err == nil && len(ends[name]) == topics[name] {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("topic %s: no leaders: %v", name, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

// startFaultScenario is startScenario on the cluster.
func startFaultScenario(t *testing.T, c *cluster.Cluster, seed uint64, restaurants, initial int) *scenario {
	t.Helper()
	e := newFaultEnv(t, c)
	f := e.newFeed(t, streamConfig(seed, restaurants))
	in := e.startIngest(e.pipelineConfig("ingest-a"))
	f.produce(initial)
	e.waitDrained(t, in, 30*time.Second)
	e.waitApplied(t, in, "", "")
	return &scenario{e: e, f: f, in: in}
}

// restoreOnFailure starts node or broker n again (SIGCONT first, in case
// it was frozen) at the end of the test if it does not run, so that a test
// that failed half-way leaves a whole cluster for the next.
func restoreOnFailure(t *testing.T, c *cluster.Cluster, kind cluster.Kind, n int) {
	t.Helper()
	t.Cleanup(func() {
		c.Cont(kind, n) //nolint:errcheck // it may be running
		if _, err := c.Pid(kind, n); err != nil {
			if err := c.Start(kind, n); err != nil {
				t.Logf("restart %s %d: %v", kind, n, err)
				return
			}
		}
		if kind == cluster.OpenSearch {
			ctx, cancel := context.WithTimeout(context.Background(), faultWait)
			defer cancel()
			if err := c.WaitGreen(ctx, 3); err != nil {
				t.Logf("after the test: %v", err)
			}
		}
	})
}

// highWatermarks are the event topic's high watermarks now: the position
// of everything produced so far.
func (s *scenario) highWatermarks(t testing.TB) map[int]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), faultWait)
	defer cancel()
	for {
		hw, err := s.e.kafka.HighWatermarks(ctx, s.e.topic)
		if err == nil {
			return hw
		}
		if ctx.Err() != nil {
			t.Fatalf("high watermarks of %s: %v", s.e.topic, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitCommittedPast waits until the group has committed every partition of
// the event topic up to at least hw — every event produced before hw was
// taken is finished and committed — and returns when that was seen. The
// broker may be failing over meanwhile: errors are retried until timeout.
func (s *scenario) waitCommittedPast(t testing.TB, what string, hw map[int]int64, timeout time.Duration) time.Time {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	why := ""
	for {
		co, err := s.e.kafka.CommittedOffsets(ctx, s.e.group, s.e.topic)
		if err == nil {
			why = ""
			for p, h := range hw {
				if co[p] < h {
					why = fmt.Sprintf("%s/%d committed %d, want %d", s.e.topic, p, co[p], h)
					break
				}
			}
			if why == "" {
				return time.Now()
			}
		} else {
			why = err.Error()
		}
		if err, done := s.in.Exited(); done {
			t.Fatalf("%s: pipeline %s stopped (%s): %v", what, s.in.instance, why, err)
		}
		if time.Now().After(deadline) {
			st := s.in.p.Stats()
			t.Fatalf("%s: not committed after %v: %s; fetched %d, finished %d, pending %d, lag %d", what, timeout, why, st.Fetched, st.Finished, st.Pending, st.Lag)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// progress samples ingest's finished count and lag in the background, for
// the recovery figures.
type progress struct {
	mu      sync.Mutex
	samples []progressSample
	stop    chan struct{}
	done    chan struct{}
}

type progressSample struct {
	at       time.Time
	finished int64
	lag      int64
}

func (s *scenario) watchProgress(t testing.TB) *progress {
	p := &progress{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			st := s.in.p.Stats()
			p.mu.Lock()
			p.samples = append(p.samples, progressSample{at: time.Now(), finished: st.Finished, lag: st.Lag})
			p.mu.Unlock()
			select {
			case <-p.stop:
				return
			case <-tick.C:
			}
		}
	}()
	t.Cleanup(p.end)
	return p
}

func (p *progress) end() {
	select {
	case <-p.stop:
	default:
		close(p.stop)
	}
	<-p.done
}

// stall is the longest time within [from, to] during which ingest
// finished no event, and when it began.
func (p *progress) stall(from, to time.Time) (time.Duration, time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var longest time.Duration
	var began time.Time
	lastChange := from
	var lastFinished int64 = -1
	for _, sm := range p.samples {
		if sm.at.Before(from) {
			lastFinished = sm.finished
			continue
		}
		if sm.at.After(to) {
			break
		}
		if sm.finished != lastFinished {
			if lastFinished >= 0 && sm.at.Sub(lastChange) > longest {
				longest, began = sm.at.Sub(lastChange), lastChange
			}
			lastChange, lastFinished = sm.at, sm.finished
		}
	}
	if to.Sub(lastChange) > longest {
		longest, began = to.Sub(lastChange), lastChange
	}
	return longest, began
}

// peakLag is the largest consumer lag ingest reported within [from, to].
func (p *progress) peakLag(from, to time.Time) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	var peak int64
	for _, sm := range p.samples {
		if !sm.at.Before(from) && !sm.at.After(to) {
			peak = max(peak, sm.lag)
		}
	}
	return peak
}

// figures collects the recovery figures of a test, logged together at its
// end.
type figures struct {
	lines []string
}

func (f *figures) add(format string, args ...any) {
	f.lines = append(f.lines, fmt.Sprintf(format, args...))
}

func (f *figures) log(t testing.TB, name string) {
	t.Helper()
	t.Logf("recovery figures of %s:\n\t%s", name, strings.Join(f.lines, "\n\t"))
}

func since(a, b time.Time) string { return b.Sub(a).Round(100 * time.Millisecond).String() }

// finish stops the traffic, waits until ingest has finished and committed
// everything produced (the broker's committed offsets at its high
// watermarks), and judges menu-v1 against the model of the event log,
// shard by shard, and the dead-letter topic against the model's.
func (s *scenario) finish(t *testing.T, steps ...string) {
	t.Helper()
	s.f.waitProduced(s.f.count()+5*batchSize, 30*time.Second)
	s.mark("stop")
	s.f.stop()
	s.e.waitDrained(t, s.in, 2*time.Minute)
	s.checkTrafficDuring(t, steps...)
	final := buildModel(t, s.e.settled(t, s.f.log()))
	t.Logf("%d events produced; expected: %s", s.f.count(), summary(final.expected(s.e.m18)))
	s.explain(t, sourceIdx, s.e.checkIndex(t, sourceIdx, s.e.m18, final.expected(s.e.m18)))
	s.checkDeadLetters(t, buildModel(t, s.f.log()))
	if ok, why := s.e.caughtUp(context.Background()); !ok {
		t.Errorf("after draining, the group is not at the high watermarks: %s", why)
	}
}

// primariesOn lists how many started primaries of index each node holds.
func primariesOn(t testing.TB, c *cluster.Cluster, e *env, index string) string {
	t.Helper()
	var rows []struct {
		PriRep string `json:"prirep"`
		State  string `json:"state"`
		Node   string `json:"node"`
	}
	err := e.admin.Send(context.Background(), bulk.Request{Method: http.MethodGet, Path: "/_cat/shards/" + index + "?format=json&h=prirep,state,node"}, &rows)
	if err != nil {
		return err.Error()
	}
	count := map[string]int{}
	for _, r := range rows {
		if r.PriRep == "p" && r.State == "STARTED" {
			count[r.Node]++
		}
	}
	var parts []string
	for n, k := range count {
		parts = append(parts, fmt.Sprintf("%s=%d", n, k))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// TestFaultNodeKilled kills the node holding the most primaries of
// menu-v1 while events flow, keeps it down for GEOSHARD_FAULT_DOWN (60s),
// starts it again and waits for green. Ingest goes on through the two
// nodes left (the replicas of the lost primaries are promoted), finishes
// everything, and the index equals the model.
func TestFaultNodeKilled(t *testing.T) {
	c := faultCluster(t)
	down := faultDown(t)
	s := startFaultScenario(t, c, 31, 1500, 1000)
	ctx := context.Background()
	var fig figures
	s.f.start(batchSize, batchEvery)
	pr := s.watchProgress(t)
	s.mark("steady")
	s.waitTraffic(t, 30*time.Second)
	time.Sleep(3 * time.Second)

	victim, err := c.NodeWithMostPrimaries(ctx, sourceIdx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("primaries of %s: %s; killing geoshard-%d for %v", sourceIdx, primariesOn(t, c, s.e, sourceIdx), victim, down)
	restoreOnFailure(t, c, cluster.OpenSearch, victim)
	s.mark("kill")
	hwKill := s.highWatermarks(t)
	killed := time.Now()
	if err := c.Kill(cluster.OpenSearch, victim); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, faultWait)
	defer cancel()
	if err := c.WaitStatus(wctx, "yellow", 2); err != nil {
		t.Fatalf("two nodes left: %v", err)
	}
	fig.add("two nodes yellow or green %s after the kill", since(killed, time.Now()))
	// Ingest finishes, without the node, everything produced before it died.
	caught := s.waitCommittedPast(t, "events produced before the kill", hwKill, faultWait)
	fig.add("events produced before the kill committed %s after it (node still down)", since(killed, caught))
	s.waitTraffic(t, time.Minute)
	if rest := down - time.Since(killed); rest > 0 {
		time.Sleep(rest)
	}
	t.Logf("while geoshard-%d was down, primaries of %s: %s", victim, sourceIdx, primariesOn(t, c, s.e, sourceIdx))

	s.mark("rejoin")
	hwDown := s.highWatermarks(t)
	started := time.Now()
	if err := c.Start(cluster.OpenSearch, victim); err != nil {
		t.Fatal(err)
	}
	wctx2, cancel2 := context.WithTimeout(ctx, faultWait)
	defer cancel2()
	if err := c.WaitGreen(wctx2, 3); err != nil {
		t.Fatalf("geoshard-%d back: %v", victim, err)
	}
	green := time.Now()
	fig.add("green with three nodes %s after the start", since(started, green))
	caught = s.waitCommittedPast(t, "events produced while the node was down", hwDown, faultWait)
	fig.add("events produced while down committed %s after the start", since(started, caught))
	s.mark("green")
	s.waitTraffic(t, time.Minute)
	stall, at := pr.stall(killed, green)
	fig.add("longest stall of ingest (no event finished) from the kill to green: %s, from %s after the kill", stall.Round(100*time.Millisecond), since(killed, at))
	fig.add("peak consumer lag from the kill to green: %d (before the kill: %d)", pr.peakLag(killed, green), pr.peakLag(killed.Add(-3*time.Second), killed))
	pr.end()
	s.finish(t, "kill", "rejoin", "green")
	fig.log(t, fmt.Sprintf("geoshard-%d killed for %v", victim, down))
}

// TestFaultNodeFrozen freezes the node holding the most primaries with
// SIGSTOP for 30s while events flow, then thaws it: requests to it get
// late answers (or time out), not refused connections. Ingest finishes
// everything, and the index equals the model.
func TestFaultNodeFrozen(t *testing.T) {
	c := faultCluster(t)
	s := startFaultScenario(t, c, 32, 1500, 1000)
	ctx := context.Background()
	var fig figures
	s.f.start(batchSize, batchEvery)
	pr := s.watchProgress(t)
	s.mark("steady")
	s.waitTraffic(t, 30*time.Second)
	time.Sleep(3 * time.Second)

	victim, err := c.NodeWithMostPrimaries(ctx, sourceIdx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("primaries of %s: %s; freezing geoshard-%d for %v", sourceIdx, primariesOn(t, c, s.e, sourceIdx), victim, faultFrozen)
	restoreOnFailure(t, c, cluster.OpenSearch, victim)
	s.mark("freeze")
	hwFreeze := s.highWatermarks(t)
	frozen := time.Now()
	if err := c.Stop(cluster.OpenSearch, victim); err != nil {
		t.Fatal(err)
	}
	time.Sleep(faultFrozen)
	s.mark("thaw")
	hwThaw := s.highWatermarks(t)
	thawed := time.Now()
	if err := c.Cont(cluster.OpenSearch, victim); err != nil {
		t.Fatal(err)
	}
	caught := s.waitCommittedPast(t, "events produced before the freeze", hwFreeze, faultWait)
	fig.add("events produced before the freeze committed %s after it (%s after the thaw)", since(frozen, caught), since(thawed, caught))
	wctx, cancel := context.WithTimeout(ctx, faultWait)
	defer cancel()
	if err := c.WaitGreen(wctx, 3); err != nil {
		t.Fatalf("after the thaw: %v", err)
	}
	green := time.Now()
	fig.add("green with three nodes %s after the thaw", since(thawed, green))
	caught = s.waitCommittedPast(t, "events produced while frozen", hwThaw, faultWait)
	fig.add("events produced while frozen committed %s after the thaw", since(thawed, caught))
	s.mark("green")
	s.waitTraffic(t, time.Minute)
	stall, at := pr.stall(frozen, green)
	fig.add("longest stall of ingest from the freeze to green: %s, from %s after the freeze", stall.Round(100*time.Millisecond), since(frozen, at))
	fig.add("peak consumer lag from the freeze to green: %d (before: %d)", pr.peakLag(frozen, green), pr.peakLag(frozen.Add(-3*time.Second), frozen))
	pr.end()
	s.finish(t, "freeze", "thaw", "green")
	fig.log(t, fmt.Sprintf("geoshard-%d frozen for %v", victim, faultFrozen))
}
