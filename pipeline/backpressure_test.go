package pipeline

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
)

// refreshGate holds every index refresh, once armed, until it is opened:
// a node whose refreshes never end.
type refreshGate struct {
	next  http.RoundTripper
	armed atomic.Bool
	open  chan struct{}
	held  atomic.Int64
}

func (g *refreshGate) RoundTrip(req *http.Request) (*http.Response, error) {
	if g.armed.Load() && strings.HasSuffix(req.URL.Path, "/_refresh") {
		g.held.Add(1)
		select {
		case <-g.open:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
	return g.next.RoundTrip(req)
}

// TestTrackedBound: while no refresh ends, every restaurant move and
// delete waits, and so does its partition's commit, while the events
// behind it go on. The pipeline then takes no more events than its
// tracking bound instead of holding ever more of them; once refreshes
// answer again it finishes the stream, equal to the stream's model.
func TestTrackedBound(t *testing.T) {
	realenv.Parallel(t)
	const seed, bound = 12, 150
	e := newEnv(t, envOptions{partitions: 2})
	evs := generate(t, defaultGen(seed, 1500))
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	where := e.produce(context.Background(), evs)
	gate := &refreshGate{next: http.DefaultTransport, open: make(chan struct{})}
	client, err := opensearch.NewClient(opensearch.Config{Addresses: []string{e.url}, Transport: gate, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	// A dish that waits for a restaurant behind the bound waits as long
	// as the refreshes are held, and the machine's load: without a limit
	// (waitForever); the orphans go once the log is committed.
	cfg := e.config()
	cfg.PendingMaxAge = waitForever
	p, err := New(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	p.loop.maxTracked = bound
	r := &running{p: p, Running: testenv.Go(t, p.Run)}
	for ready := false; !ready; {
		if err, done := r.Exited(); done {
			t.Fatalf("Run = %v before it was ready", err)
		}
		ready, _ = p.Ready()
		time.Sleep(5 * time.Millisecond)
	}
	gate.armed.Store(true)

	deadline := time.Now().Add(realenv.Slack(60 * time.Second))
	for p.track.size() < bound && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	st := p.Stats()
	if st.Tracked < bound {
		t.Fatalf("the bound was never reached (%d tracked, %d fetched, %d finished, %d refreshes held): the test tests nothing", st.Tracked, st.Fetched, st.Finished, gate.held.Load())
	}
	if st.Finished >= int64(len(evs)) {
		t.Fatalf("every event finished while refreshes were held")
	}
	close(gate.open)
	e.waitCommitted(t, r, 60*time.Second)
	st = p.Stats()
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	t.Logf("%d refreshes held; tracked at most %d of %d fetched; %d moves", gate.held.Load(), st.TrackedPeak, st.Fetched, st.Moves)
	if st.TrackedPeak > bound {
		t.Errorf("tracked at most %d messages, over the bound of %d", st.TrackedPeak, bound)
	}
	e.expireOrphans(t, evs, where)
	checkFinal(t, e, evs, where)
}
