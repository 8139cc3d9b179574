package decode

import "fmt"

// Reason is a dead-letter reason code: a bounded set, used as the
// geoshard-reason header and as a metric label.
type Reason string

// Reasons.
const (
	ReasonInvalidJSON         Reason = "invalid_json"          // the value is not a JSON object
	ReasonUnknownType         Reason = "unknown_type"          // type is not restaurant or dish
	ReasonUnknownOp           Reason = "unknown_op"            // op is not upsert or delete
	ReasonMissingID           Reason = "missing_id"            // id absent, empty or not a string
	ReasonMissingVersion      Reason = "missing_version"       // version absent, negative or not an integer
	ReasonBadLocation         Reason = "bad_location"          // restaurant upsert without a valid lat/lon
	ReasonMissingRestaurantID Reason = "missing_restaurant_id" // dish without restaurant_id
	ReasonMissingDoc          Reason = "missing_doc"           // upsert whose doc is not an object
	ReasonOversized           Reason = "oversized"             // value over MaxEventBytes, or an id over 512 bytes
	ReasonKeyMismatch         Reason = "key_mismatch"          // Kafka key present and not the restaurant id
	ReasonUnknownRestaurant   Reason = "unknown_restaurant"    // dish waited past its bound for its restaurant
	ReasonRejected            Reason = "rejected"              // OpenSearch rejected the write for good
)

// Reasons lists every reason code, for metrics initialisation and docs.
var Reasons = []Reason{
	ReasonInvalidJSON, ReasonUnknownType, ReasonUnknownOp, ReasonMissingID, ReasonMissingVersion,
	ReasonBadLocation, ReasonMissingRestaurantID, ReasonMissingDoc, ReasonOversized, ReasonKeyMismatch,
	ReasonUnknownRestaurant, ReasonRejected,
}

// InvalidEventError is why an event cannot be processed.
type InvalidEventError struct {
	Reason Reason
	Detail string
}

func (e *InvalidEventError) Error() string { return string(e.Reason) + ": " + e.Detail }

func invalid(r Reason, format string, args ...any) *InvalidEventError {
	return &InvalidEventError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}
