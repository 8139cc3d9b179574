package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/realenv"
)

// checkDeadLettersOnce checks that the dead-letter topic holds every dead
// letter the model predicts from the event log exactly once, by source
// place, and no place twice. With extraPending, a dead letter of reason
// unknown_restaurant the model does not predict is logged, not failed
// (once): a dish whose wait for its restaurant went on across a change of
// owner may expire before its restaurant's write is seen, as
// checkFinalOpts tolerates; it is not a repeat.
func checkDeadLettersOnce(t *testing.T, e *testEnv, evs []genEvent, where []produced, extraPending bool) {
	t.Helper()
	m := runModel(evs)
	byPlace := map[produced][]string{}
	dl := e.readDLQ(t)
	for _, r := range dl {
		byPlace[r.src] = append(byPlace[r.src], r.reason)
	}
	for i, reason := range m.deadLetters {
		w := where[i]
		if n := len(byPlace[w]); n != 1 {
			t.Errorf("event %d (%s/%d@%d, %s) dead-lettered %d times, want once", i, w.topic, w.partition, w.offset, reason, n)
		}
		delete(byPlace, w)
	}
	index := map[produced]int{}
	for i, w := range where {
		index[w] = i
	}
	tolerated := 0
	for w, reasons := range byPlace {
		if extraPending && len(reasons) == 1 && reasons[0] == string(decode.ReasonUnknownRestaurant) {
			tolerated++
			continue
		}
		i := index[w]
		t.Errorf("unexpected dead letters %v of %s/%d@%d: event %d %.120s", reasons, w.topic, w.partition, w.offset, i, evs[i].value)
	}
	t.Logf("%d dead letters, %d expected, %d extra unknown_restaurant tolerated", len(dl), len(m.deadLetters), tolerated)
}

// errCommitHeld is a commit the test does not let through.
var errCommitHeld = errors.New("commit held by the test")

// holdCommits keeps an instance from committing anything but its final
// commit: no commit on the committer's ticks, and every handover's
// commit refused. The instance is killed, so its final commit is never
// made either.
func holdCommits(cfg Config) (Config, func(*Pipeline)) {
	cfg.CommitInterval = time.Hour
	return cfg, func(p *Pipeline) {
		p.grp.commit = func(context.Context, *generation) error { return errCommitHeld }
	}
}

// deadLettersWritten sums an instance's dead letters written, by reason.
func deadLettersWritten(p *Pipeline) int64 {
	var n int64
	for _, c := range p.Stats().DeadLetters {
		n += c
	}
	return n
}

// TestDeadLetterOnceAfterMove: an instance dead-letters every poison event
// of the stream, but commits nothing; a second instance joins and takes
// half the partitions (the first's handover commit refused, so it reads
// the partitions it kept again too), then the first is killed and the
// second takes the rest. Every event is decided again, each poison event
// at least once more: the dead-letter topic holds each exactly once, the
// second instance writes none, and counts the repeats it did not write.
func TestDeadLetterOnceAfterMove(t *testing.T) {
	realenv.Parallel(t)
	const seed = 21
	e := newEnv(t, envOptions{partitions: 4})
	g := defaultGen(seed, 400)
	g.wEarly = 0 // a dish before its restaurant could expire on one instance and not the other
	evs := generate(t, g)
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	where := e.produce(context.Background(), evs)
	poison := int64(len(runModel(evs).deadLetters))
	if poison == 0 {
		t.Fatal("no poison event in the stream")
	}

	held, setup := holdCommits(e.config())
	a := e.startMemberWith(held, "ingest-a", setup)
	deadline := time.Now().Add(realenv.Slack(30 * time.Second))
	for deadLettersWritten(a.r.p) < poison || a.r.p.Stats().Finished < int64(len(evs)) {
		if time.Now().After(deadline) {
			t.Fatalf("first instance: %d dead letters of %d, %d events finished of %d", deadLettersWritten(a.r.p), poison, a.r.p.Stats().Finished, len(evs))
		}
		time.Sleep(5 * time.Millisecond)
	}
	if co, err := e.kafka.CommittedOffsets(context.Background(), e.group, e.restaurantTopic); err != nil || len(co) > 0 {
		t.Fatalf("committed offsets %v (%v), want none", co, err)
	}

	b := e.startMember(e.config(), "ingest-b")
	waitJoined(t, []*testMember{a, b})
	a.kill(t)
	e.waitCaughtUp(t, b.r, 40*time.Second)
	if err := b.r.Stop(t); err != nil {
		t.Fatalf("second instance: Run = %v", err)
	}

	checkDeadLettersOnce(t, e, evs, where, false)
	ra, rb := a.r.p.out.deadRepeats.Load(), b.r.p.out.deadRepeats.Load()
	t.Logf("repeats not written: %d by the first instance, %d by the second; %d places read back by the second", ra, rb, b.r.p.out.once.ReadBack())
	if n := deadLettersWritten(b.r.p); n != 0 {
		t.Errorf("second instance wrote %d dead letters, want none", n)
	}
	if rb < poison {
		t.Errorf("second instance counted %d repeats, want at least %d (every poison event decided again)", rb, poison)
	}
	var metric float64
	for _, r := range decode.Reasons {
		metric += testutil.ToFloat64(b.r.p.out.met.deadLetterRepeats.WithLabelValues(string(r)))
	}
	if int64(metric) != rb {
		t.Errorf("geoshard_ingest_dead_letter_repeats_total = %v, want %d", metric, rb)
	}
}

// TestDeadLettersOnceUnderChurn runs five instances through joins, a
// leave and kills while the events flow, every instance committing only
// at its handovers and when it stops, and a seeded half of them having
// every handover's commit refused: partitions move with dead letters
// written and not committed, again and again. Every poison event is
// dead-lettered exactly once.
func TestDeadLettersOnceUnderChurn(t *testing.T) {
	realenv.Parallel(t)
	const seed = 23
	e := newEnv(t, envOptions{partitions: 6})
	g := defaultGen(seed, 2400)
	g.wEarly = 0 // see TestDeadLetterOnceAfterMove
	evs := generate(t, g)
	rng := rand.New(rand.NewPCG(seed, 1))
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	ctx := context.Background()

	cfg := e.config()
	cfg.CommitInterval = time.Hour // only the handovers and the final commits
	n := 0
	start := func() *testMember {
		n++
		refuse := rng.IntN(2) == 0
		t.Logf("ingest-%d: handover commits refused: %v", n, refuse)
		return e.startMemberWith(cfg, fmt.Sprintf("ingest-%d", n), func(p *Pipeline) {
			if refuse {
				p.grp.commit = func(context.Context, *generation) error { return errCommitHeld }
			}
		})
	}
	const chunks = 6
	at := func(i int) int { return cutAt(evs, i*len(evs)/chunks) }
	var where []produced
	produceChunk := func(i int) { where = append(where, e.produce(ctx, evs[at(i):at(i+1)])...) }
	// busy waits until the group has finished some events since the
	// last call: the next change of membership comes mid-stream.
	var seen int64
	busy := func(group []*testMember) {
		t.Helper()
		deadline := time.Now().Add(realenv.Slack(30 * time.Second))
		for {
			var fin int64
			for _, m := range group {
				fin += m.r.p.Stats().Finished
			}
			if fin > seen+50 {
				seen = fin
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("the group finished %d events, no more than %d", fin, seen)
			}
			time.Sleep(2 * time.Millisecond)
		}
	}

	group := []*testMember{start(), start()}
	var gone []*testMember
	produceChunk(0)
	busy(group)
	group = append(group, start(), start()) // two join
	produceChunk(1)
	waitJoined(t, group)
	busy(group)
	group[1].kill(t) // killed mid-stream
	gone = append(gone, group[1])
	group = append(group[:1], group[2:]...)
	produceChunk(2)
	group = append(group, start()) // a fifth joins
	waitJoined(t, group)
	produceChunk(3)
	busy(group)
	if err := group[0].r.Stop(t); err != nil { // leaves
		t.Fatalf("leaving instance: Run = %v", err)
	}
	gone = append(gone, group[0])
	group = group[1:]
	produceChunk(4)
	waitJoined(t, group)
	busy(group)
	group[0].kill(t)
	gone = append(gone, group[0])
	group = group[1:]
	produceChunk(5)
	waitJoined(t, group)
	busy(group)
	// The rest stop, committing what they finished; one more instance,
	// committing as usual, finishes the stream.
	for i, m := range group {
		if err := m.r.Stop(t); err != nil {
			t.Fatalf("instance %d: Run = %v", i, err)
		}
	}
	gone = append(gone, group...)
	last := e.startMember(e.config(), "ingest-last")
	e.waitCaughtUp(t, last.r, 60*time.Second)
	if err := last.r.Stop(t); err != nil {
		t.Fatalf("last instance: Run = %v", err)
	}
	var repeats, written []int64
	for _, m := range append(gone, last) {
		repeats = append(repeats, m.r.p.out.deadRepeats.Load())
		written = append(written, deadLettersWritten(m.r.p))
	}
	t.Logf("dead letters written per instance %v, repeats not written %v", written, repeats)
	checkDeadLettersOnce(t, e, evs, where, true)
}
