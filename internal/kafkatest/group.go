package kafkatest

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Group is a snapshot of a consumer group as the coordinator sees it.
type Group struct {
	Name string
	// State is the coordinator's state: "Empty", "PreparingRebalance",
	// "CompletingRebalance", "Stable", or "Dead" for a group that does
	// not exist (as a real broker's DescribeGroups reports it).
	State string
	// Generation is the group's generation; every completed rebalance
	// increments it. It is -1 on the real backend, whose DescribeGroups
	// answer does not carry it.
	Generation int32
	// Members are the current members, sorted by member ID.
	Members []Member
}

// Member is one member of a Group.
type Member struct {
	MemberID string
	// ClientID is the client ID the member connected with. ReaderConfig
	// gives every reader its own, so a test can tell which reader a member
	// is: r.Config().Dialer.ClientID.
	ClientID string
	// Partitions maps each assigned topic to its partitions, sorted. The
	// coordinator decodes the assignment the group leader sent, so this is
	// what the member was told to consume once SyncGroup completed.
	Partitions map[string][]int
}

// groupPollInterval is how often WaitGroupStable looks at the group. The
// look is an in-process snapshot, so polling often costs little; on the
// real backend it is one DescribeGroups round trip on the loopback.
const groupPollInterval = 20 * time.Millisecond

// DescribeGroup returns a snapshot of group: in-process, the coordinator's
// state itself; on the real backend, a DescribeGroups request, whose
// members' assignments are decoded from the consumer protocol.
func (c *Cluster) DescribeGroup(ctx context.Context, group string) (Group, error) {
	if err := ctx.Err(); err != nil {
		return Group{}, fmt.Errorf("kafkatest: describe group %s: %w", group, err)
	}
	if c.Real() {
		g, err := c.realGroup(ctx, group)
		if err != nil {
			return Group{}, fmt.Errorf("kafkatest: describe group %s: %w", group, err)
		}
		return g, nil
	}
	var g Group
	err := c.withFake(func(f *kfake.Cluster) error {
		g = groupFrom(group, f.GroupInfo(group))
		return nil
	})
	if err != nil {
		return Group{}, fmt.Errorf("kafkatest: describe group %s: %w", group, err)
	}
	return g, nil
}

// WaitGroupStable waits until group is Stable with exactly members
// members and returns it. A
// negative members accepts any count. It fails when ctx ends, returning
// the last snapshot so the failure can show where the group got stuck.
//
// Stable means the coordinator has answered every member's SyncGroup. A
// kafka-go reader then still fetches its committed offsets before it
// starts fetching messages, so a test must not assume the first message
// is already on its way when this returns.
func (c *Cluster) WaitGroupStable(ctx context.Context, group string, members int) (Group, error) {
	ticker := time.NewTicker(groupPollInterval)
	defer ticker.Stop()
	for {
		g, err := c.DescribeGroup(ctx, group)
		if err != nil {
			return g, err
		}
		if g.stable(members) {
			return g, nil
		}
		select {
		case <-ctx.Done():
			return g, fmt.Errorf("kafkatest: wait for group %s stable with %d members (last: %s, generation %d, %d members): %w",
				group, members, g.State, g.Generation, len(g.Members), ctx.Err())
		case <-ticker.C:
		}
	}
}

// stable reports whether g is Stable with the wanted member count. The
// coordinator stores every member's assignment when the leader's SyncGroup
// arrives and turns Stable in the same step, so a Stable snapshot always
// carries the assignments.
func (g Group) stable(members int) bool {
	return g.State == "Stable" && (members < 0 || len(g.Members) == members)
}

func groupFrom(name string, info *kfake.GroupInfo) Group {
	if info == nil {
		return Group{Name: name, State: "Dead"}
	}
	g := Group{Name: name, State: info.State, Generation: info.Epoch}
	for _, m := range info.Members {
		mm := Member{MemberID: m.MemberID, ClientID: m.ClientID, Partitions: make(map[string][]int)}
		for topic, ps := range m.Assignment {
			if len(ps) == 0 {
				continue
			}
			ids := make([]int, len(ps))
			for i, p := range ps {
				ids[i] = int(p)
			}
			slices.Sort(ids)
			mm.Partitions[topic] = ids
		}
		g.Members = append(g.Members, mm)
	}
	return g
}
