package datagen

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// The seed world is the planning workload at any size: DefaultUS's shape
// (US restaurants placed like the population, log-normal dishes with a
// mean of about 85) scaled to a number of documents, up to the seed's 650,000
// restaurants and 55 million dishes. Unlike Stream, which builds a whole
// stream in memory, a World keeps only each document's version, its
// restaurant and whether it lives (about 10 bytes a dish), and writes
// events as it goes: the creation of the world (Load), then batches of
// changes (Changes), each batch a deterministic function of the world
// before it, the seed and the batch's number. A run that stops can rebuild
// the world it had reached by applying the same batches again without
// sending them (emit nil).

// Defaults and bounds of WorldConfig.
const (
	// DefaultWorldMeanDishes is the planning workload's mean dishes per
	// restaurant (DefaultUS: median 75, sigma 0.5).
	DefaultWorldMeanDishes = 85
	// MaxWorldDocs bounds WorldConfig.Docs: the seed's 650,000 restaurants
	// at the default mean, with room for the log-normal's spread.
	MaxWorldDocs = 60_000_000
	// WorldSeed is the seed of a WorldConfig that leaves Seed 0.
	WorldSeed uint64 = 55

	// seedChangesStream selects the PCG sequence of Changes ("changes!").
	seedChangesStream = 0x6368616e67657321
	// seedDocsStream selects a restaurant's document sequence ("seeddocs").
	seedDocsStream = 0x73656564646f6373
	// recreatedDishes is the most dishes a re-created restaurant opens with.
	recreatedDishes = 20
	// maxDraws bounds the draws for a live document of a kind.
	maxDraws = 64
)

// WorldConfig sizes a World.
type WorldConfig struct {
	// Docs is about how many documents (restaurants and dishes) the world
	// starts with, in [100, MaxWorldDocs]: Docs/(1+MeanDishes) restaurants,
	// rounded, and their log-normal dishes.
	Docs int64
	// MeanDishes is the mean dishes per restaurant; 0 means
	// DefaultWorldMeanDishes.
	MeanDishes float64
	// Seed selects the world and its changes; 0 means WorldSeed.
	Seed uint64
	// RestaurantTopic and DishTopic name the events' topics; empty means
	// DefaultRestaurantTopic and DefaultDishTopic.
	RestaurantTopic, DishTopic string
}

// Restaurants is the number of restaurants the world starts with.
func (c WorldConfig) Restaurants() int {
	c = c.withDefaults()
	return max(1, int(math.Round(float64(c.Docs)/(1+c.MeanDishes))))
}

func (c WorldConfig) withDefaults() WorldConfig {
	if c.MeanDishes == 0 {
		c.MeanDishes = DefaultWorldMeanDishes
	}
	if c.Seed == 0 {
		c.Seed = WorldSeed
	}
	if c.RestaurantTopic == "" {
		c.RestaurantTopic = DefaultRestaurantTopic
	}
	if c.DishTopic == "" {
		c.DishTopic = DefaultDishTopic
	}
	return c
}

// Validate reports every bad field.
func (c WorldConfig) Validate() error {
	var errs []error
	if c.Docs < 100 || c.Docs > MaxWorldDocs {
		errs = append(errs, fmt.Errorf("datagen: WorldConfig.Docs = %d, want in [100, %d]", c.Docs, MaxWorldDocs))
	}
	if !(c.MeanDishes >= 0 && c.MeanDishes <= MaxStreamMeanDishes) {
		errs = append(errs, fmt.Errorf("datagen: WorldConfig.MeanDishes = %g, want in (0, %d] or 0 for %d", c.MeanDishes, MaxStreamMeanDishes, DefaultWorldMeanDishes))
	}
	for _, t := range []struct{ name, v string }{{"RestaurantTopic", c.RestaurantTopic}, {"DishTopic", c.DishTopic}} {
		if t.v != "" && !validTopic(t.v) {
			errs = append(errs, fmt.Errorf("datagen: WorldConfig.%s = %q is not a Kafka topic name", t.name, t.v))
		}
	}
	return errors.Join(errs...)
}

// ChangeMix weighs the kinds of change in a batch of Changes; the weights
// need not sum to 1. A restaurant delete also deletes each live dish of
// the restaurant first (a dish_delete each), as a source system does, and
// a re-creation opens the restaurant again with up to 20 new dishes.
type ChangeMix struct {
	DishUpdate, DishMove, DishDelete     float64
	RestaurantUpdate, RestaurantMove     float64
	RestaurantDelete, RestaurantRecreate float64
}

// DefaultChangeMix is a day of a menu platform's changes: mostly dish
// edits (three in four), one in twenty a dish moving to another
// restaurant, restaurant edits, and one change in a hundred a restaurant
// moving across the country, one in two hundred a closure (with its
// dishes, about 85 messages) and as many re-openings.
func DefaultChangeMix() ChangeMix {
	return ChangeMix{
		DishUpdate: 0.74, DishMove: 0.05, DishDelete: 0.03,
		RestaurantUpdate: 0.15, RestaurantMove: 0.01,
		RestaurantDelete: 0.005, RestaurantRecreate: 0.005,
	}
}

// ChangeCounts counts what a batch did, by Kind (restaurant_update,
// restaurant_move, dish_update, ...; a dish moving to another restaurant
// is KindDishMove) and the messages it emitted.
type ChangeCounts struct {
	ByKind   map[string]int64
	Messages int64
}

// KindDishMove is a dish_upsert that gives a live dish another restaurant.
const KindDishMove = "dish_move"

// World is the model of a seed-shaped index and the source of its
// events. It is not safe for concurrent use.
type World struct {
	cfg    WorldConfig
	cities []City

	// Restaurants, by index.
	rID      []string
	rLoc     []Location
	rCity    []int32
	rVersion []uint32
	rLive    []bool
	rDishes  [][]int32 // live dishes of each restaurant
	rDoc     []RestaurantDoc

	// Dishes, by index: dish i has id dishID(i).
	dRest    []int32
	dVersion []uint32
	dLive    []bool

	targets []int   // US cities, for moves
	cumPop  []int64 // cumulative populations of targets
}

// NewWorld places cfg's restaurants and their dishes (version 1,
// live) without sending anything; Load sends them.
func NewWorld(cities []City, cfg WorldConfig) (*World, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	place := DefaultUS()
	place.Restaurants, place.Seed = cfg.Restaurants(), cfg.Seed
	place.MedianDishes = cfg.MeanDishes / math.Exp(place.DishSigma*place.DishSigma/2)
	rs, err := Generate(cities, place)
	if err != nil {
		return nil, fmt.Errorf("datagen: seed world: %w", err)
	}
	var dishes int
	for _, r := range rs {
		dishes += r.Dishes
	}
	targets, err := selectCities(cities, []string{"US"})
	if err != nil {
		return nil, fmt.Errorf("datagen: seed world: %w", err)
	}
	w := &World{
		cfg: cfg, cities: cities, targets: targets,
		rID: make([]string, len(rs)), rLoc: make([]Location, len(rs)), rCity: make([]int32, len(rs)),
		rVersion: make([]uint32, len(rs)), rLive: make([]bool, len(rs)), rDishes: make([][]int32, len(rs)),
		rDoc:  make([]RestaurantDoc, len(rs)),
		dRest: make([]int32, 0, dishes), dVersion: make([]uint32, 0, dishes), dLive: make([]bool, 0, dishes),
	}
	var total int64
	w.cumPop = make([]int64, len(targets))
	for k, ci := range targets {
		total += cities[ci].Population
		w.cumPop[k] = total
	}
	for i, r := range rs {
		w.rID[i], w.rLoc[i], w.rCity[i], w.rVersion[i], w.rLive[i] = r.ID, roundLocation(r.Lat, r.Lng), int32(r.City), 1, true
		w.rDishes[i] = make([]int32, r.Dishes)
		for k := range r.Dishes {
			w.rDishes[i][k] = int32(len(w.dRest))
			w.dRest = append(w.dRest, int32(i))
			w.dVersion = append(w.dVersion, 1)
			w.dLive = append(w.dLive, true)
		}
	}
	return w, nil
}

// Config is the world's configuration, defaults filled.
func (w *World) Config() WorldConfig { return w.cfg }

// Restaurants and Dishes are how many of each the world has ever had
// (live or deleted); LiveDocs how many documents live now.
func (w *World) Restaurants() int { return len(w.rID) }

// Dishes is how many dishes the world has ever had.
func (w *World) Dishes() int { return len(w.dRest) }

// LiveDocs is the number of live restaurants and of live dishes of live
// restaurants: the documents the index must hold.
func (w *World) LiveDocs() (restaurants, dishes int64) {
	for i, live := range w.rLive {
		if live {
			restaurants++
			dishes += int64(len(w.rDishes[i]))
		}
	}
	return restaurants, dishes
}

// RestaurantLocation is where restaurant i is now.
func (w *World) RestaurantLocation(i int) Location { return w.rLoc[i] }

// Load sends the world's creation: for each restaurant, in a seeded
// random order, its restaurant_upsert and then a dish_upsert for each of
// its dishes, every document at version 1. Docs are drawn from the
// restaurant's own sequence, so they do not depend on the order.
func (w *World) Load(emit func(Message) error) error {
	order := rand.New(rand.NewPCG(w.cfg.Seed, seedDocsStream)).Perm(len(w.rID))
	for _, i := range order {
		rng := rand.New(rand.NewPCG(w.cfg.Seed^uint64(i+1), seedDocsStream))
		w.rDoc[i] = newRestaurantDoc(rng, w.cities[w.rCity[i]].Name)
		if err := emit(w.restaurantMessage(KindRestaurantUpsert, OpUpsert, i)); err != nil {
			return err
		}
		pool := menu(rng, w.rDoc[i])
		for k, d := range w.rDishes[i] {
			doc := newDishDoc(rng, pool, k, w.rDoc[i].PriceLevel)
			if err := emit(w.dishMessage(KindDishUpsert, OpUpsert, int(d), &doc)); err != nil {
				return err
			}
		}
	}
	return nil
}

// Changes applies batch number batch of n changes drawn by mix to the
// world and sends each change's messages to emit (nil: apply only, to
// rebuild a world that already sent them). The batch depends only on the
// world before it, the seed, batch and n. Load must have run first (it
// draws the restaurants' docs).
func (w *World) Changes(batch uint64, n int, mix ChangeMix, emit func(Message) error) (ChangeCounts, error) {
	rng := rand.New(rand.NewPCG(w.cfg.Seed^batch, seedChangesStream))
	weights := []float64{mix.DishUpdate, mix.DishMove, mix.DishDelete, mix.RestaurantUpdate, mix.RestaurantMove, mix.RestaurantDelete, mix.RestaurantRecreate}
	var sum float64
	for _, x := range weights {
		sum += max(x, 0)
	}
	counts := ChangeCounts{ByKind: map[string]int64{}}
	if sum == 0 {
		return counts, errors.New("datagen: ChangeMix has no positive weight")
	}
	send := func(m Message) error {
		counts.Messages++
		if emit == nil {
			return nil
		}
		return emit(m)
	}
	for range n {
		u := rng.Float64() * sum
		k := 0
		for k < len(weights)-1 && u >= max(weights[k], 0) {
			u -= max(weights[k], 0)
			k++
		}
		kind, err := w.change(rng, k, send)
		if err != nil {
			return counts, err
		}
		if kind != "" {
			counts.ByKind[kind]++
		}
	}
	return counts, nil
}

// change makes one change of kind k (ChangeMix's field order) and reports
// its Kind, or "" when no document fit (nothing left to delete, say).
func (w *World) change(rng *rand.Rand, k int, send func(Message) error) (string, error) {
	switch k {
	case 0, 1, 2: // a dish: update, move, delete
		d := w.liveDish(rng)
		if d < 0 {
			return "", nil
		}
		w.dVersion[d]++
		switch k {
		case 0:
			doc := w.dishDoc(rng, int(w.dRest[d]), d)
			return KindDishUpdate, send(w.dishMessage(KindDishUpdate, OpUpsert, d, &doc))
		case 1:
			to := w.liveRestaurant(rng, true)
			if to < 0 || to == int(w.dRest[d]) {
				w.dVersion[d]--
				return "", nil
			}
			w.unlinkDish(d)
			w.dRest[d] = int32(to)
			w.rDishes[to] = append(w.rDishes[to], int32(d))
			doc := w.dishDoc(rng, to, d)
			return KindDishMove, send(w.dishMessage(KindDishMove, OpUpsert, d, &doc))
		default:
			w.unlinkDish(d)
			w.dLive[d] = false
			return KindDishDelete, send(w.dishMessage(KindDishDelete, OpDelete, d, nil))
		}
	case 3, 4: // a restaurant: update, move
		r := w.liveRestaurant(rng, false)
		if r < 0 {
			return "", nil
		}
		if k == 4 && !w.move(rng, r) {
			return "", nil
		}
		w.rVersion[r]++
		kind := KindRestaurantMove
		if k == 3 {
			kind = KindRestaurantUpdate
			updateRestaurantDoc(rng, &w.rDoc[r])
		}
		return kind, send(w.restaurantMessage(kind, OpUpsert, r))
	case 5: // close a restaurant: its dishes first
		r := w.liveRestaurant(rng, false)
		if r < 0 {
			return "", nil
		}
		for _, d := range w.rDishes[r] {
			w.dVersion[d]++
			w.dLive[d] = false
			if err := send(w.dishMessage(KindDishDelete, OpDelete, int(d), nil)); err != nil {
				return "", err
			}
		}
		w.rDishes[r] = nil
		w.rVersion[r]++
		w.rLive[r] = false
		return KindRestaurantDelete, send(w.restaurantMessage(KindRestaurantDelete, OpDelete, r))
	default: // open a closed restaurant again, with new dishes
		r := -1
		for range maxDraws {
			if i := rng.IntN(len(w.rID)); !w.rLive[i] {
				r = i
				break
			}
		}
		if r < 0 {
			return "", nil
		}
		w.rVersion[r]++
		w.rLive[r] = true
		w.rDoc[r] = newRestaurantDoc(rng, w.cities[w.rCity[r]].Name)
		if err := send(w.restaurantMessage(KindRestaurantUpsert, OpUpsert, r)); err != nil {
			return "", err
		}
		pool := menu(rng, w.rDoc[r])
		for j := range 1 + rng.IntN(recreatedDishes) {
			d := len(w.dRest)
			w.dRest = append(w.dRest, int32(r))
			w.dVersion = append(w.dVersion, 1)
			w.dLive = append(w.dLive, true)
			w.rDishes[r] = append(w.rDishes[r], int32(d))
			doc := newDishDoc(rng, pool, j, w.rDoc[r].PriceLevel)
			if err := send(w.dishMessage(KindDishUpsert, OpUpsert, d, &doc)); err != nil {
				return "", err
			}
		}
		return "restaurant_recreate", nil
	}
}

// liveDish draws a live dish of a live restaurant, or -1.
func (w *World) liveDish(rng *rand.Rand) int {
	for range maxDraws {
		if d := rng.IntN(len(w.dRest)); w.dLive[d] && w.rLive[w.dRest[d]] {
			return d
		}
	}
	return -1
}

// liveRestaurant draws a live restaurant, or -1; withDishes wants one
// that has dishes already (a dish moves to a kitchen that cooks).
func (w *World) liveRestaurant(rng *rand.Rand, withDishes bool) int {
	for range maxDraws {
		if r := rng.IntN(len(w.rID)); w.rLive[r] && (!withDishes || len(w.rDishes[r]) > 0) {
			return r
		}
	}
	return -1
}

// unlinkDish removes dish d from its restaurant's live dishes.
func (w *World) unlinkDish(d int) {
	r := w.dRest[d]
	if i := slices.Index(w.rDishes[r], int32(d)); i >= 0 {
		w.rDishes[r] = slices.Delete(w.rDishes[r], i, i+1)
	}
}

// move places restaurant r around a US city drawn by population at least
// MinMoveKm away, or reports false.
func (w *World) move(rng *rand.Rand, r int) bool {
	total := w.cumPop[len(w.cumPop)-1]
	for range moveTries {
		k, _ := slices.BinarySearch(w.cumPop, rng.Int64N(total)+1)
		ci := w.targets[k]
		c := w.cities[ci]
		sigma := SigmaKm(c.Population)
		lat, lng := offsetKm(c.Lat, c.Lng, sigma*rng.NormFloat64(), sigma*rng.NormFloat64())
		if loc := roundLocation(lat, lng); greatCircleKm(w.rLoc[r], loc) >= MinMoveKm {
			w.rLoc[r], w.rCity[r], w.rDoc[r].City = loc, int32(ci), c.Name
			return true
		}
	}
	return false
}

// dishDoc draws a new doc for dish d of restaurant r.
func (w *World) dishDoc(rng *rand.Rand, r, d int) DishDoc {
	pool := menu(rng, w.rDoc[r])
	return newDishDoc(rng, pool, d%len(pool), w.rDoc[r].PriceLevel)
}

// WorldDishID is the id of dish i (0-based): d00000001, ...
func WorldDishID(i int) string {
	s := strconv.Itoa(i + 1)
	for len(s) < 8 {
		s = "0" + s
	}
	return "d" + s
}

func (w *World) restaurantMessage(kind, op string, r int) Message {
	e := wireEvent{Type: TypeRestaurant, Op: op, ID: w.rID[r], Version: int64(w.rVersion[r])}
	if op == OpUpsert {
		loc := w.rLoc[r]
		e.Location, e.Doc = &loc, &w.rDoc[r]
	}
	return Message{Topic: w.cfg.RestaurantTopic, Key: []byte(w.rID[r]), Value: mustJSON(e), Kind: kind}
}

func (w *World) dishMessage(kind, op string, d int, doc *DishDoc) Message {
	rid := w.rID[w.dRest[d]]
	e := wireEvent{Type: TypeDish, Op: op, ID: WorldDishID(d), RestaurantID: rid, Version: int64(w.dVersion[d])}
	if op == OpUpsert {
		e.Doc = doc
	}
	return Message{Topic: w.cfg.DishTopic, Key: []byte(rid), Value: mustJSON(e), Kind: kind}
}

// mustJSON encodes an event of plain strings and numbers, which cannot
// fail.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("datagen: encode event: %v", err))
	}
	return b
}

// WorldDoc is a document as the world has it now.
type WorldDoc struct {
	// ID is the event id (r000001, d00000001); Restaurant the event id of
	// its restaurant (itself, for a restaurant).
	ID, Restaurant string
	Dish           bool
	// Live: the index must hold it, at Version, placed at Location (its
	// restaurant's). Otherwise the index must not hold it.
	Live     bool
	Version  int64
	Location Location
}

// Sample draws n documents the world has had, dishes and restaurants in
// proportion, each at most once.
func (w *World) Sample(rng *rand.Rand, n int) []WorldDoc {
	total := len(w.rID) + len(w.dRest)
	n = min(n, total)
	seen := make(map[int]bool, n)
	out := make([]WorldDoc, 0, n)
	for len(out) < n {
		k := rng.IntN(total)
		if seen[k] {
			continue
		}
		seen[k] = true
		if k < len(w.rID) {
			out = append(out, WorldDoc{ID: w.rID[k], Restaurant: w.rID[k], Live: w.rLive[k], Version: int64(w.rVersion[k]), Location: w.rLoc[k]})
			continue
		}
		d := k - len(w.rID)
		r := w.dRest[d]
		out = append(out, WorldDoc{
			ID: WorldDishID(d), Restaurant: w.rID[r], Dish: true,
			Live: w.dLive[d] && w.rLive[r], Version: int64(w.dVersion[d]), Location: w.rLoc[r],
		})
	}
	return out
}
