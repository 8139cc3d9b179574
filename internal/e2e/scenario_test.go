package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/schema"
)

// Live traffic: batchSize messages every batchEvery, about 500 a second,
// which the pipeline keeps up with under -race.
const (
	batchSize  = 20
	batchEvery = 40 * time.Millisecond
)

// scenario is a running stack: ingest consuming the event topic into the
// alias, with the first initial messages of the stream already written
// to menu-v1 (the backfill has something to copy).
type scenario struct {
	e     *env
	f     *feed
	in    *ingest
	marks []mark
	// againDeadLetters allows a dead letter written twice: a broker fault
	// may have the group refuse a commit, and the events after the
	// group's commit are then read and decided again (at least once), a
	// poison event or an orphan dish dead-lettered again.
	againDeadLetters bool
}

func startScenario(t *testing.T, seed uint64, restaurants, initial int) *scenario {
	t.Helper()
	e := newEnv(t)
	f := e.newFeed(t, streamConfig(seed, restaurants))
	in := e.startIngest(e.pipelineConfig("ingest-a"))
	f.produce(initial)
	e.waitDrained(t, in, 30*time.Second)
	// Ingest has said, in its heartbeat, that it knows of no migration.
	e.waitApplied(t, in, "", "")
	return &scenario{e: e, f: f, in: in}
}

// mark is the traffic seen at the start of a step.
type mark struct {
	step               string
	produced, finished int64
}

// mark records the traffic at the start of step.
func (s *scenario) mark(step string) {
	s.marks = append(s.marks, mark{step: step, produced: int64(s.f.count()), finished: s.in.p.Stats().Finished})
}

// waitTraffic waits until events were produced and finished by ingest
// since the last mark, so that a step that may end within one batch of
// the feed still runs under live writes.
func (s *scenario) waitTraffic(t *testing.T, timeout time.Duration) {
	t.Helper()
	last := s.marks[len(s.marks)-1]
	deadline := time.Now().Add(timeout)
	for int64(s.f.count()) == last.produced || s.in.p.Stats().Finished == last.finished {
		if time.Now().After(deadline) {
			t.Fatalf("no live traffic during %s after %v", last.step, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkTrafficDuring fails unless events were produced and finished by
// ingest between each mark and the next: the step ran under live writes.
func (s *scenario) checkTrafficDuring(t *testing.T, steps ...string) {
	t.Helper()
	var parts []string
	for i := 0; i+1 < len(s.marks); i++ {
		a, b := s.marks[i], s.marks[i+1]
		parts = append(parts, fmt.Sprintf("%s: +%d produced, +%d finished", a.step, b.produced-a.produced, b.finished-a.finished))
		for _, step := range steps {
			if step == a.step && (b.produced == a.produced || b.finished == a.finished) {
				t.Errorf("no live traffic during %s: %d produced, %d finished by ingest", step, b.produced-a.produced, b.finished-a.finished)
			}
		}
	}
	t.Logf("traffic by step: %s", strings.Join(parts, "; "))
}

// logVerification logs the shards a verification found different.
func logVerification(t *testing.T, v *schema.Verification) {
	t.Helper()
	if v == nil {
		return
	}
	for _, r := range v.Shards {
		if !r.OK {
			t.Logf("verification: shard %s: source %d target %d out_of_range %d missing %d %v extra %d %v",
				r.Shard, r.Source, r.Target, r.OutOfRange, r.Missing, r.MissingIDs, r.Extra, r.ExtraIDs)
		}
	}
}

// quiesce stops the traffic and waits until ingest has finished and
// committed everything produced.
func (s *scenario) quiesce(t *testing.T) {
	t.Helper()
	s.f.stop()
	s.e.waitDrained(t, s.in, 30*time.Second)
}

// checkDeadLetters compares the dead-letter topic with the model's dead
// letters, message by message: the poison messages and the dishes whose
// restaurant never came (a short PendingMaxAge lets them go) are there,
// and nothing else is but dishes that waited longer than PendingMaxAge
// for a restaurant that came later (see the model).
func (s *scenario) checkDeadLetters(t *testing.T, m *model) {
	t.Helper()
	want, may := map[string]int{}, map[string]int{}
	for _, msg := range m.dead {
		want[string(msg.Value)]++
	}
	for _, msg := range m.mayBeDead {
		may[string(msg.Value)]++
	}
	tolerated, again := 0, 0
	seen := map[deadLetter]bool{}
	for _, d := range s.e.readDLQ(t) {
		key := deadLetter{reason: d.reason, value: d.value}
		switch {
		case want[d.value] > 0:
			want[d.value]--
			seen[key] = true
		case may[d.value] > 0 && d.reason == string(decode.ReasonUnknownRestaurant):
			may[d.value]--
			tolerated++
			seen[key] = true
		case s.againDeadLetters && seen[key]:
			again++
		default:
			t.Errorf("unexpected dead letter (%s: %s): %.200s", d.reason, d.detail, d.value)
		}
	}
	if tolerated > 0 {
		t.Logf("%d dishes dead-lettered after waiting longer than PendingMaxAge for a restaurant that came later (allowed)", tolerated)
	}
	if again > 0 {
		t.Logf("%d dead letters written again, their events decided again after a refused commit (allowed here)", again)
	}
	for v, n := range want {
		if n > 0 {
			t.Errorf("not dead-lettered (%d times): %.200s", n, v)
		}
	}
	n, by := deadLetters(s.in.p.Stats().DeadLetters)
	t.Logf("%d dead letters (%s), the model %d", n, by, len(m.dead))
}

// diagnose, after a step failed, stops the traffic, lets ingest finish,
// and compares both indexes with the model, so that the failure is
// explained document by document.
func (s *scenario) diagnose(t *testing.T, step string, err error) {
	t.Helper()
	t.Errorf("%s: %v", step, err)
	s.quiesce(t)
	final := buildModel(t, s.e.settled(t, s.f.log()))
	bad := s.e.checkIndex(t, sourceIdx, s.e.m18, final.expected(s.e.m18))
	s.explain(t, sourceIdx, bad)
	if ok, _ := s.e.admin.IndexExists(context.Background(), targetIdx); ok {
		bad = s.e.checkIndex(t, targetIdx, s.e.m24, final.expected(s.e.m24))
		s.explain(t, targetIdx, bad)
	}
	t.FailNow()
}

// explain logs the event history of a few documents that differ, with
// the log positions at which each step began.
func (s *scenario) explain(t *testing.T, index string, ids []string) {
	t.Helper()
	if len(ids) == 0 {
		return
	}
	var at []string
	for _, m := range s.marks {
		at = append(at, fmt.Sprintf("%s@#%d", m.step, m.produced))
	}
	t.Logf("%s differs; steps began at log positions %s", index, strings.Join(at, " "))
	mp := s.e.m24
	if index == sourceIdx {
		mp = s.e.m18
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] || len(seen) == 5 {
			continue
		}
		seen[id] = true
		t.Logf("history of %s (shards of %s):\n\t%s", id, index, strings.Join(history(s.f.log(), id, mp), "\n\t"))
	}
}
