package chaos

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/pipeline/placement"
)

// A schedule is everything one run of the explorer does, drawn from one
// seed: the shape of the topics, the event stream, and a list of steps
// (produce the next part of the stream, start, stop, kill, freeze and thaw
// members, inject and clear the emulator's faults, lose a member's
// answers, wait). The same seed gives the same schedule; the run of it
// differs only by the machine's timing, which is what the explorer
// searches.

// topology is how the events reach ingest.
type topology struct {
	// topics is 1 (restaurants and dishes in one topic, keyed by
	// restaurant) or 2.
	topics int
	// dishKeyDish, with two topics, keys dish events by the dish's own id
	// and runs ingest with --dish-key dish (a repartition topic).
	dishKeyDish bool
	partitions  int
	// producer places the keys (murmur2 unless dishKeyDish); told is the
	// partitioner ingest is configured with (auto: detected).
	producer, told placement.Partitioner
	// order is how each part of the stream is produced with two topics:
	// "log" (in the stream's order), "dishes-first" or
	// "restaurants-first" (each part's events of one topic before the
	// other's).
	order string
}

func (tp topology) String() string {
	s := fmt.Sprintf("%d topic(s), %d partitions", tp.topics, tp.partitions)
	if tp.dishKeyDish {
		s += fmt.Sprintf(", dish-key dish, producer %s, ingest told %s", tp.producer, tp.told)
	}
	if tp.topics == 2 {
		s += ", order " + tp.order
	}
	return s
}

// stepKind names a step.
type stepKind string

const (
	stepProduce stepKind = "produce" // the next part of the stream
	stepStart   stepKind = "start"   // a member joins
	stepStop    stepKind = "stop"    // a member leaves, with its drain
	stepKill    stepKind = "kill"    // a member dies without leaving
	stepFreeze  stepKind = "freeze"  // a member's requests hang
	stepThaw    stepKind = "thaw"    // and resume
	stepLose    stepKind = "lose"    // a member's next bulk answers are lost
	stepFaults  stepKind = "faults"  // the emulator's faults, for everyone
	stepClear   stepKind = "clear"   // no more emulator faults
	stepSleep   stepKind = "sleep"
	stepReshard stepKind = "reshard" // the reshard job starts (reshard_test.go)
)

type step struct {
	kind   stepKind
	member int           // start, stop, kill, freeze, thaw, lose
	part   int           // produce
	n      int           // lose: answers
	d      time.Duration // sleep
	faults osfake.Faults // faults
}

func (s step) String() string {
	switch s.kind {
	case stepProduce:
		return fmt.Sprintf("produce part %d", s.part)
	case stepStart, stepStop, stepKill, stepFreeze, stepThaw:
		return fmt.Sprintf("%s m%d", s.kind, s.member)
	case stepLose:
		return fmt.Sprintf("lose m%d's next %d bulk answers", s.member, s.n)
	case stepSleep:
		return fmt.Sprintf("sleep %v", s.d)
	case stepReshard:
		return "reshard to the 24-shard map starts (create, dual writes, backfill, verify, cutover)"
	case stepFaults:
		return "faults " + describeFaults(s.faults)
	}
	return string(s.kind)
}

func describeFaults(f osfake.Faults) string {
	var p []string
	if f.RejectRate > 0 {
		p = append(p, fmt.Sprintf("reject %.0f%% of items (429)", 100*f.RejectRate))
	}
	if f.FailRate > 0 {
		p = append(p, fmt.Sprintf("fail %.0f%% of bulk requests (%d)", 100*f.FailRate, f.FailStatus))
	}
	for _, l := range f.ShardLatency {
		p = append(p, fmt.Sprintf("shard %d slow by %v", l.Shard, time.Duration(l.Delay)))
	}
	if f.DropResponses > 0 {
		p = append(p, fmt.Sprintf("cut off %d bulk answers", f.DropResponses))
	}
	return strings.Join(p, ", ")
}

// schedule is one seed's run.
type schedule struct {
	seed  uint64
	topo  topology
	gen   genConfig
	mix   string // the generator's weights: default, moves, re-parents
	parts int
	// killable are the members that are killed at some step: they start
	// with a drain timeout of a nanosecond (faults_test.go).
	killable map[int]bool
	steps    []step
}

// String is the schedule as a readable list, for a failure's report.
func (s *schedule) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %s; %d generation steps (%s mix) in %d parts\n", s.seed, s.topo, s.gen.steps, s.mix, s.parts)
	for i, st := range s.steps {
		fmt.Fprintf(&b, "\t%2d. %s\n", i+1, st)
	}
	b.WriteString("\tthen: thaw all, clear faults, a member runs, wait until every offset is committed, stop all, judge")
	return b.String()
}

// Bounds of a schedule: small enough for seconds a run.
const (
	maxMembers = 3 // running at once
	// sessionTimeout and rebalanceTimeout are every member's.
	sessionTimeout   = 3 * time.Second
	rebalanceTimeout = 5 * time.Second
)

// newSchedule draws the schedule of seed.
func newSchedule(seed uint64) *schedule {
	rng := rand.New(rand.NewPCG(seed, 0x6368616f73))
	s := &schedule{seed: seed, killable: map[int]bool{}}
	tp := topology{topics: 1 + rng.IntN(2), partitions: 2 + rng.IntN(5), producer: placement.PartitionerMurmur2, told: placement.PartitionerAuto, order: "log"}
	if tp.topics == 2 {
		tp.order = []string{"log", "dishes-first", "restaurants-first"}[rng.IntN(3)]
		tp.dishKeyDish = rng.IntN(2) == 0
	}
	if tp.dishKeyDish {
		ps := []placement.Partitioner{placement.PartitionerMurmur2, placement.PartitionerCRC32, placement.PartitionerFNV1a, placement.PartitionerSarama}
		tp.producer = ps[rng.IntN(len(ps))]
		if rng.IntN(2) == 0 {
			tp.told = tp.producer
		}
	}
	s.topo = tp
	s.gen = defaultGen(seed, 300+rng.IntN(700))
	s.gen.dishKeyDish = tp.dishKeyDish
	// The mix: pipeline's own, or one heavy in what a change of owner
	// can get wrong — restaurants that move (their dishes with them) and
	// dishes that change restaurant.
	switch s.mix = []string{"default", "moves", "re-parents"}[rng.IntN(3)]; s.mix {
	case "moves":
		s.gen.wMoveFar, s.gen.wMoveNear = 10, 6
	case "re-parents":
		s.gen.wReparent = 12
	}
	if tp.topics == 2 {
		// Across two topics the order of a restaurant's events and its
		// dishes' is undefined (pipeline/doc.go, Limits): as in pipeline's
		// TestScaleOut, no restaurant deletes, replays or overtaken dish
		// versions, whose outcome depends on it.
		s.gen.wRestDelete, s.gen.wReplay, s.gen.wDishOutOfOrder = 0, 0, 0
	}
	s.parts = 2 + rng.IntN(5)

	next := 1          // the next member's number
	running := []int{} // members that run and are not frozen
	frozen := []int{}
	start := func() {
		s.steps = append(s.steps, step{kind: stepStart, member: next})
		running = append(running, next)
		next++
	}
	take := func(list *[]int) int {
		i := rng.IntN(len(*list))
		m := (*list)[i]
		*list = append((*list)[:i:i], (*list)[i+1:]...)
		return m
	}
	sleep := func(lo, hi time.Duration) {
		s.steps = append(s.steps, step{kind: stepSleep, d: lo + time.Duration(rng.Int64N(int64(hi-lo)))})
	}
	// Half of the schedules are a new deployment that finds a backlog:
	// the first part is produced before any member starts (with
	// dishes-first order, a dish topic full and a restaurant topic empty).
	backlog := rng.IntN(2) == 0
	if !backlog {
		start()
		if rng.IntN(2) == 0 {
			start()
		}
	}
	faulty := false
	// A quarter of the schedules reshard, starting after one of the parts.
	reshardAfter := -1
	if rng.IntN(4) == 0 {
		reshardAfter = rng.IntN(s.parts)
	}
	for part := range s.parts {
		s.steps = append(s.steps, step{kind: stepProduce, part: part})
		if backlog && part == 0 {
			start()
			if rng.IntN(2) == 0 {
				start()
			}
		}
		if part == reshardAfter {
			s.steps = append(s.steps, step{kind: stepReshard})
		}
		for range 1 + rng.IntN(3) {
			switch x := rng.IntN(100); {
			case x < 18 && len(running)+len(frozen) < maxMembers:
				start()
			case x < 30 && len(running) > 0:
				s.steps = append(s.steps, step{kind: stepStop, member: take(&running)})
			case x < 42 && len(running) > 0:
				m := take(&running)
				s.killable[m] = true
				s.steps = append(s.steps, step{kind: stepKill, member: m})
			case x < 58 && len(running) > 0:
				m := take(&running)
				frozen = append(frozen, m)
				s.steps = append(s.steps, step{kind: stepFreeze, member: m})
				// Past the session timeout half of the time: the group
				// evicts the member while it sleeps.
				if rng.IntN(2) == 0 {
					sleep(sessionTimeout+500*time.Millisecond, sessionTimeout+3*time.Second)
				} else {
					sleep(200*time.Millisecond, sessionTimeout-time.Second)
				}
			case x < 66 && len(frozen) > 0:
				m := take(&frozen)
				running = append(running, m)
				s.steps = append(s.steps, step{kind: stepThaw, member: m})
			case x < 74 && len(running) > 0:
				s.steps = append(s.steps, step{kind: stepLose, member: running[rng.IntN(len(running))], n: 1 + rng.IntN(4)})
			case x < 88 && !faulty:
				s.steps = append(s.steps, step{kind: stepFaults, faults: randomFaults(rng, seed)})
				faulty = true
			case x < 94 && faulty:
				s.steps = append(s.steps, step{kind: stepClear})
				faulty = false
			default:
				sleep(50*time.Millisecond, 1500*time.Millisecond)
			}
		}
		// Someone must be able to read the stream now and then, or the
		// schedule only tests the final catch-up.
		if len(running) == 0 && rng.IntN(2) == 0 {
			start()
		}
		sleep(20*time.Millisecond, 600*time.Millisecond)
	}
	for len(frozen) > 0 {
		m := take(&frozen)
		s.steps = append(s.steps, step{kind: stepThaw, member: m})
	}
	return s
}

// randomFaults draws one set of the emulator's faults.
func randomFaults(rng *rand.Rand, seed uint64) osfake.Faults {
	f := osfake.Faults{Seed: seed}
	for f.RejectRate == 0 && f.FailRate == 0 && len(f.ShardLatency) == 0 && f.DropResponses == 0 {
		if rng.IntN(3) == 0 {
			f.RejectRate = 0.05 + 0.3*rng.Float64()
		}
		if rng.IntN(3) == 0 {
			f.FailRate = 0.05 + 0.2*rng.Float64()
			f.FailStatus = []int{502, 503, 504}[rng.IntN(3)]
		}
		if rng.IntN(2) == 0 {
			// Slow shards past half the rebalance timeout cut a member's
			// handover short: its last writes land after the next owner
			// started (pipeline/doc.go, Limits).
			for range 1 + rng.IntN(4) {
				f.ShardLatency = append(f.ShardLatency, osfake.ShardLatency{Index: testIndex, Shard: rng.IntN(18),
					Delay: osfake.Duration(100*time.Millisecond + time.Duration(rng.Int64N(int64(3500*time.Millisecond))))})
			}
		}
		if rng.IntN(3) == 0 {
			f.DropResponses = 1 + rng.IntN(4)
		}
	}
	return f
}

// crashes reports whether a member is killed, or frozen, in s: either
// may leave an event decided and not committed.
func (s *schedule) crashes() bool {
	for _, st := range s.steps {
		if st.kind == stepKill || st.kind == stepFreeze {
			return true
		}
	}
	return false
}
