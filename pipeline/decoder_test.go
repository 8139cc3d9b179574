package pipeline

import (
	"testing"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/dbztest"
)

// checkBody fails t unless a valid change's document becomes a valid
// index document: its members (docMembers) and a dish body of them.
func checkBody(t *testing.T, c *decode.Change) {
	t.Helper()
	if c.ID == "" || c.RestaurantID == "" || c.Version < 0 {
		t.Fatalf("valid event %+v has an empty id or a negative version", c)
	}
	if c.Op != decode.OpUpsert {
		return
	}
	members, err := docMembers(c.Doc)
	if err != nil {
		t.Fatalf("docMembers(%s) = %v", c.Doc, err)
	}
	body := dishBody(members, c.ID, c.RestaurantID, c.Version, 0x89c25c0000000000|1<<40, 10)
	if !jsonValid(body) {
		t.Fatalf("dish body %s is not valid JSON", body)
	}
}

// FuzzDecodeBody: every native event decode.Decode accepts makes a valid
// document (decode.FuzzDecode fuzzes the decoding itself).
func FuzzDecodeBody(f *testing.F) {
	f.Add([]byte("r1"), []byte(`{"type":"restaurant","op":"upsert","id":"r1","version":17,"location":{"lat":37.77,"lon":-122.42},"doc":{"name":"x"}}`))
	f.Add([]byte(""), []byte(`{"type":"dish","op":"delete","id":"d9","restaurant_id":"r1","version":6}`))
	f.Add([]byte(""), []byte(`{"type":"dish","op":"upsert","id":"d9","restaurant_id":"r1","version":6,"doc":{"a\u0072elation":1}}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		c, err := decode.Decode(key, value, 1<<16)
		if c == nil {
			t.Fatal("nil Change")
		}
		if err != nil {
			return
		}
		checkBody(t, c)
	})
}

// FuzzDecodeDebeziumBody: every Debezium event the decoder accepts, under
// either mapping, makes a valid document (decode.FuzzDecodeDebezium
// fuzzes the decoding itself).
func FuzzDecodeDebeziumBody(f *testing.F) {
	for _, s := range dbztest.Seeds(f, "../decode/testdata/debezium") {
		f.Add(s.Dish, s.Key, s.Value)
	}
	var ds []decode.Decoder
	for _, mapping := range []string{dbztest.Mapping, dbztest.CapturedMapping} {
		m, err := decode.ParseMapping([]byte(mapping))
		if err != nil {
			f.Fatal(err)
		}
		ds = append(ds, decode.New(decode.FormatDebezium, m, dbztest.RestaurantTopic))
	}
	f.Fuzz(func(t *testing.T, dish bool, key, value []byte) {
		topic := dbztest.RestaurantTopic
		if dish {
			topic = dbztest.DishTopic
		}
		for _, d := range ds {
			c, skip, bad := d.Decode(topic, key, value, 1<<16)
			if c == nil {
				t.Fatal("nil Change")
			}
			if bad != nil || skip {
				continue
			}
			checkBody(t, c)
		}
	})
}
