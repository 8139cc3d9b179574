package decode

// The native format: geoshard's own events, one JSON object per message,
// keyed by restaurant id.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// nativeFormat reads geoshard's own events (Decode).
type nativeFormat struct{}

func (nativeFormat) Decode(_ string, key, value []byte, maxBytes int) (*Change, bool, *InvalidEventError) {
	c, bad := Decode(key, value, maxBytes)
	return c, false, bad
}

func (nativeFormat) KeyID(key []byte) (string, bool) { return string(key), len(key) > 0 }

func (nativeFormat) RestaurantID(value []byte) (string, bool) {
	c, _ := Decode(nil, value, 0)
	return c.RestaurantID, c.RestaurantID != ""
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
