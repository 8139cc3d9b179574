package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/prometheus/client_golang/prometheus"
)

// A _bulk request can be applied by the cluster while its answer never
// reaches the writer: the connection dies, the coordinating node fails
// after its shards wrote, a proxy answers 502 or 504 after forwarding.
// The writer sends the batch again, and what the first attempt applied
// comes back as a version conflict for the very version sent. The tests
// below put lossyProxy between the writer and the engine (the emulator,
// or under -tags realcluster the first real node) and check that such an
// item ends Stale with Result.Stored equal to its own version — done,
// never Failed or Permanent — and that the engine holds the document
// once, at that version, on the shard of its routing.

// lossMode is how lossyProxy loses an answer the engine gave.
type lossMode int

const (
	// hangUp closes the client's connection without a word, as a node
	// or a load balancer that died after forwarding.
	hangUp lossMode = iota
	// badGateway answers 502 with an HTML page, as a proxy whose
	// upstream connection broke after the request went out.
	badGateway
)

func (m lossMode) String() string {
	if m == hangUp {
		return "hang-up"
	}
	return "502"
}

// lossyProxy forwards every request to backend. Of the first lose _bulk
// requests it forwards the body (or, with prefix > 0, only its first
// prefix items, as when some shards applied their part before the
// coordinating node failed), waits for the engine's answer, discards it
// and fails the client in mode's way. It counts, per document id, the
// _bulk requests that carried it.
type lossyProxy struct {
	t       *testing.T
	backend string
	mode    lossMode
	prefix  int
	client  *http.Client

	mu        sync.Mutex
	lose      int             // answers still to lose
	lost      int             // answers lost
	bulks     int             // _bulk requests seen
	lostItems int             // items in the requests whose answer was lost
	carried   map[string]int  // by document id: _bulk requests that carried it
	applied   map[string]bool // ids a lost attempt forwarded to the engine
}

func newLossyProxy(t *testing.T, backend string, mode lossMode, lose, prefix int) *lossyProxy {
	return &lossyProxy{t: t, backend: backend, mode: mode, lose: lose, prefix: prefix,
		client:  &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()},
		carried: map[string]int{}, applied: map[string]bool{}}
}

func (p *lossyProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	lose := false
	if strings.HasSuffix(r.URL.Path, "/_bulk") {
		ids := bulkItemIDs(body)
		p.mu.Lock()
		p.bulks++
		for _, id := range ids {
			p.carried[id]++
		}
		if p.lose > 0 {
			p.lose--
			p.lost++
			p.lostItems += len(ids)
			lose = true
		}
		p.mu.Unlock()
	}
	if !lose {
		status, header, answer, err := p.forward(r, body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		w.Header().Set("Content-Type", header.Get("Content-Type"))
		w.WriteHeader(status)
		w.Write(answer)
		return
	}

	fwd, ids := body, bulkItemIDs(body)
	if p.prefix > 0 {
		fwd, ids = bulkPrefix(body, p.prefix)
	}
	// The engine must answer the lost attempt: otherwise nothing was
	// applied, and the retry would prove nothing.
	status, _, answer, err := p.forward(r, fwd)
	if err != nil || status != http.StatusOK {
		p.t.Errorf("lossy proxy: the attempt whose answer is lost got %d %s, %v; want the engine's 200", status, answer, err)
	}
	p.mu.Lock()
	for _, id := range ids {
		p.applied[id] = true
	}
	p.mu.Unlock()

	switch p.mode {
	case hangUp:
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			p.t.Errorf("lossy proxy: hijack: %v", err)
			return
		}
		conn.Close()
	case badGateway:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		io.WriteString(w, "<html><body><h1>502 Bad Gateway</h1></body></html>\n")
	}
}

// forward sends the request, with body, to the backend and reads the
// whole answer.
func (p *lossyProxy) forward(r *http.Request, body []byte) (int, http.Header, []byte, error) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.backend+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return 0, nil, nil, err
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		req.Header.Set("Content-Type", ct)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, answer, err
}

// bulkItemIDs returns the document ids of a _bulk body's items, in order.
func bulkItemIDs(body []byte) []string {
	_, ids := bulkPrefix(body, -1)
	return ids
}

// bulkPrefix returns the part of a _bulk body that holds its first n
// items (all of them if n < 0) and their document ids. A delete's action
// line stands alone; every other action is followed by its source line.
func bulkPrefix(body []byte, n int) ([]byte, []string) {
	var ids []string
	rest, end := body, 0
	for len(rest) > 0 && (n < 0 || len(ids) < n) {
		line, _, _ := bytes.Cut(rest, []byte("\n"))
		var action map[string]struct {
			ID string `json:"_id"`
		}
		if json.Unmarshal(line, &action) != nil {
			break
		}
		lines := 1
		for name, meta := range action {
			ids = append(ids, meta.ID)
			if name != "delete" {
				lines = 2
			}
		}
		for range lines {
			line, tail, _ := bytes.Cut(rest, []byte("\n"))
			end += len(line) + 1
			rest = tail
		}
	}
	return body[:min(end, len(body))], ids
}

// stats returns what the proxy saw.
func (p *lossyProxy) stats() (bulks, lost, lostItems int, carried map[string]int, applied map[string]bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	carried, applied = map[string]int{}, map[string]bool{}
	for k, v := range p.carried {
		carried[k] = v
	}
	for k, v := range p.applied {
		applied[k] = v
	}
	return p.bulks, p.lost, p.lostItems, carried, applied
}

// newLossyFixture creates an index with settings (the body of
// "settings") on a fresh emulator, or under -tags realcluster a uniquely
// named one on the real cluster, deleted at the end, and a writer whose
// only address is a lossyProxy in front of the emulator or the first real
// node. The fixture's own calls (f.http, f.stored) go to the engine
// directly.
func newLossyFixture(t *testing.T, settings string, cfg Config, mode lossMode, lose, prefix int) (*fixture, *lossyProxy) {
	t.Helper()
	f := &fixture{t: t, index: realenv.Unique("bulk-lost"), results: map[string][]Result{}, reg: prometheus.NewRegistry()}
	if realenv.Enabled() {
		f.url = realenv.OpenSearchURL()
	} else {
		f.srv = osfake.NewTestServer(osfake.Options{})
		t.Cleanup(f.srv.Close)
		f.url = f.srv.URL
	}
	f.http("PUT", "/"+f.index, `{"settings":`+settings+`}`, 200)
	if f.srv == nil {
		t.Cleanup(func() { f.http("DELETE", "/"+f.index, "", 200) })
	}
	p := newLossyProxy(t, f.url, mode, lose, prefix)
	front := httptest.NewServer(p)
	t.Cleanup(front.Close)
	cfg.RetryInitial, cfg.RetryMax = time.Millisecond, 20*time.Millisecond
	f.startWriter([]string{front.URL}, cfg)
	return f, p
}

// indexSettings are the settings of a test index of three shards, with
// the replica a real cluster gives it, and gcDeletes ("" for the
// default 60s) as index.gc_deletes.
func indexSettings(gcDeletes string) string {
	s := `{"number_of_shards":3,"number_of_replicas":` + strconv.Itoa(realenv.IndexReplicas())
	if gcDeletes != "" {
		s += `,"gc_deletes":"` + gcDeletes + `"`
	}
	return s + `}`
}

// seed writes a document straight to the engine, past the proxy, at an
// external version.
func (f *fixture) seed(id, routing string, version int64, src string) {
	f.t.Helper()
	f.http("PUT", fmt.Sprintf("/%s/_doc/%s?routing=%s&version=%d&version_type=external", f.index, id, routing, version), src, 201)
}

// searchIDs refreshes the index and returns, for each document the whole
// index holds, the routing of every copy a search finds, and the index's
// total hit count: a document written twice, or to a second shard, would
// show as a second copy or an extra hit.
func (f *fixture) searchIDs() (copies map[string][]string, total int) {
	f.t.Helper()
	f.http("POST", "/"+f.index+"/_refresh", "", 200)
	out := f.http("POST", "/"+f.index+"/_search", `{"size":1000,"track_total_hits":true,"query":{"match_all":{}}}`, 200)
	var res struct {
		Hits struct {
			Total struct{ Value int }
			Hits  []struct {
				ID      string `json:"_id"`
				Routing string `json:"_routing"`
			}
		}
	}
	b, _ := json.Marshal(out)
	if err := json.Unmarshal(b, &res); err != nil {
		f.t.Fatalf("search answer %s: %v", b, err)
	}
	copies = map[string][]string{}
	for _, h := range res.Hits.Hits {
		copies[h.ID] = append(copies[h.ID], h.Routing)
	}
	return copies, res.Hits.Total.Value
}

// checkStoredOnce checks that each live document is stored at its
// version, found by GET with its routing, and found exactly once, with
// that routing, by a search of the whole index, which holds nothing else.
// gone documents must be found neither way.
func (f *fixture) checkStoredOnce(live map[string]storedDoc, gone map[string]string) {
	f.t.Helper()
	for id, d := range live {
		src, v, found := f.stored(id, d.routing)
		if !found || v != d.version || fmt.Sprint(src["n"]) != d.n {
			f.t.Errorf("GET %s?routing=%s = found %v, version %d, n %v; want version %d, n %s", id, d.routing, found, v, src["n"], d.version, d.n)
		}
	}
	for id, routing := range gone {
		if _, v, found := f.stored(id, routing); found {
			f.t.Errorf("GET %s?routing=%s found version %d; want the document deleted", id, routing, v)
		}
	}
	copies, total := f.searchIDs()
	if total != len(live) || len(copies) != len(live) {
		f.t.Errorf("search of the index: %d hits of %d ids, want %d: one per live document", total, len(copies), len(live))
	}
	for id, d := range live {
		if rs := copies[id]; len(rs) != 1 || rs[0] != d.routing {
			f.t.Errorf("search found %s with routings %q, want one copy routed %q", id, rs, d.routing)
		}
	}
	for id := range gone {
		if rs := copies[id]; len(rs) != 0 {
			f.t.Errorf("search found deleted %s %d times", id, len(rs))
		}
	}
}

// storedDoc is what the engine should hold of a live document.
type storedDoc struct {
	routing string
	version int64
	n       string // the source's "n"
}

// Batches whose answers are lost after the engine applied them are sent
// again; their items come back as conflicts at their own version and end
// Stale, Stored equal to their version — none failed, none written twice.
func TestLostBulkAnswerIsNotAFailure(t *testing.T) {
	for _, mode := range []lossMode{hangUp, badGateway} {
		t.Run(mode.String(), func(t *testing.T) {
			realenv.Parallel(t)
			const n, lose = 120, 3
			f, p := newLossyFixture(t, indexSettings(""), Config{FlushItems: 20}, mode, lose, 0)
			live := map[string]storedDoc{}
			var ids []string
			for i := range n {
				id := "d" + strconv.Itoa(i)
				it := Item{Action: Index, Index: f.index, ID: id, Routing: routingFor(i), Version: int64(3 + i%5), VersionType: External, Body: doc(i)}
				ids = append(ids, id)
				live[id] = storedDoc{it.Routing, it.Version, strconv.Itoa(i)}
				f.add(it)
			}
			f.flush()

			bulks, lost, lostItems, carried, applied := p.stats()
			if lost != lose || bulks < lose+1 {
				t.Fatalf("proxy: %d _bulk requests, %d answers lost; want %d lost and their retries", bulks, lost, lose)
			}
			t.Logf("proxy: %d _bulk requests, %d answers lost carrying %d items, %d documents applied unanswered", bulks, lost, lostItems, len(applied))
			for id, r := range f.each(ids) {
				switch {
				case applied[id]:
					if r.Outcome != Stale || r.Status != 409 || r.Stored != r.Item.Version || r.Attempts < 2 || r.Attempts != carried[id] {
						t.Errorf("%s, applied by an attempt whose answer was lost: %v status %d stored %d after %d attempts (proxy saw %d), %v; want stale 409 at its own version %d after a retry",
							id, r.Outcome, r.Status, r.Stored, r.Attempts, carried[id], r.Err, r.Item.Version)
					}
				case r.Outcome != OK || r.Status != 201 || r.Attempts != 1:
					t.Errorf("%s: %v status %d after %d attempts, %v; want ok 201 at once", id, r.Outcome, r.Status, r.Attempts, r.Err)
				}
			}
			st := f.w.Stats()
			if st.Failed != 0 || st.Permanent != 0 || st.Stale != int64(len(applied)) || st.OK+st.Stale != n || st.Retries != int64(lostItems) {
				t.Errorf("stats: %d ok, %d stale, %d failed, %d permanent, %d retries; want %d stale (the lost attempts' items), the rest ok, none failed, %d retries",
					st.OK, st.Stale, st.Failed, st.Permanent, st.Retries, len(applied), lostItems)
			}
			f.checkStoredOnce(live, nil)
			if f.srv != nil {
				if ops, err := f.srv.AppliedOps(f.index); err != nil || ops != n {
					t.Errorf("the emulator applied %d operations (%v), want %d: each document once", ops, err, n)
				}
			}
		})
	}
}

// One batch mixes documents the lost attempt applied, documents it never
// reached (prefix: the engine applied only the first half, as when a
// node failed after some shards wrote their part), documents already
// stored at a newer version, and deletes with external versions. On the
// retry the applied ones come back as conflicts at their own version, the
// genuinely stale ones as conflicts at the newer version: both Stale,
// told apart by Result.Stored; nothing fails.
func TestLostBulkAnswerMixedBatch(t *testing.T) {
	for _, mode := range []lossMode{hangUp, badGateway} {
		for _, partial := range []bool{false, true} {
			name := mode.String() + map[bool]string{false: "/whole-batch-applied", true: "/first-half-applied"}[partial]
			t.Run(name, func(t *testing.T) {
				realenv.Parallel(t)
				testLostBulkAnswerMixedBatch(t, mode, partial)
			})
		}
	}
}

func testLostBulkAnswerMixedBatch(t *testing.T, mode lossMode, partial bool) {
	const version, newer, older = 5, 9, 3
	type kind int
	const (
		fresh   kind = iota // a new document
		stale               // stored at a newer version already
		deleted             // a delete of a document stored at an older version
		missing             // a delete of a document never stored
	)
	type want struct {
		id      string
		routing string
		kind    kind
	}
	// Two of each kind in each half of the batch, routed over the shards.
	var items []want
	for half := range 2 {
		for k := fresh; k <= missing; k++ {
			for j := range 2 {
				id := fmt.Sprintf("%s-%d", [...]string{"fresh", "stale", "deleted", "missing"}[k], half*2+j)
				items = append(items, want{id, routingFor(len(items)), k})
			}
		}
	}
	prefix := 0
	if partial {
		prefix = len(items) / 2
	}
	// index.gc_deletes of an hour keeps every tombstone for the retry to
	// meet, on the real cluster as on the emulator.
	f, p := newLossyFixture(t, indexSettings("1h"), Config{}, mode, 1, prefix)
	for _, w := range items {
		switch w.kind {
		case stale:
			f.seed(w.id, w.routing, newer, `{"n":"seeded"}`)
		case deleted:
			f.seed(w.id, w.routing, older, `{"n":"seeded"}`)
		}
	}

	// All in one shard key and lane: Do sends them as one batch.
	batch := make([]Item, len(items))
	for i, w := range items {
		it := Item{Action: Index, Index: f.index, ID: w.id, Routing: w.routing, Version: version, VersionType: External, Shard: "s", Body: doc(i)}
		if w.kind == deleted || w.kind == missing {
			it.Action, it.Body = Delete, nil
		}
		batch[i] = it
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs, err := f.w.Do(ctx, batch...)
	if err != nil {
		t.Fatal(err)
	}

	bulks, lost, lostItems, carried, applied := p.stats()
	if lost != 1 || bulks != 2 || lostItems != len(items) || len(applied) != len(items)-prefix {
		t.Fatalf("proxy: %d _bulk requests, %d answers lost carrying %d items, %d forwarded to the engine; want the one batch of %d lost after %d reached the engine, and its retry",
			bulks, lost, lostItems, len(applied), len(items), len(items)-prefix)
	}
	t.Logf("proxy: %d _bulk requests, %d answer lost, %d of %d items applied unanswered", bulks, lost, len(applied), len(items))
	live, gone := map[string]storedDoc{}, map[string]string{}
	for i, w := range items {
		r := rs[i]
		// What the retry must report: a conflict at the item's own version
		// for what the lost attempt applied, at the newer version for the
		// genuinely stale, and otherwise what a first attempt gets.
		outcome, status, stored := Stale, 409, int64(version)
		switch {
		case w.kind == stale:
			stored = newer
		case applied[w.id]:
		case w.kind == fresh:
			outcome, status, stored = OK, 201, 0
		case w.kind == deleted:
			outcome, status, stored = OK, 200, 0
		case w.kind == missing:
			outcome, status, stored = NotFound, 404, 0
		}
		if r.Item.ID != w.id || r.Outcome != outcome || r.Status != status || r.Stored != stored || r.Attempts != 2 || carried[w.id] != 2 {
			t.Errorf("%s (applied unanswered: %v): %v status %d stored %d after %d attempts (proxy saw %d), %v; want %v status %d stored %d after 2",
				r.Item.ID, applied[w.id], r.Outcome, r.Status, r.Stored, r.Attempts, carried[w.id], r.Err, outcome, status, stored)
		}
		switch w.kind {
		case fresh:
			live[w.id] = storedDoc{w.routing, version, strconv.Itoa(i)}
		case stale:
			live[w.id] = storedDoc{w.routing, newer, "seeded"}
		default:
			gone[w.id] = w.routing
		}
	}
	st := f.w.Stats()
	if st.Failed != 0 || st.Permanent != 0 || st.Retries != int64(len(items)) {
		t.Errorf("stats: %d failed, %d permanent, %d retries; want none failed, %d retries (the batch once)", st.Failed, st.Permanent, st.Retries, len(items))
	}
	f.checkStoredOnce(live, gone)
}

// A delete whose answer was lost meets, on its retry, either its own
// tombstone (a conflict at its version: Stale) or, once index.gc_deletes
// has pruned the tombstone, no document at all (404 not_found:
// NotFound). Both are done, for a delete of a stored document and of one
// never stored alike.
func TestLostDeleteAnswerIsDone(t *testing.T) {
	for _, mode := range []lossMode{hangUp, badGateway} {
		for _, gc := range []string{"1h", "0s"} {
			t.Run(mode.String()+"/gc_deletes-"+gc, func(t *testing.T) {
				realenv.Parallel(t)
				testLostDeleteAnswerIsDone(t, mode, gc)
			})
		}
	}
}

func testLostDeleteAnswerIsDone(t *testing.T, mode lossMode, gc string) {
	const n, version = 12, 7
	f, p := newLossyFixture(t, indexSettings(gc), Config{}, mode, 1, 0)
	gone := map[string]string{}
	var batch []Item
	for i := range n {
		id := "del-" + strconv.Itoa(i)
		if i%2 == 0 { // the others were never stored
			f.seed(id, routingFor(i), version-1, `{"n":"seeded"}`)
		}
		gone[id] = routingFor(i)
		batch = append(batch, Item{Action: Delete, Index: f.index, ID: id, Routing: routingFor(i), Version: version, VersionType: External, Shard: "s"})
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rs, err := f.w.Do(ctx, batch...)
	if err != nil {
		t.Fatal(err)
	}
	bulks, lost, _, carried, _ := p.stats()
	if lost != 1 || bulks != 2 {
		t.Fatalf("proxy: %d _bulk requests, %d answers lost; want the batch lost once and retried", bulks, lost)
	}
	for _, r := range rs {
		// The tombstone holds for an hour: the retry meets it. With
		// gc_deletes 0s the emulator has pruned it; a real node prunes it
		// only when its cached clock has moved past the delete, so either
		// answer may come.
		tombstone := r.Outcome == Stale && r.Status == 409 && r.Stored == version
		pruned := r.Outcome == NotFound && r.Status == 404
		ok := tombstone
		switch {
		case gc == "0s" && realenv.Enabled():
			ok = tombstone || pruned
		case gc == "0s":
			ok = pruned
		}
		if !ok || r.Attempts != 2 || carried[r.Item.ID] != 2 {
			t.Errorf("delete %s v%d after a lost answer (gc_deletes %s): %v status %d stored %d after %d attempts (proxy saw %d), %v; want it done on the retry",
				r.Item.ID, version, gc, r.Outcome, r.Status, r.Stored, r.Attempts, carried[r.Item.ID], r.Err)
		}
	}
	st := f.w.Stats()
	t.Logf("proxy: %d _bulk requests, %d answer lost; the retry found %d tombstones (stale) and %d nothing (not found)", bulks, lost, st.Stale, st.NotFound)
	if st.Failed != 0 || st.Permanent != 0 || st.Stale+st.NotFound != n {
		t.Errorf("stats: %d stale, %d not found, %d failed, %d permanent; want all %d done", st.Stale, st.NotFound, st.Failed, st.Permanent, n)
	}
	f.checkStoredOnce(nil, gone)
}
