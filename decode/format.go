package decode

// Format is the shape of the events in the event topics.
type Format string

const (
	// FormatNative: geoshard's own events (Decode), keyed by restaurant id.
	FormatNative Format = "native"
	// FormatDebezium: Debezium change events of two source tables, read
	// through a Mapping (debezium.go).
	FormatDebezium Format = "debezium"
)

// Valid reports whether f is a known format.
func (f Format) Valid() bool { return f == FormatNative || f == FormatDebezium }

// Decoder is how a Format reads events. The pipeline's decoder stage
// decodes every message through it, the repartitioner reads dish events'
// restaurant ids through it, and the partitioner detection reads
// restaurant keys back to restaurant ids through its KeyID.
type Decoder interface {
	// Decode decodes a message of topic. skip reports a message that
	// finishes with no write and no dead letter (a Debezium tombstone);
	// its Change then holds labels only.
	Decode(topic string, key, value []byte, maxBytes int) (c *Change, skip bool, bad *InvalidEventError)
	// KeyID is the restaurant id a restaurant event's Kafka key names:
	// the key itself for native events, the key row's id column for
	// Debezium's ({"id":42} → "42"). ok is false for a key naming none.
	KeyID(key []byte) (id string, ok bool)
	// RestaurantID is a dish event's restaurant id, read from its value;
	// ok is false when it cannot be read.
	RestaurantID(value []byte) (id string, ok bool)
}

// New returns the reader of format f: the Debezium decoder when f is
// FormatDebezium and m is not nil, the native one otherwise. m must be
// valid (Mapping.Validate); restaurantTopic is the topic whose events are
// restaurants (every other topic's are dishes), read under
// FormatDebezium only.
func New(f Format, m *Mapping, restaurantTopic string) Decoder {
	if f == FormatDebezium && m != nil {
		return newDebezium(m, restaurantTopic)
	}
	return nativeFormat{}
}
