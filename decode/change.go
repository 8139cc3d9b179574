package decode

import "encoding/json"

// Event types and operations, as they appear in events and in metric
// labels.
const (
	TypeRestaurant = "restaurant"
	TypeDish       = "dish"
	OpUpsert       = "upsert"
	OpDelete       = "delete"
)

// MaxIDBytes is the longest id (or restaurant id) accepted, in bytes:
// OpenSearch refuses an _id over 512 bytes.
const MaxIDBytes = 512

// Change is a decoded, valid event.
type Change struct {
	Type string // TypeRestaurant or TypeDish
	Op   string // OpUpsert or OpDelete
	// ID is the restaurant's or the dish's source id.
	ID string
	// RestaurantID is the dish's restaurant; for a restaurant, its own id.
	RestaurantID string
	// FormerRestaurantID is, for a dish, the restaurant it had before this
	// change when the source says so (a change-data-capture event's before
	// image); "" when the source does not say. A dish that changes
	// restaurant is found without it too (pipeline/reparent.go), later.
	FormerRestaurantID string
	// First says the source knows no earlier version of the document: an
	// INSERT (Debezium op c), or in the native format a version of 0 or 1,
	// where a producer's counter starts. A dish write of a first version
	// is not checked for copies elsewhere (pipeline/reparent.go).
	First bool
	// Version is the source system's version of the document.
	Version int64
	// Lat and Lon are a restaurant upsert's location.
	Lat, Lon float64
	// Doc is an upsert's document object, raw.
	Doc json.RawMessage
}
