//go:build realcluster

package e2e

import (
	"context"
	"errors"
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
	"github.com/geoshard/geoshard/schema"
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
	at, err := s.committedPast(what, hw, timeout)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// watchCommittedPast is waitCommittedPast in the background, so that the
// figure runs beside another wait; the function it returns waits for it.
func (s *scenario) watchCommittedPast(t testing.TB, what string, hw map[int]int64, timeout time.Duration) func() time.Time {
	type result struct {
		at  time.Time
		err error
	}
	ch := make(chan result, 1)
	go func() {
		at, err := s.committedPast(what, hw, timeout)
		ch <- result{at, err}
	}()
	return func() time.Time {
		t.Helper()
		r := <-ch
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.at
	}
}

func (s *scenario) committedPast(what string, hw map[int]int64, timeout time.Duration) (time.Time, error) {
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
				return time.Now(), nil
			}
		} else {
			why = err.Error()
		}
		if err, done := s.in.Exited(); done {
			return time.Time{}, fmt.Errorf("%s: pipeline %s stopped (%s): %v", what, s.in.instance, why, err)
		}
		if time.Now().After(deadline) {
			st := s.in.p.Stats()
			return time.Time{}, fmt.Errorf("%s: not committed after %v: %s; fetched %d, finished %d, pending %d, lag %d", what, timeout, why, st.Fetched, st.Finished, st.Pending, st.Lag)
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

// steady starts the feed and the progress watch, and returns once events
// flow and a few seconds of them are on record: the "before" beside which
// a fault's figures (peak lag, stalls) are read.
func (s *scenario) steady(t *testing.T) *progress {
	t.Helper()
	s.f.start(batchSize, batchEvery)
	pr := s.watchProgress(t)
	s.mark("steady")
	s.waitTraffic(t, 30*time.Second)
	time.Sleep(3 * time.Second) // the figures' "before" window, not a wait for an event
	return pr
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
	pr := s.steady(t)

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
	downCommitted := s.watchCommittedPast(t, "events produced while the node was down", hwDown, faultWait)
	wctx2, cancel2 := context.WithTimeout(ctx, faultWait)
	defer cancel2()
	if err := c.WaitGreen(wctx2, 3); err != nil {
		t.Fatalf("geoshard-%d back: %v", victim, err)
	}
	green := time.Now()
	fig.add("green with three nodes %s after the start", since(started, green))
	caught = downCommitted()
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
	pr := s.steady(t)

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
	frozenCommitted := s.watchCommittedPast(t, "events produced while frozen", hwThaw, faultWait)
	caught := s.waitCommittedPast(t, "events produced before the freeze", hwFreeze, faultWait)
	fig.add("events produced before the freeze committed %s after it (%s after the thaw)", since(frozen, caught), since(thawed, caught))
	wctx, cancel := context.WithTimeout(ctx, faultWait)
	defer cancel()
	if err := c.WaitGreen(wctx, 3); err != nil {
		t.Fatalf("after the thaw: %v", err)
	}
	green := time.Now()
	fig.add("green with three nodes %s after the thaw", since(thawed, green))
	caught = frozenCommitted()
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

// waitInSync waits until every partition of topic has its full replica
// set in sync again: a broker started again has caught up.
func waitInSync(t testing.TB, brokers []string, topic string, timeout time.Duration) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.MetadataMinAge(10*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	why := ""
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil {
			why = ""
			td, ok := md.Topics[topic]
			if !ok || td.Err != nil {
				why = fmt.Sprintf("topic %s not in metadata (%v)", topic, td.Err)
			}
			for _, p := range td.Partitions {
				if p.Err != nil || p.Leader < 0 || len(p.ISR) < len(p.Replicas) {
					why = fmt.Sprintf("%s/%d: leader %d, in sync %v of %v (%v)", topic, p.Partition, p.Leader, p.ISR, p.Replicas, p.Err)
					break
				}
			}
			if why == "" {
				return
			}
		} else {
			why = err.Error()
		}
		if ctx.Err() != nil {
			t.Fatalf("replicas of %s not in sync after %v: %s", topic, timeout, why)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestFaultBrokerKilled kills the broker leading the most partitions of
// the event topic while events flow (the feed produces with acks=all, the
// topic has three replicas, two in sync for a write), keeps it down for
// GEOSHARD_FAULT_DOWN and starts it again. The leaders move, the group's
// coordinator may move with them; ingest goes on, loses and duplicates
// nothing that shows, and commits every offset.
func TestFaultBrokerKilled(t *testing.T) {
	brokerKilled(t, 33, "leader of the most partitions of the event topic", func(c *cluster.Cluster, s *scenario) (int, error) {
		return c.LeaderOfBusiestPartitions(context.Background(), s.e.topic)
	})
}

// TestFaultCoordinatorKilled is TestFaultBrokerKilled with the broker that
// coordinates the consumer group killed: the member's session and its
// generation are lost with it, so the handover's commit may be refused
// and the partitions it keeps read again from the group's older commits,
// behind dishes it has parked while they wait for their restaurant: those
// wait once (a copy read again finishes at once). The events after the
// group's last commit are decided again, and a dead letter among them may
// be written twice, which the dead-letter check allows here.
func TestFaultCoordinatorKilled(t *testing.T) {
	brokerKilled(t, 36, "coordinator of the consumer group", func(c *cluster.Cluster, s *scenario) (int, error) {
		return c.GroupCoordinator(context.Background(), s.e.group)
	})
}

// brokerKilled runs a broker fault: the broker pick names is killed while
// events flow, kept down for GEOSHARD_FAULT_DOWN and started again.
func brokerKilled(t *testing.T, seed uint64, what string, pick func(*cluster.Cluster, *scenario) (int, error)) {
	c := faultCluster(t)
	down := faultDown(t)
	s := startFaultScenario(t, c, seed, 1500, 1000)
	s.againDeadLetters = true
	var fig figures
	pr := s.steady(t)

	victim, err := pick(c, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killing broker %d, %s, for %v", victim, what, down)
	restoreOnFailure(t, c, cluster.Kafka, victim)
	s.mark("kill")
	hwKill := s.highWatermarks(t)
	killed := time.Now()
	if err := c.Kill(cluster.Kafka, victim); err != nil {
		t.Fatal(err)
	}
	caught := s.waitCommittedPast(t, "events produced before the kill", hwKill, faultWait)
	fig.add("events produced before the kill committed %s after it (broker still down)", since(killed, caught))
	s.waitTraffic(t, time.Minute)
	if rest := down - time.Since(killed); rest > 0 {
		time.Sleep(rest)
	}
	s.mark("restart")
	hwDown := s.highWatermarks(t)
	started := time.Now()
	if err := c.Start(cluster.Kafka, victim); err != nil {
		t.Fatal(err)
	}
	downCommitted := s.watchCommittedPast(t, "events produced while the broker was down", hwDown, faultWait)
	waitInSync(t, c.Brokers, s.e.topic, faultWait)
	synced := time.Now()
	fig.add("every partition of the event topic fully in sync %s after the start", since(started, synced))
	caught = downCommitted()
	fig.add("events produced while down committed %s after the start", since(started, caught))
	s.mark("in sync")
	s.waitTraffic(t, time.Minute)
	end := time.Now()
	stall, at := pr.stall(killed, end)
	fig.add("longest stall of ingest from the kill to in sync: %s, from %s after the kill", stall.Round(100*time.Millisecond), since(killed, at))
	fig.add("peak consumer lag from the kill to in sync: %d (before: %d)", pr.peakLag(killed, end), pr.peakLag(killed.Add(-3*time.Second), killed))
	pr.end()
	s.finish(t, "kill", "restart", "in sync")
	fig.log(t, fmt.Sprintf("broker %d killed for %v", victim, down))
}

// TestFaultNodeKilledMidBackfill runs the whole reshard (Run: create, dual
// writes, backfill, verify, cutover) under live events and kills the node
// holding the most primaries of menu-v1 when a third of the backfill is
// done, and starts it again GEOSHARD_FAULT_DOWN later. The backfill's
// scans hold no search context (search_after on doc_id), and the
// migration's requests retry on the other nodes, so it goes on from its
// position, waiting meanwhile for the node's primaries of the target
// (loaded without replicas); the cutover's wait for green covers the
// recovery of the node's replicas. The migration ends cut over, and both
// indexes equal the model.
func TestFaultNodeKilledMidBackfill(t *testing.T) {
	reshardOnCluster(t, 34, true)
}

// TestClusterReshard is TestFaultNodeKilledMidBackfill's reshard with no
// fault: the same stream, pace and Run on the cluster, so that the
// duration of the one beside the other is what the node's loss cost. It
// is a figure more than a check (the single-node suites check the same
// run), so make test leaves it out; make test-cluster runs it.
func TestClusterReshard(t *testing.T) {
	reshardOnCluster(t, 34, false)
}

// reshardOnCluster runs the reshard of the two tests above under live
// events, killing a node a third into the backfill when kill is set.
func reshardOnCluster(t *testing.T, seed uint64, kill bool) {
	c := faultCluster(t)
	s := startFaultScenario(t, c, seed, 1500, 3000)
	e, in := s.e, s.in
	ctx := context.Background()
	var fig figures
	s.f.start(batchSize, batchEvery)
	pr := s.watchProgress(t)

	victim, err := c.NodeWithMostPrimaries(ctx, sourceIdx)
	if err != nil {
		t.Fatal(err)
	}
	restoreOnFailure(t, c, cluster.OpenSearch, victim)
	down := faultDown(t)
	var (
		once     sync.Once
		mu       sync.Mutex
		killed   time.Time
		killErr  error
		started  time.Time
		startErr error
	)
	var steps []string
	cfg := migrate.RunConfig{
		Create: migrate.CreateConfig{Map: e.m24, Target: targetIdx},
		Ack:    migrate.AckConfig{Timeout: 2 * time.Minute},
		Backfill: migrate.BackfillConfig{
			Page: 50, MaxDocsPerSecond: 600, ProgressInterval: 20 * time.Millisecond,
			Ack: migrate.AckConfig{Timeout: 2 * time.Minute},
			Progress: func(p migrate.BackfillProgress) {
				if kill && p.Total > 0 && p.Docs >= p.Total/3 {
					once.Do(func() {
						mu.Lock()
						defer mu.Unlock()
						s.mark("backfill, node killed")
						killed = time.Now()
						killErr = c.Kill(cluster.OpenSearch, victim)
						t.Logf("geoshard-%d killed after %d of %d documents copied", victim, p.Docs, p.Total)
						if killErr == nil {
							time.AfterFunc(down, func() {
								mu.Lock()
								defer mu.Unlock()
								if started.IsZero() {
									started = time.Now()
									startErr = c.Start(cluster.OpenSearch, victim)
									t.Logf("geoshard-%d started %s after the kill", victim, since(killed, started))
								}
							})
						}
					})
				}
			},
		},
		Verify: migrate.VerifyConfig{IDs: true, Attempts: 100, Pause: 200 * time.Millisecond},
		Switch: migrate.SwitchConfig{HealthTimeout: faultWait},
		OnStep: func(step migrate.Step, _ schema.Phase) {
			steps = append(steps, string(step))
			s.mark(string(step))
			if step == migrate.StepVerify {
				s.waitTraffic(t, time.Minute)
			}
			if step == migrate.StepCutover {
				mu.Lock()
				defer mu.Unlock()
				if !killed.IsZero() && started.IsZero() {
					started = time.Now()
					if err := c.Start(cluster.OpenSearch, victim); err != nil {
						t.Errorf("start geoshard-%d: %v", victim, err)
					}
					t.Logf("geoshard-%d started as the cutover begins", victim)
				}
			}
		},
	}
	m := e.migrator(nil, nil)
	runStart := time.Now()
	mig, err := m.Run(ctx, cfg)
	runEnd := time.Now()
	mu.Lock()
	if killErr != nil {
		t.Fatalf("kill geoshard-%d: %v", victim, killErr)
	}
	if kill && killed.IsZero() {
		t.Fatalf("the backfill ended (steps %v) before a third of it was copied: the node was never killed", steps)
	}
	if startErr != nil {
		t.Fatalf("start geoshard-%d: %v", victim, startErr)
	}
	mu.Unlock()
	var se *migrate.StepError
	if err != nil && errors.As(err, &se) && se.Step == migrate.StepBackfill {
		// Run is to ride out the loss of one node of three: a failure here
		// is a finding. The checkpoints still hold, so the test goes on as
		// an operator would, with a new job that resumes from them, and
		// judges the data that way.
		t.Errorf("Run with geoshard-%d killed mid-backfill stopped %s into it, %s after the kill: %v",
			victim, since(runStart, runEnd), since(killed, runEnd), err)
		if cur, lerr := m.Load(ctx); lerr == nil {
			t.Logf("migration after the failed Run: phase %s, %d documents checkpointed", cur.Phase, sliceDocs(cur.Backfill))
		}
		// The target is loaded without replicas: the node's copies of it
		// come back only with the node, which the operator starts first.
		mu.Lock()
		if started.IsZero() {
			started = time.Now()
			if err := c.Start(cluster.OpenSearch, victim); err != nil {
				t.Fatalf("start geoshard-%d: %v", victim, err)
			}
		}
		mu.Unlock()
		wctx, cancel := context.WithTimeout(ctx, faultWait)
		werr := c.WaitStatus(wctx, "yellow", 3)
		cancel()
		if werr != nil {
			t.Fatalf("geoshard-%d back: %v", victim, werr)
		}
		s.mark("resumed")
		m = e.migrator(nil, nil)
		mig, err = m.Run(ctx, cfg)
		runEnd = time.Now()
	}
	if err != nil {
		if cur, lerr := m.Load(ctx); lerr == nil {
			logVerification(t, cur.Verification)
			t.Logf("migration after the failed Run: phase %s, %d documents checkpointed", cur.Phase, sliceDocs(cur.Backfill))
		}
		s.diagnose(t, fmt.Sprintf("Run with geoshard-%d killed mid-backfill (steps %v)", victim, steps), err)
	}
	if mig.Phase != schema.PhaseCutOver {
		t.Fatalf("Run ended in phase %s after steps %v, want cut_over", mig.Phase, steps)
	}
	wctx, cancel := context.WithTimeout(ctx, faultWait)
	defer cancel()
	if kill {
		fig.add("Run took %s; the node was killed %s into it and started %s after the kill", since(runStart, runEnd), since(runStart, killed), since(killed, started))
		fig.add("cutover (with its wait for green) ended %s after the node was started", since(started, runEnd))
		if err := c.WaitGreen(wctx, 3); err != nil {
			t.Fatalf("after the cutover: %v", err)
		}
		fig.add("green with three nodes %s after the start", since(started, time.Now()))
		stall, at := pr.stall(killed, runEnd)
		fig.add("longest stall of ingest from the kill to the end of Run: %s, from %s after the kill", stall.Round(100*time.Millisecond), since(killed, at))
	} else {
		fig.add("Run took %s with no fault", since(runStart, runEnd))
		stall, at := pr.stall(runStart, runEnd)
		fig.add("longest stall of ingest during Run: %s, from %s after its start", stall.Round(100*time.Millisecond), since(runStart, at))
	}
	e.waitApplied(t, in, mig.ID, schema.PhaseCutOver)
	pr.end()
	if mig.Verification == nil || !mig.Verification.OK || !mig.Verification.IDs {
		t.Errorf("verification %+v, want a passed verification of ids", mig.Verification)
	}
	for _, sl := range mig.Backfill {
		if !sl.Done {
			t.Errorf("slice %d (source shard %d) not done", sl.Slice, sl.SourceShard)
		}
	}

	s.f.waitProduced(s.f.count()+5*batchSize, 30*time.Second)
	s.mark("stop")
	s.f.stop()
	e.waitDrained(t, in, 2*time.Minute)
	if kill {
		// The target is loaded without replicas, so the dual writes to
		// its shards on the killed node wait for the node to come back:
		// ingest's window fills with them, and how many events it
		// finishes before the backfill ends is a matter of timing (none,
		// in some runs). What the kill window must have is live writes
		// offered; that ingest finished them all is judged by the model
		// below, and that it went on writing, by the steps after.
		s.checkOfferedDuring(t, "backfill, node killed")
		s.checkTrafficDuring(t, "verify", "cutover")
	} else {
		s.checkTrafficDuring(t, "backfill", "verify", "cutover")
	}
	if got := e.aliasOn(t); got != targetIdx {
		t.Errorf("alias %s is on %s, want %s", alias, got, targetIdx)
	}
	final := buildModel(t, e.settled(t, s.f.log()))
	t.Logf("%d events produced; expected under the new map: %s", s.f.count(), summary(final.expected(e.m24)))
	s.explain(t, targetIdx, e.checkIndex(t, targetIdx, e.m24, final.expected(e.m24)))
	s.explain(t, sourceIdx, e.checkIndex(t, sourceIdx, e.m18, final.expected(e.m18)))
	s.checkDeadLetters(t, buildModel(t, s.f.log()))
	if ok, why := e.caughtUp(ctx); !ok {
		t.Errorf("after draining, the group is not at the high watermarks: %s", why)
	}
	if ver, err := m.Verify(ctx, migrate.VerifyConfig{IDs: true, Attempts: 1}); err != nil || !ver.OK {
		logVerification(t, ver)
		t.Errorf("verification after the traffic stopped: %v", err)
	}
	if kill {
		fig.log(t, fmt.Sprintf("geoshard-%d killed mid-backfill", victim))
	} else {
		fig.log(t, "the reshard with no fault")
	}
}

// TestFaultRollingRestart restarts the three nodes one at a time while
// events flow — each killed (real.sh has no graceful stop of one node),
// started again at once, and the cluster green again before the next —
// and ingest finishes everything, the index equal to the model.
func TestFaultRollingRestart(t *testing.T) {
	c := faultCluster(t)
	s := startFaultScenario(t, c, 35, 1500, 1000)
	ctx := context.Background()
	var fig figures
	s.f.start(batchSize, batchEvery)
	pr := s.watchProgress(t)
	s.mark("steady")
	s.waitTraffic(t, 30*time.Second)
	began := time.Now()
	var steps []string
	for n := 1; n <= len(c.Nodes); n++ {
		restoreOnFailure(t, c, cluster.OpenSearch, n)
		step := fmt.Sprintf("restart geoshard-%d", n)
		steps = append(steps, step)
		s.mark(step)
		hw := s.highWatermarks(t)
		killed := time.Now()
		if err := c.Kill(cluster.OpenSearch, n); err != nil {
			t.Fatal(err)
		}
		committed := s.watchCommittedPast(t, step, hw, faultWait)
		wctx, cancel := context.WithTimeout(ctx, faultWait)
		err := c.WaitStatus(wctx, "yellow", 2)
		cancel()
		if err != nil {
			t.Fatalf("%s: two nodes left: %v", step, err)
		}
		if err := c.Start(cluster.OpenSearch, n); err != nil {
			t.Fatal(err)
		}
		wctx, cancel = context.WithTimeout(ctx, faultWait)
		err = c.WaitGreen(wctx, 3)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		green := time.Now()
		caught := committed()
		stall, _ := pr.stall(killed, green)
		fig.add("%s: green %s after the kill; events produced before it committed %s after it; longest stall %s",
			step, since(killed, green), since(killed, caught), stall.Round(100*time.Millisecond))
		s.waitTraffic(t, time.Minute)
	}
	fig.add("the whole rolling restart took %s", since(began, time.Now()))
	pr.end()
	s.finish(t, steps...)
	fig.log(t, "rolling restart")
}

// checkOfferedDuring fails unless events were produced between each
// named mark and the next: the step ran while live writes were offered,
// whether or not ingest could finish any of them before the step ended.
func (s *scenario) checkOfferedDuring(t *testing.T, steps ...string) {
	t.Helper()
	for i := 0; i+1 < len(s.marks); i++ {
		a, b := s.marks[i], s.marks[i+1]
		for _, step := range steps {
			if step == a.step && b.produced == a.produced {
				t.Errorf("no live traffic offered during %s: nothing produced", step)
			}
		}
	}
}
