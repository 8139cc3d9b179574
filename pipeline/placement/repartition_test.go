package placement

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// nativeRestaurantID reads a native event's restaurant id as the
// pipeline's native format does: a dish's restaurant_id, a restaurant's
// own id, from an event that is valid JSON.
func nativeRestaurantID(value []byte) (string, bool) {
	var ev struct {
		Type         string `json:"type"`
		ID           string `json:"id"`
		RestaurantID string `json:"restaurant_id"`
	}
	if json.Unmarshal(value, &ev) != nil {
		return "", false
	}
	id := ev.RestaurantID
	if ev.Type == "restaurant" {
		id = ev.ID
	}
	return id, id != ""
}

// TestRekey: the repartitioned message is keyed by the restaurant id when
// the event names one, in the partition the restaurant topic's placement
// gives that id's key, keeps the value and headers, and carries its
// origin; OriginOf reads it back.
func TestRekey(t *testing.T) {
	ts := time.Unix(1700000000, 0)
	place := &Placement{parts: partitionNumbers(3), by: PartitionerCRC32, tmpl: keyTemplate{prefix: `{"id":`, suffix: `}`, quoted: true}, keyID: nativeKeyID}
	for _, tc := range []struct {
		name, value string
		key         []byte
		wantKey     string
		wantLen     int
	}{
		{"dish", `{"type":"dish","op":"upsert","id":"d1","restaurant_id":"r1","version":3,"doc":{}}`, []byte("d1"), "r1", 0},
		{"restaurant", `{"type":"restaurant","op":"delete","id":"r2","version":3}`, []byte("r2"), "r2", 0},
		{"no restaurant id", `{"type":"dish","op":"upsert","id":"d1","version":3,"doc":{}}`, []byte("d1"), "", 0},
		{"bad json, no key", `{"type"`, nil, "", 0},
		{"bad doc keeps the restaurant key", `{"type":"dish","op":"upsert","id":"d1","restaurant_id":"r1","version":3,"doc":1}`, []byte("d1"), "r1", 0},
		{"oversized", `{"type":"dish","op":"upsert","id":"d1","restaurant_id":"r1","version":3,"doc":{"n":"` + strings.Repeat("x", 200) + `"}}`, []byte("d1"), "", 101},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := kafka.Message{Topic: "dishes", Partition: 4, Offset: 77, Key: tc.key, Value: []byte(tc.value), Time: ts,
				Headers: []kafka.Header{{Key: "trace", Value: []byte("t1")}, {Key: HeaderOriginTopic, Value: []byte("forged")}}}
			out := rekey(in, 100, place, nativeRestaurantID)
			if string(out.Key) != tc.wantKey || (tc.wantKey == "" && out.Key != nil) {
				t.Errorf("key %q, want %q", out.Key, tc.wantKey)
			}
			wantPart := in.Partition % 3 // no restaurant id: the partition of its number
			if tc.wantKey != "" {
				wantPart = PartitionerCRC32.Partition([]byte(`{"id":"`+tc.wantKey+`"}`), 3)
			}
			if out.Partition != wantPart {
				t.Errorf("partition %d, want %d", out.Partition, wantPart)
			}
			if tc.wantLen > 0 {
				if len(out.Value) != tc.wantLen {
					t.Errorf("value of %d bytes, want %d", len(out.Value), tc.wantLen)
				}
			} else if string(out.Value) != tc.value {
				t.Errorf("value %s, want it unchanged", out.Value)
			}
			if !out.Time.Equal(ts) {
				t.Errorf("time %v, want the event's %v", out.Time, ts)
			}
			if len(out.Headers) == 0 || out.Headers[0].Key != "trace" {
				t.Errorf("headers %v, want the event's own first", out.Headers)
			}
			out.Topic = "dishes-by-restaurant"
			o := OriginOf(out)
			if o == nil || o.Topic != "dishes" || o.Partition != 4 || o.Offset != 77 || string(o.Key) != string(tc.key) || (tc.key == nil) != (o.Key == nil) {
				t.Errorf("origin %+v, want dishes/4@77 key %q", o, tc.key)
			}
		})
	}
	if OriginOf(kafka.Message{Headers: []kafka.Header{{Key: HeaderOriginTopic, Value: []byte("x")}}}) != nil {
		t.Error("originOf of a message with a partial origin: want nil")
	}
}
