package topics

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/kafkarange"
)

// Copartitioned is the consumer group's balancer: partition N of every
// event topic goes to the same member, whatever order the metadata lists
// partitions in, so a dish is always handled by the member that handles
// its restaurant (both are keyed by restaurant id, and the producers'
// hash puts one key in the same partition number of every topic with the
// same partition count; Run refuses topics whose counts differ).
//
// kafka-go's RangeGroupBalancer ranges over partitions in the order the
// metadata lists them, per topic, so partition N of two topics can land on
// two members; this one ranges over partition numbers. Members are sorted
// by id, and member i of m takes the numbers [i·n/m, (i+1)·n/m) of the n
// there are: the same contiguous split as range assignment.
type Copartitioned struct{}

var _ kafka.GroupBalancer = Copartitioned{}

// ProtocolName names the assignment strategy in the group protocol. Every
// member of a group must offer it.
func (Copartitioned) ProtocolName() string { return "geoshard-copartitioned" }

// UserData is empty: the assignment needs nothing of the members.
func (Copartitioned) UserData() ([]byte, error) { return nil, nil }

// AssignGroups gives each member, for each topic it subscribes to, the
// partitions whose numbers are its own. A partition of a topic its
// number's member does not subscribe to goes to the next member in id
// order that does (a group whose members all read every event topic, as
// ingest's do, never needs that).
func (Copartitioned) AssignGroups(members []kafka.GroupMember, partitions []kafka.Partition) kafka.GroupMemberAssignments {
	out := kafka.GroupMemberAssignments{}
	if len(members) == 0 {
		return out
	}
	ms := slices.Clone(members)
	sort.Slice(ms, func(i, j int) bool { return ms[i].ID < ms[j].ID })
	for _, m := range ms {
		out[m.ID] = map[string][]int{}
	}
	numbers := map[int]bool{}
	for _, p := range partitions {
		numbers[p.ID] = true
	}
	sorted := make([]int, 0, len(numbers))
	for n := range numbers {
		sorted = append(sorted, n)
	}
	sort.Ints(sorted)
	owner := make(map[int]int, len(sorted)) // partition number → member index
	for i := range ms {
		for k := i * len(sorted) / len(ms); k < (i+1)*len(sorted)/len(ms); k++ {
			owner[sorted[k]] = i
		}
	}
	ps := slices.Clone(partitions)
	sort.Slice(ps, func(i, j int) bool {
		if ps[i].Topic != ps[j].Topic {
			return ps[i].Topic < ps[j].Topic
		}
		return ps[i].ID < ps[j].ID
	})
	for _, p := range ps {
		for k := range ms {
			m := ms[(owner[p.ID]+k)%len(ms)]
			if slices.Contains(m.Topics, p.Topic) {
				out[m.ID][p.Topic] = append(out[m.ID][p.Topic], p.ID)
				break
			}
		}
	}
	return out
}

// MismatchError is the refusal to consume event topics whose
// partition counts differ: partition N of each would not hold the same
// restaurants, and a dish would be handled apart from its restaurant.
type MismatchError struct {
	// Counts is each event topic's partition count.
	Counts map[string]int
}

func (e *MismatchError) Error() string {
	names := make([]string, 0, len(e.Counts))
	for t := range e.Counts {
		names = append(names, t)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, t := range names {
		parts[i] = fmt.Sprintf("%s has %d", t, e.Counts[t])
	}
	return "pipeline: the event topics must have the same number of partitions, so that partition N of each holds the same restaurants: " +
		strings.Join(parts, ", ")
}

// Check refuses event topics with different partition counts. A topic
// the broker does not know yet is left to the reader (which waits for
// it); so is a broker that cannot be asked now.
func Check(ctx context.Context, client *kafka.Client, log *slog.Logger, topics ...string) error {
	if len(topics) < 2 {
		return nil
	}
	counts, err := kafkarange.PartitionCounts(ctx, client, topics...)
	if err != nil {
		log.Warn("could not read the event topics' partition counts; starting without the check", "error", err)
		return nil
	}
	for _, n := range counts {
		for _, m := range counts {
			if n != m {
				return &MismatchError{Counts: counts}
			}
		}
	}
	return nil
}
