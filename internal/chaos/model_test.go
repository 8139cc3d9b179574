package chaos

import (
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/eventmodel"
	"github.com/geoshard/geoshard/router"
)

// The model is the expected final state, computed from the event log
// alone (never from what the pipeline wrote): the documents' state is
// internal/eventmodel's, shared with internal/e2e's model, and the rules
// it applies are stated there; on top of it:
//
//   - a dish whose restaurant is not live waits for it: a later upsert of
//     the restaurant writes it, a delete of the dish or of the restaurant
//     cancels it, and if none comes it is dead-lettered;
//   - a poison event changes nothing and is dead-lettered with its reason.
//
// Ingest bounds a dish's wait in time (PendingMaxAge), which a log without
// a clock cannot tell: a dish that waited and was resolved later may have
// been dead-lettered instead. Those are mayBeDead; settle removes the ones
// the dead-letter topic holds from the log, and the model of what remains
// is the one the index is held to.
type model struct {
	*eventmodel.State
	// dead maps event index → the reason it must be dead-lettered with.
	dead map[int]decode.Reason
	// mayBeDead are the dishes (event indexes) that waited for their
	// restaurant and were resolved later.
	mayBeDead map[int]bool
}

// runModel applies the event log evs, skipping the events skip names
// (dishes dead-lettered after their wait; nil skips nothing). early names
// the dish events that may be read before their restaurant's creation
// although the log has them after it (two topics: see world.early): they
// may have waited too.
func runModel(evs []genEvent, skip, early map[int]bool) *model {
	m := &model{State: eventmodel.NewState(), dead: map[int]decode.Reason{}, mayBeDead: map[int]bool{}}
	pending := map[string][]int{}
	applyDish := func(i int) {
		ev := evs[i]
		m.ApplyDish(ev.id, ev.rid, ev.version, ev.op == decode.OpUpsert, ev.doc)
	}
	for i, ev := range evs {
		if skip[i] {
			continue
		}
		if ev.poison != "" {
			m.dead[i] = ev.poison
			continue
		}
		switch {
		case ev.typ == decode.TypeRestaurant && ev.op == decode.OpUpsert:
			if !m.UpsertRestaurant(ev.id, ev.version, ev.lat, ev.lon, ev.doc) {
				continue
			}
			for _, j := range pending[ev.id] {
				applyDish(j)
				m.mayBeDead[j] = true
			}
			delete(pending, ev.id)
		case ev.typ == decode.TypeRestaurant:
			// Dishes waiting for it belong to a deleted restaurant.
			for _, j := range pending[ev.id] {
				m.mayBeDead[j] = true
			}
			delete(pending, ev.id)
			m.DeleteRestaurant(ev.id, ev.version)
		case !m.Live(ev.rid):
			if ev.op == decode.OpUpsert {
				pending[ev.rid] = append(pending[ev.rid], i)
				continue
			}
			// The dish is not under this restaurant; wherever it was
			// written before, the delete removes it (reparent.go).
			if m.Dishes[ev.id] != nil {
				m.ApplyDish(ev.id, ev.rid, ev.version, false, nil)
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
			if early[i] && ev.op == decode.OpUpsert {
				m.mayBeDead[i] = true
			}
		}
	}
	for _, idx := range pending {
		for _, j := range idx {
			m.dead[j] = decode.ReasonUnknownRestaurant
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
	for id, d := range m.Expected(mp) {
		out[id] = wantDoc{shard: d.Shard, routing: d.Routing, source: d.Source}
	}
	return out
}
