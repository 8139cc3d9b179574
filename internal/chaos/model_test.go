package chaos

import (
	"encoding/json"
	"slices"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/pipeline"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// The model is the expected final state, computed from the event log
// alone (never from what the pipeline wrote), with the rules of the event
// schema and of the pipeline's contract (pipeline/doc.go), as pipeline's
// runModel and internal/e2e's buildModel apply them:
//
//   - per document, the newest version wins; an older version, a replay
//     or an overtaken version changes nothing; a delete removes it;
//   - a restaurant delete removes its dishes;
//   - a dish whose restaurant is not live waits for it: a later upsert of
//     the restaurant writes it, a delete of the dish or of the restaurant
//     cancels it, and if none comes it is dead-lettered;
//   - a dish lives where its restaurant finally is;
//   - a poison event changes nothing and is dead-lettered with its reason.
//
// Ingest bounds a dish's wait in time (PendingMaxAge), which a log without
// a clock cannot tell: a dish that waited and was resolved later may have
// been dead-lettered instead. Those are mayBeDead; settle removes the ones
// the dead-letter topic holds from the log, and the model of what remains
// is the one the index is held to.
type model struct {
	rests  map[string]*modelRest
	dishes map[string]*modelDish
	// dead maps event index → the reason it must be dead-lettered with.
	dead map[int]pipeline.Reason
	// mayBeDead are the dishes (event indexes) that waited for their
	// restaurant and were resolved later.
	mayBeDead map[int]bool
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

// runModel applies the event log evs, skipping the events skip names
// (dishes dead-lettered after their wait; nil skips nothing). early names
// the dish events that may be read before their restaurant's creation
// although the log has them after it (two topics: see world.early): they
// may have waited too.
func runModel(evs []genEvent, skip, early map[int]bool) *model {
	m := &model{rests: map[string]*modelRest{}, dishes: map[string]*modelDish{}, dead: map[int]pipeline.Reason{}, mayBeDead: map[int]bool{}}
	pending := map[string][]int{}
	applyDish := func(i int) {
		ev := evs[i]
		d := m.dishes[ev.id]
		if d != nil && ev.version <= d.version {
			return
		}
		m.dishes[ev.id] = &modelDish{version: ev.version, live: ev.op == pipeline.OpUpsert, rid: ev.rid, doc: ev.doc}
	}
	for i, ev := range evs {
		if skip[i] {
			continue
		}
		if ev.poison != "" {
			m.dead[i] = ev.poison
			continue
		}
		r := m.rests[ev.rid]
		switch {
		case ev.typ == pipeline.TypeRestaurant && ev.op == pipeline.OpUpsert:
			if r != nil && ev.version <= r.version {
				continue
			}
			m.rests[ev.id] = &modelRest{version: ev.version, live: true, lat: ev.lat, lon: ev.lon, doc: ev.doc}
			for _, j := range pending[ev.id] {
				applyDish(j)
				m.mayBeDead[j] = true
			}
			delete(pending, ev.id)
		case ev.typ == pipeline.TypeRestaurant:
			// Dishes waiting for it belong to a deleted restaurant.
			for _, j := range pending[ev.id] {
				m.mayBeDead[j] = true
			}
			delete(pending, ev.id)
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
			if ev.op == pipeline.OpUpsert {
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
					m.mayBeDead[j] = true
					continue
				}
				kept = append(kept, j)
			}
			pending[ev.rid] = kept
		default:
			applyDish(i)
			if early[i] && ev.op == pipeline.OpUpsert {
				m.mayBeDead[i] = true
			}
		}
	}
	for _, idx := range pending {
		for _, j := range idx {
			m.dead[j] = pipeline.ReasonUnknownRestaurant
		}
	}
	return m
}

// wantDoc is a document as the model predicts it under a map.
type wantDoc struct {
	shard   int
	routing string
	source  map[string]any
}

// expected is the index the model predicts under mp: _id → document.
func (m *model) expected(mp *router.Map) map[string]wantDoc {
	out := map[string]wantDoc{}
	place := func(r *modelRest) (int, string, string) {
		cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(r.lat, r.lon)).Parent(mp.Level())
		shard := mp.LocateCell(cell)
		return shard, mp.Shard(shard).Routing, cell.ToToken()
	}
	for id, r := range m.rests {
		if !r.live {
			continue
		}
		shard, routing, token := place(r)
		src := stripReserved(r.doc)
		src[schema.FieldRelation] = schema.RelationRestaurant
		src[schema.FieldGeoCell] = token
		src[schema.FieldVersion] = float64(r.version)
		src[schema.FieldDocID] = schema.RestaurantID(id)
		src[schema.FieldLocation] = map[string]any{"lat": r.lat, "lon": r.lon}
		out[schema.RestaurantID(id)] = wantDoc{shard: shard, routing: routing, source: roundTrip(src)}
	}
	for id, d := range m.dishes {
		r := m.rests[d.rid]
		if !d.live || r == nil || !r.live {
			continue
		}
		shard, routing, token := place(r)
		src := stripReserved(d.doc)
		src[schema.FieldRelation] = map[string]any{"name": schema.RelationDish, "parent": schema.RestaurantID(d.rid)}
		src[schema.FieldGeoCell] = token
		src[schema.FieldVersion] = float64(d.version)
		src[schema.FieldDocID] = schema.DishID(id)
		src[schema.FieldRestaurantID] = d.rid
		out[schema.DishID(id)] = wantDoc{shard: shard, routing: routing, source: roundTrip(src)}
	}
	return out
}

// reserved are the fields the pipeline owns in every document.
var reserved = []string{
	schema.FieldRelation, schema.FieldGeoCell, schema.FieldVersion,
	schema.FieldDocID, schema.FieldLocation, schema.FieldRestaurantID,
}

func stripReserved(doc map[string]any) map[string]any {
	src := make(map[string]any, len(doc)+6)
	for k, v := range doc {
		if !slices.Contains(reserved, k) {
			src[k] = v
		}
	}
	return src
}

// roundTrip gives a predicted source the shape JSON decoding gives it.
func roundTrip(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}
