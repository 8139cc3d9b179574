package datagen

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/golang/geo/s2"
)

const (
	// MinMoveKm is the least distance a restaurant_move carries a
	// restaurant: it lands in another city.
	MinMoveKm = 100
	// MaxNudgeKm is the farthest a restaurant_update moves a restaurant
	// (a corrected geocode); most updates keep the location.
	MaxNudgeKm = 0.2
	// StreamMaxLag bounds how late replay and out_of_order messages are:
	// at most StreamMaxLag messages of the source order lie between such a
	// message and the one it duplicates or that overtook it.
	StreamMaxLag = 20

	// recreateFraction of deleted restaurants are created again.
	recreateFraction = 0.5
	// nudgeFraction of restaurant updates also nudge the location.
	nudgeFraction = 0.2
	// earlySlots is how far, in creation slots, an early dish precedes its
	// restaurant at most.
	earlySlots = 1.5
	// moveTries bounds the search for a city at least MinMoveKm away.
	moveTries = 64

	// streamStream selects Stream's PCG sequence ("events!!").
	streamStream = 0x6576656e74732121
)

// Stream generates a deterministic stream of change events (see Event and
// testdata/events/README.md) for cfg's restaurants. The result depends only
// on cities and cfg; it is in production order, the order to send it in.
//
// # Documents
//
// The restaurants are those of Generate with Countries ["US"],
// cfg.Restaurants, cfg.Seed, DishSigma 0.5 and MedianDishes
// cfg.MeanDishes·e^-0.125, so dishes are log-normal with mean
// cfg.MeanDishes (before rounding and the floor of one dish). The US keeps
// the demo's searches around San Francisco and New York meaningful; cities
// must hold US cities. Restaurants keep Generate's IDs (r000001, ...);
// dishes are numbered d0000001, ... in the order they are generated; the
// restaurant ids of orphan dishes continue Generate's numbering past
// cfg.Restaurants. Docs are RestaurantDoc and DishDoc; locations are
// rounded to 6 decimals. Restaurant events go to cfg.RestaurantTopic and
// dish events to cfg.DishTopic, keyed by the restaurant id (Event.Key);
// poison messages are keyed by the id of a restaurant of the stream.
//
// # Order
//
// Restaurants are created in a seeded random order, one per time slot, each
// followed within half a slot by the creation of its dishes. Every later
// change of a document (update, move, delete) comes an exponentially
// distributed time after its creation (mean max(1, Restaurants/4) slots),
// so updates interleave with later creations. For every document (type,
// id), the messages other than replay, out_of_order and poison carry
// strictly increasing versions in stream order; the first version of a
// document is 1 and every change adds 1 (2 when an out_of_order version
// was produced in between). A consumer can rely on order only within a
// topic partition; per document that is the order above, across topics
// there is none.
//
// # Kinds
//
// Every message has one Kind:
//
//   - restaurant_upsert: the creation of a restaurant, with location and
//     doc. Either its first upsert, or its re-creation after a
//     restaurant_delete, with a higher version than the delete.
//   - restaurant_update: a later upsert of a live restaurant with one
//     edited doc field (rating, price level, name or cuisines; a new name
//     can, rarely, equal the old); 20 % also move it by at most MaxNudgeKm.
//   - restaurant_move: an upsert that moves a live restaurant at least
//     MinMoveKm, around another US city drawn by population; doc.city
//     changes with it. It carries no dish messages: the dishes follow
//     their restaurant.
//   - restaurant_delete: the restaurant is gone. It comes after a
//     dish_delete for each of its dishes that was still live, so no dish
//     outlives its restaurant, and after every other change of the
//     restaurant and its dishes except replays and out_of_order versions
//     of them. Half of the deleted restaurants get a
//     restaurant_upsert later (a new doc at the same place) with fresh
//     dishes; a re-created restaurant is never deleted again.
//   - dish_upsert: the creation of a dish, after its restaurant's
//     restaurant_upsert.
//   - dish_update: a later upsert of a live dish with a new price,
//     description or an added allergen.
//   - dish_delete: the dish is gone, on its own (DeleteRate) or because its
//     restaurant is deleted next. A deleted dish never comes back.
//   - early_dish: the creation (version 1) of a restaurant's first dish,
//     sent before the restaurant's first restaurant_upsert, which follows
//     within 1.5 creation slots (the dishes of the one or two restaurants
//     created just before it and whatever changes fall in between). The
//     dish's later changes follow the restaurant_upsert.
//   - orphan_dish: the upsert (version 1) of a dish whose restaurant never
//     appears in the stream; the dish gets no other message.
//   - replay: an exact copy (topic, key and value) of an earlier message of
//     any kind above, sent with at most StreamMaxLag source messages (all
//     but replay, out_of_order and poison) between them. Its version is at
//     most the document's current one.
//   - out_of_order: an upsert with a version the source produced just
//     before a restaurant_update, restaurant_move, restaurant_delete,
//     dish_update or dish_delete of the same document and that reached the
//     topic after it, with at most StreamMaxLag source messages between
//     them; its version is lower than that change's, its doc is an edit of
//     the previous version's and a restaurant's keeps the previous
//     location. It may arrive after the document's delete.
//   - poison_*: a value that is not a valid event (see PoisonKinds and
//     testdata/events/README.md), keyed by a restaurant of the stream.
//     Where it carries an id and a version, it names that restaurant with
//     a version above its last real one, or a dish that exists nowhere
//     else, so accepting one changes the final state. poison_oversized
//     values exceed 1 MiB: producers and brokers must allow larger records
//     (Kafka's and franz-go's defaults are about 1 MB) to deliver them.
//
// # Final state
//
// Apply, per document (type, id), each valid message whose version is
// greater than the highest version seen so far for that document (an
// upsert stores doc and location, a delete stores a tombstone with its
// version) and ignore the rest: replays, out_of_order messages and poison
// then change nothing, and the result does not depend on how the topics
// and partitions interleave. In that final state every live dish belongs to
// a live restaurant, except orphan dishes, which belong to none; a dish is
// located where its restaurant finally is. Tombstones must be kept for at
// least StreamMaxLag source messages (plus the replays, out_of_order and
// poison messages in between), because replays and out_of_order messages
// of a deleted document may follow its delete.
func Stream(cities []City, cfg StreamConfig) ([]Message, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	rs, err := Generate(cities, cfg.placement())
	if err != nil {
		return nil, fmt.Errorf("datagen: stream: %w", err)
	}
	g, err := newStreamGen(cities, cfg, len(rs))
	if err != nil {
		return nil, err
	}
	for slot, i := range g.rng.Perm(len(rs)) {
		r := rs[i]
		st := &restaurantState{
			id:     r.ID,
			city:   r.City,
			loc:    roundLocation(r.Lat, r.Lng),
			dishes: r.Dishes,
			doc:    newRestaurantDoc(g.rng, cities[r.City].Name),
		}
		g.restaurants = append(g.restaurants, st)
		g.life(st, float64(slot), true)
		if g.chance(cfg.OrphanRate) {
			g.orphan()
		}
	}
	msgs := g.assemble()
	if g.err != nil {
		return nil, g.err
	}
	return msgs, nil
}

// streamGen holds the state of one Stream call.
type streamGen struct {
	cfg    StreamConfig
	cities []City
	rng    *rand.Rand
	span   float64 // mean delay of a change after its document's creation, in slots
	n      int     // restaurants placed by Generate

	targets []int   // indexes of the US cities, for moves
	cumPop  []int64 // cumulative populations of targets

	restaurants []*restaurantState // in creation order
	entries     []streamEntry      // in generation order until assemble sorts them
	dishSeq     int
	orphans     int
	oversized   string // the description of poison_oversized, built once
	err         error  // first encoding error
}

// streamEntry is one message of the source, produced at time at (in
// creation slots). late, if set, is an older version of the same document
// that the source produced first but that is sent after msg.
type streamEntry struct {
	at   float64
	msg  Message
	late *Message
}

type restaurantState struct {
	id      string
	version int64
	city    int
	loc     Location
	doc     RestaurantDoc
	dishes  int
}

type dishState struct {
	id, restaurantID string
	version          int64
	doc              DishDoc
	live             bool
}

// wireEvent encodes valid events; Doc is *RestaurantDoc or *DishDoc. The
// tags match Event's, which decodes what it encodes.
type wireEvent struct {
	Type         string    `json:"type"`
	Op           string    `json:"op"`
	ID           string    `json:"id"`
	RestaurantID string    `json:"restaurant_id,omitempty"`
	Version      int64     `json:"version"`
	Location     *Location `json:"location,omitempty"`
	Doc          any       `json:"doc,omitempty"`
}

func newStreamGen(cities []City, cfg StreamConfig, n int) (*streamGen, error) {
	targets, err := selectCities(cities, []string{"US"})
	if err != nil {
		return nil, fmt.Errorf("datagen: stream: %w", err)
	}
	cum := make([]int64, len(targets))
	var total int64
	for k, ci := range targets {
		total += cities[ci].Population // Generate has checked that it fits
		cum[k] = total
	}
	return &streamGen{
		cfg:     cfg,
		cities:  cities,
		rng:     rand.New(rand.NewPCG(cfg.Seed, streamStream)),
		span:    max(1, float64(n)/4),
		n:       n,
		targets: targets,
		cumPop:  cum,
	}, nil
}

func (g *streamGen) chance(p float64) bool { return g.rng.Float64() < p }

// poisson draws a Poisson variate by Knuth's method (mean <= MaxUpdateRate).
func (g *streamGen) poisson(mean float64) int {
	if mean <= 0 {
		return 0
	}
	limit, k := math.Exp(-mean), 0
	for p := g.rng.Float64(); p > limit; p *= g.rng.Float64() {
		k++
	}
	return k
}

// after returns a time after t0 and before end: t0 plus an exponential
// delay, or, when that reaches end, a uniform time in [t0, end).
func (g *streamGen) after(t0, end float64) float64 {
	if t := t0 + g.span*g.rng.ExpFloat64(); t < end {
		return t
	}
	return t0 + (end-t0)*g.rng.Float64()
}

func (g *streamGen) add(at float64, m Message, late *Message) {
	g.entries = append(g.entries, streamEntry{at: at, msg: m, late: late})
}

// change is one scheduled change of a document.
type change struct {
	at   float64
	kind string
}

func byTime(a, b change) int { return cmp.Compare(a.at, b.at) }

// life creates r at time start with fresh dishes and runs its changes. The
// first life may end in a delete and a re-creation; a re-created restaurant
// lives on.
func (g *streamGen) life(r *restaurantState, start float64, first bool) {
	r.version++
	g.add(start, g.restaurantMessage(KindRestaurantUpsert, OpUpsert, r), nil)
	// The menu follows the doc as created; the changes below edit r.doc.
	pool, level := menu(g.rng, r.doc), r.doc.PriceLevel
	end := math.Inf(1)
	if first && g.chance(g.cfg.DeleteRate) {
		end = start + 0.5 + g.span*g.rng.ExpFloat64() // after the dishes' creation
	}

	n := g.poisson(g.cfg.UpdateRate)
	changes := make([]change, n, max(n+1, 8))
	for k := range changes {
		changes[k] = change{g.after(start, end), KindRestaurantUpdate}
	}
	if g.chance(g.cfg.MoveRate) {
		changes = append(changes, change{g.after(start, end), KindRestaurantMove})
	}
	slices.SortStableFunc(changes, byTime)
	for _, c := range changes {
		g.changeRestaurant(r, c)
	}

	dishes := make([]*dishState, r.dishes)
	for j := range dishes {
		d := &dishState{id: g.nextDishID(), restaurantID: r.id, version: 1, live: true,
			doc: newDishDoc(g.rng, pool, j, level)}
		dishes[j] = d
		at, kind := start+0.5*float64(j+1)/float64(len(dishes)+1), KindDishUpsert
		if first && j == 0 && g.chance(g.cfg.EarlyDishRate) {
			at, kind = start-earlySlots*(1-g.rng.Float64()), KindEarlyDish
		}
		g.add(at, g.dishMessage(kind, OpUpsert, d), nil)

		base := max(at, start) // an early dish changes only after its restaurant exists
		changes = changes[:0]
		for range g.poisson(g.cfg.UpdateRate) {
			changes = append(changes, change{g.after(base, end), KindDishUpdate})
		}
		slices.SortStableFunc(changes, byTime)
		if g.chance(g.cfg.DeleteRate) {
			last := base
			if len(changes) > 0 {
				last = changes[len(changes)-1].at
			}
			changes = append(changes, change{g.after(last, end), KindDishDelete})
		}
		for _, c := range changes {
			g.changeDish(d, c)
		}
	}

	if math.IsInf(end, 1) {
		return
	}
	for _, d := range dishes {
		if d.live {
			g.changeDish(d, change{end, KindDishDelete})
		}
	}
	g.changeRestaurant(r, change{end, KindRestaurantDelete})
	if g.chance(recreateFraction) {
		r.doc = newRestaurantDoc(g.rng, g.cities[r.city].Name)
		g.life(r, end+g.span*g.rng.ExpFloat64(), false)
	}
}

// changeRestaurant applies one update, move or delete to r at c.at,
// preceded by an overtaken intermediate version with probability
// OutOfOrderRate.
func (g *streamGen) changeRestaurant(r *restaurantState, c change) {
	var late *Message
	if g.chance(g.cfg.OutOfOrderRate) {
		updateRestaurantDoc(g.rng, &r.doc) // the location stays
		r.version++
		m := g.restaurantMessage(KindOutOfOrder, OpUpsert, r)
		late = &m
	}
	r.version++
	kind, op := c.kind, OpUpsert
	switch kind {
	case KindRestaurantUpdate:
		g.updateRestaurant(r)
	case KindRestaurantMove:
		if !g.move(r) {
			kind = KindRestaurantUpdate
			g.updateRestaurant(r)
		}
	case KindRestaurantDelete:
		op = OpDelete
	}
	g.add(c.at, g.restaurantMessage(kind, op, r), late)
}

func (g *streamGen) updateRestaurant(r *restaurantState) {
	updateRestaurantDoc(g.rng, &r.doc)
	if g.chance(nudgeFraction) {
		d := MaxNudgeKm * math.Sqrt(g.rng.Float64()) // uniform over the disc
		theta := 2 * math.Pi * g.rng.Float64()
		lat, lng := offsetKm(r.loc.Lat, r.loc.Lon, d*math.Cos(theta), d*math.Sin(theta))
		r.loc = roundLocation(lat, lng)
	}
}

// move places r around a US city drawn by population, at least MinMoveKm
// from where it is. It reports false, leaving r as it was, if no draw
// lands that far.
func (g *streamGen) move(r *restaurantState) bool {
	total := g.cumPop[len(g.cumPop)-1]
	for range moveTries {
		k, _ := slices.BinarySearch(g.cumPop, g.rng.Int64N(total)+1)
		ci := g.targets[k]
		c := g.cities[ci]
		sigma := SigmaKm(c.Population)
		lat, lng := offsetKm(c.Lat, c.Lng, sigma*g.rng.NormFloat64(), sigma*g.rng.NormFloat64())
		loc := roundLocation(lat, lng)
		if greatCircleKm(r.loc, loc) >= MinMoveKm {
			r.loc, r.city, r.doc.City = loc, ci, c.Name
			return true
		}
	}
	return false
}

// changeDish applies one update or delete to d at c.at, preceded by an
// overtaken intermediate version with probability OutOfOrderRate.
func (g *streamGen) changeDish(d *dishState, c change) {
	var late *Message
	if g.chance(g.cfg.OutOfOrderRate) {
		updateDishDoc(g.rng, &d.doc)
		d.version++
		m := g.dishMessage(KindOutOfOrder, OpUpsert, d)
		late = &m
	}
	d.version++
	op := OpUpsert
	if c.kind == KindDishDelete {
		op, d.live = OpDelete, false
	} else {
		updateDishDoc(g.rng, &d.doc)
	}
	g.add(c.at, g.dishMessage(c.kind, op, d), late)
}

// orphan adds the upsert of a dish whose restaurant never exists, at a
// uniform time of the stream.
func (g *streamGen) orphan() {
	g.orphans++
	cuisine := Cuisines[g.rng.IntN(len(Cuisines))]
	pool := menus[cuisine]
	d := &dishState{
		id:           g.nextDishID(),
		restaurantID: restaurantID(g.n+g.orphans, g.n),
		version:      1,
		doc:          newDishDoc(g.rng, pool, g.rng.IntN(len(pool)), 1+g.rng.IntN(4)),
	}
	g.add(g.rng.Float64()*float64(g.n), g.dishMessage(KindOrphanDish, OpUpsert, d), nil)
}

// restaurantID formats the 1-based restaurant number i the way Generate
// does for n restaurants.
func restaurantID(i, n int) string {
	s := strconv.Itoa(i)
	width := max(6, len(strconv.Itoa(n)))
	for len(s) < width {
		s = "0" + s
	}
	return "r" + s
}

func (g *streamGen) nextDishID() string {
	g.dishSeq++
	s := strconv.Itoa(g.dishSeq)
	for len(s) < 7 {
		s = "0" + s
	}
	return "d" + s
}

func (g *streamGen) restaurantMessage(kind, op string, r *restaurantState) Message {
	e := wireEvent{Type: TypeRestaurant, Op: op, ID: r.id, Version: r.version}
	if op == OpUpsert {
		loc := r.loc
		e.Location, e.Doc = &loc, &r.doc
	}
	return Message{Topic: g.cfg.RestaurantTopic, Key: []byte(r.id), Value: g.encode(e), Kind: kind}
}

func (g *streamGen) dishMessage(kind, op string, d *dishState) Message {
	e := wireEvent{Type: TypeDish, Op: op, ID: d.id, RestaurantID: d.restaurantID, Version: d.version}
	if op == OpUpsert {
		e.Doc = &d.doc
	}
	return Message{Topic: g.cfg.DishTopic, Key: []byte(d.restaurantID), Value: g.encode(e), Kind: kind}
}

func (g *streamGen) encode(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil && g.err == nil {
		g.err = fmt.Errorf("datagen: stream: encode event: %w", err)
	}
	return b
}

// assemble orders the source messages by time and inserts the replays,
// the overtaken versions and the poison messages.
//
// Source messages take integer slots 0, 1, ... in time order; a replay or
// an overtaken version of the message in slot i takes slot i+k+0.5 with k
// uniform in [0, StreamMaxLag], and poison messages uniform slots. A stable
// sort by slot then keeps insertions at one slot in the order made.
func (g *streamGen) assemble() []Message {
	slices.SortStableFunc(g.entries, func(a, b streamEntry) int { return cmp.Compare(a.at, b.at) })
	type slotted struct {
		slot float64
		msg  Message
	}
	later := func(i int) float64 { return float64(i+g.rng.IntN(StreamMaxLag+1)) + 0.5 }
	out := make([]slotted, 0, len(g.entries)+len(g.entries)/16)
	for i, e := range g.entries {
		out = append(out, slotted{float64(i), e.msg})
		if e.late != nil {
			out = append(out, slotted{later(i), *e.late})
		}
		if g.chance(g.cfg.ReplayRate) {
			dup := Message{Topic: e.msg.Topic, Key: slices.Clone(e.msg.Key), Value: slices.Clone(e.msg.Value), Kind: KindReplay}
			out = append(out, slotted{later(i), dup})
		}
	}
	for _, m := range g.poison(len(out)) {
		out = append(out, slotted{g.rng.Float64() * float64(len(g.entries)), m})
	}
	slices.SortStableFunc(out, func(a, b slotted) int { return cmp.Compare(a.slot, b.slot) })
	msgs := make([]Message, len(out))
	for i, s := range out {
		msgs[i] = s.msg
	}
	return msgs
}

// roundLocation rounds to 6 decimals (about 0.1 m), as a source system
// stores coordinates.
func roundLocation(lat, lng float64) Location {
	return Location{Lat: math.Round(lat*1e6) / 1e6, Lon: math.Round(lng*1e6) / 1e6}
}

func greatCircleKm(a, b Location) float64 {
	return s2.LatLngFromDegrees(a.Lat, a.Lon).Distance(s2.LatLngFromDegrees(b.Lat, b.Lon)).Radians() * earthRadiusKm
}
