package pipeline

import (
	"context"
	"errors"
	"io"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/schema"
)

// TestRejectStorm ingests while OpenSearch rejects 30% of bulk items with
// 429: only the rejected items are retried, and the result is the same.
func TestRejectStorm(t *testing.T) {
	realenv.EmulatorOnly(t, "injects 429 rejections")
	realenv.Parallel(t)
	const seed = 5
	e := newEnv(t, envOptions{partitions: 4})
	evs := generate(t, defaultGen(seed, 1000))
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	if err := e.os.SetFaults(osfake.Faults{Seed: seed, RejectRate: 0.3}); err != nil {
		t.Fatal(err)
	}
	where := e.produce(context.Background(), evs)
	cfg := e.config()
	// Retries slow the restaurants a dish waits for by any time on a
	// busy machine: the dishes wait without a limit (waitForever), and
	// the orphans go once the log is committed.
	cfg.PendingMaxAge = waitForever
	cfg.Bulk.RetryMax = 50 * time.Millisecond
	r := e.start(cfg)
	e.waitCommitted(t, r, 40*time.Second)
	e.waitNoLag(t, r)
	st := r.p.Stats()
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if fs := e.os.FaultStats(); fs.RejectedItems == 0 || st.Bulk.Retries == 0 {
		t.Errorf("no rejection happened (%+v, %d retries): the test tests nothing", fs, st.Bulk.Retries)
	}
	t.Logf("%d items rejected, %d retries, %d moves", e.os.FaultStats().RejectedItems, st.Bulk.Retries, st.Moves)
	e.os.ClearFaults()
	e.expireOrphans(t, evs, where)
	checkFinal(t, e, evs, where)
}

// TestHotShard ingests while one shard answers every request 500ms late,
// and 30% of items are rejected: the other shards keep flowing, and the
// result is the same. (No restaurant moves or deletes: each waits for
// every write in flight, the hot shard's too, several times.)
func TestHotShard(t *testing.T) {
	realenv.EmulatorOnly(t, "injects latency on one shard and 429s")
	realenv.Parallel(t)
	const seed = 6
	e := newEnv(t, envOptions{partitions: 4})
	g := defaultGen(seed, 1500)
	g.wMoveFar, g.wMoveNear, g.wRestDelete = 0, 0, 0
	evs := generate(t, g)
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	// The busiest shard is the hot one.
	counts := make([]int, e.m.NumShards())
	for _, d := range runModel(evs).expectedDocs(e.m) {
		for i := range counts {
			if e.m.Shard(i).Routing == d.routing {
				counts[i]++
			}
		}
	}
	hot := 0
	for i, n := range counts {
		if n > counts[hot] {
			hot = i
		}
	}
	if err := e.os.SetFaults(osfake.Faults{Seed: seed, RejectRate: 0.3,
		ShardLatency: []osfake.ShardLatency{{Index: testIndex, Shard: hot, Delay: osfake.Duration(500 * time.Millisecond)}}}); err != nil {
		t.Fatal(err)
	}
	where := e.produce(context.Background(), evs)
	cfg := e.config()
	cfg.PendingMaxAge = waitForever // as in TestRejectStorm
	start := time.Now()
	r := e.start(cfg)
	e.waitCommitted(t, r, 50*time.Second)
	e.waitNoLag(t, r)
	st := r.p.Stats()
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	hs := st.Bulk.Shards[e.m.Shard(hot).Name]
	t.Logf("hot shard %s (%d documents): %+v; caught up in %v", e.m.Shard(hot).Name, counts[hot], hs, time.Since(start).Round(time.Millisecond))
	e.os.ClearFaults()
	e.expireOrphans(t, evs, where)
	checkFinal(t, e, evs, where)
}

// TestWriteFailureStops: when a write runs out of retries, Run stops with
// ErrWriteFailed and does not commit past it; the next run writes it.
func TestWriteFailureStops(t *testing.T) {
	realenv.EmulatorOnly(t, "injects bulk failures")
	realenv.Parallel(t)
	const seed = 7
	e := newEnv(t, envOptions{partitions: 2})
	g := defaultGen(seed, 300)
	g.poison = false
	evs := generate(t, g)
	if err := e.os.SetFaults(osfake.Faults{FailRate: 1, FailEndpoints: []string{"bulk"}}); err != nil {
		t.Fatal(err)
	}
	where := e.produce(context.Background(), evs)
	cfg := e.config()
	cfg.Bulk.RetryMaxElapsed = 300 * time.Millisecond
	r := e.start(cfg)
	err := r.Wait(t, 30*time.Second)
	if !errors.Is(err, ErrWriteFailed) || !errors.Is(err, bulk.ErrRetryBudget) {
		t.Fatalf("Run = %v, want ErrWriteFailed wrapping bulk.ErrRetryBudget", err)
	}
	if ok, _ := e.caughtUp(context.Background()); ok {
		t.Fatal("every offset was committed although no write succeeded")
	}
	e.os.ClearFaults()
	// A dish the first run parked keeps its parking time in the second,
	// which counts the first run's stop and its own start against the
	// dish's wait: it waits without a limit (waitForever), and the
	// orphans go once the log is committed.
	cfg2 := e.config()
	cfg2.PendingMaxAge = waitForever
	r2 := e.start(cfg2)
	e.waitCommitted(t, r2, 30*time.Second)
	if err := r2.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	e.expireOrphans(t, evs, where)
	checkFinal(t, e, evs, where)
}

// TestDeadLetterTopicDown: while dead letters cannot be written, their
// offsets are not committed; once the topic is back they are written and
// committed.
func TestDeadLetterTopicDown(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 1})
	evs := []genEvent{
		{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 1, lat: 40.7, lon: -74, doc: map[string]any{"name": "a"}},
		{key: []byte("x"), value: []byte(`not json`), poison: decode.ReasonInvalidJSON},
		{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r2", rid: "r2", version: 1, lat: 37.7, lon: -122.4, doc: map[string]any{"name": "b"}},
	}
	for i := range evs {
		if evs[i].value == nil {
			evs[i].value, evs[i].key = encodeEvent(evs[i]), []byte(evs[i].rid)
		}
	}
	where := e.produce(context.Background(), evs)
	cfg := e.config()
	cfg.DLQTopic = "dlq-not-yet"
	r := e.start(cfg)
	// Once the restaurant after the dead letter is written, its offset
	// would be ready to commit if the dead letter had finished unwritten:
	// the commit point must stay at the dead letter.
	written := EventKey{decode.TypeRestaurant, decode.OpUpsert, resultWritten}
	deadline := time.Now().Add(realenv.Slack(20 * time.Second))
	for r.p.Stats().Events[written] < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the restaurants around the dead letter were never written")
		}
		time.Sleep(5 * time.Millisecond)
	}
	part := partKey{e.restaurantTopic, 0}
	if ps := r.p.Stats().Partitions[part.String()]; ps.Ready > where[1].offset {
		t.Fatalf("commit point %d, past the dead letter at %d that could not be written", ps.Ready, where[1].offset)
	}
	co, err := e.kafka.CommittedOffsets(context.Background(), e.group, e.restaurantTopic)
	if err != nil {
		t.Fatal(err)
	}
	if co[0] > where[1].offset {
		t.Fatalf("committed %d, past the dead letter at %d that could not be written", co[0], where[1].offset)
	}
	if err := e.kafka.CreateTopic(context.Background(), "dlq-not-yet", 1); err != nil {
		t.Fatal(err)
	}
	e.waitCaughtUp(t, r, 30*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if st := r.p.Stats(); st.DeadLetters[decode.ReasonInvalidJSON] != 1 {
		t.Errorf("dead letters = %v, want one invalid_json", st.DeadLetters)
	}
}

// TestMapMismatch: a pipeline told to expect another map refuses to start,
// naming both hashes.
func TestMapMismatch(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 1})
	cfg := e.config()
	cfg.MapHash = strings.Repeat("ab", 32)
	p, err := New(cfg, e.client)
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(context.Background())
	var mm *MapMismatchError
	if !errors.As(err, &mm) || !errors.Is(err, ErrMapMismatch) {
		t.Fatalf("Run = %v, want a *MapMismatchError", err)
	}
	for _, h := range []string{cfg.MapHash, e.m.Hash()} {
		if !strings.Contains(err.Error(), h) {
			t.Errorf("Run error %q does not name hash %s", err, h)
		}
	}
	cfg.MapHash = e.m.Hash()
	cfg.Registerer = nil
	if _, err := New(cfg, e.client); err != nil {
		t.Errorf("New with the index's own hash = %v", err)
	}
}

// TestMapSwitch moves the alias to a new index built with another map
// while the pipeline runs: it flushes and writes to the new index, under
// the new map's routing.
func TestMapSwitch(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 1})
	cfg := e.config()
	cfg.MapCheckInterval = 100 * time.Millisecond
	r := e.start(cfg)
	first := []genEvent{{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 1, lat: 40.7, lon: -74, doc: map[string]any{"name": "a"}}}
	first[0].value, first[0].key = encodeEvent(first[0]), []byte("r1")
	e.produce(context.Background(), first)
	e.waitCaughtUp(t, r, 20*time.Second)

	m2 := testenv.LoadMap(t, testenv.MapUS18RNS576)
	body, err := schema.IndexBody(m2, schema.IndexOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := e.admin.CreateIndex(ctx, "menu-v2", body); err != nil {
		t.Fatal(err)
	}
	yes := true
	if err := e.admin.UpdateAliases(ctx, []bulk.AliasAction{
		{Remove: &bulk.AliasSpec{Index: testIndex, Alias: testAlias}},
		{Add: &bulk.AliasSpec{Index: "menu-v2", Alias: testAlias, IsWriteIndex: &yes}},
	}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ts := r.p.Stats().Targets; len(ts) == 1 && ts[0].Index == "menu-v2" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ts := r.p.Stats().Targets; len(ts) != 1 || ts[0].Index != "menu-v2" || ts[0].MapHash != m2.Hash() {
		t.Fatalf("targets = %+v, want menu-v2 with map %s", ts, m2.ShortHash())
	}
	second := []genEvent{{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 2, lat: 40.7, lon: -74, doc: map[string]any{"name": "b"}}}
	second[0].value, second[0].key = encodeEvent(second[0]), []byte("r1")
	e.produce(ctx, second)
	e.waitCaughtUp(t, r, 20*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	cell, _ := m2.Cell(40.7, -74)
	routing := m2.Shard(m2.LocateCell(cell)).Routing
	src, version, found, err := e.admin.Get(ctx, "menu-v2", "restaurant:r1", routing)
	if err != nil || !found || version != 2 || !strings.Contains(string(src), `"name":"b"`) {
		t.Errorf("menu-v2 restaurant:r1 with routing %s = %s, version %d, found %v, %v; want version 2", routing, src, version, found, err)
	}
}

// flakyTransport sits between the pipeline's client and the cluster and
// fails requests as a busy cluster does, deterministically: the first of
// every few refreshes hangs until the client's request timeout, searches
// and real-time GETs are answered 503 or 429 without reaching the
// cluster, and bulk requests 502 as a proxy would. Each kind fails at
// most limit times, so the run ends.
type flakyTransport struct {
	next  http.RoundTripper
	limit int

	mu     sync.Mutex
	seen   map[string]int // requests by kind
	failed map[string]int // faults by kind
}

func (f *flakyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	kind := "other"
	switch p := req.URL.Path; {
	case strings.HasSuffix(p, "/_refresh"):
		kind = "refresh"
	case strings.HasSuffix(p, "/_search"):
		kind = "search"
	case strings.HasSuffix(p, "/_bulk"):
		kind = "bulk"
	case strings.Contains(p, "/_doc/") && req.Method == http.MethodGet:
		kind = "get"
	}
	f.mu.Lock()
	f.seen[kind]++
	n := f.seen[kind]
	fail := kind != "other" && f.failed[kind] < f.limit && n%3 == 1
	if fail {
		f.failed[kind]++
	}
	f.mu.Unlock()
	if !fail {
		return f.next.RoundTrip(req)
	}
	switch kind {
	case "refresh":
		<-req.Context().Done() // no answer: the client's request timeout ends it
		return nil, req.Context().Err()
	case "bulk":
		return httpAnswer(req, http.StatusBadGateway, "text/html", "<html><body>502 Bad Gateway</body></html>"), nil
	}
	status := http.StatusServiceUnavailable
	if n%2 == 0 {
		status = http.StatusTooManyRequests
	}
	return httpAnswer(req, status, "application/json",
		`{"error":{"root_cause":[{"type":"es_rejected_execution_exception","reason":"rejected"}],"type":"es_rejected_execution_exception","reason":"rejected"},"status":`+strconv.Itoa(status)+`}`), nil
}

func httpAnswer(req *http.Request, status int, contentType, body string) *http.Response {
	if req.Body != nil {
		io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
	return &http.Response{
		StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {contentType}}, Body: io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}
}

// TestTransientFaultsAreNotFatal ingests a stream with moves and deletes
// while refreshes time out, searches and real-time GETs are refused with
// 503 and 429, and bulk requests get a proxy's 502: nothing transient
// stops the pipeline, and the index ends as the stream says. It runs
// against the emulator and the real node alike: the faults are made in
// front of either.
func TestTransientFaultsAreNotFatal(t *testing.T) {
	realenv.Parallel(t)
	const seed = 8
	e := newEnv(t, envOptions{partitions: 4})
	evs := generate(t, defaultGen(seed, 1200))
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	where := e.produce(context.Background(), evs)
	flaky := &flakyTransport{next: http.DefaultTransport, limit: 25, seen: map[string]int{}, failed: map[string]int{}}
	client, err := opensearch.NewClient(opensearch.Config{Addresses: []string{e.url}, Transport: flaky, DisableRetry: true, RequestTimeout: realenv.Slack(2 * time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.config()
	cfg.PendingMaxAge = waitForever // as in TestRejectStorm
	cfg.Bulk.RetryMax = 50 * time.Millisecond
	p, err := New(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{p: p, Running: testenv.Go(t, p.Run)}
	e.waitCommitted(t, r, 90*time.Second)
	st := r.p.Stats()
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	flaky.mu.Lock()
	failed := maps.Clone(flaky.failed)
	flaky.mu.Unlock()
	t.Logf("faults injected: %v; %d moves, %d refreshes, %d bulk retries", failed, st.Moves, st.Refreshes, st.Bulk.Retries)
	for _, kind := range []string{"refresh", "search", "bulk"} {
		if failed[kind] == 0 {
			t.Errorf("no %s failed: the test tests nothing there (faults %v)", kind, failed)
		}
	}
	e.expireOrphans(t, evs, where)
	checkFinal(t, e, evs, where)
}
