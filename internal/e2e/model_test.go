package e2e

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/internal/eventmodel"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// The model is the expected state of an index, computed from the event
// log alone. It does not use the pipeline's decoder, directory or
// writers: it reads the messages with datagen's own event type and applies
// the rules of the event schema (testdata/events/README.md) and of the
// pipeline's contract (pipeline/doc.go). The documents' state, and the
// rules it keeps, are internal/eventmodel's, shared with internal/chaos's
// model; on top of them:
//
//   - a dish whose restaurant is not live waits for it: a later upsert of
//     the restaurant writes it, a delete of the dish or of the restaurant
//     cancels it, and if none comes it is dead-lettered (an orphan dish;
//     or a dish whose restaurant comes after the end of the produced
//     log). Ingest bounds the wait in time (PendingMaxAge), which a log
//     without a clock cannot tell: a dish that waited and was resolved
//     later may have been dead-lettered before. That is harmless only if
//     its write changed nothing — the index check catches the rest;
//   - poison messages change nothing and are dead-lettered.
type model struct {
	*eventmodel.State
	// dead are the messages that must end in the dead-letter topic;
	// mayBeDead the dishes that waited for their restaurant and were
	// resolved later, which ingest dead-letters if the wait outlasted
	// PendingMaxAge, and mayBeDeadAt their positions in the log.
	dead, mayBeDead []datagen.Message
	mayBeDeadAt     []int
}

// buildModel applies the event log.
func buildModel(t testing.TB, msgs []datagen.Message) *model {
	t.Helper()
	m := &model{State: eventmodel.NewState()}
	type waiting struct {
		ev  datagen.Event
		doc map[string]any
		msg datagen.Message
		at  int // the message's position in msgs
	}
	pending := map[string][]waiting{} // restaurant id → dishes waiting for it
	applyDish := func(ev datagen.Event, doc map[string]any) {
		m.ApplyDish(ev.ID, ev.RestaurantID, ev.Version, ev.Op == datagen.OpUpsert, doc)
	}
	for i, msg := range msgs {
		if datagen.IsPoison(msg.Kind) {
			m.dead = append(m.dead, msg)
			continue
		}
		var ev datagen.Event
		if err := json.Unmarshal(msg.Value, &ev); err != nil {
			t.Fatalf("message %d (%s): %v", i, msg.Kind, err)
		}
		var doc map[string]any
		if ev.Op == datagen.OpUpsert {
			if err := json.Unmarshal(ev.Doc, &doc); err != nil {
				t.Fatalf("message %d (%s): doc: %v", i, msg.Kind, err)
			}
		}
		switch {
		case ev.Type == datagen.TypeRestaurant && ev.Op == datagen.OpUpsert:
			if r := m.Restaurants[ev.ID]; r != nil && ev.Version <= r.Version {
				continue
			}
			if ev.Location == nil {
				t.Fatalf("message %d (%s): restaurant upsert without a location", i, msg.Kind)
			}
			m.UpsertRestaurant(ev.ID, ev.Version, ev.Location.Lat, ev.Location.Lon, doc)
			for _, w := range pending[ev.ID] {
				applyDish(w.ev, w.doc)
				m.mayBeDead, m.mayBeDeadAt = append(m.mayBeDead, w.msg), append(m.mayBeDeadAt, w.at)
			}
			delete(pending, ev.ID)
		case ev.Type == datagen.TypeRestaurant:
			// The dishes waiting for it belong to a deleted restaurant.
			for _, w := range pending[ev.ID] {
				m.mayBeDead, m.mayBeDeadAt = append(m.mayBeDead, w.msg), append(m.mayBeDeadAt, w.at)
			}
			delete(pending, ev.ID)
			m.DeleteRestaurant(ev.ID, ev.Version)
		default: // a dish
			if m.Live(ev.RestaurantID) {
				applyDish(ev, doc)
				continue
			}
			if ev.Op == datagen.OpUpsert {
				pending[ev.RestaurantID] = append(pending[ev.RestaurantID], waiting{ev, doc, msg, i})
				continue
			}
			kept := pending[ev.RestaurantID][:0]
			for _, w := range pending[ev.RestaurantID] {
				if w.ev.ID == ev.ID && w.ev.Version <= ev.Version {
					m.mayBeDead, m.mayBeDeadAt = append(m.mayBeDead, w.msg), append(m.mayBeDeadAt, w.at)
					continue // cancelled by the delete
				}
				kept = append(kept, w)
			}
			pending[ev.RestaurantID] = kept
		}
	}
	for _, ws := range pending {
		for _, w := range ws {
			m.dead = append(m.dead, w.msg)
		}
	}
	return m
}

// expectedDoc is a document as the model predicts it in an index built
// with a given map.
type expectedDoc struct {
	shard   int
	routing string
	source  map[string]any
}

// expected is the index the model predicts under map mp: _id → document.
func (m *model) expected(mp *router.Map) map[string]expectedDoc {
	out := map[string]expectedDoc{}
	for id, d := range m.Expected(mp) {
		out[id] = expectedDoc{shard: d.Shard, routing: d.Routing, source: d.Source}
	}
	return out
}

// perShard counts the documents of each shard.
func perShard(docs map[string]expectedDoc, shards int) []int64 {
	out := make([]int64, shards)
	for _, d := range docs {
		out[d.shard]++
	}
	return out
}

// changedBetween lists the ids whose expected document differs between
// two states (added, removed, or another version, body or place).
func changedBetween(before, after map[string]expectedDoc) []string {
	var out []string
	for id, a := range after {
		b, ok := before[id]
		if !ok || b.routing != a.routing || fmt.Sprint(b.source) != fmt.Sprint(a.source) {
			out = append(out, id)
		}
	}
	for id := range before {
		if _, ok := after[id]; !ok {
			out = append(out, id)
		}
	}
	return out
}

// summary describes a predicted index for the logs.
func summary(docs map[string]expectedDoc) string {
	r, d := 0, 0
	for _, x := range docs {
		if x.source[schema.FieldRelation] == schema.RelationRestaurant {
			r++
		} else {
			d++
		}
	}
	return fmt.Sprintf("%d documents (%d restaurants, %d dishes)", r+d, r, d)
}

// history describes, for failure messages, the messages of the log about
// a document (a restaurant:… or dish:… _id) and, for a dish, about its
// restaurant: their positions in the log, kinds and versions, and for a
// restaurant upsert its cell and shard under mp.
func history(msgs []datagen.Message, docID string, mp *router.Map) []string {
	rel, id, err := schema.ParseID(docID)
	if err != nil {
		return nil
	}
	evs := make([]*datagen.Event, len(msgs))
	rid := ""
	for i, msg := range msgs {
		if datagen.IsPoison(msg.Kind) {
			continue
		}
		var ev datagen.Event
		if json.Unmarshal(msg.Value, &ev) != nil {
			continue
		}
		evs[i] = &ev
		if rel == schema.RelationDish && ev.Type == datagen.TypeDish && ev.ID == id {
			rid = ev.RestaurantID
		}
	}
	if rel == schema.RelationRestaurant {
		rid = id
	}
	var out []string
	for i, ev := range evs {
		switch {
		case ev == nil:
		case ev.Type == datagen.TypeDish && rel == schema.RelationDish && ev.ID == id:
			out = append(out, fmt.Sprintf("#%d %s dish %s v%d", i, msgs[i].Kind, ev.ID, ev.Version))
		case ev.Type == datagen.TypeRestaurant && ev.ID == rid:
			line := fmt.Sprintf("#%d %s restaurant %s v%d", i, msgs[i].Kind, ev.ID, ev.Version)
			if ev.Location != nil {
				cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(ev.Location.Lat, ev.Location.Lon)).Parent(mp.Level())
				line += fmt.Sprintf(" at cell %s, shard %s", cell.ToToken(), mp.Shard(mp.LocateCell(cell)).Name)
			}
			out = append(out, line)
		}
	}
	return out
}

// settled returns the log less the dishes that waited for their
// restaurant longer than PendingMaxAge and that ingest dead-lettered
// (reason unknown_restaurant) although the restaurant came later: a
// dead-lettered event changes nothing, so the index holds what the log
// without them says. The wait is measured in time, which a log cannot
// tell; on a busy machine a few such dishes are normal.
func (e *env) settled(t testing.TB, log []datagen.Message) []datagen.Message {
	t.Helper()
	m := buildModel(t, log)
	late := map[string]int{}
	for _, d := range e.readDLQ(t) {
		if d.reason == string(decode.ReasonUnknownRestaurant) {
			late[d.value]++
		}
	}
	for _, msg := range m.dead {
		if late[string(msg.Value)] > 0 {
			late[string(msg.Value)]--
		}
	}
	drop := map[int]bool{}
	for k, msg := range m.mayBeDead {
		if late[string(msg.Value)] > 0 {
			late[string(msg.Value)]--
			drop[m.mayBeDeadAt[k]] = true
		}
	}
	if len(drop) == 0 {
		return log
	}
	out := make([]datagen.Message, 0, len(log)-len(drop))
	for i, msg := range log {
		if !drop[i] {
			out = append(out, msg)
		}
	}
	return out
}
