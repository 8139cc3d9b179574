package datagen

import (
	"encoding/json"
	"math"
	"strings"
)

// rawEvent encodes poison values: every field is optional and may hold a
// value of the wrong type. A nil field is left out; a non-nil one is
// encoded even if empty ("id":"").
type rawEvent struct {
	Type         any `json:"type,omitempty"`
	Op           any `json:"op,omitempty"`
	ID           any `json:"id,omitempty"`
	RestaurantID any `json:"restaurant_id,omitempty"`
	Version      any `json:"version,omitempty"`
	Location     any `json:"location,omitempty"`
	Doc          any `json:"doc,omitempty"`
}

// Variants of the poison kinds, chosen uniformly per message.
var (
	poisonTypes = []string{"menu", "Restaurant", "review"}
	poisonOps   = []string{"insert", "UPSERT", "patch"}
	poisonJSON  = []func(valid []byte) []byte{
		func(v []byte) []byte { return v[:len(v)/2] },   // truncated
		func(v []byte) []byte { return append(v, '}') }, // trailing garbage
		func([]byte) []byte { return []byte("<html><body><h1>503 Service Unavailable</h1></body></html>") },
		func([]byte) []byte { return []byte("{\"type\": \"restaurant\",\n \"op\": \"upsert\",\n") }, // spans lines
	}
)

// oversizedNote fills the description of poison_oversized.
const oversizedNote = "Ask about our seasonal specials. "

// poison returns the poison messages for a stream of valid valid messages:
// round(PoisonRate·valid) of them, but at least one of each of PoisonKinds
// when PoisonRate > 0, cycling through PoisonKinds in order.
func (g *streamGen) poison(valid int) []Message {
	if g.cfg.PoisonRate == 0 || len(g.restaurants) == 0 {
		return nil
	}
	n := max(len(PoisonKinds), int(math.Round(g.cfg.PoisonRate*float64(valid))))
	out := make([]Message, n)
	for k := range out {
		out[k] = g.poisonMessage(PoisonKinds[k%len(PoisonKinds)])
	}
	return out
}

// poisonMessage builds one poison message of the given kind. It names a
// restaurant of the stream, with a version above its last real one, or a
// new dish of that restaurant that appears nowhere else, so a consumer that
// wrongly accepted it would end in a different state.
func (g *streamGen) poisonMessage(kind string) Message {
	r := g.restaurants[g.rng.IntN(len(g.restaurants))]
	loc, doc := r.loc, r.doc
	restaurant := rawEvent{Type: TypeRestaurant, Op: OpUpsert, ID: r.id, Version: r.version + 1, Location: &loc, Doc: &doc}
	dish := func() rawEvent {
		pool := menu(g.rng, r.doc)
		d := newDishDoc(g.rng, pool, g.rng.IntN(len(pool)), r.doc.PriceLevel)
		return rawEvent{Type: TypeDish, Op: OpUpsert, ID: g.nextDishID(), RestaurantID: r.id, Version: int64(1), Doc: &d}
	}
	// Kinds that fit both types pick one.
	e, topic := restaurant, g.cfg.RestaurantTopic
	if g.rng.IntN(2) == 0 && kind != KindPoisonType && kind != KindPoisonLocation {
		e, topic = dish(), g.cfg.DishTopic
	}

	var value []byte
	switch kind {
	case KindPoisonJSON:
		value = pick(g.rng, poisonJSON)(g.encode(e))
	case KindPoisonType:
		e.Type = pick(g.rng, poisonTypes)
	case KindPoisonOp:
		e.Op = pick(g.rng, poisonOps)
	case KindPoisonMissingID:
		e.ID = nil
		if g.rng.IntN(2) == 0 {
			e.ID = ""
		}
	case KindPoisonMissingVersion:
		e.Version = nil
		if g.rng.IntN(2) == 0 {
			// null decodes into an int64 as 0 without an error.
			e.Version = json.RawMessage("null")
		}
	case KindPoisonLocation:
		switch g.rng.IntN(4) {
		case 0:
			e.Location = Location{Lat: 91, Lon: loc.Lon}
		case 1:
			e.Location = map[string]any{"lat": "NaN", "lon": loc.Lon}
		case 2:
			e.Location = Location{Lat: loc.Lat, Lon: 200}
		default:
			e.Location = nil // an upsert without a location
		}
	case KindPoisonOversized:
		if e.Type != TypeDish {
			e, topic = dish(), g.cfg.DishTopic
		}
		if g.oversized == "" {
			g.oversized = strings.Repeat(oversizedNote, MaxDocBytes/len(oversizedNote)+1)
		}
		d := *e.Doc.(*DishDoc)
		d.Description = g.oversized
		e.Doc = &d
	}
	if value == nil {
		value = g.encode(e)
	}
	return Message{Topic: topic, Key: []byte(r.id), Value: value, Kind: kind}
}
