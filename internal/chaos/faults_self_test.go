package chaos

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/geoshard/geoshard/pipeline/placement"
)

// TestMemberFaults shows the member faults doing what the explorer says
// they do: a frozen member is evicted by the group while it sleeps (its
// heartbeats held) and joins again once thawed; a killed member is evicted
// with nothing of it heard after the kill (its requests refused).
func TestMemberFaults(t *testing.T) {
	s := &schedule{seed: 5, topo: topology{topics: 1, partitions: 4, producer: placement.PartitionerMurmur2, told: placement.PartitionerAuto, order: "log"},
		gen: defaultGen(5, 200), parts: 2, killable: map[int]bool{2: true}}
	w := newWorld(t, s)
	ctx := context.Background()
	clients := func() []string {
		g, err := w.kafka.DescribeGroup(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range g.Members {
			out = append(out, m.ClientID)
		}
		return out
	}
	waitFor := func(what string, cond func([]string) bool) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for !cond(clients()) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the group's members are %v after 2m", what, clients())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	has := func(cid string) func([]string) bool { return func(c []string) bool { return slices.Contains(c, cid) } }
	hasNot := func(cid string) func([]string) bool { return func(c []string) bool { return !slices.Contains(c, cid) } }

	w.start(1)
	w.start(2)
	w.produce(0)
	if _, err := w.kafka.WaitGroupStable(ctx, group, 2); err != nil {
		t.Fatal(err)
	}
	m1, m2 := w.members[1].cid, w.members[2].cid

	w.freeze(1)
	// Out of the group once a request of its was held: a member that
	// rejoins during a rebalance is briefly out of the list too.
	waitFor("m1 frozen", func(c []string) bool {
		held := 0
		for _, name := range []string{"Heartbeat", "JoinGroup", "SyncGroup", "OffsetCommit"} {
			n, _ := w.ctl.counts(m1, name)
			held += n
		}
		return held > 0 && !slices.Contains(c, m1)
	})
	w.thaw(1)
	waitFor("m1 thawed", has(m1))

	w.kill(2)
	waitFor("m2 killed", hasNot(m2))
	// Every request of m2's that names its member after the kill was
	// refused, a leave among them had it tried one: the group learnt of
	// the death from the session timeout alone.
	refused := 0
	for _, name := range []string{"Heartbeat", "JoinGroup", "SyncGroup", "OffsetCommit", "LeaveGroup"} {
		_, n := w.ctl.counts(m2, name)
		refused += n
	}
	if refused == 0 {
		t.Errorf("m2 is out of the group, but none of its group requests was refused: it left rather than died")
	}
	// The thawed member, alone now, finishes and commits everything: what
	// the freeze held was answered, nothing was lost on its connections.
	w.produce(1)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		ok, why := w.caughtUp(ctx)
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thawed member alone did not catch up: %s; %s", why, w.stats())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := w.members[1].run.Stop(t); err != nil {
		t.Errorf("m1: Run = %v", err)
	}
}
