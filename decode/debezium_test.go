package decode_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"reflect"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/dbztest"
)

// capturedDir holds the captured events (dbztest.CapturedEvents).
const capturedDir = "testdata/debezium"

func testDebezium(t testing.TB, mapping string) decode.Decoder {
	t.Helper()
	m, err := decode.ParseMapping([]byte(mapping))
	if err != nil {
		t.Fatal(err)
	}
	return decode.New(decode.FormatDebezium, m, dbztest.RestaurantTopic)
}

// TestDecodeDebezium: every op, both key shapes and both value shapes,
// tombstones and messages, before images, decimals, and every bad
// envelope with its reason.
func TestDecodeDebezium(t *testing.T) {
	restaurant := func(op, before, after string) string {
		return dbztest.Value("restaurants", op, before, after, 24023128)
	}
	dish := func(op, before, after string) string { return dbztest.Value("dishes", op, before, after, 24023200) }
	nopa := decode.Change{Type: decode.TypeRestaurant, Op: decode.OpUpsert, ID: "42", RestaurantID: "42", Version: 24023128, Lat: 37.7749, Lon: -122.4194, Doc: []byte(dbztest.NopaDoc)}
	burrata := decode.Change{Type: decode.TypeDish, Op: decode.OpUpsert, ID: "7", RestaurantID: "42", Version: 24023200, Doc: []byte(dbztest.DishDoc)}
	with := func(c decode.Change, f func(*decode.Change)) decode.Change { f(&c); return c }
	precise := `{"id":42,"title":"Nopa","rating":"Lw==","latitude":"` + dbztest.Unscaled(37774900) + `","longitude":"` + dbztest.Unscaled(-122419400) + `"}`

	for _, tc := range []struct {
		name         string
		dish         bool // the repartition topic's; else the restaurant topic's
		key, value   string
		want         decode.Change
		skip         bool
		reason       decode.Reason
		detailSubstr string
	}{
		{name: "insert", key: `{"id":42}`, value: restaurant("c", "", dbztest.NopaRow), want: nopa},
		{name: "update", key: `{"id":42}`, value: restaurant("u", "", dbztest.NopaRow), want: nopa},
		{name: "snapshot read", key: `{"id":42}`, value: restaurant("r", "", dbztest.NopaRow), want: nopa},
		{name: "no key", value: restaurant("c", "", dbztest.NopaRow), want: nopa},
		{name: "key in the schema envelope", key: dbztest.WithSchema(`{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false,"name":"pg.public.restaurants.Key"}`, `{"id":42}`),
			value: restaurant("c", "", dbztest.NopaRow), want: nopa},
		{name: "value in the schema envelope", key: `{"id":42}`, value: dbztest.WithSchema(dbztest.RestaurantSchema(""), restaurant("c", "", dbztest.NopaRow)), want: nopa},
		{name: "string id", key: `{"id":"r-42"}`, value: restaurant("c", "", strings.Replace(dbztest.NopaRow, `"id":42`, `"id":"r-42"`, 1)),
			want: with(nopa, func(c *decode.Change) {
				c.ID, c.RestaurantID, c.Doc = "r-42", "r-42", []byte(strings.Replace(dbztest.NopaDoc, `"id":42`, `"id":"r-42"`, 1))
			})},
		{name: "delete, key-only before", key: `{"id":42}`, value: restaurant("d", `{"id":42,"title":"","latitude":0,"longitude":0}`, ""),
			want: decode.Change{Type: decode.TypeRestaurant, Op: decode.OpDelete, ID: "42", RestaurantID: "42", Version: 24023128}},
		{name: "delete without before, id from key", key: `{"id":42}`, value: restaurant("d", "", ""),
			want: decode.Change{Type: decode.TypeRestaurant, Op: decode.OpDelete, ID: "42", RestaurantID: "42", Version: 24023128}},
		{name: "tombstone", key: `{"id":42}`, value: "", skip: true, want: decode.Change{Type: decode.TypeRestaurant, Op: decode.OpDelete}},
		{name: "tombstone null", key: `{"id":42}`, value: "null", skip: true, want: decode.Change{Type: decode.TypeRestaurant, Op: decode.OpDelete}},
		{name: "tombstone in the schema envelope", key: `{"id":42}`, value: `{"schema":null,"payload":null}`, skip: true, want: decode.Change{Type: decode.TypeRestaurant, Op: decode.OpDelete}},
		{name: "dish tombstone", dish: true, value: "", skip: true, want: decode.Change{Type: decode.TypeDish, Op: decode.OpDelete}},
		{name: "logical decoding message", value: `{"op":"m","ts_ms":1,"source":{"lsn":5},"message":{"prefix":"x","content":"eA=="}}`, skip: true,
			want: decode.Change{Type: decode.TypeRestaurant}},

		{name: "numeric, precise, with the schema", key: `{"id":42}`, value: dbztest.WithSchema(dbztest.RestaurantSchema(""), restaurant("c", "", precise)),
			want: with(nopa, func(c *decode.Change) {
				c.Lat, c.Lon, c.Doc = 37.7749, -122.4194, []byte(`{"id":42,"name":"Nopa","rating":4.7}`)
			})},
		{name: "numeric as strings", key: `{"id":42}`, value: restaurant("c", "", `{"id":42,"latitude":"37.774900","longitude":"-122.419400","rating":"4.7"}`),
			want: with(nopa, func(c *decode.Change) { c.Doc = []byte(`{"id":42,"rating":"4.7"}`) })},
		{name: "numeric without scale, precise", key: `{"id":42}`,
			value: restaurant("c", "", `{"id":42,"latitude":{"scale":4,"value":"`+dbztest.Unscaled(377749)+`"},"longitude":{"scale":4,"value":"`+dbztest.Unscaled(-1224194)+`"},"rating":{"scale":1,"value":"Lw=="}}`),
			want:  with(nopa, func(c *decode.Change) { c.Doc = []byte(`{"id":42,"rating":4.7}`) })},

		{name: "dish insert keyed by restaurant", dish: true, key: "42", value: dish("c", "", dbztest.DishRow), want: burrata},
		{name: "dish keyed like the restaurant topic", dish: true, key: `{"id":42}`, value: dish("c", "", dbztest.DishRow), want: burrata},
		{name: "dish without key", dish: true, value: dish("c", "", dbztest.DishRow), want: burrata},
		{name: "dish moved to another restaurant", dish: true, value: dish("u", strings.Replace(dbztest.DishRow, `"restaurant_id":42`, `"restaurant_id":41`, 1), dbztest.DishRow),
			want: with(burrata, func(c *decode.Change) { c.FormerRestaurantID = "41" })},
		{name: "dish update, same restaurant", dish: true, value: dish("u", dbztest.DishRow, dbztest.DishRow), want: burrata},
		{name: "dish delete, replica identity full", dish: true, key: "42", value: dish("d", dbztest.DishRow, ""),
			want: decode.Change{Type: decode.TypeDish, Op: decode.OpDelete, ID: "7", RestaurantID: "42", Version: 24023200}},
		{name: "unchanged TOAST value from the before image", dish: true, value: dish("u", strings.Replace(dbztest.ToastRow, "__debezium_unavailable_value", "long notes", 1), dbztest.ToastRow),
			want: with(burrata, func(c *decode.Change) { c.Doc = []byte(`{"id":7,"name":"burrata","notes":"long notes"}`) })},

		{name: "oversized", value: restaurant("c", "", strings.Replace(dbztest.NopaRow, "Nopa", strings.Repeat("n", 4000), 1)), reason: decode.ReasonOversized},
		{name: "oversized id", value: restaurant("c", "", strings.Replace(dbztest.NopaRow, `"id":42`, `"id":"`+strings.Repeat("i", 513)+`"`, 1)), reason: decode.ReasonOversized},
		{name: "not JSON", value: "restaurant 42", reason: decode.ReasonInvalidJSON},
		{name: "truncated", value: restaurant("c", "", dbztest.NopaRow)[:80], reason: decode.ReasonInvalidJSON},
		{name: "array", value: "[" + restaurant("c", "", dbztest.NopaRow) + "]", reason: decode.ReasonInvalidJSON},
		{name: "schema without payload", value: `{"schema":{"type":"struct"}}`, reason: decode.ReasonInvalidJSON},
		{name: "payload not an object", value: `{"schema":{"type":"struct"},"payload":"c"}`, reason: decode.ReasonInvalidJSON},
		{name: "source not an object", value: `{"op":"c","after":` + dbztest.NopaRow + `,"source":"pg"}`, reason: decode.ReasonInvalidJSON},
		{name: "not an envelope", value: dbztest.NopaRow, reason: decode.ReasonUnknownOp, detailSubstr: "ExtractNewRecordState"},
		{name: "no op", value: strings.Replace(restaurant("c", "", dbztest.NopaRow), `"op":"c",`, "", 1), reason: decode.ReasonUnknownOp},
		{name: "unknown op", value: restaurant("x", "", dbztest.NopaRow), reason: decode.ReasonUnknownOp},
		{name: "op not a string", value: strings.Replace(restaurant("c", "", dbztest.NopaRow), `"op":"c"`, `"op":1`, 1), reason: decode.ReasonUnknownOp},
		{name: "truncate", value: restaurant("t", "", ""), reason: decode.ReasonUnknownOp, detailSubstr: "TRUNCATE"},
		{name: "another table", value: dbztest.Value("orders", "c", "", dbztest.NopaRow, 1), reason: decode.ReasonUnknownType},
		{name: "dish table in the restaurant topic", value: dish("c", "", dbztest.DishRow), reason: decode.ReasonUnknownType},
		{name: "insert without after", value: restaurant("c", "", ""), reason: decode.ReasonMissingDoc},
		{name: "update with after a string", value: restaurant("u", "", `"row"`), reason: decode.ReasonMissingDoc},
		{name: "delete with before a number", value: restaurant("d", "7", ""), reason: decode.ReasonMissingDoc},
		{name: "TOAST placeholder without before", dish: true, value: dish("u", "", dbztest.ToastRow), reason: decode.ReasonMissingDoc, detailSubstr: "REPLICA IDENTITY FULL"},
		{name: "id column missing", value: restaurant("c", "", `{"title":"x","latitude":1,"longitude":1}`), reason: decode.ReasonMissingID},
		{name: "id null", value: restaurant("c", "", `{"id":null,"latitude":1,"longitude":1}`), reason: decode.ReasonMissingID},
		{name: "id a fraction", value: restaurant("c", "", `{"id":4.2,"latitude":1,"longitude":1}`), reason: decode.ReasonMissingID},
		{name: "id empty", value: restaurant("c", "", `{"id":"","latitude":1,"longitude":1}`), reason: decode.ReasonMissingID},
		{name: "id a boolean", value: restaurant("c", "", `{"id":true,"latitude":1,"longitude":1}`), reason: decode.ReasonMissingID},
		{name: "lsn missing", value: strings.Replace(restaurant("c", "", dbztest.NopaRow), `"lsn":24023128,`, "", 1), reason: decode.ReasonMissingVersion},
		{name: "lsn negative", value: dbztest.Value("restaurants", "c", "", dbztest.NopaRow, -5), reason: decode.ReasonMissingVersion},
		{name: "lsn a fraction", value: dbztest.Value("restaurants", "c", "", dbztest.NopaRow, 1.5), reason: decode.ReasonMissingVersion},
		{name: "lsn a string", value: dbztest.Value("restaurants", "c", "", dbztest.NopaRow, `"24023128"`), reason: decode.ReasonMissingVersion},
		{name: "lsn too big", value: dbztest.Value("restaurants", "c", "", dbztest.NopaRow, "99999999999999999999"), reason: decode.ReasonMissingVersion},
		{name: "dish without restaurant id", dish: true, value: dish("c", "", `{"id":7,"name":"x"}`), reason: decode.ReasonMissingRestaurantID},
		{name: "dish restaurant id null", dish: true, value: dish("c", "", `{"id":7,"restaurant_id":null}`), reason: decode.ReasonMissingRestaurantID},
		{name: "dish delete, default replica identity", dish: true, value: dish("d", `{"id":7,"restaurant_id":0,"name":""}`, ""),
			reason: decode.ReasonMissingRestaurantID, detailSubstr: "ALTER TABLE public.dishes REPLICA IDENTITY FULL"},
		{name: "dish delete, before without the column", dish: true, value: dish("d", `{"id":7}`, ""), reason: decode.ReasonMissingRestaurantID, detailSubstr: "REPLICA IDENTITY FULL"},
		{name: "restaurant key names another id", key: `{"id":43}`, value: restaurant("c", "", dbztest.NopaRow), reason: decode.ReasonKeyMismatch},
		{name: "restaurant key without the id column", key: `{"uuid":42}`, value: restaurant("c", "", dbztest.NopaRow), reason: decode.ReasonKeyMismatch},
		{name: "dish keyed by another restaurant", dish: true, key: "41", value: dish("c", "", dbztest.DishRow), reason: decode.ReasonKeyMismatch},
		{name: "dish keyed by dish id", dish: true, key: dbztest.DishKeyed, value: dish("c", "", dbztest.DishRow), reason: decode.ReasonKeyMismatch},
		{name: "latitude missing", value: restaurant("c", "", `{"id":42,"longitude":1}`), reason: decode.ReasonBadLocation},
		{name: "latitude null", value: restaurant("c", "", `{"id":42,"latitude":null,"longitude":1}`), reason: decode.ReasonBadLocation},
		{name: "latitude out of range", value: restaurant("c", "", `{"id":42,"latitude":90.5,"longitude":1}`), reason: decode.ReasonBadLocation},
		{name: "longitude out of range", value: restaurant("c", "", `{"id":42,"latitude":1,"longitude":-181}`), reason: decode.ReasonBadLocation},
		{name: "latitude infinite", value: restaurant("c", "", `{"id":42,"latitude":1e999,"longitude":1}`), reason: decode.ReasonBadLocation},
		{name: "latitude NaN", value: restaurant("c", "", `{"id":42,"latitude":"NaN","longitude":1}`), reason: decode.ReasonBadLocation},
		{name: "latitude not a number", value: restaurant("c", "", `{"id":42,"latitude":"north","longitude":1}`), reason: decode.ReasonBadLocation},
		{name: "latitude a boolean", value: restaurant("c", "", `{"id":42,"latitude":true,"longitude":1}`), reason: decode.ReasonBadLocation},
		{name: "latitude precise without the schema", value: restaurant("c", "", `{"id":42,"latitude":"`+dbztest.Unscaled(37774900)+`","longitude":1}`),
			reason: decode.ReasonBadLocation, detailSubstr: "decimal.handling.mode"},
		{name: "latitude not the schema's base64", value: dbztest.WithSchema(dbztest.RestaurantSchema(""), restaurant("c", "", `{"id":42,"latitude":"!!","longitude":"AA=="}`)), reason: decode.ReasonBadLocation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testDebezium(t, dbztest.Mapping)
			topic := dbztest.RestaurantTopic
			if tc.dish {
				topic = "ingest.dishes-by-restaurant"
			}
			var value []byte
			if tc.value != "" {
				value = []byte(tc.value)
			}
			c, skip, bad := d.Decode(topic, []byte(tc.key), value, 4000)
			if c == nil {
				t.Fatal("decode returned a nil Change")
			}
			switch {
			case tc.reason != "" && bad == nil:
				t.Fatalf("decode(%.80s) = %+v, want reason %s", tc.value, c, tc.reason)
			case tc.reason != "" && bad.Reason != tc.reason:
				t.Fatalf("decode(%.80s) reason = %s (%v), want %s", tc.value, bad.Reason, bad, tc.reason)
			case tc.reason != "":
				if !strings.Contains(bad.Detail, tc.detailSubstr) {
					t.Errorf("detail %q, want it to say %q", bad.Detail, tc.detailSubstr)
				}
				return
			case bad != nil:
				t.Fatalf("decode(%.80s) = %v, want valid", tc.value, bad)
			case skip != tc.skip:
				t.Fatalf("decode(%.80s) skip = %v, want %v", tc.value, skip, tc.skip)
			}
			if c.Type != tc.want.Type || c.Op != tc.want.Op || c.ID != tc.want.ID || c.RestaurantID != tc.want.RestaurantID ||
				c.FormerRestaurantID != tc.want.FormerRestaurantID || c.Version != tc.want.Version || c.Lat != tc.want.Lat || c.Lon != tc.want.Lon ||
				string(c.Doc) != string(tc.want.Doc) {
				t.Errorf("decode = %+v doc %s\nwant     %+v doc %s", *c, c.Doc, tc.want, tc.want.Doc)
			}
			if c.Op == decode.OpUpsert && !skip {
				if doc := bytes.TrimSpace(c.Doc); !json.Valid(doc) || doc[0] != '{' {
					t.Errorf("doc %s: not a JSON object", c.Doc)
				}
			}
		})
	}
}

// TestDebeziumNewColumn: a column added to the table mid-stream (ALTER
// TABLE ... ADD COLUMN) is copied from its first event on, in the
// all-columns mode, and a column the schema newly says is a decimal is
// read as one: the schema cache follows the schema.
func TestDebeziumNewColumn(t *testing.T) {
	d := testDebezium(t, dbztest.Mapping)
	row := `{"id":42,"title":"Nopa","rating":"Lw==","latitude":"` + dbztest.Unscaled(37774900) + `","longitude":"` + dbztest.Unscaled(-122419400) + `"`
	decode := func(schema, row string) string {
		t.Helper()
		c, _, bad := d.Decode(dbztest.RestaurantTopic, nil, []byte(dbztest.WithSchema(schema, dbztest.Value("restaurants", "u", "", row, 10))), 0)
		if bad != nil {
			t.Fatal(bad)
		}
		return string(c.Doc)
	}
	if got, want := decode(dbztest.RestaurantSchema(""), row+`}`), `{"id":42,"name":"Nopa","rating":4.7}`; got != want {
		t.Errorf("before ALTER TABLE: doc %s, want %s", got, want)
	}
	added := `,{"type":"boolean","optional":true,"field":"halal"},{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"},"field":"deposit"}`
	if got, want := decode(dbztest.RestaurantSchema(added), row+`,"halal":true,"deposit":"AfQ="}`), `{"id":42,"name":"Nopa","rating":4.7,"halal":true,"deposit":5.00}`; got != want {
		t.Errorf("after ALTER TABLE: doc %s, want %s", got, want)
	}
	// And without schemas, the new column is simply there.
	c, _, bad := d.Decode(dbztest.RestaurantTopic, nil, []byte(dbztest.Value("restaurants", "u", "", `{"id":42,"latitude":1,"longitude":2,"halal":false}`, 11)), 0)
	if bad != nil || string(c.Doc) != `{"id":42,"halal":false}` {
		t.Errorf("schemaless new column: %s, %v", c.Doc, bad)
	}
}

// TestDebeziumMappingModes: the copied columns under an explicit list
// with renames, and each version source.
func TestDebeziumMappingModes(t *testing.T) {
	listed := `{
	  "version": "source.ts_ms",
	  "restaurants": {"topic": "pg.public.restaurants", "id": "id", "lat": "latitude", "lon": "longitude",
	    "columns": ["title", "cuisines"], "rename": {"title": "name"}},
	  "dishes": {"table": "dishes", "id": "id", "restaurant_id": "restaurant_id", "version": "column:row_version", "columns": ["name"]}
	}`
	d := testDebezium(t, listed)
	c, _, bad := d.Decode(dbztest.RestaurantTopic, nil, []byte(dbztest.Value("restaurants", "c", "", dbztest.NopaRow, 5)), 0)
	if bad != nil || string(c.Doc) != `{"name":"Nopa","cuisines":["californian","brunch"]}` || c.Version != 1700000000123 {
		t.Errorf("listed columns under source.ts_ms: %+v doc %s, %v; want name and cuisines at version 1700000000123", c, c.Doc, bad)
	}
	row := `{"id":7,"restaurant_id":42,"name":"burrata","row_version":12}`
	c, _, bad = d.Decode(dbztest.DishTopic, nil, []byte(dbztest.Value("dishes", "u", "", row, 5)), 0)
	if bad != nil || c.Version != 12 || string(c.Doc) != `{"name":"burrata"}` {
		t.Errorf("version column: %+v doc %s, %v; want version 12", c, c.Doc, bad)
	}
	c, _, bad = d.Decode(dbztest.DishTopic, nil, []byte(dbztest.Value("dishes", "d", row, "", 6)), 0)
	if bad != nil || c.Op != decode.OpDelete || c.Version != 13 {
		t.Errorf("delete under a version column: %+v, %v; want version 13, one past the before image's", c, bad)
	}
	for _, before := range []string{`{"id":7,"restaurant_id":42}`, `{"id":7,"restaurant_id":42,"row_version":0}`} {
		if _, _, bad = d.Decode(dbztest.DishTopic, nil, []byte(dbztest.Value("dishes", "d", before, "", 6)), 0); bad == nil || bad.Reason != decode.ReasonMissingVersion ||
			!strings.Contains(bad.Detail, "REPLICA IDENTITY FULL") {
			t.Errorf("delete whose before image %s lacks the version: %v; want missing_version naming REPLICA IDENTITY FULL", before, bad)
		}
	}
	if _, _, bad = d.Decode(dbztest.DishTopic, nil, []byte(dbztest.Value("dishes", "c", "", `{"id":7,"restaurant_id":42,"row_version":-1}`, 6)), 0); bad == nil || bad.Reason != decode.ReasonMissingVersion {
		t.Errorf("negative version column: %v, want missing_version", bad)
	}
}

// TestDebeziumKeyID: the restaurant ids that keys name, in every shape
// the key converter writes, and restaurantID, the repartitioner's reading
// of a dish event.
func TestDebeziumKeyID(t *testing.T) {
	d := testDebezium(t, dbztest.Mapping)
	for _, tc := range []struct {
		key  string
		want string
		ok   bool
	}{
		{`{"id":42}`, "42", true},
		{`{"id":"r-42"}`, "r-42", true},
		{` {"id": 42} `, "42", true},
		{`{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}]},"payload":{"id":42}}`, "42", true},
		{`{"schema":{"type":"int64"},"payload":42}`, "42", true},
		{`{"tenant":1,"id":42}`, "42", true},
		{`"r-42"`, "r-42", true},
		{`42`, "42", true},
		{`r-42`, "r-42", true},
		{`{"uuid":42}`, "", false},
		{`{"id":null}`, "", false},
		{`{"id":4.2}`, "", false},
		{``, "", false},
	} {
		if got, ok := d.KeyID([]byte(tc.key)); got != tc.want || ok != tc.ok {
			t.Errorf("keyID(%s) = %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		value, want string
	}{
		{dbztest.Value("dishes", "c", "", dbztest.DishRow, 1), "42"},
		{dbztest.WithSchema(`{"type":"struct"}`, dbztest.Value("dishes", "u", "", dbztest.DishRow, 1)), "42"},
		{dbztest.Value("dishes", "d", dbztest.DishRow, "", 1), "42"},
		{dbztest.Value("dishes", "d", `{"id":7,"restaurant_id":0}`, "", 1), ""},
		{dbztest.Value("dishes", "c", "", dbztest.DishRow, -1), ""},
		{"", ""},
		{"{", ""},
	} {
		if got, ok := d.RestaurantID([]byte(tc.value)); got != tc.want || ok != (tc.want != "") {
			t.Errorf("restaurantID(%.60s) = %q, %v; want %q", tc.value, got, ok, tc.want)
		}
	}
}

func TestAppendDecimal(t *testing.T) {
	big20 := new(big.Int).Exp(big.NewInt(10), big.NewInt(20), nil) // 9 bytes
	neg := new(big.Int).Neg(big20)
	twos := func(v *big.Int) string {
		// Two's complement of a negative v in 9 bytes.
		b := new(big.Int).Add(v, new(big.Int).Lsh(big.NewInt(1), 72)).Bytes()
		return base64.StdEncoding.EncodeToString(b)
	}
	for _, tc := range []struct {
		b64   string
		scale int
		want  string
	}{
		{dbztest.Unscaled(37774900), 6, "37.774900"},
		{dbztest.Unscaled(-122419400), 6, "-122.419400"},
		{dbztest.Unscaled(5), 3, "0.005"},
		{dbztest.Unscaled(-5), 3, "-0.005"},
		{dbztest.Unscaled(123), 3, "0.123"},
		{dbztest.Unscaled(0), 2, "0.00"},
		{dbztest.Unscaled(47), 0, "47"},
		{dbztest.Unscaled(47), -2, "4700"},
		{dbztest.Unscaled(0), -2, "0"},
		{dbztest.Unscaled(-1), 0, "-1"},
		{dbztest.Unscaled(1 << 62), 0, "4611686018427387904"},
		{dbztest.Unscaled(-1 << 63), 0, "-9223372036854775808"},
		{base64.StdEncoding.EncodeToString(append([]byte{0}, big20.Bytes()...)), 20, "1.00000000000000000000"},
		{twos(neg), 18, "-100.000000000000000000"},
	} {
		got, ok := decode.AppendDecimal([]byte("x"), []byte(tc.b64), tc.scale)
		if !ok || string(got) != "x"+tc.want {
			t.Errorf("appendDecimal(%s, %d) = %s, %v; want x%s", tc.b64, tc.scale, got, ok, tc.want)
		}
	}
	for _, tc := range []struct {
		b64   string
		scale int
	}{{"!!", 1}, {"", 1}, {"AA==", 5000}} {
		if got, ok := decode.AppendDecimal(nil, []byte(tc.b64), tc.scale); ok {
			t.Errorf("appendDecimal(%q, %d) = %s, want a refusal", tc.b64, tc.scale, got)
		}
	}
}

// TestDecodeDebeziumCaptured decodes the change events a real Debezium
// Postgres connector wrote (testdata/debezium, both converter shapes):
// a snapshot, inserts, a dish moved to another restaurant, a restaurant
// moved, a delete with its REPLICA IDENTITY FULL before image, and the
// tombstone. Restaurant events are decoded with their own keys; dish
// events with the key the repartitioner gives them.
func TestDecodeDebeziumCaptured(t *testing.T) {
	for _, shape := range dbztest.Shapes {
		d := testDebezium(t, dbztest.CapturedMapping)
		for _, ev := range dbztest.CapturedEvents {
			t.Run(shape+"/"+ev.File, func(t *testing.T) {
				key, value, lsn := dbztest.ReadCaptured(t, capturedDir, shape, ev.File)
				topic := dbztest.RestaurantTopic
				if ev.Dish {
					topic = "ingest.dishes-by-restaurant"
					rid, ok := d.RestaurantID(value)
					if ok != (ev.Want.RestaurantID != "") || rid != ev.Want.RestaurantID {
						t.Errorf("restaurantID = %q, %v; want %q", rid, ok, ev.Want.RestaurantID)
					}
					key = []byte(rid)
				} else if id, ok := d.KeyID(key); !ok || id != ev.Want.ID {
					t.Errorf("keyID(%s) = %q, %v; want %q", key, id, ok, ev.Want.ID)
				}
				c, skip, bad := d.Decode(topic, key, value, 0)
				if bad != nil {
					t.Fatalf("decode = %v", bad)
				}
				want := ev.Want
				want.Version = lsn
				if skip != ev.Skip || c.Type != want.Type || c.Op != want.Op || c.ID != want.ID || c.RestaurantID != want.RestaurantID ||
					c.FormerRestaurantID != want.FormerRestaurantID || c.Version != want.Version || c.Lat != want.Lat || c.Lon != want.Lon ||
					!jsonEqual(c.Doc, want.Doc) {
					t.Errorf("decode = %+v skip %v doc %s\nwant     %+v skip %v doc %s", *c, skip, c.Doc, want, ev.Skip, want.Doc)
				}
			})
		}
	}
}

func jsonEqual(a, b []byte) bool {
	if len(a) == 0 || len(b) == 0 {
		return len(a) == len(b)
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

func FuzzDecodeDebezium(f *testing.F) {
	for _, s := range dbztest.Seeds(f, capturedDir) {
		f.Add(s.Dish, s.Key, s.Value)
	}
	// Each input is read under both mappings: the synthetic seeds' and
	// the captured events'.
	ds := []decode.Decoder{testDebezium(f, dbztest.Mapping), testDebezium(f, dbztest.CapturedMapping)}
	f.Fuzz(func(t *testing.T, dish bool, key, value []byte) {
		topic := dbztest.RestaurantTopic
		if dish {
			topic = dbztest.DishTopic
		}
		for _, d := range ds {
			d.KeyID(key)
			d.RestaurantID(value)
			c, skip, bad := d.Decode(topic, key, value, 1<<16)
			if c == nil {
				t.Fatal("nil Change")
			}
			if bad != nil || skip {
				continue
			}
			if c.ID == "" || c.RestaurantID == "" || c.Version < 0 {
				t.Fatalf("valid event %+v has an empty id or a negative version", c)
			}
			// What the pipeline makes of the document is fuzzed there
			// (pipeline.FuzzDecodeDebeziumBody).
			if doc := bytes.TrimSpace(c.Doc); c.Op == decode.OpUpsert && (!json.Valid(doc) || doc[0] != '{') {
				t.Fatalf("valid upsert's doc %s is not a JSON object", c.Doc)
			}
		}
	})
}

// BenchmarkDecode decodes a native restaurant and dish event, for
// comparison with BenchmarkDecodeDebezium.
func BenchmarkDecode(b *testing.B) {
	restaurant := []byte(`{"type":"restaurant","op":"upsert","id":"42","version":24023128,"location":{"lat":37.7749,"lon":-122.4194},"doc":{"id":42,"name":"Nopa","cuisines":["californian","brunch"],"open":true,"closed_on":null}}`)
	dish := []byte(`{"type":"dish","op":"upsert","id":"7","restaurant_id":"42","version":24023200,"doc":{"id":7,"name":"burrata","price_cents":1450,"diets":["vegetarian"]}}`)
	f, key := decode.New(decode.FormatNative, nil, ""), []byte("42")
	b.ReportAllocs()
	b.SetBytes(int64(len(restaurant) + len(dish)))
	for b.Loop() {
		if _, _, bad := f.Decode("restaurants", key, restaurant, 0); bad != nil {
			b.Fatal(bad)
		}
		if _, _, bad := f.Decode("dishes", key, dish, 0); bad != nil {
			b.Fatal(bad)
		}
	}
}

// BenchmarkDecodeDebezium decodes a Debezium restaurant and dish event
// (the same rows as BenchmarkDecode's), bare and in the schema envelope.
func BenchmarkDecodeDebezium(b *testing.B) {
	for _, shape := range []string{"bare", "schema"} {
		b.Run(shape, func(b *testing.B) {
			d := testDebezium(b, dbztest.Mapping)
			restaurant := dbztest.Value("restaurants", "u", "", dbztest.NopaRow, 24023128)
			dish := dbztest.Value("dishes", "u", "", dbztest.DishRow, 24023200)
			if shape == "schema" {
				restaurant = dbztest.WithSchema(dbztest.RestaurantSchema(""), restaurant)
				dish = dbztest.WithSchema(dbztest.RestaurantSchema(""), dish)
			}
			rv, dv, rk, dk := []byte(restaurant), []byte(dish), []byte(`{"id":42}`), []byte("42")
			b.ReportAllocs()
			b.SetBytes(int64(len(rv) + len(dv)))
			for b.Loop() {
				if _, _, bad := d.Decode(dbztest.RestaurantTopic, rk, rv, 0); bad != nil {
					b.Fatal(bad)
				}
				if _, _, bad := d.Decode("ingest.dishes-by-restaurant", dk, dv, 0); bad != nil {
					b.Fatal(bad)
				}
			}
		})
	}
}
