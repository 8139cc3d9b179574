package chaos

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/envflag"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/pipeline/placement"
)

var (
	flagSeed      = flag.Uint64("chaos.seed", 0, "the first schedule's seed; the next ones count up from it; 0 draws it from the clock (GEOSHARD_CHAOS_SEED)")
	flagSchedules = flag.Int("chaos.schedules", 0, "schedules to run at most; 0 runs none, as go test ./... does (GEOSHARD_CHAOS_SCHEDULES)")
	flagDuration  = flag.Duration("chaos.duration", 0, "start no schedule after this long; 0: no bound but the count (GEOSHARD_CHAOS_DURATION)")
)

func TestMain(m *testing.M) {
	if err := envflag.Apply(flag.CommandLine, os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	os.Exit(m.Run())
}

// drainWait bounds the final catch-up of a schedule: past it the
// schedule fails as not drained.
const drainWait = 60 * time.Second

// TestExplore runs schedules from -chaos.seed on, at most
// -chaos.schedules of them and for about -chaos.duration, each judged
// against the model of its event log. A schedule that fails prints its
// seed, its steps and what differs, and replays with
//
//	go test ./internal/chaos -run TestExplore -chaos.seed=N -chaos.schedules=1
//
// Two runs of one seed make the same schedule and the same stream; what
// differs is the machine's timing, so an anomaly that needs a narrow
// interleaving may need a few replays (-count).
func TestExplore(t *testing.T) {
	if *flagSchedules == 0 {
		t.Skip("no schedule asked for (-chaos.schedules, make test-chaos)")
	}
	seed := *flagSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano()) % 1_000_000_000
	}
	t.Logf("first seed %d, at most %d schedules, for %v", seed, *flagSchedules, *flagDuration)
	began := time.Now()
	var failed []string
	ran := 0
	for i := range *flagSchedules {
		if *flagDuration > 0 && time.Since(began) > *flagDuration {
			break
		}
		s := seed + uint64(i)
		ran++
		at := time.Now()
		ok := t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) { runSchedule(t, newSchedule(s)) })
		// One line a schedule, for the count of a long run.
		fmt.Printf("chaos: schedule seed=%d ok=%v in %v (%d run, %d failed)\n", s, ok, time.Since(at).Round(time.Millisecond), ran, len(failed)+map[bool]int{true: 0, false: 1}[ok])
		if !ok {
			failed = append(failed, fmt.Sprint(s))
		}
	}
	t.Logf("%d schedules in %v; %d failed: %s", ran, time.Since(began).Round(time.Second), len(failed), strings.Join(failed, " "))
}

// runSchedule runs s in a world of its own and judges it.
func runSchedule(t *testing.T, s *schedule) {
	w := newWorld(t, s)
	extra := w.play()
	o := w.observe(testIndex, w.m)
	v := judge(w.events, w.m, o)
	// After a cutover, and after a backfill whose verification failed
	// (is the target wrong, or did the verification give up too soon?),
	// the target is judged too.
	if r := w.reshard; r != nil && (r.err == nil || r.step == "verify" || r.step == "cutover") {
		// After the cutover the target is the index; the source stays
		// current for a rollback. The dead letters and commits are one
		// world's: judged once.
		if wi, err := w.admin.WriteIndex(context.Background(), testAlias); r.err == nil && (err != nil || wi != targetIndex) {
			v.anomalies = append(v.anomalies, anomaly{kind: kindReshard, detail: fmt.Sprintf("after the cutover the alias writes to %q (%v), want %s", wi, err, targetIndex)})
		}
		ot := w.observe(targetIndex, w.m24)
		vt := judge(w.events, w.m24, ot)
		t.Logf("resharded: %s holds %d documents, the model %d", targetIndex, len(ot.docs), len(vt.want))
		for _, a := range vt.anomalies {
			if a.kind != kindUncommitted && !strings.HasSuffix(a.kind, "dead_letter") && a.kind != kindReason {
				a.detail = targetIndex + ": " + a.detail
				v.anomalies = append(v.anomalies, a)
			}
		}
	}
	w.mu.Lock()
	for _, n := range testenv.SortedKeys(w.exits) {
		var misplaced *placement.MisplacedRestaurantError
		switch err := w.exits[n]; {
		case w.members[n].state == "killed":
		case errors.As(err, &misplaced):
			// A stop by design (placement.go): the restaurant topic
			// contradicts the placement dishes were forwarded by. What it
			// strands, the index and the dead letters show.
			t.Logf("m%d stopped, as designed, at a misplaced restaurant event: %v", n, err)
		default:
			extra = append(extra, anomaly{kind: kindMemberExit, detail: fmt.Sprintf("m%d: Run = %v", n, err)})
		}
	}
	w.mu.Unlock()
	var dl []string
	for _, n := range testenv.SortedKeys(w.members) {
		dl = append(dl, fmt.Sprintf("m%d %v", n, w.members[n].p.Stats().DeadLetters))
	}
	v.anomalies = append(extra, v.anomalies...)
	// A member killed or frozen past its session may have dead-lettered an
	// event whose offset it never committed: the next owner decides it
	// again — dead-letters it again, or, a waiting dish whose restaurant
	// it has meanwhile seen, writes it — as at-least-once allows
	// (pipeline/doc.go, Limits). Only without either is that an anomaly.
	if s.crashes() {
		kept := v.anomalies[:0]
		again := 0
		for _, a := range v.anomalies {
			if a.kind == kindDupDead || a.kind == kindDeadAndWritten {
				again++
				continue
			}
			kept = append(kept, a)
		}
		v.anomalies = kept
		if again > 0 {
			t.Logf("%d dead letters written again, or of dishes also written, after a member was killed or frozen (allowed)", again)
		}
	}
	if v.tolerated > 0 {
		t.Logf("%d dishes dead-lettered after waiting longer than %v for a restaurant that came later (allowed)", v.tolerated, pendingMaxAge)
	}
	if len(v.anomalies) > 0 {
		t.Errorf("seed %d: %d anomalies\nschedule:\n%s\nanomalies:\n%s\tdead letters by member: %s\nreplay: go test ./internal/chaos -run 'TestExplore$' -chaos.seed=%d -chaos.schedules=1",
			s.seed, len(v.anomalies), s, explain(v, w.events, w.m), strings.Join(dl, "; "), s.seed)
		return
	}
	t.Logf("seed %d: %d events, %d documents, %d dead letters, as the model says", s.seed, len(w.events), len(v.want), len(o.dlq))
}

// play runs the schedule's steps, then lifts every fault, makes sure a
// member runs, waits for the group to catch up and stops every member.
// It returns what went wrong on the way (a catch-up that did not come).
func (w *world) play() []anomaly {
	w.t.Helper()
	for _, st := range w.s.steps {
		w.do(st)
	}
	// The end: every fault lifted, someone to read, and time to catch up.
	w.os.ClearFaults()
	next := 1
	for _, n := range testenv.SortedKeys(w.members) {
		if w.members[n].state == "frozen" {
			w.thaw(n)
		}
		next = n + 1
	}
	if len(w.running()) == 0 {
		w.start(next)
	}
	extra := w.waitReshard()
	deadline := time.Now().Add(drainWait)
	for {
		ok, why := w.caughtUp(context.Background())
		if ok {
			break
		}
		if time.Now().After(deadline) {
			extra = append(extra, anomaly{kind: kindNotDrained, detail: fmt.Sprintf("not caught up %v after the last step: %s; %s", drainWait, why, w.stats())})
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, m := range w.running() {
		w.stop(m.n)
	}
	return extra
}

// do runs one step.
func (w *world) do(st step) {
	w.t.Helper()
	switch st.kind {
	case stepProduce:
		w.produce(st.part)
	case stepStart:
		w.start(st.member)
	case stepStop:
		w.stop(st.member)
	case stepKill:
		w.kill(st.member)
	case stepFreeze:
		w.freeze(st.member)
	case stepThaw:
		w.thaw(st.member)
	case stepLose:
		w.members[st.member].gate.loseAnswers(st.n)
	case stepFaults:
		if err := w.os.SetFaults(st.faults); err != nil {
			w.t.Fatal(err)
		}
	case stepClear:
		w.os.ClearFaults()
	case stepSleep:
		time.Sleep(st.d)
	case stepReshard:
		w.startReshard()
	}
}

// stats describes the members' progress, for a schedule that did not
// catch up.
func (w *world) stats() string {
	var p []string
	for _, n := range testenv.SortedKeys(w.members) {
		m := w.members[n]
		st := m.p.Stats()
		p = append(p, fmt.Sprintf("m%d %s: fetched %d finished %d pending %d lag %d", n, m.state, st.Fetched, st.Finished, st.Pending, st.Lag))
	}
	groups := []string{group}
	if w.repartition != "" {
		groups = append(groups, group+".repartition")
	}
	for _, name := range groups {
		g, err := w.kafka.DescribeGroup(context.Background(), name)
		if err != nil {
			p = append(p, fmt.Sprintf("group %s: %v", name, err))
			continue
		}
		var ms []string
		for _, m := range g.Members {
			ms = append(ms, fmt.Sprintf("%s %v", m.ClientID, m.Partitions))
		}
		p = append(p, fmt.Sprintf("group %s %s at generation %d: %s", name, g.State, g.Generation, strings.Join(ms, ", ")))
	}
	return strings.Join(p, "; ")
}
