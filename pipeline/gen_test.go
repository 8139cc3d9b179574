package pipeline

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// genEvent is one generated event with what the model needs to know.
type genEvent struct {
	dish       bool
	key, value []byte
	typ, op    string
	id, rid    string
	// former is a dish's restaurant before a change of restaurant, when
	// the event names it.
	former   string
	version  int64
	lat, lon float64
	doc      map[string]any
	// poison is the dead-letter reason the event must get ("" for a valid
	// event; ReasonRejected for one that OpenSearch refuses).
	poison decode.Reason
}

// genConfig shapes a generated stream. Weights are relative; 0 disables
// that kind of step.
type genConfig struct {
	seed        uint64
	restaurants int // location pool size (restaurants created at most)
	steps       int
	// step kinds
	wCreate, wDish, wDishUpdate, wDishOutOfOrder, wDishDelete, wRestUpdate,
	wMoveFar, wMoveNear, wRestOutOfOrder, wRestDelete, wReplay, wOrphan, wEarly, wReparent int
	poison bool // one poison event of every reason, at random places
}

// defaultGen mixes every kind of event.
func defaultGen(seed uint64, steps int) genConfig {
	return genConfig{
		seed: seed, restaurants: steps / 8, steps: steps,
		wCreate: 10, wDish: 30, wDishUpdate: 12, wDishOutOfOrder: 3, wDishDelete: 5, wRestUpdate: 4,
		wMoveFar: 2, wMoveNear: 2, wRestOutOfOrder: 2, wRestDelete: 1, wReplay: 6, wOrphan: 1, wEarly: 3,
		wReparent: 3, poison: true,
	}
}

type genRest struct {
	id        string
	version   int64
	lat, lon  float64
	live      bool
	dishes    []*genDish
	restEvs   []int // indexes of its restaurant events
	epochDish []int // indexes of its dish events since its last move
	// gained: a dish of another restaurant moved to it.
	gained bool
}

type genDish struct {
	id      string
	version int64
	live    bool
	// moved: the dish changed restaurant (reparentDish).
	moved bool
}

type generator struct {
	cfg    genConfig
	rng    *rand.Rand
	pool   []datagen.Restaurant
	next   int
	out    []genEvent
	rests  []*genRest // live restaurants
	all    []*genRest
	due    []*genRest // created soon (early dishes wait for them)
	dishN  int
	orphan int
}

// generate builds a stream from cfg.
func generate(t testing.TB, cfg genConfig) []genEvent {
	t.Helper()
	cities, err := datagen.Cities()
	if err != nil {
		t.Fatal(err)
	}
	pool, err := datagen.Generate(cities, datagen.Config{Countries: []string{"US"}, Restaurants: max(cfg.restaurants, 8) * 2, MedianDishes: 1, Seed: cfg.seed})
	if err != nil {
		t.Fatal(err)
	}
	g := &generator{cfg: cfg, rng: rand.New(rand.NewPCG(cfg.seed, 77)), pool: pool}
	weights := []struct {
		w  int
		fn func() bool
	}{
		{cfg.wCreate, g.create}, {cfg.wDish, g.addDish}, {cfg.wDishUpdate, g.updateDish},
		{cfg.wDishOutOfOrder, g.dishOutOfOrder}, {cfg.wDishDelete, g.deleteDish},
		{cfg.wRestUpdate, func() bool { return g.updateRest(0) }}, {cfg.wMoveFar, func() bool { return g.updateRest(2) }},
		{cfg.wMoveNear, func() bool { return g.updateRest(1) }}, {cfg.wRestOutOfOrder, g.restOutOfOrder},
		{cfg.wRestDelete, g.deleteRest}, {cfg.wReplay, g.replay}, {cfg.wOrphan, g.orphanDish}, {cfg.wEarly, g.early},
		{cfg.wReparent, g.reparentDish},
	}
	total := 0
	for _, w := range weights {
		total += w.w
	}
	var poisonAt map[int]bool
	if cfg.poison {
		poisonAt = map[int]bool{}
		for range poisonKinds {
			poisonAt[g.rng.IntN(cfg.steps)] = true
		}
	}
	pi := 0
	for step := 0; step < cfg.steps; step++ {
		// A restaurant announced by an early dish comes within a few steps.
		if len(g.due) > 0 && g.rng.IntN(3) == 0 {
			r := g.due[0]
			g.due = g.due[1:]
			g.emitCreate(r)
		}
		if poisonAt[step] && pi < len(poisonKinds) {
			g.poison(poisonKinds[pi])
			pi++
			continue
		}
		for tries := 0; tries < 10; tries++ {
			x := g.rng.IntN(total)
			done := false
			for _, w := range weights {
				if x < w.w {
					done = w.fn()
					break
				}
				x -= w.w
			}
			if done {
				break
			}
		}
	}
	for _, r := range g.due {
		g.emitCreate(r)
	}
	for ; cfg.poison && pi < len(poisonKinds); pi++ {
		g.poison(poisonKinds[pi])
	}
	return g.out
}

func (g *generator) newRest() *genRest {
	if g.next >= len(g.pool) {
		return nil
	}
	p := g.pool[g.next]
	g.next++
	r := &genRest{id: fmt.Sprintf("r%05d", g.next), lat: p.Lat, lon: p.Lng}
	g.all = append(g.all, r)
	return r
}

func (g *generator) restDoc() map[string]any {
	d := map[string]any{"name": fmt.Sprintf("place %d", g.rng.IntN(1e6)), "cuisines": []any{[]string{"thai", "pizza", "ramen", "tacos"}[g.rng.IntN(4)]}}
	if g.rng.IntN(20) == 0 {
		// The doc cannot override the pipeline's own fields.
		d["geo_cell"], d["version"], d["relation"] = "bogus", float64(999999), "dish"
	}
	return d
}

func (g *generator) dishDoc() map[string]any {
	d := map[string]any{"name": fmt.Sprintf("dish %d", g.rng.IntN(1e6)), "price_cents": float64(100 + g.rng.IntN(5000)), "diets": []any{"vegan"}}
	if g.rng.IntN(20) == 0 {
		d["restaurant_id"], d["doc_id"] = "elsewhere", "dish:other"
	}
	return d
}

func (g *generator) emit(ev genEvent) int {
	if ev.value == nil {
		ev.value = encodeEvent(ev)
	}
	if ev.key == nil {
		ev.key = []byte(ev.rid)
	}
	g.out = append(g.out, ev)
	return len(g.out) - 1
}

func encodeEvent(ev genEvent) []byte {
	m := map[string]any{"type": ev.typ, "op": ev.op, "id": ev.id, "version": ev.version}
	if ev.dish {
		m["restaurant_id"] = ev.rid
		if ev.former != "" {
			m["former_restaurant_id"] = ev.former
		}
	}
	if ev.op == decode.OpUpsert {
		m["doc"] = ev.doc
		if !ev.dish {
			m["location"] = map[string]any{"lat": ev.lat, "lon": ev.lon}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

func (g *generator) restEvent(r *genRest, op string) int {
	ev := genEvent{typ: decode.TypeRestaurant, op: op, id: r.id, rid: r.id, version: r.version, lat: r.lat, lon: r.lon}
	if op == decode.OpUpsert {
		ev.doc = g.restDoc()
	}
	i := g.emit(ev)
	r.restEvs = append(r.restEvs, i)
	return i
}

func (g *generator) dishEvent(r *genRest, d *genDish, op string) int {
	ev := genEvent{dish: true, typ: decode.TypeDish, op: op, id: d.id, rid: r.id, version: d.version}
	if op == decode.OpUpsert {
		ev.doc = g.dishDoc()
	}
	i := g.emit(ev)
	r.epochDish = append(r.epochDish, i)
	return i
}

func (g *generator) emitCreate(r *genRest) {
	r.version = 1 + int64(g.rng.IntN(5))
	r.live = true
	g.restEvent(r, decode.OpUpsert)
	g.rests = append(g.rests, r)
}

func (g *generator) create() bool {
	r := g.newRest()
	if r == nil {
		return false
	}
	g.emitCreate(r)
	return true
}

// early emits a dish before its restaurant exists.
func (g *generator) early() bool {
	r := g.newRest()
	if r == nil {
		return false
	}
	g.dishN++
	d := &genDish{id: fmt.Sprintf("d%06d", g.dishN), version: 1, live: true}
	r.dishes = append(r.dishes, d)
	g.dishEvent(r, d, decode.OpUpsert)
	g.due = append(g.due, r)
	return true
}

func (g *generator) pickRest() *genRest {
	if len(g.rests) == 0 {
		return nil
	}
	return g.rests[g.rng.IntN(len(g.rests))]
}

func (g *generator) pickDish(r *genRest) *genDish {
	var live []*genDish
	for _, d := range r.dishes {
		if d.live {
			live = append(live, d)
		}
	}
	if len(live) == 0 {
		return nil
	}
	return live[g.rng.IntN(len(live))]
}

func (g *generator) addDish() bool {
	r := g.pickRest()
	if r == nil {
		return false
	}
	g.dishN++
	d := &genDish{id: fmt.Sprintf("d%06d", g.dishN), version: 1 + int64(g.rng.IntN(3)), live: true}
	r.dishes = append(r.dishes, d)
	g.dishEvent(r, d, decode.OpUpsert)
	return true
}

func (g *generator) updateDish() bool {
	r := g.pickRest()
	if r == nil {
		return false
	}
	d := g.pickDish(r)
	if d == nil {
		return false
	}
	d.version += 1 + int64(g.rng.IntN(2))
	g.dishEvent(r, d, decode.OpUpsert)
	return true
}

// dishOutOfOrder emits a newer version of a dish and then an older one.
func (g *generator) dishOutOfOrder() bool {
	r := g.pickRest()
	if r == nil {
		return false
	}
	d := g.pickDish(r)
	if d == nil {
		return false
	}
	d.version += 2
	g.dishEvent(r, d, decode.OpUpsert)
	d.version--
	g.dishEvent(r, d, decode.OpUpsert)
	d.version++
	return true
}

// reparentDish moves a dish to another restaurant, usually in another
// city, as an UPDATE of its restaurant_id does; the event names the
// former restaurant, as a change-data-capture before image does.
func (g *generator) reparentDish() bool {
	r, to := g.pickRest(), g.pickRest()
	if r == nil || to == nil || r == to {
		return false
	}
	d := g.pickDish(r)
	if d == nil {
		return false
	}
	for i, x := range r.dishes {
		if x == d {
			r.dishes = append(r.dishes[:i:i], r.dishes[i+1:]...)
			break
		}
	}
	to.dishes = append(to.dishes, d)
	d.moved, to.gained = true, true
	d.version += 1 + int64(g.rng.IntN(2))
	i := g.dishEvent(to, d, decode.OpUpsert)
	g.out[i].former = r.id
	g.out[i].value = encodeEvent(g.out[i])
	return true
}

func (g *generator) deleteDish() bool {
	r := g.pickRest()
	if r == nil {
		return false
	}
	d := g.pickDish(r)
	if d == nil || d.moved {
		// A dish that changed restaurant is not deleted: its older
		// versions under the restaurant it left may be decided after the
		// delete, which nothing there records (doc.go, Limits).
		return false
	}
	d.version++
	d.live = false
	g.dishEvent(r, d, decode.OpDelete)
	return true
}

// updateRest changes a restaurant: kind 0 keeps its location, 1 moves it a
// few kilometres (a new cell, often the same shard), 2 moves it to another
// city (usually another shard).
func (g *generator) updateRest(kind int) bool {
	r := g.pickRest()
	if r == nil {
		return false
	}
	switch kind {
	case 1:
		r.lat += (g.rng.Float64() - 0.5) * 0.2
		r.lon += (g.rng.Float64() - 0.5) * 0.2
	case 2:
		p := g.pool[g.rng.IntN(len(g.pool))]
		r.lat, r.lon = p.Lat, p.Lng
	}
	if kind > 0 {
		r.epochDish = nil // replays of its dishes stay within a location
	}
	r.version += 1 + int64(g.rng.IntN(2))
	g.restEvent(r, decode.OpUpsert)
	return true
}

// restOutOfOrder emits a newer upsert, then an older one elsewhere.
func (g *generator) restOutOfOrder() bool {
	r := g.pickRest()
	if r == nil {
		return false
	}
	r.epochDish = nil
	r.version += 2
	g.restEvent(r, decode.OpUpsert)
	lat, lon := r.lat, r.lon
	p := g.pool[g.rng.IntN(len(g.pool))]
	r.lat, r.lon = p.Lat, p.Lng
	r.version--
	g.restEvent(r, decode.OpUpsert)
	r.version++
	r.lat, r.lon = lat, lon
	return true
}

func (g *generator) deleteRest() bool {
	if len(g.rests) < 4 {
		return false
	}
	i := g.rng.IntN(len(g.rests))
	r := g.rests[i]
	if r.gained {
		return false // as deleteDish: its dishes include moved ones
	}
	g.rests = append(g.rests[:i], g.rests[i+1:]...)
	r.version++
	r.live = false
	g.restEvent(r, decode.OpDelete)
	return true
}

// replay re-emits an earlier event unchanged: a restaurant event from any
// time, or a dish event from its restaurant's current location.
func (g *generator) replay() bool {
	if len(g.all) == 0 {
		return false
	}
	r := g.all[g.rng.IntN(len(g.all))]
	var from []int
	if g.rng.IntN(2) == 0 {
		from = r.restEvs
	} else {
		from = r.epochDish
	}
	if len(from) == 0 {
		return false
	}
	ev := g.out[from[g.rng.IntN(len(from))]]
	g.out = append(g.out, ev)
	return true
}

// orphanDish emits a dish of a restaurant that never comes, and sometimes
// a delete of it that cancels it while it waits.
func (g *generator) orphanDish() bool {
	g.orphan++
	r := &genRest{id: fmt.Sprintf("orphan%03d", g.orphan)}
	g.dishN++
	d := &genDish{id: fmt.Sprintf("d%06d", g.dishN), version: 1}
	g.dishEvent(r, d, decode.OpUpsert)
	if g.rng.IntN(3) == 0 {
		d.version++
		g.dishEvent(r, d, decode.OpDelete)
	}
	return true
}

var poisonKinds = []decode.Reason{
	decode.ReasonInvalidJSON, decode.ReasonUnknownType, decode.ReasonUnknownOp, decode.ReasonMissingID, decode.ReasonMissingVersion,
	decode.ReasonBadLocation, decode.ReasonMissingRestaurantID, decode.ReasonMissingDoc, decode.ReasonOversized, decode.ReasonKeyMismatch,
	decode.ReasonRejected, "oversized_id", "rejected_restaurant",
}

// poison emits one event that must end in the dead-letter topic.
func (g *generator) poison(kind decode.Reason) {
	g.orphan++
	rid := fmt.Sprintf("poison%03d", g.orphan)
	ev := genEvent{key: []byte(rid), rid: rid, poison: kind}
	raw := func(s string) { ev.value = []byte(s) }
	switch kind {
	case decode.ReasonInvalidJSON:
		raw(`{"type":"restaurant","op":"upsert",`)
	case decode.ReasonUnknownType:
		raw(`{"type":"menu","op":"upsert","id":"` + rid + `","version":1}`)
	case decode.ReasonUnknownOp:
		raw(`{"type":"restaurant","op":"patch","id":"` + rid + `","version":1}`)
	case decode.ReasonMissingID:
		raw(`{"type":"restaurant","op":"delete","version":1}`)
		ev.key = nil
	case decode.ReasonMissingVersion:
		raw(`{"type":"restaurant","op":"delete","id":"` + rid + `","version":-3}`)
	case decode.ReasonBadLocation:
		raw(`{"type":"restaurant","op":"upsert","id":"` + rid + `","version":1,"location":{"lat":95,"lon":0},"doc":{}}`)
	case decode.ReasonMissingRestaurantID:
		raw(`{"type":"dish","op":"upsert","id":"d-` + rid + `","version":1,"doc":{}}`)
		ev.key = nil
	case decode.ReasonMissingDoc:
		raw(`{"type":"dish","op":"upsert","id":"d-` + rid + `","restaurant_id":"` + rid + `","version":1,"doc":"x"}`)
	case decode.ReasonOversized:
		raw(`{"type":"restaurant","op":"upsert","id":"` + rid + `","version":1,"location":{"lat":1,"lon":1},"doc":{"name":"` + strings.Repeat("x", 70<<10) + `"}}`)
	case "oversized_id":
		ev.poison = decode.ReasonOversized
		id := strings.Repeat("i", 600)
		raw(`{"type":"dish","op":"delete","id":"` + id + `","restaurant_id":"` + rid + `","version":1}`)
	case decode.ReasonKeyMismatch:
		raw(`{"type":"restaurant","op":"delete","id":"` + rid + `","version":1}`)
		ev.key = []byte("someone-else")
	case decode.ReasonRejected:
		// A dish of a live restaurant whose price does not fit the
		// mapping: OpenSearch refuses it.
		if r := g.pickRest(); r != nil {
			ev.key, ev.rid = []byte(r.id), r.id
		}
		ev.dish = true
		raw(`{"type":"dish","op":"upsert","id":"d-` + rid + `","restaurant_id":"` + ev.rid + `","version":1,"doc":{"price_cents":"cheap"}}`)
		if g.pickRest() == nil {
			ev.poison = decode.ReasonUnknownRestaurant
		}
	case "rejected_restaurant":
		ev.poison = decode.ReasonRejected
		raw(`{"type":"restaurant","op":"upsert","id":"` + rid + `","version":1,"location":{"lat":40.7,"lon":-74},"doc":{"price_cents":"cheap"}}`)
	}
	if strings.Contains(string(ev.value), `"type":"dish"`) {
		ev.dish = true
	}
	g.out = append(g.out, ev)
}

// model is the expected final state, computed from the event log alone
// with the intended semantics: the newest version of each document wins,
// a restaurant delete removes its dishes, a dish waits for its restaurant
// and is dead-lettered if it never comes.
type model struct {
	rests  map[string]*modelRest
	dishes map[string]*modelDish
	// deadLetters maps event index → reason.
	deadLetters map[int]decode.Reason
}

type modelRest struct {
	version  int64
	live     bool
	lat, lon float64
	doc      map[string]any
}

type modelDish struct {
	version int64
	live    bool
	rid     string
	doc     map[string]any
}

func runModel(evs []genEvent) *model {
	m := &model{rests: map[string]*modelRest{}, dishes: map[string]*modelDish{}, deadLetters: map[int]decode.Reason{}}
	pending := map[string][]int{}
	applyDish := func(i int) {
		ev := evs[i]
		d := m.dishes[ev.id]
		if d != nil && ev.version <= d.version {
			return
		}
		m.dishes[ev.id] = &modelDish{version: ev.version, live: ev.op == decode.OpUpsert, rid: ev.rid, doc: ev.doc}
	}
	for i, ev := range evs {
		if ev.poison != "" {
			m.deadLetters[i] = ev.poison
			continue
		}
		r := m.rests[ev.rid]
		switch {
		case ev.typ == decode.TypeRestaurant && ev.op == decode.OpUpsert:
			if r != nil && ev.version <= r.version {
				continue
			}
			m.rests[ev.id] = &modelRest{version: ev.version, live: true, lat: ev.lat, lon: ev.lon, doc: ev.doc}
			for _, j := range pending[ev.id] {
				applyDish(j)
			}
			delete(pending, ev.id)
		case ev.typ == decode.TypeRestaurant:
			delete(pending, ev.id) // dishes waiting for it belong to a deleted restaurant
			if r != nil && ev.version <= r.version {
				continue
			}
			if r != nil && r.live {
				for _, d := range m.dishes {
					if d.rid == ev.id {
						d.live = false
					}
				}
			}
			m.rests[ev.id] = &modelRest{version: ev.version}
		case r == nil || !r.live:
			if ev.op == decode.OpUpsert {
				pending[ev.rid] = append(pending[ev.rid], i)
				continue
			}
			// The dish is not under this restaurant; wherever it was
			// written before, the delete removes it (reparent.go).
			if d := m.dishes[ev.id]; d != nil && ev.version > d.version {
				m.dishes[ev.id] = &modelDish{version: ev.version, rid: ev.rid}
			}
			kept := pending[ev.rid][:0]
			for _, j := range pending[ev.rid] {
				if evs[j].id == ev.id && evs[j].version <= ev.version {
					continue
				}
				kept = append(kept, j)
			}
			pending[ev.rid] = kept
		default:
			applyDish(i)
		}
	}
	for _, idx := range pending {
		for _, j := range idx {
			m.deadLetters[j] = decode.ReasonUnknownRestaurant
		}
	}
	return m
}

// expectedDocs is the index the model predicts: _id → routing and source.
func (m *model) expectedDocs(gm *router.Map) map[string]storedDoc {
	out := map[string]storedDoc{}
	place := func(lat, lon float64) (string, string) {
		cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(lat, lon)).Parent(gm.Level())
		return gm.Shard(gm.LocateCell(cell)).Routing, cell.ToToken()
	}
	strip := func(doc map[string]any) map[string]any {
		src := map[string]any{}
		for k, v := range doc {
			if !isReserved(k) {
				src[k] = v
			}
		}
		return src
	}
	for id, r := range m.rests {
		if !r.live {
			continue
		}
		routing, token := place(r.lat, r.lon)
		src := strip(r.doc)
		src["relation"], src["geo_cell"], src["version"] = "restaurant", token, float64(r.version)
		src["doc_id"], src["location"] = schema.RestaurantID(id), map[string]any{"lat": r.lat, "lon": r.lon}
		out[schema.RestaurantID(id)] = storedDoc{routing: routing, source: src}
	}
	for id, d := range m.dishes {
		r := m.rests[d.rid]
		if !d.live || r == nil || !r.live {
			continue
		}
		routing, token := place(r.lat, r.lon)
		src := strip(d.doc)
		src["relation"] = map[string]any{"name": "dish", "parent": schema.RestaurantID(d.rid)}
		src["geo_cell"], src["version"], src["doc_id"], src["restaurant_id"] = token, float64(d.version), schema.DishID(id), d.rid
		out[schema.DishID(id)] = storedDoc{routing: routing, source: src}
	}
	return out
}

// roundTrip gives a generated doc the shape JSON decoding gives it.
func roundTrip(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// cutAt returns the first place at or after i where evs can be cut in two
// without a dish before the cut waiting for a restaurant created after it
// (an early dish, early): a test that produces the two parts with a wait
// between them would see that dish expire, which the model, knowing no
// time, does not predict.
func cutAt(evs []genEvent, i int) int {
	first := map[string]int{}
	for j, ev := range evs {
		if ev.typ == decode.TypeRestaurant && ev.op == decode.OpUpsert {
			if _, ok := first[ev.id]; !ok {
				first[ev.id] = j
			}
		}
	}
	bad := make([]bool, len(evs)+1)
	for j, ev := range evs {
		if f, ok := first[ev.rid]; ok && ev.dish && f > j {
			for k := j + 1; k <= f; k++ {
				bad[k] = true
			}
		}
	}
	for i < len(evs) && bad[i] {
		i++
	}
	return min(i, len(evs))
}
