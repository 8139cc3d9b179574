package datagen

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
)

func newTestWorld(t *testing.T, docs int64) *World {
	t.Helper()
	cities, err := Cities()
	if err != nil {
		t.Fatal(err)
	}
	w, err := NewWorld(cities, WorldConfig{Docs: docs})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWorldEventsMakeItsState applies every message of a world's load
// and of three batches of changes, newest version per document winning, and
// finds exactly the world's own state: every document the world has had,
// live or not, at its version and its restaurant's location.
func TestWorldEventsMakeItsState(t *testing.T) {
	w := newTestWorld(t, 20_000)
	if r := w.Restaurants(); r != 233 { // 20,000 / 86, rounded
		t.Fatalf("restaurants = %d, want 233", r)
	}
	type doc struct {
		version    int64
		live       bool
		restaurant string
	}
	state := map[string]doc{}
	locs := map[string]Location{}
	kinds := map[string]int{}
	emit := func(m Message) error {
		var e Event
		if err := json.Unmarshal(m.Value, &e); err != nil {
			return err
		}
		if string(m.Key) != e.Key() {
			t.Errorf("%s %s: key %q, want %q", e.Type, e.ID, m.Key, e.Key())
		}
		if want := map[string]string{TypeRestaurant: w.cfg.RestaurantTopic, TypeDish: w.cfg.DishTopic}[e.Type]; m.Topic != want {
			t.Errorf("%s %s: topic %q, want %q", e.Type, e.ID, m.Topic, want)
		}
		kinds[m.Kind]++
		if old, ok := state[e.ID]; ok && e.Version <= old.version {
			t.Errorf("%s %s: version %d after %d", e.Type, e.ID, e.Version, old.version)
		}
		state[e.ID] = doc{e.Version, e.Op == OpUpsert, e.Key()}
		if e.Type == TypeRestaurant && e.Location != nil {
			locs[e.ID] = *e.Location
		}
		return nil
	}
	if err := w.Load(emit); err != nil {
		t.Fatal(err)
	}
	if len(state) != w.Restaurants()+w.Dishes() {
		t.Fatalf("load: %d documents, want %d", len(state), w.Restaurants()+w.Dishes())
	}
	mix := DefaultChangeMix()
	for b := range uint64(3) {
		c, err := w.Changes(b, 500, mix, emit)
		if err != nil {
			t.Fatal(err)
		}
		// A change that finds no document to make (a dish drawn to move
		// to its own restaurant) sends nothing; a closure sends many.
		if c.Messages < 450 {
			t.Errorf("batch %d: %d messages for 500 changes", b, c.Messages)
		}
	}
	for _, k := range []string{KindDishUpdate, KindDishMove, KindDishDelete, KindRestaurantUpdate, KindRestaurantMove, KindRestaurantDelete} {
		if kinds[k] == 0 {
			t.Errorf("no %s in 1,500 changes (kinds %v)", k, kinds)
		}
	}
	all := w.Sample(rand.New(rand.NewPCG(1, 2)), w.Restaurants()+w.Dishes())
	if len(all) != len(state) {
		t.Fatalf("sample of everything: %d documents, the events made %d", len(all), len(state))
	}
	var liveR, liveD int64
	for _, d := range all {
		got := state[d.ID]
		rest := state[d.Restaurant]
		live := got.live && rest.live
		if got.version != d.Version || live != d.Live || got.restaurant != d.Restaurant {
			t.Errorf("%s: events make version %d, live %v, restaurant %s; the world has %+v", d.ID, got.version, live, got.restaurant, d)
		}
		if d.Live && locs[d.Restaurant] != d.Location {
			t.Errorf("%s: at %v, its restaurant %s at %v", d.ID, d.Location, d.Restaurant, locs[d.Restaurant])
		}
		if d.Live && d.Dish {
			liveD++
		} else if d.Live {
			liveR++
		}
	}
	if r, d := w.LiveDocs(); r != liveR || d != liveD {
		t.Errorf("LiveDocs = %d, %d; the sample of everything has %d, %d", r, d, liveR, liveD)
	}
}

// TestWorldRebuilds rebuilds a world by applying its batches without
// sending them, as a resumed run does, and finds the same state.
func TestWorldRebuilds(t *testing.T) {
	a, b := newTestWorld(t, 5_000), newTestWorld(t, 5_000)
	discard := func(Message) error { return nil }
	for _, w := range []*World{a, b} {
		if err := w.Load(discard); err != nil {
			t.Fatal(err)
		}
	}
	mix := DefaultChangeMix()
	for n := range uint64(4) {
		if _, err := a.Changes(n, 200, mix, discard); err != nil {
			t.Fatal(err)
		}
		if _, err := b.Changes(n, 200, mix, nil); err != nil {
			t.Fatal(err)
		}
	}
	total := a.Restaurants() + a.Dishes()
	sa, sb := a.Sample(rand.New(rand.NewPCG(3, 4)), total), b.Sample(rand.New(rand.NewPCG(3, 4)), total)
	if !reflect.DeepEqual(sa, sb) {
		t.Fatal("a world rebuilt from its batches differs from the one that sent them")
	}
}

func TestWorldConfigValidate(t *testing.T) {
	for _, c := range []WorldConfig{{Docs: 99}, {Docs: MaxWorldDocs + 1}, {Docs: 1000, MeanDishes: -1}, {Docs: 1000, DishTopic: "a b"}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: valid, want an error", c)
		}
	}
	if err := (WorldConfig{Docs: 55_000_000}).Validate(); err != nil {
		t.Error(err)
	}
	if r := (WorldConfig{Docs: 55_000_000}).Restaurants(); r != 639_535 {
		t.Errorf("55M documents: %d restaurants, want 639,535", r)
	}
}
