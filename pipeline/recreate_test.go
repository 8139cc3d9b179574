package pipeline

import (
	"testing"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/eventmodel"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

// A life of restaurant R as its source sends it: created in San
// Francisco with dishes old1 and old2, deleted (with the dishes' own
// deletes just before, or relying on the cascade), re-created, and given
// a new dish, new1. The indexes are positions in the source's order.
const (
	lifeCreate = iota
	lifeOld1
	lifeOld2
	lifeDelOld1
	lifeDelOld2
	lifeDelete
	lifeRecreate
	lifeNew1
)

// recreation is R's life, the re-creation at lat, lon: the changes in
// the source's order, those the source does not send left nil.
func recreation(dishDeletes bool, lat, lon float64) []*decode.Change {
	rest := func(op string, v int64, lat, lon float64) *decode.Change {
		return &decode.Change{Type: decode.TypeRestaurant, Op: op, ID: "R", Version: v, Lat: lat, Lon: lon}
	}
	dish := func(op, id string, v int64) *decode.Change {
		return &decode.Change{Type: decode.TypeDish, Op: op, ID: id, RestaurantID: "R", Version: v}
	}
	life := []*decode.Change{
		lifeCreate:   rest(decode.OpUpsert, 1, 37.7749, -122.4194),
		lifeOld1:     dish(decode.OpUpsert, "old1", 1),
		lifeOld2:     dish(decode.OpUpsert, "old2", 1),
		lifeDelete:   rest(decode.OpDelete, 2, 0, 0),
		lifeRecreate: rest(decode.OpUpsert, 3, lat, lon),
		lifeNew1:     dish(decode.OpUpsert, "new1", 1),
	}
	if dishDeletes {
		life[lifeDelOld1] = dish(decode.OpDelete, "old1", 2)
		life[lifeDelOld2] = dish(decode.OpDelete, "old2", 2)
	}
	return life
}

// lifeModel is what R's life leaves, by internal/eventmodel, applied in
// the source's order.
func lifeModel(t *testing.T, life []*decode.Change) *eventmodel.State {
	t.Helper()
	st := eventmodel.NewState()
	for _, c := range life {
		switch {
		case c == nil:
		case c.Type == decode.TypeRestaurant && c.Op == decode.OpUpsert:
			st.UpsertRestaurant(c.ID, c.Version, c.Lat, c.Lon, nil)
		case c.Type == decode.TypeRestaurant:
			st.DeleteRestaurant(c.ID, c.Version)
		case !st.Live(c.RestaurantID):
			t.Fatalf("dish %s comes while its restaurant is not live", c.ID)
		default:
			st.ApplyDish(c.ID, c.RestaurantID, c.Version, c.Op == decode.OpUpsert, nil)
		}
	}
	return st
}

// Orders in which ingest may process R's life: its restaurant topic and
// its dish topic are each read in order, and nothing orders one against
// the other. Each is a list of batches, decided one after the other; the
// first batch, the creation, is decided in the source's order.
var (
	// The dish topic read ahead: the new dish is decided while R still
	// looks live at its first version, before its delete.
	dishesAhead = [][]int{
		{lifeCreate, lifeOld1, lifeOld2},
		{lifeDelOld1, lifeDelOld2, lifeNew1, lifeDelete, lifeRecreate},
	}
	// The restaurant topic read ahead: the delete and the re-creation
	// are decided before the old dishes' deletes and the new dish.
	restaurantsAhead = [][]int{
		{lifeCreate, lifeOld1, lifeOld2},
		{lifeDelete, lifeRecreate, lifeDelOld1, lifeDelOld2, lifeNew1},
	}
	// The source's own order.
	sourceOrder = [][]int{
		{lifeCreate, lifeOld1, lifeOld2},
		{lifeDelOld1, lifeDelOld2, lifeDelete, lifeRecreate, lifeNew1},
	}
)

// decideLife decides R's life in order on member p, batch after batch.
func decideLife(t *testing.T, p *Pipeline, life []*decode.Change, order [][]int) {
	t.Helper()
	off := int64(0)
	for _, batch := range order {
		var evs []*event
		for _, i := range batch {
			if life[i] == nil {
				continue
			}
			c := *life[i]
			evs = append(evs, fenceEvent(p, off, &c))
			off++
		}
		decideAll(t, p, evs...)
	}
}

// TestRecreatedRestaurantKeepsItsNewDishes: a restaurant deleted and
// created again, with new dishes, by a source that deletes the old
// dishes itself (Config.SourceDeletesDishes), ends as the source's order
// says — the new dish live on the re-created restaurant's shard, the old
// ones gone — in whichever order ingest reads the two topics, the
// re-creation at the same place or on another shard. With the dish topic
// ahead, the new dish is written while the restaurant still looks live
// at its first version, before its delete is processed: the delete must
// not take it (the seed benchmark lost such dishes).
func TestRecreatedRestaurantKeepsItsNewDishes(t *testing.T) {
	realenv.EmulatorOnly(t, "a member driven by hand against the emulator")
	for _, tc := range []struct {
		name     string
		lat, lon float64
		order    [][]int
	}{
		{"same place/dishes ahead", 37.7749, -122.4194, dishesAhead},
		{"same place/restaurants ahead", 37.7749, -122.4194, restaurantsAhead},
		{"same place/source order", 37.7749, -122.4194, sourceOrder},
		{"another shard/dishes ahead", 40.7128, -74.006, dishesAhead},
		{"another shard/restaurants ahead", 40.7128, -74.006, restaurantsAhead},
		{"another shard/source order", 40.7128, -74.006, sourceOrder},
		{"another cell/dishes ahead", 37.80, -122.27, dishesAhead},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{partitions: 1})
			p := handMember(t, e)
			p.ix.sourceDeletesDishes = true
			p.ix.enterGen(1)
			life := recreation(true, tc.lat, tc.lon)
			decideLife(t, p, life, tc.order)
			checkIndexDocs(t, e, testIndex, e.m, modelDocs(lifeModel(t, life), e))
		})
	}
}

// TestRecreatedRestaurantCascade: a source that deletes no dish and
// relies on the restaurant delete to take them (the default). The old
// dishes are gone at the end in every order. The new dish survives when
// ingest decides it after the delete; decided before it (the dish topic
// ahead) it cannot be told from an old dish the delete must take (see
// restaurantDelete), and goes with them: the case the default gives up.
func TestRecreatedRestaurantCascade(t *testing.T) {
	realenv.EmulatorOnly(t, "a member driven by hand against the emulator")
	deleteFirst := [][]int{
		{lifeCreate, lifeOld1, lifeOld2},
		{lifeDelete, lifeNew1, lifeRecreate},
	}
	for _, tc := range []struct {
		name     string
		lat, lon float64
		order    [][]int
		// lost: the new dish is decided before the delete.
		lost bool
	}{
		{"same place/delete first", 37.7749, -122.4194, deleteFirst, false},
		{"same place/restaurants ahead", 37.7749, -122.4194, restaurantsAhead, false},
		{"same place/dishes ahead", 37.7749, -122.4194, dishesAhead, true},
		{"another shard/delete first", 40.7128, -74.006, deleteFirst, false},
		{"another shard/restaurants ahead", 40.7128, -74.006, restaurantsAhead, false},
		{"another shard/dishes ahead", 40.7128, -74.006, dishesAhead, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{partitions: 1})
			p := handMember(t, e)
			p.ix.enterGen(1)
			life := recreation(false, tc.lat, tc.lon)
			decideLife(t, p, life, tc.order)
			want := modelDocs(lifeModel(t, life), e)
			if tc.lost {
				delete(want, schema.DishID("new1"))
			}
			checkIndexDocs(t, e, testIndex, e.m, want)
		})
	}
}

// modelDocs is the index st predicts under e's map, as checkIndexDocs
// takes it.
func modelDocs(st *eventmodel.State, e *testEnv) map[string]storedDoc {
	out := map[string]storedDoc{}
	for id, d := range st.Expected(e.m) {
		out[id] = storedDoc{routing: d.Routing, source: d.Source}
	}
	return out
}
