package eventmodel

import (
	"encoding/json"
	"slices"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// Restaurant is a restaurant's last applied version.
type Restaurant struct {
	Version  int64
	Live     bool
	Lat, Lon float64
	Doc      map[string]any
}

// Dish is a dish's last applied version.
type Dish struct {
	Version      int64
	Live         bool
	RestaurantID string
	Doc          map[string]any
}

// State is what the events applied so far leave: every document that
// has been written or deleted, by id.
type State struct {
	Restaurants map[string]*Restaurant
	Dishes      map[string]*Dish
}

// NewState returns an empty state.
func NewState() *State {
	return &State{Restaurants: map[string]*Restaurant{}, Dishes: map[string]*Dish{}}
}

// Live reports whether restaurant id is live: upserted, and not deleted
// since.
func (s *State) Live(id string) bool {
	r := s.Restaurants[id]
	return r != nil && r.Live
}

// UpsertRestaurant applies a restaurant upsert. It changes nothing and
// returns false when the state holds that version or a newer one.
func (s *State) UpsertRestaurant(id string, version int64, lat, lon float64, doc map[string]any) bool {
	if r := s.Restaurants[id]; r != nil && version <= r.Version {
		return false
	}
	s.Restaurants[id] = &Restaurant{Version: version, Live: true, Lat: lat, Lon: lon, Doc: doc}
	return true
}

// DeleteRestaurant applies a restaurant delete, which removes its dishes
// too. It changes nothing and returns false when the state holds that
// version or a newer one.
func (s *State) DeleteRestaurant(id string, version int64) bool {
	r := s.Restaurants[id]
	if r != nil && version <= r.Version {
		return false
	}
	if r != nil && r.Live {
		for _, d := range s.Dishes {
			if d.RestaurantID == id {
				d.Live = false
			}
		}
	}
	s.Restaurants[id] = &Restaurant{Version: version}
	return true
}

// ApplyDish applies a dish upsert (live) or delete (not live) under
// restaurant rid, unless the state holds that version of the dish or a
// newer one. Whether the restaurant is live is the caller's to decide: a
// dish whose restaurant is not live waits, in the caller's bookkeeping.
func (s *State) ApplyDish(id, rid string, version int64, live bool, doc map[string]any) {
	if d := s.Dishes[id]; d != nil && version <= d.Version {
		return
	}
	s.Dishes[id] = &Dish{Version: version, Live: live, RestaurantID: rid, Doc: doc}
}

// Doc is a document as the model predicts it in an index built with a
// given map.
type Doc struct {
	Shard   int
	Routing string
	// Source has the shape JSON decoding gives it (RoundTrip).
	Source map[string]any
}

// Expected is the index the state predicts under map mp: _id → document.
func (s *State) Expected(mp *router.Map) map[string]Doc {
	out := map[string]Doc{}
	place := func(r *Restaurant) (int, string, string) {
		cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(r.Lat, r.Lon)).Parent(mp.Level())
		shard := mp.LocateCell(cell)
		return shard, mp.Shard(shard).Routing, cell.ToToken()
	}
	for id, r := range s.Restaurants {
		if !r.Live {
			continue
		}
		shard, routing, token := place(r)
		src := StripReserved(r.Doc)
		src[schema.FieldRelation] = schema.RelationRestaurant
		src[schema.FieldGeoCell] = token
		src[schema.FieldVersion] = float64(r.Version)
		src[schema.FieldDocID] = schema.RestaurantID(id)
		src[schema.FieldLocation] = map[string]any{"lat": r.Lat, "lon": r.Lon}
		out[schema.RestaurantID(id)] = Doc{Shard: shard, Routing: routing, Source: RoundTrip(src)}
	}
	for id, d := range s.Dishes {
		r := s.Restaurants[d.RestaurantID]
		if !d.Live || r == nil || !r.Live {
			continue
		}
		shard, routing, token := place(r)
		src := StripReserved(d.Doc)
		src[schema.FieldRelation] = map[string]any{"name": schema.RelationDish, "parent": schema.RestaurantID(d.RestaurantID)}
		src[schema.FieldGeoCell] = token
		src[schema.FieldVersion] = float64(d.Version)
		src[schema.FieldDocID] = schema.DishID(id)
		src[schema.FieldRestaurantID] = d.RestaurantID
		out[schema.DishID(id)] = Doc{Shard: shard, Routing: routing, Source: RoundTrip(src)}
	}
	return out
}

// Reserved are the fields the pipeline owns in every document: an
// event's doc cannot set them.
var Reserved = []string{
	schema.FieldRelation, schema.FieldGeoCell, schema.FieldVersion,
	schema.FieldDocID, schema.FieldLocation, schema.FieldRestaurantID,
}

// StripReserved copies doc without the Reserved fields.
func StripReserved(doc map[string]any) map[string]any {
	src := make(map[string]any, len(doc)+len(Reserved))
	for k, v := range doc {
		if !slices.Contains(Reserved, k) {
			src[k] = v
		}
	}
	return src
}

// RoundTrip gives v the shape JSON decoding gives it (float64 numbers,
// []any lists), as a source read back from the index has.
func RoundTrip(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}
