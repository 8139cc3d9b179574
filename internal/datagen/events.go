package datagen

import (
	"encoding/json"
	"strings"
)

// Event types and operations of the change-event schema (see
// testdata/events/README.md).
const (
	TypeRestaurant = "restaurant"
	TypeDish       = "dish"
	OpUpsert       = "upsert"
	OpDelete       = "delete"
)

// Limits of the change-event schema.
const (
	// MaxDocBytes bounds the JSON encoding of an event's doc: 1 MiB.
	MaxDocBytes = 1 << 20
	// MaxIDBytes bounds id and restaurant_id, matching OpenSearch's limit
	// on document IDs.
	MaxIDBytes = 512
)

// Location is a WGS84 position in degrees: Lat in [-90, 90], Lon in
// [-180, 180].
type Location struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// Event is one change event, the JSON value of a Kafka message:
//
//	{"type":"restaurant","op":"upsert","id":"r123","version":17,"location":{"lat":37.77,"lon":-122.42},"doc":{...}}
//	{"type":"restaurant","op":"delete","id":"r123","version":18}
//	{"type":"dish","op":"upsert","id":"d987","restaurant_id":"r123","version":5,"doc":{...}}
//	{"type":"dish","op":"delete","id":"d987","restaurant_id":"r123","version":6}
//
// Version is the source system's version of the document (type, id); it
// increases strictly with every change of that document. It is always
// encoded, even when 0, because 0 is a valid version and an omitted version
// makes the event invalid. The other fields are omitted when empty.
//
// Decoding into Event does not validate: a missing version decodes as 0, a
// "lat":"NaN" fails to decode, and unknown types or ops decode unchanged.
// The rules are in testdata/events/README.md.
type Event struct {
	Type         string          `json:"type,omitempty"`
	Op           string          `json:"op,omitempty"`
	ID           string          `json:"id,omitempty"`
	RestaurantID string          `json:"restaurant_id,omitempty"`
	Version      int64           `json:"version"`
	Location     *Location       `json:"location,omitempty"`
	Doc          json.RawMessage `json:"doc,omitempty"`
}

// Key is the event's Kafka key: the id of the restaurant it belongs to, ID
// for a restaurant and RestaurantID for a dish, so a restaurant and its
// dishes share a partition number. It is "" for any other type.
func (e Event) Key() string {
	switch e.Type {
	case TypeRestaurant:
		return e.ID
	case TypeDish:
		return e.RestaurantID
	}
	return ""
}

// RestaurantDoc is the doc of the restaurant upserts Stream produces.
type RestaurantDoc struct {
	Name       string   `json:"name"`
	Cuisines   []string `json:"cuisines"`    // 1 to 3 of Cuisines, no repeats
	City       string   `json:"city"`        // the GeoNames city it was placed around
	PriceLevel int      `json:"price_level"` // 1 ($) to 4 ($$$$)
	Rating     float64  `json:"rating"`      // 1.0 to 5.0, one decimal
}

// DishDoc is the doc of the dish upserts Stream produces.
type DishDoc struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Allergens   []string `json:"allergens"` // subset of Allergens, possibly empty
	Diets       []string `json:"diets"`     // subset of Diets, possibly empty
	PriceCents  int64    `json:"price_cents"`
}

// Message kinds. Stream labels every message with one of them; the doc
// comment of Stream defines each.
const (
	KindRestaurantUpsert = "restaurant_upsert"
	KindRestaurantUpdate = "restaurant_update"
	KindRestaurantMove   = "restaurant_move"
	KindRestaurantDelete = "restaurant_delete"
	KindDishUpsert       = "dish_upsert"
	KindDishUpdate       = "dish_update"
	KindDishDelete       = "dish_delete"
	KindReplay           = "replay"
	KindOutOfOrder       = "out_of_order"
	KindOrphanDish       = "orphan_dish"
	KindEarlyDish        = "early_dish"

	KindPoisonJSON           = "poison_json"
	KindPoisonType           = "poison_type"
	KindPoisonOp             = "poison_op"
	KindPoisonMissingID      = "poison_missing_id"
	KindPoisonMissingVersion = "poison_missing_version"
	KindPoisonLocation       = "poison_location"
	KindPoisonOversized      = "poison_oversized"
)

// ValidKinds lists the kinds of messages whose value is a valid event.
var ValidKinds = [...]string{
	KindRestaurantUpsert, KindRestaurantUpdate, KindRestaurantMove, KindRestaurantDelete,
	KindDishUpsert, KindDishUpdate, KindDishDelete,
	KindReplay, KindOutOfOrder, KindOrphanDish, KindEarlyDish,
}

// PoisonKinds lists the kinds of messages whose value is not a valid
// event; a consumer must reject them without changing any document.
var PoisonKinds = [...]string{
	KindPoisonJSON, KindPoisonType, KindPoisonOp, KindPoisonMissingID,
	KindPoisonMissingVersion, KindPoisonLocation, KindPoisonOversized,
}

// IsPoison reports whether kind is one of PoisonKinds.
func IsPoison(kind string) bool { return strings.HasPrefix(kind, "poison_") }

// Message is one Kafka record of a Stream. Key is the restaurant id the
// event belongs to (for poison values too). Kind says what the message
// tests; it is not sent to Kafka.
type Message struct {
	Topic      string
	Key, Value []byte
	Kind       string
}
