package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// fixture is an index and a writer pointed at it, whose results are
// collected per document id. The index is on a fresh emulator, or, under
// -tags realcluster, a uniquely named index on the real node, deleted at
// the end.
type fixture struct {
	t     *testing.T
	srv   *osfake.TestServer // nil against the real node
	url   string
	index string // "menu" on the emulator
	w     *Writer
	reg   *prometheus.Registry

	mu      sync.Mutex
	results map[string][]Result // by Item.ID
}

func newFixture(t *testing.T, shards int, mapping string, cfg Config) *fixture {
	t.Helper()
	return newGatedFixture(t, shards, mapping, cfg, nil)
}

// newGatedFixture is newFixture with gate (if not nil) in front of the
// emulator: it sees every request first, and may hold it. Only with the
// emulator.
func newGatedFixture(t *testing.T, shards int, mapping string, cfg Config, gate func(http.Handler) http.Handler) *fixture {
	t.Helper()
	f := &fixture{t: t, index: "menu", results: map[string][]Result{},
		reg: prometheus.NewRegistry()}
	if realenv.Enabled() {
		if gate != nil {
			t.Fatal("a gated fixture needs the emulator")
		}
		f.url, f.index = realenv.OpenSearchURL(), realenv.Unique("bulk-menu")
	} else {
		s := osfake.New(osfake.Options{})
		var h http.Handler = s
		if gate != nil {
			h = gate(s)
		}
		hs := httptest.NewServer(h)
		f.srv = &osfake.TestServer{Server: s, HTTP: hs, URL: hs.URL}
		f.url = hs.URL
		t.Cleanup(f.srv.Close)
	}
	body := fmt.Sprintf(`{"settings":{"number_of_shards":%d,"number_of_routing_shards":%d,"number_of_replicas":0}`, shards, shards)
	if mapping != "" {
		body += `,"mappings":` + mapping
	}
	f.http("PUT", "/"+f.index, body+"}", 200)
	if f.srv == nil {
		t.Cleanup(func() { f.http("DELETE", "/"+f.index, "", 200) })
	}
	addrs := []string{f.url}
	if f.srv == nil {
		addrs = realenv.OpenSearchURLs() // every node of a cluster
	}
	f.startWriter(addrs, cfg)
	return f
}

// startWriter starts the fixture's writer on a client of addrs, with cfg
// less its result hook and registry, which the fixture's are, and retries
// from 1ms to 20ms unless cfg sets them; the test's cleanup closes it.
func (f *fixture) startWriter(addrs []string, cfg Config) {
	f.t.Helper()
	client, err := NewClient(ClientConfig{Addresses: addrs})
	if err != nil {
		f.t.Fatal(err)
	}
	cfg.OnResult = func(r Result) {
		f.mu.Lock()
		f.results[r.Item.ID] = append(f.results[r.Item.ID], r)
		f.mu.Unlock()
	}
	cfg.Registerer = f.reg
	if cfg.RetryInitial == 0 {
		cfg.RetryInitial, cfg.RetryMax = time.Millisecond, 20*time.Millisecond
	}
	if f.w, err = New(client, cfg); err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { f.w.Close(context.Background()) })
}

func (f *fixture) http(method, path, body string, want int) map[string]any {
	f.t.Helper()
	req, _ := http.NewRequest(method, f.url+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		f.t.Fatalf("%s %s = %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	var out map[string]any
	json.Unmarshal(b, &out)
	return out
}

// stored returns a document's source and version by real-time GET, or
// found false.
func (f *fixture) stored(id, routing string) (src map[string]any, version int64, found bool) {
	f.t.Helper()
	resp, err := http.Get(f.url + "/" + f.index + "/_doc/" + id + "?routing=" + routing)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Found   bool
		Version int64          `json:"_version"`
		Source  map[string]any `json:"_source"`
	}
	json.NewDecoder(resp.Body).Decode(&out)
	return out.Source, out.Version, out.Found
}

func (f *fixture) add(it Item) {
	f.t.Helper()
	if err := f.w.Add(context.Background(), it); err != nil {
		f.t.Fatalf("Add(%s): %v", it.ID, err)
	}
}

func (f *fixture) flush() {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := f.w.Flush(ctx); err != nil {
		f.t.Fatal(err)
	}
}

// each checks that every id got exactly one result and returns them.
func (f *fixture) each(ids []string) map[string]Result {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]Result{}
	for _, id := range ids {
		rs := f.results[id]
		if len(rs) != 1 {
			f.t.Errorf("item %s has %d results, want exactly 1", id, len(rs))
			continue
		}
		out[id] = rs[0]
	}
	return out
}

// waitUntil polls cond until it holds. Its deadline, far beyond what any
// wait here needs, only turns a hang into a failure naming what was
// awaited; it is never what a test asserts.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	const patience = 2 * time.Minute
	deadline := time.Now().Add(patience)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("still waiting for %s after %v", what, patience)
		}
		time.Sleep(time.Millisecond)
	}
}

func doc(i int) []byte {
	return []byte(`{"n":` + strconv.Itoa(i) + `,"name":"dish ` + strconv.Itoa(i) + `"}`)
}

func routingFor(i int) string { return "r" + strconv.Itoa(i%7) }

// 30% of items are rejected with 429: every item still ends OK, the
// server applied each exactly once, and the retries show in the stats and
// the metrics.
func TestRejectedItemsAreRetriedAlone(t *testing.T) {
	realenv.EmulatorOnly(t, "injects 429 rejections and reads the emulator's count of applied operations")
	f := newFixture(t, 6, "", Config{FlushItems: 200})
	if err := f.srv.SetFaults(osfake.Faults{Seed: 7, RejectRate: 0.3}); err != nil {
		t.Fatal(err)
	}
	const n = 3000
	var ids []string
	for i := 0; i < n; i++ {
		id := "d" + strconv.Itoa(i)
		ids = append(ids, id)
		f.add(Item{Action: Index, Index: "menu", ID: id, Routing: routingFor(i), Version: int64(i + 1), VersionType: External, Body: doc(i)})
	}
	f.flush()
	for id, r := range f.each(ids) {
		if r.Outcome != OK {
			t.Errorf("item %s: %v %v, want ok", id, r.Outcome, r.Err)
		}
	}
	ops, err := f.srv.AppliedOps("menu")
	if err != nil || ops != n {
		t.Errorf("server applied %d operations (%v), want exactly %d: each item once", ops, err, n)
	}
	st := f.w.Stats()
	rejected := f.srv.FaultStats().RejectedItems
	if rejected < n/5 || st.Retries != int64(rejected) || st.OK != n {
		t.Errorf("stats: %d retries, %d ok; server rejected %d; want retries == rejected ≈ 30%% of %d", st.Retries, st.OK, rejected, n)
	}
	var retried float64
	for s := 0; s < 7; s++ {
		retried += testutil.ToFloat64(f.w.metrics.retries.WithLabelValues("menu/r"+strconv.Itoa(s), "rejected"))
	}
	if int(retried) != rejected {
		t.Errorf("geoshard_bulk_retries_total{reason=rejected} = %v, want %d", retried, rejected)
	}
	// Everything finished: nothing is queued or in flight, and the items
	// counted by result add up.
	var okItems float64
	for s := 0; s < 7; s++ {
		key := "menu/r" + strconv.Itoa(s)
		q := testutil.ToFloat64(f.w.metrics.queued.WithLabelValues(key))
		in := testutil.ToFloat64(f.w.metrics.inflight.WithLabelValues(key))
		if q != 0 || in != 0 {
			t.Errorf("shard %s: queued %v, in flight %v after Flush, want 0", key, q, in)
		}
		okItems += testutil.ToFloat64(f.w.metrics.items.WithLabelValues(key, "ok"))
		if ss := st.Shards[key]; ss == nil || ss.Queued != 0 || ss.InFlight != 0 {
			t.Errorf("Stats().Shards[%s] = %+v, want nothing queued or in flight", key, ss)
		}
	}
	if okItems != n {
		t.Errorf("geoshard_bulk_items_total{result=ok} adds up to %v, want %d", okItems, n)
	}
	if c, err := testutil.GatherAndCount(f.reg, "geoshard_bulk_request_duration_seconds", "geoshard_bulk_request_bytes_total", "geoshard_bulk_requests_total"); err != nil || c < 3 {
		t.Errorf("registered request metrics: %d series, %v", c, err)
	}
	// Stats is a snapshot: reading it twice changes nothing.
	if again := f.w.Stats(); again.OK != st.OK || again.Retries != st.Retries {
		t.Errorf("Stats() changed between two reads: %+v then %+v", st, again)
	}
}

// A burst of 503s and a connection dropped mid-response lose no item and
// report none twice.
func TestWholeRequestFailuresAreRetried(t *testing.T) {
	realenv.EmulatorOnly(t, "injects 503s and connections dropped mid-response")
	f := newFixture(t, 3, "", Config{FlushItems: 100})
	if err := f.srv.SetFaults(osfake.Faults{FailRequests: 5, FailStatus: 503, DropResponses: 2}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := 0; i < 1000; i++ {
		id := "d" + strconv.Itoa(i)
		ids = append(ids, id)
		f.add(Item{Action: Index, Index: "menu", ID: id, Routing: routingFor(i), Version: 5, VersionType: External, Body: doc(i)})
	}
	f.flush()
	stale := 0
	for id, r := range f.each(ids) {
		if !r.Outcome.Succeeded() {
			t.Errorf("item %s: %v %v", id, r.Outcome, r.Err)
		}
		if r.Outcome == Stale {
			stale++ // its first copy landed before the connection dropped
		}
		if _, v, found := f.stored(id, r.Item.Routing); !found || v != 5 {
			t.Errorf("item %s stored = %v version %d, want version 5", id, found, v)
		}
	}
	fs := f.srv.FaultStats()
	if fs.FailedRequests != 5 || fs.DroppedConns != 2 || stale == 0 {
		t.Errorf("faults injected %+v, %d items came back stale; want 5 failed requests, 2 dropped responses and some stale items", fs, stale)
	}
}

// Permanent errors come back with the server's status, type and reason;
// the other items of the same batches succeed.
func TestPermanentErrorsAreReported(t *testing.T) {
	realenv.Parallel(t)
	mapping := `{"_routing":{"required":true},"properties":{"relation":{"type":"join","relations":{"restaurant":"dish"}},"price_cents":{"type":"long"}}}`
	f := newFixture(t, 2, mapping, Config{})
	items := []Item{
		{Action: Index, Index: f.index, ID: "restaurant:1", Routing: "a", Body: []byte(`{"relation":"restaurant"}`)},
		{Action: Index, Index: f.index, ID: "dish:1", Routing: "a", Body: []byte(`{"relation":{"name":"dish","parent":"restaurant:1"},"price_cents":100}`)},
		{Action: Index, Index: f.index, ID: "dish:2", Body: []byte(`{"relation":{"name":"dish","parent":"restaurant:1"}}`)},     // no routing
		{Action: Index, Index: f.index, ID: "dish:3", Routing: "a", Body: []byte(`{"price_cents":"twelve"}`)},                   // mapping error
		{Action: Delete, Index: f.index, ID: "dish:9", Routing: "a"},                                                            // missing: not_found
		{Action: Index, Index: f.index, ID: "dish:4", Routing: "a", Version: 3, VersionType: External, Body: []byte(`{"x":1}`)}, // ok
	}
	for _, it := range items {
		f.add(it)
	}
	f.flush()
	rs := f.each([]string{"restaurant:1", "dish:1", "dish:2", "dish:3", "dish:9", "dish:4"})
	want := map[string]struct {
		outcome Outcome
		status  int
		typ     string
	}{
		"restaurant:1": {OK, 201, ""},
		"dish:1":       {OK, 201, ""},
		"dish:2":       {Permanent, 400, "routing_missing_exception"},
		"dish:3":       {Permanent, 400, "mapper_parsing_exception"},
		"dish:9":       {NotFound, 404, ""},
		"dish:4":       {OK, 201, ""},
	}
	for id, w := range want {
		r := rs[id]
		var ie *ItemError
		if r.Outcome != w.outcome || r.Status != w.status {
			t.Errorf("%s: %v status %d (%v), want %v status %d", id, r.Outcome, r.Status, r.Err, w.outcome, w.status)
		}
		if w.typ != "" && (!errors.As(r.Err, &ie) || ie.Type != w.typ || ie.Reason == "" || ie.Status != w.status) {
			t.Errorf("%s: error %#v, want an *ItemError of type %s with a reason", id, r.Err, w.typ)
		}
	}
}

// 100 versions of one document, added in order while other traffic flows
// and the server rejects items at random: the stored document is the
// last one.
func TestSameDocumentStaysInOrder(t *testing.T) {
	realenv.EmulatorOnly(t, "injects 429 rejections")
	for _, lanes := range []int{1, 3} {
		t.Run(fmt.Sprintf("%d-lanes", lanes), func(t *testing.T) { testSameDocumentStaysInOrder(t, lanes) })
	}
}

func testSameDocumentStaysInOrder(t *testing.T, lanes int) {
	f := newFixture(t, 4, "", Config{FlushItems: 10, FlushInterval: time.Millisecond, Workers: 4, ShardConcurrency: lanes})
	f.srv.SetFaults(osfake.Faults{Seed: 3, RejectRate: 0.2})
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				f.w.Add(context.Background(), Item{Action: Index, Index: "menu", ID: fmt.Sprintf("other-%d-%d", g, i), Routing: "hot", Body: doc(i)})
			}
		}()
	}
	answered := func() int {
		f.mu.Lock()
		defer f.mu.Unlock()
		return len(f.results["the-doc"])
	}
	// Every ten versions, wait until a request carrying the document has
	// been answered since the last pause: its versions are spread over
	// many requests, not written by one or two.
	seen := 0
	for v := 1; v <= 100; v++ {
		f.add(Item{Action: Index, Index: "menu", ID: "the-doc", Routing: "hot", Body: []byte(`{"v":` + strconv.Itoa(v) + `}`)})
		if v%10 == 0 && v < 100 {
			waitUntil(t, fmt.Sprintf("an answer for the-doc after version %d", v), func() bool { return answered() > seen })
			seen = answered()
		}
	}
	wg.Wait()
	f.flush()
	src, _, found := f.stored("the-doc", "hot")
	if !found || fmt.Sprint(src["v"]) != "100" {
		t.Errorf("stored the-doc = %v (found %v), want v 100", src, found)
	}
	f.mu.Lock()
	n := len(f.results["the-doc"])
	f.mu.Unlock()
	if n != 100 {
		t.Errorf("the-doc has %d results, want 100 (one per version, coalesced or not)", n)
	}
	if st := f.w.Stats(); st.Coalesced == 0 {
		t.Errorf("no item was coalesced; want some versions of the-doc to share a batch")
	}
}

// holdBulk returns a gate that holds every _bulk request whose body
// contains marker ("" holds them all) until release is closed, and the
// number of requests it has held.
func holdBulk(marker string, release <-chan struct{}) (func(http.Handler) http.Handler, *atomic.Int64) {
	held := new(atomic.Int64)
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/_bulk") {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					http.Error(w, err.Error(), http.StatusBadRequest)
					return
				}
				r.Body = io.NopCloser(bytes.NewReader(body))
				if bytes.Contains(body, []byte(marker)) {
					held.Add(1)
					select {
					case <-release:
					case <-r.Context().Done():
						return
					}
				}
			}
			next.ServeHTTP(w, r)
		})
	}, held
}

// releaseOnce closes release when the test ends, before the fixture's
// cleanups (which wait for held requests), and returns a function that
// closes it earlier.
func releaseOnce(t *testing.T, release chan struct{}) func() {
	var once sync.Once
	done := func() { once.Do(func() { close(release) }) }
	t.Cleanup(done)
	return done
}

// With a tiny budget Add blocks until items finish, and a cancelled
// context returns it.
func TestBackPressure(t *testing.T) {
	realenv.EmulatorOnly(t, "holds the bulk requests in front of the emulator")
	release := make(chan struct{})
	gate, _ := holdBulk("", release)
	f := newGatedFixture(t, 2, "", Config{MaxBufferedItems: 5, MaxShardItems: 5, FlushItems: 5, FlushInterval: time.Millisecond}, gate)
	letGo := releaseOnce(t, release)
	for i := 0; i < 5; i++ {
		f.add(Item{Action: Index, Index: "menu", ID: "d" + strconv.Itoa(i), Routing: "x", Body: doc(i)})
	}
	// The budget is full and its items are held: Add waits until ctx ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := f.w.Add(ctx, Item{Action: Index, Index: "menu", ID: "blocked", Routing: "x", Body: doc(9)}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Add over budget = %v, want DeadlineExceeded", err)
	}
	if st := f.w.Stats(); st.Finished() != 0 {
		t.Fatalf("%d items finished while their request was held", st.Finished())
	}
	// Once the held batch lands there is room: Add returns, and by then
	// items have finished (their budget is what made the room).
	type added struct {
		err      error
		finished int64
	}
	later := make(chan added, 1)
	go func() {
		err := f.w.Add(context.Background(), Item{Action: Index, Index: "menu", ID: "later", Routing: "x", Body: doc(10)})
		later <- added{err, f.w.Stats().Finished()}
	}()
	letGo()
	if got := <-later; got.err != nil || got.finished == 0 {
		t.Errorf("Add over budget = %v with %d items finished, want nil after the held batch finished", got.err, got.finished)
	}
	f.flush()
	for id, r := range f.each([]string{"d0", "d4", "later"}) {
		if r.Outcome != OK {
			t.Errorf("%s = %+v, want ok", id, r)
		}
	}
}

func TestCloseDrainsAndRefuses(t *testing.T) {
	realenv.Parallel(t)
	f := newFixture(t, 2, "", Config{FlushInterval: time.Hour})
	for i := 0; i < 50; i++ {
		f.add(Item{Action: Index, Index: f.index, ID: "d" + strconv.Itoa(i), Routing: "x", Body: doc(i)})
	}
	if err := f.w.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := f.w.Stats(); st.OK != 50 {
		t.Errorf("after Close: %d ok, want 50 (Close sends what lingers)", st.OK)
	}
	if err := f.w.Add(context.Background(), Item{Action: Index, Index: f.index, ID: "late", Body: doc(1)}); !errors.Is(err, ErrClosed) {
		t.Errorf("Add after Close = %v, want ErrClosed", err)
	}
}

// Close with a deadline fails what it cannot finish, and reports it.
func TestCloseDeadlineFailsTheRest(t *testing.T) {
	realenv.EmulatorOnly(t, "injects 429 rejections of every item")
	f := newFixture(t, 2, "", Config{FlushItems: 10})
	f.srv.SetFaults(osfake.Faults{RejectRate: 1}) // nothing ever succeeds
	var ids []string
	for i := 0; i < 30; i++ {
		ids = append(ids, "d"+strconv.Itoa(i))
		f.add(Item{Action: Index, Index: "menu", ID: ids[i], Routing: "x", Body: doc(i)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := f.w.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want DeadlineExceeded", err)
	}
	for id, r := range f.each(ids) {
		if r.Outcome != Failed || !errors.Is(r.Err, ErrClosed) {
			t.Errorf("%s: %v %v, want Failed with ErrClosed", id, r.Outcome, r.Err)
		}
	}
}

// An item whose retries run past its budget fails with ErrRetryBudget,
// at the first failed attempt that finds the budget spent since its
// first attempt. The budget's clock is the test's: it reads nothing spent
// after the first three attempts and a day after the fourth, so the item
// makes exactly four attempts, however fast or slow the machine.
func TestRetryBudgetEndsInFailure(t *testing.T) {
	realenv.EmulatorOnly(t, "injects 429 rejections of every item")
	f := newFixture(t, 1, "", Config{RetryMaxElapsed: time.Hour})
	const spentAt = 4
	var mu sync.Mutex
	var firsts []time.Time // what each look at the budget measured from
	f.w.sinceFirst = func(first time.Time) time.Duration {
		mu.Lock()
		defer mu.Unlock()
		if firsts = append(firsts, first); len(firsts) < spentAt {
			return 0
		}
		return 24 * time.Hour
	}
	f.srv.SetFaults(osfake.Faults{RejectRate: 1})
	f.add(Item{Action: Index, Index: "menu", ID: "d", Body: doc(1)})
	f.flush()
	r := f.each([]string{"d"})["d"]
	if r.Outcome != Failed || !errors.Is(r.Err, ErrRetryBudget) || r.Attempts != spentAt || r.Status != 429 {
		t.Errorf("result = %+v, want Failed with ErrRetryBudget after %d 429s, the last the first to find the budget spent", r, spentAt)
	}
	if st := f.w.Stats(); st.Retries != spentAt-1 {
		t.Errorf("%d retries, want %d", st.Retries, spentAt-1)
	}
	mu.Lock()
	defer mu.Unlock()
	for i, first := range firsts {
		if first.IsZero() || !first.Equal(firsts[0]) {
			t.Errorf("look %d at the budget measured from %v, look 1 from %v: want every look from the first attempt", i+1, first, firsts[0])
		}
	}
}

// With NoRetryLimit an item is retried for as long as it takes: though
// its budget's clock reads a century since its first attempt at every
// look, past any budget (the default is 10 minutes), it is still retried
// after 20 rejections, and it lands once the shard takes writes again.
func TestNoRetryLimitWaitsForTheShard(t *testing.T) {
	realenv.EmulatorOnly(t, "injects 429 rejections of every item")
	f := newFixture(t, 1, "", Config{RetryInitial: time.Millisecond, RetryMax: 5 * time.Millisecond, RetryMaxElapsed: NoRetryLimit})
	f.w.sinceFirst = func(time.Time) time.Duration { return 100 * 365 * 24 * time.Hour }
	f.srv.SetFaults(osfake.Faults{RejectRate: 1})
	f.add(Item{Action: Index, Index: "menu", ID: "d", Body: doc(1)})
	const retries = 20
	var st Stats
	waitUntil(t, "20 retries of d, or its result", func() bool {
		st = f.w.Stats()
		return st.Retries >= retries || st.Finished() > 0
	})
	if st.Finished() != 0 {
		t.Fatalf("d finished after %d retries (%d failed); want it still retried", st.Retries, st.Failed)
	}
	f.srv.SetFaults(osfake.Faults{})
	f.flush()
	r := f.each([]string{"d"})["d"]
	if r.Outcome != OK || r.Attempts <= retries {
		t.Errorf("result = %+v, want OK after more than %d attempts", r, retries)
	}
}

// routingTo returns a routing value that the server sends to physical
// shard k of an index with n shards and routing_num_shards n.
func routingTo(k, n int) string {
	for i := 0; ; i++ {
		r := "k" + strconv.Itoa(k) + "-" + strconv.Itoa(i)
		if shardhash.ForRouting(r, n, n) == k {
			return r
		}
	}
}

// One shard whose request hangs holds up only its own items: every item
// of the other shards is written while the hung shard's first request is
// still held (one request, as its lane sends one batch at a time), and the
// hung shard's items all land once it is let go.
func TestHotShardSlowsOnlyItself(t *testing.T) {
	realenv.EmulatorOnly(t, "holds one shard's bulk requests in front of the emulator")
	const shards, fastItems, slowItems = 6, 2000, 200
	hot := routingTo(0, shards)
	release := make(chan struct{})
	gate, held := holdBulk(`"routing":"`+hot+`"`, release)
	f := newGatedFixture(t, shards, "", Config{FlushItems: 200}, gate)
	letGo := releaseOnce(t, release)
	var slow []string
	for i := 0; i < fastItems*(shards-1)+slowItems; i++ {
		k := 1 + i%(shards-1)
		if i%(fastItems*(shards-1)/slowItems+1) == 0 {
			k = 0
		}
		id := "d" + strconv.Itoa(i)
		if k == 0 {
			slow = append(slow, id)
		}
		f.add(Item{Action: Index, Index: "menu", ID: id, Routing: routingTo(k, shards), Shard: "s" + strconv.Itoa(k), Body: doc(i)})
	}
	finished := func(ss *ShardStats) int64 {
		if ss == nil {
			return 0
		}
		return ss.OK + ss.Stale + ss.NotFound + ss.Permanent + ss.Failed
	}
	fastDone := func(st Stats) (n int64) {
		for k := 1; k < shards; k++ {
			n += finished(st.Shards["s"+strconv.Itoa(k)])
		}
		return n
	}
	const fast = fastItems * (shards - 1)
	// A guard against a hang, not a measurement: the other shards need a
	// small fraction of it.
	deadline := time.Now().Add(2 * time.Minute)
	st := f.w.Stats()
	for fastDone(st) < fast && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
		st = f.w.Stats()
	}
	if got := fastDone(st); got != fast || st.OK != got {
		t.Fatalf("with shard 0 held: %d of %d items of the other shards finished (%d ok); want all of them, ok", got, fast, st.OK)
	}
	if hs := st.Shards["s0"]; finished(hs) != 0 || hs.InFlight == 0 || held.Load() != 1 {
		t.Errorf("shard 0 while held: %d finished, %d in flight, %d requests held; want 0, some, 1", finished(hs), hs.InFlight, held.Load())
	}
	letGo()
	f.flush()
	for id, r := range f.each(slow) {
		if r.Outcome != OK {
			t.Errorf("slow-shard item %s: %v %v, want ok", id, r.Outcome, r.Err)
		}
	}
}

// Coalesced items that ride along with a retried item keep the queued and
// in-flight counts exact: after everything finishes both are zero.
func TestCountsStayExactWithCoalescingAndRetries(t *testing.T) {
	realenv.EmulatorOnly(t, "injects 429 rejections")
	f := newFixture(t, 2, "", Config{FlushItems: 50, FlushInterval: time.Millisecond})
	f.srv.SetFaults(osfake.Faults{Seed: 11, RejectRate: 0.5})
	for round := 0; round < 20; round++ {
		for i := 0; i < 40; i++ {
			f.add(Item{Action: Index, Index: "menu", ID: "d" + strconv.Itoa(i), Routing: "x", Shard: "s", Body: doc(round)})
		}
	}
	f.flush()
	st := f.w.Stats()
	ss := st.Shards["s"]
	if ss.Queued != 0 || ss.InFlight != 0 || st.Coalesced == 0 || st.Retries == 0 || st.Finished() != 800 {
		t.Errorf("after Flush: queued %d, in flight %d, coalesced %d, retries %d, finished %d; want 0, 0, >0, >0, 800",
			ss.Queued, ss.InFlight, st.Coalesced, st.Retries, st.Finished())
	}
	if q, in := testutil.ToFloat64(f.w.metrics.queued.WithLabelValues("s")), testutil.ToFloat64(f.w.metrics.inflight.WithLabelValues("s")); q != 0 || in != 0 {
		t.Errorf("gauges: queued %v, in flight %v, want 0", q, in)
	}
}

// Do returns its own items' results without waiting for unrelated ones:
// an item lingering in another shard's queue (FlushInterval an hour) and
// a request held on a third shard are still unanswered when it returns.
// Its results come in the order of its items, and OnResult gets them too.
func TestDoWaitsOnlyForItsOwnItems(t *testing.T) {
	realenv.EmulatorOnly(t, "holds one shard's requests in front of the emulator")
	release := make(chan struct{})
	gate, held := holdBulk(`"held"`, release)
	f := newGatedFixture(t, 4, "", Config{FlushInterval: time.Hour}, gate)
	done := releaseOnce(t, release)
	ctx := context.Background()

	f.add(Item{Index: f.index, ID: "lingering", Routing: "a", Body: doc(1), Shard: "a"})
	heldDone := make(chan error, 1)
	go func() { // sent at once, and held by the gate
		_, err := f.w.Do(ctx, Item{Index: f.index, ID: "held", Routing: "b", Body: doc(2), Shard: "b"})
		heldDone <- err
	}()
	waitUntil(t, "the gate to hold a request", func() bool { return held.Load() > 0 })

	rs, err := f.w.Do(ctx,
		Item{Index: f.index, ID: "mine-1", Routing: "c", Body: doc(4), Shard: "c", Version: 2, VersionType: External},
		Item{Index: f.index, ID: "mine-1", Routing: "c", Body: doc(5), Shard: "c", Version: 1, VersionType: External},
		Item{Index: f.index, ID: "mine-2", Routing: "c", Shard: "c", Action: Delete, Version: 1, VersionType: External},
	)
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("Do returned %d results, want 3", len(rs))
	}
	for i, want := range []struct {
		id      string
		version int64
		outcome Outcome
	}{{"mine-1", 2, OK}, {"mine-1", 1, OK}, {"mine-2", 1, NotFound}} {
		if r := rs[i]; r.Item.ID != want.id || r.Item.Version != want.version || r.Outcome != want.outcome {
			t.Errorf("result %d = %s v%d %v, want %s v%d %v", i, r.Item.ID, r.Item.Version, r.Outcome, want.id, want.version, want.outcome)
		}
	}
	if !rs[1].Coalesced {
		t.Error("the older version of mine-1 was not coalesced into the newer one")
	}
	if _, v, found := f.stored("mine-1", "c"); !found || v != 2 {
		t.Errorf("mine-1 stored at version %d (found %v), want 2", v, found)
	}
	f.mu.Lock()
	got := len(f.results["mine-1"]) + len(f.results["mine-2"])
	unrelated := len(f.results["held"]) + len(f.results["lingering"])
	f.mu.Unlock()
	if got != 3 {
		t.Errorf("OnResult got %d results of Do's items, want 3", got)
	}
	if unrelated != 0 {
		t.Errorf("Do returned after %d unrelated items were answered, want none", unrelated)
	}
	if q := f.w.Stats().Shards["a"].Queued; q != 1 {
		t.Errorf("shard a queues %d items after Do, want the lingering one", q)
	}

	done()
	if err := <-heldDone; err != nil {
		t.Fatal(err)
	}
	f.flush()
	f.each([]string{"lingering", "held"})
}

// A Do whose context ends returns its error; its items still get their
// results through OnResult.
func TestDoContextEnds(t *testing.T) {
	realenv.EmulatorOnly(t, "holds requests in front of the emulator")
	release := make(chan struct{})
	gate, held := holdBulk("", release)
	f := newGatedFixture(t, 2, "", Config{}, gate)
	done := releaseOnce(t, release)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := f.w.Do(ctx, Item{Index: f.index, ID: "x", Routing: "a", Body: doc(1)})
		errc <- err
	}()
	waitUntil(t, "the gate to hold a request", func() bool { return held.Load() > 0 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Do = %v, want context.Canceled", err)
	}
	done()
	f.flush()
	if r := f.each([]string{"x"})["x"]; r.Outcome != OK {
		t.Errorf("x ended %v, want OK", r.Outcome)
	}
}

// Withdraw keeps what was queued from being sent once the caller's right
// to write has ended, while a request already on the wire ends as it will:
// an item on the wire when withdrawing begins lands; the items queued
// behind it, and an item whose first attempt was refused, end Failed with
// ErrWithdrawn and never reach the index; items Withdraw keeps are sent.
func TestWithdraw(t *testing.T) {
	realenv.EmulatorOnly(t, "holds and refuses bulk requests in front of the emulator")
	var withdrawing atomic.Bool
	release := make(chan struct{})
	var refused atomic.Bool
	hold, held := holdBulk(`"a-held"`, release)
	gate := func(next http.Handler) http.Handler {
		return hold(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			if bytes.Contains(body, []byte(`"d-refused"`)) && refused.CompareAndSwap(false, true) {
				// The item's first attempt is refused whole, and the
				// caller's right ends before its retry.
				withdrawing.Store(true)
				http.Error(w, `{"error":"busy","status":429}`, http.StatusTooManyRequests)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}
	f := newGatedFixture(t, 1, "", Config{ShardConcurrency: 1, Withdraw: func(it *Item) bool {
		return withdrawing.Load() && it.Ref == "old"
	}}, gate)
	done := releaseOnce(t, release)

	f.add(Item{Action: Index, Index: f.index, ID: "a-held", Routing: "r", Body: doc(1), Ref: "old"})
	waitUntil(t, "the first batch on the wire", func() bool { return held.Load() == 1 })
	f.add(Item{Action: Index, Index: f.index, ID: "b-queued", Routing: "r", Body: doc(2), Ref: "old"})
	f.add(Item{Action: Index, Index: f.index, ID: "c-kept", Routing: "r", Body: doc(3), Ref: "new"})
	withdrawing.Store(true)
	done()
	f.flush()
	withdrawing.Store(false)
	f.add(Item{Action: Index, Index: f.index, ID: "d-refused", Routing: "r", Body: doc(4), Ref: "old"})
	f.flush()

	rs := f.each([]string{"a-held", "b-queued", "c-kept", "d-refused"})
	for id, want := range map[string]Outcome{"a-held": OK, "b-queued": Failed, "c-kept": OK, "d-refused": Failed} {
		r := rs[id]
		if r.Outcome != want {
			t.Errorf("%s: outcome %v (%v), want %v", id, r.Outcome, r.Err, want)
		}
		if want == Failed && !errors.Is(r.Err, ErrWithdrawn) {
			t.Errorf("%s: error %v, want ErrWithdrawn", id, r.Err)
		}
		if _, _, found := f.stored(id, "r"); found != (want == OK) {
			t.Errorf("%s: stored %v, want %v", id, found, want == OK)
		}
	}
	st := f.w.Stats()
	if st.Failed != 2 || st.OK != 2 {
		t.Errorf("stats %+v, want 2 ok, 2 failed", st)
	}
	for k, q := range st.Shards {
		if q.Queued != 0 || q.InFlight != 0 {
			t.Errorf("shard %s: %d queued, %d in flight, want nothing held", k, q.Queued, q.InFlight)
		}
	}
}

// Two operations on one document in one batch coalesce into what they
// leave applied in order. A delete with external_gte at the stored
// version removes the document, and a delete or write with external at
// that same version, added before or after it, is refused by the shard:
// whichever came first, the document ends deleted, and neither item fails.
func TestCoalescingKeepsExternalGTE(t *testing.T) {
	for _, gteFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("gte first %v", gteFirst), func(t *testing.T) {
			f := newFixture(t, 1, "", Config{FlushInterval: time.Hour, ShardConcurrency: 1})
			f.http("PUT", "/"+f.index+"/_doc/d?routing=r&version=5&version_type=external&refresh=true", `{"n":5}`, 201)
			gte := Item{Action: Delete, Index: f.index, ID: "d", Routing: "r", Version: 5, VersionType: ExternalGTE, Ref: "gte"}
			ext := Item{Action: Delete, Index: f.index, ID: "d", Routing: "r", Version: 5, VersionType: External, Ref: "external"}
			if gteFirst {
				f.add(gte)
				f.add(ext)
			} else {
				f.add(ext)
				f.add(gte)
			}
			f.flush()
			if _, _, found := f.stored("d", "r"); found {
				t.Error("d is still stored: the delete with external_gte was coalesced away")
			}
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, r := range f.results["d"] {
				if !r.Outcome.Succeeded() {
					t.Errorf("%v: outcome %v (%v), want success", r.Item.Ref, r.Outcome, r.Err)
				}
			}
		})
	}
}
