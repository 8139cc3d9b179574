package pipeline

import (
	"testing"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/realenv"
)

// TestDishDeleteAfterItsRestaurant: a source that deletes the dishes
// itself (Config.SourceDeletesDishes), read with its restaurant topic
// ahead, so that each dish's delete is decided after its restaurant's.
// The delete goes to the place the restaurant had, where the dish is:
// one delete, no spread under the map's other routings (at the seed's
// size every such dish left a tombstone on all 18 shards). A delete that
// does not find its dish there still removes it from wherever it is: here
// the dish's move to the deleted restaurant waited (the restaurant was
// gone) while its copy stayed under its first restaurant, on another
// shard.
func TestDishDeleteAfterItsRestaurant(t *testing.T) {
	realenv.EmulatorOnly(t, "a member driven by hand against the emulator")
	rest := func(op, id string, v int64, lat, lon float64) *decode.Change {
		return &decode.Change{Type: decode.TypeRestaurant, Op: op, ID: id, Version: v, Lat: lat, Lon: lon}
	}
	dish := func(op, id, rid string, v int64) *decode.Change {
		first := op == decode.OpUpsert && v == 1 // as the decoder marks an INSERT
		return &decode.Change{Type: decode.TypeDish, Op: op, ID: id, RestaurantID: rid, Version: v, First: first}
	}
	for _, tc := range []struct {
		name string
		// life is the source's order; order the batches ingest decides
		// (positions in life).
		life  []*decode.Change
		order [][]int
		// spreads: the dish writes spread under every other routing.
		spreads int64
	}{
		{
			name: "the dishes where their restaurant was",
			life: []*decode.Change{
				rest(decode.OpUpsert, "R", 1, 37.7749, -122.4194),
				dish(decode.OpUpsert, "d1", "R", 1),
				dish(decode.OpUpsert, "d2", "R", 1),
				dish(decode.OpDelete, "d1", "R", 2),
				dish(decode.OpDelete, "d2", "R", 2),
				rest(decode.OpDelete, "R", 2, 0, 0),
			},
			order:   [][]int{{0, 1, 2}, {5, 3, 4}},
			spreads: 0,
		},
		{
			name: "a dish under another restaurant",
			life: []*decode.Change{
				rest(decode.OpUpsert, "A", 1, 37.7749, -122.4194),
				dish(decode.OpUpsert, "x", "A", 1),
				rest(decode.OpUpsert, "B", 1, 40.7128, -74.006),
				dish(decode.OpUpsert, "x", "B", 2),
				dish(decode.OpDelete, "x", "B", 3),
				rest(decode.OpDelete, "B", 2, 0, 0),
			},
			order:   [][]int{{0, 1}, {2, 5}, {3, 4}},
			spreads: 1,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{partitions: 1})
			p := handMember(t, e)
			p.ix.sourceDeletesDishes = true
			p.ix.enterGen(1)
			decideLife(t, p, tc.life, tc.order)
			checkIndexDocs(t, e, testIndex, e.m, modelDocs(lifeModel(t, tc.life), e))
			if got := p.ix.reparent.checked.Load(); got != tc.spreads {
				t.Errorf("%d dish writes spread, want %d", got, tc.spreads)
			}
		})
	}
}
