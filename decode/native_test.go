package decode

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	big := `{"type":"dish","op":"upsert","id":"d1","restaurant_id":"r1","version":1,"doc":{"name":"` + strings.Repeat("x", 200) + `"}}`
	for _, tc := range []struct {
		name, key, value string
		want             Reason // "" for valid
	}{
		{"restaurant upsert", "r1", `{"type":"restaurant","op":"upsert","id":"r1","version":17,"location":{"lat":37.77,"lon":-122.42},"doc":{"name":"x"}}`, ""},
		{"restaurant delete", "r1", `{"type":"restaurant","op":"delete","id":"r1","version":18}`, ""},
		{"dish upsert", "r1", `{"type":"dish","op":"upsert","id":"d9","restaurant_id":"r1","version":5,"doc":{"name":"x","price_cents":1250}}`, ""},
		{"dish delete", "r1", `{"type":"dish","op":"delete","id":"d9","restaurant_id":"r1","version":6}`, ""},
		{"no key", "", `{"type":"restaurant","op":"delete","id":"r1","version":0}`, ""},
		{"leading space", "", ` {"type":"restaurant","op":"delete","id":"r1","version":1}`, ""},
		{"escaped id", "r\"1", `{"type":"restaurant","op":"delete","id":"r\"1","version":1}`, ""},
		{"location edge", "r1", `{"type":"restaurant","op":"upsert","id":"r1","version":1,"location":{"lat":-90,"lon":180},"doc":{}}`, ""},

		{"oversized value", "", big, ReasonOversized},
		{"oversized id", "", `{"type":"restaurant","op":"delete","id":"` + strings.Repeat("i", 513) + `","version":1}`, ReasonOversized},
		{"oversized restaurant id", "", `{"type":"dish","op":"delete","id":"d","restaurant_id":"` + strings.Repeat("i", 513) + `","version":1}`, ReasonOversized},
		{"not json", "", `restaurant r1`, ReasonInvalidJSON},
		{"truncated", "", `{"type":"restaurant","op":"upsert"`, ReasonInvalidJSON},
		{"array", "", `[{"type":"restaurant"}]`, ReasonInvalidJSON},
		{"empty", "", ``, ReasonInvalidJSON},
		{"unknown type", "", `{"type":"menu","op":"upsert","id":"r1","version":1}`, ReasonUnknownType},
		{"type not a string", "", `{"type":7,"op":"upsert","id":"r1","version":1}`, ReasonUnknownType},
		{"type missing", "", `{"op":"upsert","id":"r1","version":1}`, ReasonUnknownType},
		{"unknown op", "", `{"type":"dish","op":"patch","id":"d1","version":1}`, ReasonUnknownOp},
		{"op missing", "", `{"type":"dish","id":"d1","version":1}`, ReasonUnknownOp},
		{"id missing", "", `{"type":"restaurant","op":"delete","version":1}`, ReasonMissingID},
		{"id empty", "", `{"type":"restaurant","op":"delete","id":"","version":1}`, ReasonMissingID},
		{"id a number", "", `{"type":"restaurant","op":"delete","id":12,"version":1}`, ReasonMissingID},
		{"version missing", "", `{"type":"restaurant","op":"delete","id":"r1"}`, ReasonMissingVersion},
		{"version negative", "", `{"type":"restaurant","op":"delete","id":"r1","version":-1}`, ReasonMissingVersion},
		{"version fraction", "", `{"type":"restaurant","op":"delete","id":"r1","version":1.5}`, ReasonMissingVersion},
		{"version exponent", "", `{"type":"restaurant","op":"delete","id":"r1","version":1e3}`, ReasonMissingVersion},
		{"version string", "", `{"type":"restaurant","op":"delete","id":"r1","version":"7"}`, ReasonMissingVersion},
		{"version too big", "", `{"type":"restaurant","op":"delete","id":"r1","version":99999999999999999999}`, ReasonMissingVersion},
		{"version null", "", `{"type":"restaurant","op":"delete","id":"r1","version":null}`, ReasonMissingVersion},
		{"dish without restaurant", "", `{"type":"dish","op":"delete","id":"d1","version":1}`, ReasonMissingRestaurantID},
		{"dish restaurant empty", "", `{"type":"dish","op":"delete","id":"d1","restaurant_id":"","version":1}`, ReasonMissingRestaurantID},
		{"restaurant key mismatch", "r2", `{"type":"restaurant","op":"delete","id":"r1","version":1}`, ReasonKeyMismatch},
		{"dish keyed by dish id", "d1", `{"type":"dish","op":"delete","id":"d1","restaurant_id":"r1","version":1}`, ReasonKeyMismatch},
		{"location missing", "", `{"type":"restaurant","op":"upsert","id":"r1","version":1,"doc":{}}`, ReasonBadLocation},
		{"location null", "", `{"type":"restaurant","op":"upsert","id":"r1","version":1,"location":null,"doc":{}}`, ReasonBadLocation},
		{"lat out of range", "", `{"type":"restaurant","op":"upsert","id":"r1","version":1,"location":{"lat":90.5,"lon":0},"doc":{}}`, ReasonBadLocation},
		{"lon out of range", "", `{"type":"restaurant","op":"upsert","id":"r1","version":1,"location":{"lat":0,"lon":-181},"doc":{}}`, ReasonBadLocation},
		{"lat infinite", "", `{"type":"restaurant","op":"upsert","id":"r1","version":1,"location":{"lat":1e999,"lon":0},"doc":{}}`, ReasonBadLocation},
		{"lat NaN string", "", `{"type":"restaurant","op":"upsert","id":"r1","version":1,"location":{"lat":"NaN","lon":0},"doc":{}}`, ReasonBadLocation},
		{"lon missing", "", `{"type":"restaurant","op":"upsert","id":"r1","version":1,"location":{"lat":1},"doc":{}}`, ReasonBadLocation},
		{"location an array", "", `{"type":"restaurant","op":"upsert","id":"r1","version":1,"location":[1,2],"doc":{}}`, ReasonBadLocation},
		{"restaurant doc missing", "", `{"type":"restaurant","op":"upsert","id":"r1","version":1,"location":{"lat":1,"lon":1}}`, ReasonMissingDoc},
		{"dish doc a string", "", `{"type":"dish","op":"upsert","id":"d1","restaurant_id":"r1","version":1,"doc":"x"}`, ReasonMissingDoc},
		{"dish doc null", "", `{"type":"dish","op":"upsert","id":"d1","restaurant_id":"r1","version":1,"doc":null}`, ReasonMissingDoc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Decode([]byte(tc.key), []byte(tc.value), 200)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Decode(%.60s) = %v, want valid", tc.value, err)
			case tc.want != "" && err == nil:
				t.Fatalf("Decode(%.60s) = %+v, want reason %s", tc.value, c, tc.want)
			case tc.want != "" && err.Reason != tc.want:
				t.Fatalf("Decode(%.60s) reason = %s (%v), want %s", tc.value, err.Reason, err, tc.want)
			}
			if c == nil {
				t.Fatal("Decode returned a nil Change")
			}
		})
	}
}

func TestDecodeFields(t *testing.T) {
	c, err := Decode(nil, []byte(`{"type":"dish","op":"upsert","id":"d987","restaurant_id":"r123","version":5,"doc":{"name":"pad thai"},"extra":1}`), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := Change{Type: TypeDish, Op: OpUpsert, ID: "d987", RestaurantID: "r123", Version: 5, Doc: []byte(`{"name":"pad thai"}`)}
	if c.Type != want.Type || c.Op != want.Op || c.ID != want.ID || c.RestaurantID != want.RestaurantID || c.Version != want.Version || string(c.Doc) != string(want.Doc) {
		t.Errorf("Decode = %+v, want %+v", c, want)
	}
	c, err = Decode([]byte("r1"), []byte(`{"type":"restaurant","op":"upsert","id":"r1","version":17,"location":{"lat":37.77,"lon":-122.42},"doc":{}}`), 0)
	if err != nil || c.Lat != 37.77 || c.Lon != -122.42 || c.RestaurantID != "r1" {
		t.Errorf("Decode restaurant = %+v, %v", c, err)
	}
	// Labels survive a later defect.
	c, err = Decode(nil, []byte(`{"type":"dish","op":"delete","id":"d1","version":-1}`), 0)
	if err == nil || c.Type != TypeDish || c.Op != OpDelete {
		t.Errorf("Decode with a bad version = %+v, %v; want type and op kept", c, err)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("r1"), []byte(`{"type":"restaurant","op":"upsert","id":"r1","version":17,"location":{"lat":37.77,"lon":-122.42},"doc":{"name":"x"}}`))
	f.Add([]byte(""), []byte(`{"type":"dish","op":"delete","id":"d9","restaurant_id":"r1","version":6}`))
	f.Add([]byte(""), []byte(`{"type":"dish","op":"upsert","id":"d9","restaurant_id":"r1","version":6,"doc":{"a\u0072elation":1}}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, err := Decode(key, value, 1<<16)
		if c == nil {
			t.Fatal("nil Change")
		}
		if err != nil {
			return
		}
		if c.ID == "" || c.RestaurantID == "" || c.Version < 0 {
			t.Fatalf("valid event %+v has an empty id or a negative version", c)
		}
		// What the pipeline makes of the document is fuzzed there
		// (pipeline.FuzzDecodeBody).
		if doc := bytes.TrimSpace(c.Doc); c.Op == OpUpsert && (!json.Valid(doc) || doc[0] != '{') {
			t.Fatalf("valid upsert's doc %s is not a JSON object", c.Doc)
		}
	})
}
