package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/pipeline/placement"
)

// Event types and operations, as they appear in events and in metric
// labels.
const (
	TypeRestaurant = "restaurant"
	TypeDish       = "dish"
	OpUpsert       = "upsert"
	OpDelete       = "delete"
	// labelUnknown is the type or op label of an event too broken to have
	// a valid one, so labels stay bounded.
	labelUnknown = "unknown"
)

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

// eventFormat is how a Format reads events. The decoder decodes every
// message through it, the repartitioner reads dish events' restaurant ids
// through it, and the partitioner detection (placement/placement.go) reads
// restaurant keys back to restaurant ids through its keyID.
type eventFormat interface {
	// decode decodes a message of topic. skip reports a message that
	// finishes with no write and no dead letter (a Debezium tombstone);
	// its Change then holds labels only.
	decode(topic string, key, value []byte, maxBytes int) (c *Change, skip bool, bad *InvalidEventError)
	// keyID is the restaurant id a restaurant event's Kafka key names:
	// the key itself for native events, the key row's id column for
	// Debezium's ({"id":42} → "42"). ok is false for a key naming none.
	keyID(key []byte) (id string, ok bool)
	// restaurantID is a dish event's restaurant id, read from its value;
	// ok is false when it cannot be read.
	restaurantID(value []byte) (id string, ok bool)
}

// newEventFormat returns the reader of cfg.Format; cfg has its defaults
// (withDefaults) and a Mapping under FormatDebezium.
func newEventFormat(cfg Config) eventFormat {
	if cfg.Format == FormatDebezium && cfg.Mapping != nil {
		return newDebezium(cfg.Mapping, cfg.RestaurantTopic)
	}
	return nativeFormat{}
}

// nativeFormat reads geoshard's own events (Decode).
type nativeFormat struct{}

func (nativeFormat) decode(_ string, key, value []byte, maxBytes int) (*Change, bool, *InvalidEventError) {
	c, bad := Decode(key, value, maxBytes)
	return c, false, bad
}

func (nativeFormat) keyID(key []byte) (string, bool) { return string(key), len(key) > 0 }

func (nativeFormat) restaurantID(value []byte) (string, bool) {
	c, _ := Decode(nil, value, 0)
	return c.RestaurantID, c.RestaurantID != ""
}

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
	// restaurant is found without it too (reparent.go), later.
	FormerRestaurantID string
	// First says the source knows no earlier version of the document: an
	// INSERT (Debezium op c), or in the native format a version of 0 or 1,
	// where a producer's counter starts. A dish write of a first version
	// is not checked for copies elsewhere (reparent.go).
	First bool
	// Version is the source system's version of the document.
	Version int64
	// Lat and Lon are a restaurant upsert's location.
	Lat, Lon float64
	// Doc is an upsert's document object, raw.
	Doc json.RawMessage
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

// wireEvent is the JSON shape of an event. Every field is raw so that a
// value of the wrong type is reported with its own reason, not as
// invalid JSON.
type wireEvent struct {
	Type         json.RawMessage `json:"type"`
	Op           json.RawMessage `json:"op"`
	ID           json.RawMessage `json:"id"`
	RestaurantID json.RawMessage `json:"restaurant_id"`
	// FormerRestaurantID is optional: a dish's restaurant before this
	// change, for producers that know it.
	FormerRestaurantID json.RawMessage `json:"former_restaurant_id"`
	Version            json.RawMessage `json:"version"`
	Location           json.RawMessage `json:"location"`
	Doc                json.RawMessage `json:"doc"`
}

// Decode decodes and validates an event value. key is the Kafka key (nil
// or empty: none). maxBytes bounds the value (0: no bound). The checks run
// in a fixed order, so an event with several defects always gets the same
// reason: size, JSON, type, op, id, version, restaurant id, key, location,
// doc. On error the returned Change holds what was read so far (Type and
// Op once they are valid), for metric labels.
func Decode(key, value []byte, maxBytes int) (*Change, *InvalidEventError) {
	c := &Change{}
	if err := decode(c, key, value, maxBytes); err != nil {
		return c, err
	}
	return c, nil
}

func decode(c *Change, key, value []byte, maxBytes int) *InvalidEventError {
	if maxBytes > 0 && len(value) > maxBytes {
		return invalid(ReasonOversized, "value of %d bytes exceeds %d", len(value), maxBytes)
	}
	trimmed := bytes.TrimLeft(value, " \t\r\n")
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return invalid(ReasonInvalidJSON, "value is not a JSON object")
	}
	var w wireEvent
	if err := json.Unmarshal(value, &w); err != nil {
		return invalid(ReasonInvalidJSON, "%v", err)
	}
	var ok bool
	if c.Type, ok = jsonString(w.Type); !ok || (c.Type != TypeRestaurant && c.Type != TypeDish) {
		c.Type = ""
		return invalid(ReasonUnknownType, "type %s: want \"restaurant\" or \"dish\"", clip(w.Type))
	}
	if c.Op, ok = jsonString(w.Op); !ok || (c.Op != OpUpsert && c.Op != OpDelete) {
		c.Op = ""
		return invalid(ReasonUnknownOp, "op %s: want \"upsert\" or \"delete\"", clip(w.Op))
	}
	if c.ID, ok = jsonString(w.ID); !ok || c.ID == "" {
		return invalid(ReasonMissingID, "id %s: want a non-empty string", clip(w.ID))
	}
	if len(c.ID) > MaxIDBytes {
		return invalid(ReasonOversized, "id of %d bytes exceeds %d", len(c.ID), MaxIDBytes)
	}
	v, err := strconv.ParseInt(string(w.Version), 10, 64)
	if err != nil || v < 0 {
		return invalid(ReasonMissingVersion, "version %s: want an integer >= 0", clip(w.Version))
	}
	c.Version = v
	c.First = v <= 1
	if c.Type == TypeDish {
		if c.RestaurantID, ok = jsonString(w.RestaurantID); !ok || c.RestaurantID == "" {
			return invalid(ReasonMissingRestaurantID, "restaurant_id %s: want a non-empty string", clip(w.RestaurantID))
		}
		if len(c.RestaurantID) > MaxIDBytes {
			return invalid(ReasonOversized, "restaurant_id of %d bytes exceeds %d", len(c.RestaurantID), MaxIDBytes)
		}
		if len(w.FormerRestaurantID) > 0 && string(w.FormerRestaurantID) != "null" {
			if c.FormerRestaurantID, ok = jsonString(w.FormerRestaurantID); !ok || len(c.FormerRestaurantID) > MaxIDBytes {
				return invalid(ReasonMissingRestaurantID, "former_restaurant_id %s: want a string id, or no field", clip(w.FormerRestaurantID))
			}
		}
	} else {
		c.RestaurantID = c.ID
	}
	if len(key) > 0 && string(key) != c.RestaurantID {
		return invalid(ReasonKeyMismatch, "key %q is not the restaurant id %q", clip(key), c.RestaurantID)
	}
	if c.Op == OpDelete {
		return nil
	}
	if c.Type == TypeRestaurant {
		lat, lon, err := parseLocation(w.Location)
		if err != nil {
			return invalid(ReasonBadLocation, "%v", err)
		}
		c.Lat, c.Lon = lat, lon
	}
	doc := bytes.TrimSpace(w.Doc)
	if len(doc) == 0 || doc[0] != '{' {
		return invalid(ReasonMissingDoc, "doc %s: want an object", clip(w.Doc))
	}
	c.Doc = doc
	return nil
}

// jsonString decodes a JSON string; ok is false for anything else.
func jsonString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw[1:len(raw)-1], '\\') < 0 {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// parseLocation reads {"lat":..,"lon":..}: both finite numbers in range.
// Numbers too large for a float64 (1e999) parse as ±Inf and are refused
// here rather than as invalid JSON.
func parseLocation(raw json.RawMessage) (lat, lon float64, err error) {
	var loc struct {
		Lat json.RawMessage `json:"lat"`
		Lon json.RawMessage `json:"lon"`
	}
	if len(raw) == 0 || string(raw) == "null" {
		return 0, 0, fmt.Errorf("location missing")
	}
	if raw[0] != '{' || json.Unmarshal(raw, &loc) != nil {
		return 0, 0, fmt.Errorf("location %s: want {\"lat\":..,\"lon\":..}", clip(raw))
	}
	num := func(name string, r json.RawMessage, limit float64) (float64, error) {
		if len(r) == 0 || r[0] == '"' || r[0] == 'n' || r[0] == 't' || r[0] == 'f' || r[0] == '{' || r[0] == '[' {
			return 0, fmt.Errorf("location %s %s: want a number", name, clip(r))
		}
		f, err := strconv.ParseFloat(string(r), 64)
		if (err != nil && f == 0) || math.IsNaN(f) || math.IsInf(f, 0) || f < -limit || f > limit {
			return 0, fmt.Errorf("location %s %s: want a finite number in [-%v, %v]", name, clip(r), limit, limit)
		}
		return f, nil
	}
	if lat, err = num("lat", loc.Lat, 90); err != nil {
		return 0, 0, err
	}
	if lon, err = num("lon", loc.Lon, 180); err != nil {
		return 0, 0, err
	}
	return lat, lon, nil
}

// clip shortens a value for an error message.
func clip(b []byte) string {
	if len(b) == 0 {
		return "(absent)"
	}
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}

// decoder decodes the fetched messages, in order, beside the fetch and
// the processing loop: it needs none of the loop's state.
type decoder struct {
	cfg Config
	log *slog.Logger
	// format reads the events (newEventFormat(cfg)).
	format eventFormat
	// placement, under DishKeyDish, knows or learns where the
	// repartitioner places dishes: once it is known, a restaurant event
	// elsewhere stops the pipeline through fail (nil: not checked). Set
	// before Run starts the decoder.
	placement *placement.Placer
	fail      func(error)
	misplaced atomic.Int64
}

// run decodes the fetched messages and hands them to the processing
// loop until in closes or ctx ends.
func (d *decoder) run(ctx context.Context, in <-chan fetched, out chan<- fetched) {
	defer close(out)
	for f := range in {
		if f.start != nil {
			select {
			case out <- f:
				continue
			case <-ctx.Done():
				return
			}
		}
		f.dec = d.decode(f.msg)
		if d.placement != nil && f.msg.Topic == d.cfg.RestaurantTopic && !d.checkPlacement(f.msg) {
			return // stopped: the event is not handed on, so not committed
		}
		select {
		case out <- f:
		case <-ctx.Done():
			return
		}
	}
}

// decode reads a message's change.
func (d *decoder) decode(m kafka.Message) decoded {
	var o *placement.Origin
	if d.cfg.DishKey == DishKeyDish && m.Topic == d.cfg.RepartitionTopic {
		o = placement.OriginOf(m)
	}
	c, skip, bad := d.format.decode(m.Topic, m.Key, m.Value, d.cfg.MaxEventBytes)
	if bad != nil {
		return decoded{change: c, reason: bad.Reason, detail: bad.Error(), origin: o}
	}
	if skip {
		return decoded{change: c, skip: true, origin: o}
	}
	out := decoded{change: c, origin: o}
	if c.Op == OpUpsert {
		members, err := docMembers(c.Doc)
		if err != nil {
			return decoded{change: c, reason: ReasonInvalidJSON, detail: "doc: " + err.Error(), origin: o}
		}
		out.members = members
	}
	return out
}

// checkPlacement reports whether a restaurant-topic message is where the
// placement puts it, or the placement is not yet known (no dish has been
// forwarded by it); if not, it stops the pipeline with why
// (placement.Placement.Check says why it stops rather than dead-letters).
func (d *decoder) checkPlacement(m kafka.Message) bool {
	k := d.placement.Current()
	if k == nil {
		return true
	}
	err := k.Check(m)
	if err == nil {
		return true
	}
	d.misplaced.Add(1)
	d.fail(err)
	return false
}

// event is one fetched message on its way through the pipeline.
type event struct {
	part   partKey
	offset int64
	key    []byte
	value  []byte
	ts     time.Time // the Kafka message timestamp
	entry  *trackEntry
	change *Change
	// members are an upsert's doc members, reserved fields stripped.
	members []byte
	// origin is where a repartitioned event was in the dish topic (nil
	// for any other).
	origin *placement.Origin

	// rid is the restaurant the event belongs to: its own id, or its
	// dish's restaurant's.
	rid string
	// flying: the indexer counts the event's writes in flight (fly).
	flying bool
	// gen is the consumer-group generation the event was taken in: no
	// decision of it is made once that generation has ended (fence.go).
	gen int64
	// parkedAt is when the dish was parked to wait for its restaurant
	// (parking.go); zero if it never was. Set on the loop before the
	// event reaches another goroutine.
	parkedAt time.Time
	// targets are, for a dish event, the targets it was written to; the
	// spread of its writes reads them (reparent.go).
	targets []target

	mu          sync.Mutex
	outstanding int    // writes not yet answered
	result      string // the first successful write's result label
	rejected    error  // a permanent error of one of its writes
	failed      bool   // a write failed for good: the event never finishes
	// cut: a step its decision needed after a write was not taken, its
	// generation having ended (fence.go): the event never finishes here.
	cut bool
	// settled, if set, runs on the loop once every write of the event is
	// answered (whatever the answers).
	settled func(context.Context) error
}

func (ev *event) labels() (typ, op string) {
	typ, op = labelUnknown, labelUnknown
	if ev.change != nil {
		if ev.change.Type != "" {
			typ = ev.change.Type
		}
		if ev.change.Op != "" {
			op = ev.change.Op
		}
	}
	return typ, op
}

// expect counts n writes about to be added for ev.
func (ev *event) expect(n int) {
	ev.mu.Lock()
	ev.outstanding += n
	ev.mu.Unlock()
}
