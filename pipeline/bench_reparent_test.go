package pipeline

import (
	"fmt"
	"testing"

	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/decode"
)

// benchEventsMoving is benchEvents with one dish event in every `every`
// (0: none) a new version of a dish of the restaurant before, in another
// city, under the current restaurant: a dish that changes restaurant, and
// shard, as an UPDATE of its restaurant_id does.
func benchEventsMoving(n, every int) []genEvent {
	evs := benchEvents(n)
	if every == 0 {
		return evs
	}
	var prev, cur []int // dish events of the restaurant before and of the current one
	dishes := 0
	for i := range evs {
		if !evs[i].dish {
			prev, cur = cur, nil
			continue
		}
		dishes++
		if dishes%every == 0 && len(prev) > 0 {
			old := evs[prev[0]]
			prev = prev[1:]
			ev := genEvent{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: old.id, rid: evs[i].rid, version: old.version + 1, doc: evs[i].doc}
			ev.value, ev.key = encodeEvent(ev), []byte(ev.rid)
			evs[i] = ev
			continue
		}
		cur = append(cur, i)
	}
	return evs
}

// BenchmarkPipelineDishMoves: BenchmarkPipeline with no dish changing
// restaurant, and with 1% of dish events moving a dish to another
// restaurant in another city.
func BenchmarkPipelineDishMoves(b *testing.B) {
	for _, every := range []int{0, 100} {
		name := "none"
		if every > 0 {
			name = fmt.Sprintf("1in%d", every)
		}
		b.Run(name, func(b *testing.B) {
			benchPipelineEvents(b, envOptions{partitions: 4}, func(e *testEnv) *opensearch.Client { return e.client }, func(n int) []genEvent { return benchEventsMoving(n, every) })
		})
	}
}
