package topics

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/segmentio/kafka-go"
)

// The balancer gives partition N of every event topic to one member,
// whatever order the members and partitions come in, each partition to
// exactly one member, and each member a contiguous share of the numbers.
func TestCopartitionedBalancer(t *testing.T) {
	topics := []string{"restaurants", "dishes"}
	for _, tc := range []struct{ members, partitions int }{
		{1, 6}, {2, 6}, {3, 6}, {4, 6}, {2, 3}, {5, 3}, {3, 12},
	} {
		t.Run(fmt.Sprintf("%d members, %d partitions", tc.members, tc.partitions), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.members), uint64(tc.partitions)))
			var members []kafka.GroupMember
			for i := range tc.members {
				members = append(members, kafka.GroupMember{ID: fmt.Sprintf("member-%02d", i), Topics: topics})
			}
			var parts []kafka.Partition
			for _, topic := range topics {
				for id := range tc.partitions {
					parts = append(parts, kafka.Partition{Topic: topic, ID: id})
				}
			}
			// The order the metadata happens to list them in.
			rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
			rng.Shuffle(len(parts), func(i, j int) { parts[i], parts[j] = parts[j], parts[i] })

			got := Copartitioned{}.AssignGroups(members, parts)
			owner := map[string]map[int]string{}
			for m, byTopic := range got {
				for topic, ids := range byTopic {
					if owner[topic] == nil {
						owner[topic] = map[int]string{}
					}
					for _, id := range ids {
						if prev, ok := owner[topic][id]; ok {
							t.Errorf("%s/%d assigned to %s and %s", topic, id, prev, m)
						}
						owner[topic][id] = m
					}
				}
			}
			for id := range tc.partitions {
				r, d := owner["restaurants"][id], owner["dishes"][id]
				if r == "" || d == "" {
					t.Fatalf("partition %d unassigned: restaurants to %q, dishes to %q", id, r, d)
				}
				if r != d {
					t.Errorf("partition %d: restaurants to %s, dishes to %s", id, r, d)
				}
			}
			// Member i (by id) takes numbers [i·n/m, (i+1)·n/m).
			for i := range tc.members {
				m := fmt.Sprintf("member-%02d", i)
				var want []int
				for id := i * tc.partitions / tc.members; id < (i+1)*tc.partitions/tc.members; id++ {
					want = append(want, id)
				}
				if ids := got[m]["restaurants"]; !slices.Equal(ids, want) {
					t.Errorf("%s: restaurants %v, want %v", m, ids, want)
				}
			}
		})
	}
}

// kafka-go's range balancer, which the pipeline used before, splits two
// topics apart when the metadata lists their partitions in different
// orders: the case the co-partitioned balancer exists for.
func TestRangeBalancerSplitsTopicsApart(t *testing.T) {
	members := []kafka.GroupMember{{ID: "a", Topics: []string{"restaurants", "dishes"}}, {ID: "b", Topics: []string{"restaurants", "dishes"}}}
	// restaurants listed 0, 1, 2 and dishes 2, 1, 0.
	parts := []kafka.Partition{
		{Topic: "restaurants", ID: 0}, {Topic: "restaurants", ID: 1}, {Topic: "restaurants", ID: 2},
		{Topic: "dishes", ID: 2}, {Topic: "dishes", ID: 1}, {Topic: "dishes", ID: 0},
	}
	rg := kafka.RangeGroupBalancer{}.AssignGroups(members, parts)
	if slices.Equal(rg["a"]["restaurants"], rg["a"]["dishes"]) {
		t.Skipf("kafka-go's range balancer now keeps topics together (%v): the co-partitioned one is still right", rg)
	}
	cp := Copartitioned{}.AssignGroups(members, parts)
	for _, m := range []string{"a", "b"} {
		r, d := slices.Clone(cp[m]["restaurants"]), slices.Clone(cp[m]["dishes"])
		slices.Sort(d)
		if !slices.Equal(r, d) {
			t.Errorf("%s: restaurants %v, dishes %v", m, r, d)
		}
	}
}

func TestMismatchError(t *testing.T) {
	err := error(&MismatchError{Counts: map[string]int{"restaurants": 6, "dishes": 3}})
	want := "pipeline: the event topics must have the same number of partitions, so that partition N of each holds the same restaurants: dishes has 3, restaurants has 6"
	if err.Error() != want {
		t.Errorf("error = %q\nwant      %q", err, want)
	}
	var pm *MismatchError
	if !errors.As(err, &pm) {
		t.Error("not a *MismatchError")
	}
}
