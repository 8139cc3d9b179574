package pipeline

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/realenv"
)

// severable dials the connections of one instance's reader and can cut
// them all at once: the instance then falls silent as a killed process
// does (no heartbeat, no LeaveGroup, no commit), and the group waits out
// its session timeout before it gives the instance's partitions away.
type severable struct {
	mu    sync.Mutex
	cut   bool
	conns []net.Conn
}

func (s *severable) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cut {
		c.Close()
		return nil, errors.New("killed")
	}
	s.conns = append(s.conns, c)
	return c, nil
}

func (s *severable) sever() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.cut = true
	for _, c := range s.conns {
		c.Close()
	}
}

// testMember is one instance of a group under test.
type testMember struct {
	r   *running
	sev *severable
}

// startMember starts an instance whose reader can be severed.
func (e *testEnv) startMember(cfg Config, name string) *testMember {
	return e.startMemberWith(cfg, name, nil)
}

// startMemberWith is startMember, letting setup adjust the pipeline
// before it runs.
func (e *testEnv) startMemberWith(cfg Config, name string, setup func(*Pipeline)) *testMember {
	cfg.Instance, cfg.Registerer = name, prometheus.NewRegistry()
	sev := &severable{}
	r := e.startWith(cfg, func(p *Pipeline) {
		d := *p.grp.dialer
		d.DialFunc = sev.dial
		p.grp.dialer = &d
		if setup != nil {
			setup(p)
		}
	})
	return &testMember{r: r, sev: sev}
}

// kill stops the instance as SIGKILL would: silent at once, nothing
// drained or committed.
func (m *testMember) kill(t testing.TB) {
	m.sev.sever()
	m.r.p.cfg.DrainTimeout = time.Nanosecond
	_ = m.r.Stop(t) // whatever Run says: the instance is gone
}

// waitJoined waits until every member has partitions of its own in a
// stable group: the group has settled with all of them in it.
func waitJoined(t testing.TB, group []*testMember) {
	t.Helper()
	deadline := time.Now().Add(realenv.Slack(30 * time.Second))
	for {
		ids := map[int64]bool{}
		mine := 0
		for _, m := range group {
			if g := m.r.p.grp.current.Load(); g != nil {
				ids[g.id] = true
				if len(g.owned) > 0 {
					mine++
				}
			}
		}
		if len(ids) == 1 && mine == len(group) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the members are in generations %v, %d of %d with partitions", ids, mine, len(group))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGroupThroughKillsAndRestarts runs three instances on six
// partitions through three SIGKILLs in a row, each followed by a
// replacement, and then a rolling restart of all three (each stopped as
// SIGTERM stops it, then replaced), with events flowing throughout: the
// index ends equal to the model of the event log.
func TestGroupThroughKillsAndRestarts(t *testing.T) {
	realenv.Parallel(t)
	const seed = 13
	e := newEnv(t, envOptions{partitions: 6})
	evs := generate(t, defaultGen(seed, 3000))
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	ctx := context.Background()
	chunks := 5
	at := func(i, parts int) int { return cutAt(evs, i*len(evs)/parts) }
	chunk := func(i int) []genEvent { return evs[at(i, chunks):at(i+1, chunks)] }
	// A dish parked by a killed instance keeps its first parking time at
	// the next owner, which counts the session timeout and the rebalance
	// against its wait: the instances wait without a limit (waitForever).
	cfg := e.config()
	cfg.PendingMaxAge = waitForever
	n := 0
	start := func() *testMember {
		n++
		return e.startMember(cfg, fmt.Sprintf("ingest-%d", n))
	}
	group := []*testMember{start(), start(), start()}
	where := e.produce(ctx, chunk(0))
	e.waitCommitted(t, group[0].r, 40*time.Second)
	for i := range 3 {
		where = append(where, e.produce(ctx, chunk(1+i))...)
		group[i].kill(t)
		group[i] = start()
		e.waitCommitted(t, group[(i+1)%3].r, 60*time.Second)
	}
	// Rolling restart: each instance stopped as SIGTERM stops it, then
	// replaced, while the last chunk flows.
	last := at(4, chunks)
	from := last
	for i := range group {
		to := cutAt(evs, last+(i+1)*(len(evs)-last)/3)
		where = append(where, e.produce(ctx, evs[from:to])...)
		from = to
		if err := group[i].r.Stop(t); err != nil {
			t.Fatalf("rolling restart of instance %d: Run = %v", i, err)
		}
		group[i] = start()
	}
	e.waitCommitted(t, group[0].r, 60*time.Second)
	for i, m := range group {
		if err := m.r.Stop(t); err != nil {
			t.Fatalf("instance %d: Run = %v", i, err)
		}
	}
	e.expireOrphans(t, evs, where)
	checkFinalOpts(t, e, evs, where, true)
}

// BenchmarkGroupRecovery measures what losing one of three instances
// costs. Once the group has settled, a batch of events is produced and
// one instance is stopped at once: as SIGTERM stops it (it drains,
// commits, and leaves the group, which rebalances right away) or as
// SIGKILL does (it falls silent, and the group waits out its session
// timeout before it gives the instance's partitions away); "none" loses
// no instance; "rolling" restarts all three, one after another, as a
// Deployment's rolling update does: each stopped as SIGTERM stops it,
// then replaced, the next only once the replacement has partitions. It
// reports the time until the group has finished the batch
// ("s_to_catch_up"), with the test configuration's group timings
// (session timeout 3 s, heartbeat every 200 ms) or those the flags give:
//
//	go test -run '^$' -bench GroupRecovery -benchtime 1x -count 3 ./pipeline/
//	go test ./pipeline/ -run '^$' -bench GroupRecovery -benchtime 1x -recovery-session=30s -recovery-heartbeat=3s
func BenchmarkGroupRecovery(b *testing.B) {
	for _, how := range []string{"none", "sigterm", "sigkill", "rolling"} {
		b.Run("stop="+how, func(b *testing.B) {
			b.ReportAllocs()
			var total time.Duration
			for range b.N {
				b.StopTimer()
				e := newEnv(b, envOptions{partitions: 6})
				evs := benchEvents(12000)
				cfg := e.config()
				if *recoverySession > 0 {
					cfg.Kafka.SessionTimeout, cfg.Kafka.HeartbeatInterval = *recoverySession, *recoveryHeartbeat
				}
				var group []*testMember
				for i := range 3 {
					group = append(group, e.startMember(cfg, fmt.Sprintf("ingest-%d", i)))
				}
				ctx := context.Background()
				e.produce(ctx, evs[:2000])
				e.waitCaughtUp(b, group[0].r, 40*time.Second)
				waitJoined(b, group)
				b.StartTimer()
				start := time.Now()
				e.produce(ctx, evs[2000:])
				switch how {
				case "sigkill":
					group[1].kill(b)
				case "sigterm":
					if err := group[1].r.Stop(b); err != nil {
						b.Fatal(err)
					}
				case "rolling":
					for i := range group {
						if err := group[i].r.Stop(b); err != nil {
							b.Fatal(err)
						}
						group[i] = e.startMember(cfg, fmt.Sprintf("ingest-%d-new", i))
						waitJoined(b, group)
					}
				}
				e.waitCaughtUp(b, group[0].r, 120*time.Second)
				total += time.Since(start)
				b.StopTimer()
				for i, m := range group {
					if i != 1 || how == "none" || how == "rolling" {
						if err := m.r.Stop(b); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s_to_catch_up")
		})
	}
}

var (
	recoverySession   = flag.Duration("recovery-session", 0, "consumer-group session timeout for BenchmarkGroupRecovery (0: the tests' 3s)")
	recoveryHeartbeat = flag.Duration("recovery-heartbeat", 3*time.Second, "heartbeat interval for BenchmarkGroupRecovery with -recovery-session")
)

var pauseRestaurants = flag.Int("pause-restaurants", 200_000, "restaurants in the index for BenchmarkRebalancePause")

// BenchmarkRebalancePause: two instances on four partitions, each with a
// directory of -pause-restaurants restaurants; one stops (SIGTERM: it
// leaves the group), and 4,000 dish events of random restaurants of every
// partition are produced. The figure is the time until all are
// committed: the rebalance, plus what the instance that gains the two
// partitions does before their events flow. With directory=lookup it
// looks each restaurant up in the index at its first event there
// (indexer_gained.go). stop=none is the same events with no instance stopped.
func BenchmarkRebalancePause(b *testing.B) {
	for _, how := range []string{"none", "lookup"} {
		name := "stop=none"
		if how != "none" {
			name = "stop=sigterm/directory=" + how
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var total time.Duration
			var lookups, reads int64
			for range b.N {
				b.StopTimer()
				e := newEnv(b, envOptions{partitions: 4, inProcess: true})
				ids := storeRestaurants(b, e, *pauseRestaurants)
				cfg := e.config()
				var group []*testMember
				for i := range 2 {
					group = append(group, e.startMemberWith(cfg, fmt.Sprintf("ingest-%d", i), nil))
				}
				ctx := context.Background()
				rng := rand.New(rand.NewPCG(3, 4))
				dishes := func(n int) []genEvent {
					evs := make([]genEvent, n)
					for i := range evs {
						rid := ids[rng.IntN(len(ids))]
						evs[i] = genEvent{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: fmt.Sprintf("d%d-%d", rng.Int64(), i), rid: rid, version: 1,
							doc: map[string]any{"name": "noodles", "price_cents": 1250}}
					}
					return encodeAll(evs)
				}
				e.produce(ctx, dishes(400))
				e.waitCaughtUp(b, group[0].r, 120*time.Second)
				waitJoined(b, group)
				before := group[0].r.p.Stats()
				b.StartTimer()
				start := time.Now()
				if how != "none" {
					if err := group[1].r.Stop(b); err != nil {
						b.Fatal(err)
					}
				}
				e.produce(ctx, dishes(4000))
				e.waitCaughtUp(b, group[0].r, 120*time.Second)
				total += time.Since(start)
				b.StopTimer()
				after := group[0].r.p.Stats()
				lookups += after.Warm.Lookups - before.Warm.Lookups
				reads += after.Warm.Reads - before.Warm.Reads
				for i, m := range group {
					if i != 1 || how == "none" {
						if err := m.r.Stop(b); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
			b.ReportMetric(total.Seconds()/float64(b.N), "s_to_catch_up")
			b.ReportMetric(float64(lookups)/float64(b.N), "lookups")
			b.ReportMetric(float64(reads)/float64(b.N), "directory_reads")
		})
	}
}
