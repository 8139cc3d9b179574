package pipeline

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	dbzRestaurantTopic = "pg.public.restaurants"
	dbzDishTopic       = "pg.public.dishes"
)

// dbzMapping is the mapping of the decoder tests: every column but the
// location copied, title renamed name.
const dbzMapping = `{
  "restaurants": {"topic": "pg.public.restaurants", "table": "restaurants", "schema": "public",
    "id": "id", "lat": "latitude", "lon": "longitude", "exclude": ["latitude", "longitude"], "rename": {"title": "name"}},
  "dishes": {"topic": "pg.public.dishes", "table": "dishes", "schema": "public",
    "id": "id", "restaurant_id": "restaurant_id", "exclude": ["restaurant_id"]}
}`

func testDebezium(t testing.TB, mapping string) *debezium {
	t.Helper()
	m, err := ParseMapping([]byte(mapping))
	if err != nil {
		t.Fatal(err)
	}
	return newDebezium(m, dbzRestaurantTopic)
}

// dbzSource is a Postgres connector's source block.
func dbzSource(table string, lsn any) string {
	return fmt.Sprintf(`{"version":"2.7.3.Final","connector":"postgresql","name":"pg","ts_ms":1700000000123,"snapshot":"false","db":"menu","sequence":"[null,\"24023000\"]","schema":"public","table":%q,"txId":780,"lsn":%v,"xmin":null}`, table, lsn)
}

// dbzValue is a change event as the JSON converter writes it without
// schemas; before and after are JSON ("" for null).
func dbzValue(table, op, before, after string, lsn any) string {
	if before == "" {
		before = "null"
	}
	if after == "" {
		after = "null"
	}
	return fmt.Sprintf(`{"before":%s,"after":%s,"source":%s,"op":%q,"ts_ms":1700000000456,"transaction":null}`, before, after, dbzSource(table, lsn), op)
}

// withSchema wraps a value or a key in the JSON converter's schema
// envelope.
func withSchema(schema, payload string) string {
	return `{"schema":` + schema + `,"payload":` + payload + `}`
}

// restaurantSchema is a value schema of the restaurants table with
// latitude, longitude and rating numeric (Decimal, scale 6, 6 and 1).
func restaurantSchema(extra string) string {
	row := func(name string) string {
		return `{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"},{"type":"string","optional":true,"field":"title"},` +
			`{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"1","connect.decimal.precision":"2"},"field":"rating"},` +
			`{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"6","connect.decimal.precision":"9"},"field":"latitude"},` +
			`{"type":"bytes","optional":false,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"6","connect.decimal.precision":"9"},"field":"longitude"}` + extra +
			`],"optional":true,"name":"pg.public.restaurants.Value","field":"` + name + `"}`
	}
	return `{"type":"struct","fields":[` + row("before") + `,` + row("after") +
		`,{"type":"struct","fields":[{"type":"int64","optional":false,"field":"lsn"}],"optional":false,"name":"io.debezium.connector.postgresql.Source","field":"source"},{"type":"string","optional":false,"field":"op"}],"optional":false,"name":"pg.public.restaurants.Envelope","version":2}`
}

// unscaled is the JSON converter's base64 of an unscaled decimal: the
// shortest big-endian two's complement.
func unscaled(v int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	i := 0
	for i < 7 && (b[i] == 0 && b[i+1]&0x80 == 0 || b[i] == 0xff && b[i+1]&0x80 != 0) {
		i++
	}
	return base64.StdEncoding.EncodeToString(b[i:])
}

const (
	nopaRow   = `{"id":42,"title":"Nopa","cuisines":["californian","brunch"],"open":true,"closed_on":null,"latitude":37.7749,"longitude":-122.4194}`
	nopaDoc   = `{"id":42,"name":"Nopa","cuisines":["californian","brunch"],"open":true,"closed_on":null}`
	toastRow  = `{"id":7,"restaurant_id":42,"name":"burrata","notes":"__debezium_unavailable_value"}`
	dishRow   = `{"id":7,"restaurant_id":42,"name":"burrata","price_cents":1450,"diets":["vegetarian"]}`
	dishDoc   = `{"id":7,"name":"burrata","price_cents":1450,"diets":["vegetarian"]}`
	dishKeyed = `{"id":7}`
)

// TestDecodeDebezium: every op, both key shapes and both value shapes,
// tombstones and messages, before images, decimals, and every bad
// envelope with its reason.
func TestDecodeDebezium(t *testing.T) {
	restaurant := func(op, before, after string) string { return dbzValue("restaurants", op, before, after, 24023128) }
	dish := func(op, before, after string) string { return dbzValue("dishes", op, before, after, 24023200) }
	nopa := Change{Type: TypeRestaurant, Op: OpUpsert, ID: "42", RestaurantID: "42", Version: 24023128, Lat: 37.7749, Lon: -122.4194, Doc: []byte(nopaDoc)}
	burrata := Change{Type: TypeDish, Op: OpUpsert, ID: "7", RestaurantID: "42", Version: 24023200, Doc: []byte(dishDoc)}
	with := func(c Change, f func(*Change)) Change { f(&c); return c }
	precise := `{"id":42,"title":"Nopa","rating":"Lw==","latitude":"` + unscaled(37774900) + `","longitude":"` + unscaled(-122419400) + `"}`

	for _, tc := range []struct {
		name         string
		dish         bool // the repartition topic's; else the restaurant topic's
		key, value   string
		want         Change
		skip         bool
		reason       Reason
		detailSubstr string
	}{
		{name: "insert", key: `{"id":42}`, value: restaurant("c", "", nopaRow), want: nopa},
		{name: "update", key: `{"id":42}`, value: restaurant("u", "", nopaRow), want: nopa},
		{name: "snapshot read", key: `{"id":42}`, value: restaurant("r", "", nopaRow), want: nopa},
		{name: "no key", value: restaurant("c", "", nopaRow), want: nopa},
		{name: "key in the schema envelope", key: withSchema(`{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false,"name":"pg.public.restaurants.Key"}`, `{"id":42}`),
			value: restaurant("c", "", nopaRow), want: nopa},
		{name: "value in the schema envelope", key: `{"id":42}`, value: withSchema(restaurantSchema(""), restaurant("c", "", nopaRow)), want: nopa},
		{name: "string id", key: `{"id":"r-42"}`, value: restaurant("c", "", strings.Replace(nopaRow, `"id":42`, `"id":"r-42"`, 1)),
			want: with(nopa, func(c *Change) {
				c.ID, c.RestaurantID, c.Doc = "r-42", "r-42", []byte(strings.Replace(nopaDoc, `"id":42`, `"id":"r-42"`, 1))
			})},
		{name: "delete, key-only before", key: `{"id":42}`, value: restaurant("d", `{"id":42,"title":"","latitude":0,"longitude":0}`, ""),
			want: Change{Type: TypeRestaurant, Op: OpDelete, ID: "42", RestaurantID: "42", Version: 24023128}},
		{name: "delete without before, id from key", key: `{"id":42}`, value: restaurant("d", "", ""),
			want: Change{Type: TypeRestaurant, Op: OpDelete, ID: "42", RestaurantID: "42", Version: 24023128}},
		{name: "tombstone", key: `{"id":42}`, value: "", skip: true, want: Change{Type: TypeRestaurant, Op: OpDelete}},
		{name: "tombstone null", key: `{"id":42}`, value: "null", skip: true, want: Change{Type: TypeRestaurant, Op: OpDelete}},
		{name: "tombstone in the schema envelope", key: `{"id":42}`, value: `{"schema":null,"payload":null}`, skip: true, want: Change{Type: TypeRestaurant, Op: OpDelete}},
		{name: "dish tombstone", dish: true, value: "", skip: true, want: Change{Type: TypeDish, Op: OpDelete}},
		{name: "logical decoding message", value: `{"op":"m","ts_ms":1,"source":{"lsn":5},"message":{"prefix":"x","content":"eA=="}}`, skip: true,
			want: Change{Type: TypeRestaurant}},

		{name: "numeric, precise, with the schema", key: `{"id":42}`, value: withSchema(restaurantSchema(""), restaurant("c", "", precise)),
			want: with(nopa, func(c *Change) {
				c.Lat, c.Lon, c.Doc = 37.7749, -122.4194, []byte(`{"id":42,"name":"Nopa","rating":4.7}`)
			})},
		{name: "numeric as strings", key: `{"id":42}`, value: restaurant("c", "", `{"id":42,"latitude":"37.774900","longitude":"-122.419400","rating":"4.7"}`),
			want: with(nopa, func(c *Change) { c.Doc = []byte(`{"id":42,"rating":"4.7"}`) })},
		{name: "numeric without scale, precise", key: `{"id":42}`,
			value: restaurant("c", "", `{"id":42,"latitude":{"scale":4,"value":"`+unscaled(377749)+`"},"longitude":{"scale":4,"value":"`+unscaled(-1224194)+`"},"rating":{"scale":1,"value":"Lw=="}}`),
			want:  with(nopa, func(c *Change) { c.Doc = []byte(`{"id":42,"rating":4.7}`) })},

		{name: "dish insert keyed by restaurant", dish: true, key: "42", value: dish("c", "", dishRow), want: burrata},
		{name: "dish keyed like the restaurant topic", dish: true, key: `{"id":42}`, value: dish("c", "", dishRow), want: burrata},
		{name: "dish without key", dish: true, value: dish("c", "", dishRow), want: burrata},
		{name: "dish moved to another restaurant", dish: true, value: dish("u", strings.Replace(dishRow, `"restaurant_id":42`, `"restaurant_id":41`, 1), dishRow),
			want: with(burrata, func(c *Change) { c.FormerRestaurantID = "41" })},
		{name: "dish update, same restaurant", dish: true, value: dish("u", dishRow, dishRow), want: burrata},
		{name: "dish delete, replica identity full", dish: true, key: "42", value: dish("d", dishRow, ""),
			want: Change{Type: TypeDish, Op: OpDelete, ID: "7", RestaurantID: "42", Version: 24023200}},
		{name: "unchanged TOAST value from the before image", dish: true, value: dish("u", strings.Replace(toastRow, "__debezium_unavailable_value", "long notes", 1), toastRow),
			want: with(burrata, func(c *Change) { c.Doc = []byte(`{"id":7,"name":"burrata","notes":"long notes"}`) })},

		{name: "oversized", value: restaurant("c", "", strings.Replace(nopaRow, "Nopa", strings.Repeat("n", 4000), 1)), reason: ReasonOversized},
		{name: "oversized id", value: restaurant("c", "", strings.Replace(nopaRow, `"id":42`, `"id":"`+strings.Repeat("i", 513)+`"`, 1)), reason: ReasonOversized},
		{name: "not JSON", value: "restaurant 42", reason: ReasonInvalidJSON},
		{name: "truncated", value: restaurant("c", "", nopaRow)[:80], reason: ReasonInvalidJSON},
		{name: "array", value: "[" + restaurant("c", "", nopaRow) + "]", reason: ReasonInvalidJSON},
		{name: "schema without payload", value: `{"schema":{"type":"struct"}}`, reason: ReasonInvalidJSON},
		{name: "payload not an object", value: `{"schema":{"type":"struct"},"payload":"c"}`, reason: ReasonInvalidJSON},
		{name: "source not an object", value: `{"op":"c","after":` + nopaRow + `,"source":"pg"}`, reason: ReasonInvalidJSON},
		{name: "not an envelope", value: nopaRow, reason: ReasonUnknownOp, detailSubstr: "ExtractNewRecordState"},
		{name: "no op", value: strings.Replace(restaurant("c", "", nopaRow), `"op":"c",`, "", 1), reason: ReasonUnknownOp},
		{name: "unknown op", value: restaurant("x", "", nopaRow), reason: ReasonUnknownOp},
		{name: "op not a string", value: strings.Replace(restaurant("c", "", nopaRow), `"op":"c"`, `"op":1`, 1), reason: ReasonUnknownOp},
		{name: "truncate", value: restaurant("t", "", ""), reason: ReasonUnknownOp, detailSubstr: "TRUNCATE"},
		{name: "another table", value: dbzValue("orders", "c", "", nopaRow, 1), reason: ReasonUnknownType},
		{name: "dish table in the restaurant topic", value: dish("c", "", dishRow), reason: ReasonUnknownType},
		{name: "insert without after", value: restaurant("c", "", ""), reason: ReasonMissingDoc},
		{name: "update with after a string", value: restaurant("u", "", `"row"`), reason: ReasonMissingDoc},
		{name: "delete with before a number", value: restaurant("d", "7", ""), reason: ReasonMissingDoc},
		{name: "TOAST placeholder without before", dish: true, value: dish("u", "", toastRow), reason: ReasonMissingDoc, detailSubstr: "REPLICA IDENTITY FULL"},
		{name: "id column missing", value: restaurant("c", "", `{"title":"x","latitude":1,"longitude":1}`), reason: ReasonMissingID},
		{name: "id null", value: restaurant("c", "", `{"id":null,"latitude":1,"longitude":1}`), reason: ReasonMissingID},
		{name: "id a fraction", value: restaurant("c", "", `{"id":4.2,"latitude":1,"longitude":1}`), reason: ReasonMissingID},
		{name: "id empty", value: restaurant("c", "", `{"id":"","latitude":1,"longitude":1}`), reason: ReasonMissingID},
		{name: "id a boolean", value: restaurant("c", "", `{"id":true,"latitude":1,"longitude":1}`), reason: ReasonMissingID},
		{name: "lsn missing", value: strings.Replace(restaurant("c", "", nopaRow), `"lsn":24023128,`, "", 1), reason: ReasonMissingVersion},
		{name: "lsn negative", value: dbzValue("restaurants", "c", "", nopaRow, -5), reason: ReasonMissingVersion},
		{name: "lsn a fraction", value: dbzValue("restaurants", "c", "", nopaRow, 1.5), reason: ReasonMissingVersion},
		{name: "lsn a string", value: dbzValue("restaurants", "c", "", nopaRow, `"24023128"`), reason: ReasonMissingVersion},
		{name: "lsn too big", value: dbzValue("restaurants", "c", "", nopaRow, "99999999999999999999"), reason: ReasonMissingVersion},
		{name: "dish without restaurant id", dish: true, value: dish("c", "", `{"id":7,"name":"x"}`), reason: ReasonMissingRestaurantID},
		{name: "dish restaurant id null", dish: true, value: dish("c", "", `{"id":7,"restaurant_id":null}`), reason: ReasonMissingRestaurantID},
		{name: "dish delete, default replica identity", dish: true, value: dish("d", `{"id":7,"restaurant_id":0,"name":""}`, ""),
			reason: ReasonMissingRestaurantID, detailSubstr: "ALTER TABLE public.dishes REPLICA IDENTITY FULL"},
		{name: "dish delete, before without the column", dish: true, value: dish("d", `{"id":7}`, ""), reason: ReasonMissingRestaurantID, detailSubstr: "REPLICA IDENTITY FULL"},
		{name: "restaurant key names another id", key: `{"id":43}`, value: restaurant("c", "", nopaRow), reason: ReasonKeyMismatch},
		{name: "restaurant key without the id column", key: `{"uuid":42}`, value: restaurant("c", "", nopaRow), reason: ReasonKeyMismatch},
		{name: "dish keyed by another restaurant", dish: true, key: "41", value: dish("c", "", dishRow), reason: ReasonKeyMismatch},
		{name: "dish keyed by dish id", dish: true, key: dishKeyed, value: dish("c", "", dishRow), reason: ReasonKeyMismatch},
		{name: "latitude missing", value: restaurant("c", "", `{"id":42,"longitude":1}`), reason: ReasonBadLocation},
		{name: "latitude null", value: restaurant("c", "", `{"id":42,"latitude":null,"longitude":1}`), reason: ReasonBadLocation},
		{name: "latitude out of range", value: restaurant("c", "", `{"id":42,"latitude":90.5,"longitude":1}`), reason: ReasonBadLocation},
		{name: "longitude out of range", value: restaurant("c", "", `{"id":42,"latitude":1,"longitude":-181}`), reason: ReasonBadLocation},
		{name: "latitude infinite", value: restaurant("c", "", `{"id":42,"latitude":1e999,"longitude":1}`), reason: ReasonBadLocation},
		{name: "latitude NaN", value: restaurant("c", "", `{"id":42,"latitude":"NaN","longitude":1}`), reason: ReasonBadLocation},
		{name: "latitude not a number", value: restaurant("c", "", `{"id":42,"latitude":"north","longitude":1}`), reason: ReasonBadLocation},
		{name: "latitude a boolean", value: restaurant("c", "", `{"id":42,"latitude":true,"longitude":1}`), reason: ReasonBadLocation},
		{name: "latitude precise without the schema", value: restaurant("c", "", `{"id":42,"latitude":"`+unscaled(37774900)+`","longitude":1}`),
			reason: ReasonBadLocation, detailSubstr: "decimal.handling.mode"},
		{name: "latitude not the schema's base64", value: withSchema(restaurantSchema(""), restaurant("c", "", `{"id":42,"latitude":"!!","longitude":"AA=="}`)), reason: ReasonBadLocation},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := testDebezium(t, dbzMapping)
			topic := dbzRestaurantTopic
			if tc.dish {
				topic = "ingest.dishes-by-restaurant"
			}
			var value []byte
			if tc.value != "" {
				value = []byte(tc.value)
			}
			c, skip, bad := d.decode(topic, []byte(tc.key), value, 4000)
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
			if c.Op == OpUpsert && !skip {
				if _, err := docMembers(c.Doc); err != nil || !json.Valid(c.Doc) {
					t.Errorf("doc %s: not a JSON object (%v)", c.Doc, err)
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
	d := testDebezium(t, dbzMapping)
	row := `{"id":42,"title":"Nopa","rating":"Lw==","latitude":"` + unscaled(37774900) + `","longitude":"` + unscaled(-122419400) + `"`
	decode := func(schema, row string) string {
		t.Helper()
		c, _, bad := d.decode(dbzRestaurantTopic, nil, []byte(withSchema(schema, dbzValue("restaurants", "u", "", row, 10))), 0)
		if bad != nil {
			t.Fatal(bad)
		}
		return string(c.Doc)
	}
	if got, want := decode(restaurantSchema(""), row+`}`), `{"id":42,"name":"Nopa","rating":4.7}`; got != want {
		t.Errorf("before ALTER TABLE: doc %s, want %s", got, want)
	}
	added := `,{"type":"boolean","optional":true,"field":"halal"},{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2"},"field":"deposit"}`
	if got, want := decode(restaurantSchema(added), row+`,"halal":true,"deposit":"AfQ="}`), `{"id":42,"name":"Nopa","rating":4.7,"halal":true,"deposit":5.00}`; got != want {
		t.Errorf("after ALTER TABLE: doc %s, want %s", got, want)
	}
	// And without schemas, the new column is simply there.
	c, _, bad := d.decode(dbzRestaurantTopic, nil, []byte(dbzValue("restaurants", "u", "", `{"id":42,"latitude":1,"longitude":2,"halal":false}`, 11)), 0)
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
	c, _, bad := d.decode(dbzRestaurantTopic, nil, []byte(dbzValue("restaurants", "c", "", nopaRow, 5)), 0)
	if bad != nil || string(c.Doc) != `{"name":"Nopa","cuisines":["californian","brunch"]}` || c.Version != 1700000000123 {
		t.Errorf("listed columns under source.ts_ms: %+v doc %s, %v; want name and cuisines at version 1700000000123", c, c.Doc, bad)
	}
	row := `{"id":7,"restaurant_id":42,"name":"burrata","row_version":12}`
	c, _, bad = d.decode(dbzDishTopic, nil, []byte(dbzValue("dishes", "u", "", row, 5)), 0)
	if bad != nil || c.Version != 12 || string(c.Doc) != `{"name":"burrata"}` {
		t.Errorf("version column: %+v doc %s, %v; want version 12", c, c.Doc, bad)
	}
	c, _, bad = d.decode(dbzDishTopic, nil, []byte(dbzValue("dishes", "d", row, "", 6)), 0)
	if bad != nil || c.Op != OpDelete || c.Version != 13 {
		t.Errorf("delete under a version column: %+v, %v; want version 13, one past the before image's", c, bad)
	}
	for _, before := range []string{`{"id":7,"restaurant_id":42}`, `{"id":7,"restaurant_id":42,"row_version":0}`} {
		if _, _, bad = d.decode(dbzDishTopic, nil, []byte(dbzValue("dishes", "d", before, "", 6)), 0); bad == nil || bad.Reason != ReasonMissingVersion ||
			!strings.Contains(bad.Detail, "REPLICA IDENTITY FULL") {
			t.Errorf("delete whose before image %s lacks the version: %v; want missing_version naming REPLICA IDENTITY FULL", before, bad)
		}
	}
	if _, _, bad = d.decode(dbzDishTopic, nil, []byte(dbzValue("dishes", "c", "", `{"id":7,"restaurant_id":42,"row_version":-1}`, 6)), 0); bad == nil || bad.Reason != ReasonMissingVersion {
		t.Errorf("negative version column: %v, want missing_version", bad)
	}
}

// TestDebeziumKeyID: the restaurant ids that keys name, in every shape
// the key converter writes, and restaurantID, the repartitioner's reading
// of a dish event.
func TestDebeziumKeyID(t *testing.T) {
	d := testDebezium(t, dbzMapping)
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
		if got, ok := d.keyID([]byte(tc.key)); got != tc.want || ok != tc.ok {
			t.Errorf("keyID(%s) = %q, %v; want %q, %v", tc.key, got, ok, tc.want, tc.ok)
		}
	}
	for _, tc := range []struct {
		value, want string
	}{
		{dbzValue("dishes", "c", "", dishRow, 1), "42"},
		{withSchema(`{"type":"struct"}`, dbzValue("dishes", "u", "", dishRow, 1)), "42"},
		{dbzValue("dishes", "d", dishRow, "", 1), "42"},
		{dbzValue("dishes", "d", `{"id":7,"restaurant_id":0}`, "", 1), ""},
		{dbzValue("dishes", "c", "", dishRow, -1), ""},
		{"", ""},
		{"{", ""},
	} {
		if got, ok := d.restaurantID([]byte(tc.value)); got != tc.want || ok != (tc.want != "") {
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
		{unscaled(37774900), 6, "37.774900"},
		{unscaled(-122419400), 6, "-122.419400"},
		{unscaled(5), 3, "0.005"},
		{unscaled(-5), 3, "-0.005"},
		{unscaled(123), 3, "0.123"},
		{unscaled(0), 2, "0.00"},
		{unscaled(47), 0, "47"},
		{unscaled(47), -2, "4700"},
		{unscaled(0), -2, "0"},
		{unscaled(-1), 0, "-1"},
		{unscaled(1 << 62), 0, "4611686018427387904"},
		{unscaled(-1 << 63), 0, "-9223372036854775808"},
		{base64.StdEncoding.EncodeToString(append([]byte{0}, big20.Bytes()...)), 20, "1.00000000000000000000"},
		{twos(neg), 18, "-100.000000000000000000"},
	} {
		got, ok := appendDecimal([]byte("x"), []byte(tc.b64), tc.scale)
		if !ok || string(got) != "x"+tc.want {
			t.Errorf("appendDecimal(%s, %d) = %s, %v; want x%s", tc.b64, tc.scale, got, ok, tc.want)
		}
	}
	for _, tc := range []struct {
		b64   string
		scale int
	}{{"!!", 1}, {"", 1}, {"AA==", 5000}} {
		if got, ok := appendDecimal(nil, []byte(tc.b64), tc.scale); ok {
			t.Errorf("appendDecimal(%q, %d) = %s, want a refusal", tc.b64, tc.scale, got)
		}
	}
}

// capturedMapping maps the tables of the real change events in
// testdata/debezium (internal/cdc captured them from a real connector).
const capturedMapping = `{
  "restaurants": {"table": "restaurants", "schema": "menu", "id": "id", "lat": "lat", "lon": "lon", "exclude": ["lat", "lon"]},
  "dishes": {"table": "dishes", "schema": "menu", "id": "id", "restaurant_id": "restaurant_id", "exclude": ["restaurant_id"]}
}`

// captured is one real change event of testdata/debezium and the Change
// it must decode to (Version: the event's own source.lsn).
type captured struct {
	file string
	dish bool
	want Change
	skip bool
}

var capturedEvents = []captured{
	{file: "01-restaurant-snapshot", want: Change{Type: TypeRestaurant, Op: OpUpsert, ID: "1", RestaurantID: "1", Lat: 37.7614, Lon: -122.4241,
		Doc: []byte(`{"id":1,"name":"Tartine","cuisines":["bakery","cafe"]}`)}},
	{file: "02-dish-snapshot", dish: true, want: Change{Type: TypeDish, Op: OpUpsert, ID: "10", RestaurantID: "1",
		Doc: []byte(`{"id":10,"name":"Morning bun","price_cents":550,"allergens":["gluten","dairy"],"diets":["vegetarian"]}`)}},
	{file: "03-restaurant-insert", want: Change{Type: TypeRestaurant, Op: OpUpsert, ID: "2", RestaurantID: "2", Lat: 40.7223, Lon: -73.9874,
		Doc: []byte(`{"id":2,"name":"Katz's","cuisines":["deli"]}`)}},
	{file: "04-dish-insert", dish: true, want: Change{Type: TypeDish, Op: OpUpsert, ID: "11", RestaurantID: "1",
		Doc: []byte(`{"id":11,"name":"Country loaf","price_cents":1400,"allergens":["gluten"],"diets":["vegan"]}`)}},
	{file: "05-dish-update-restaurant", dish: true, want: Change{Type: TypeDish, Op: OpUpsert, ID: "11", RestaurantID: "2", FormerRestaurantID: "1",
		Doc: []byte(`{"id":11,"name":"Country loaf","price_cents":1400,"allergens":["gluten"],"diets":["vegan"]}`)}},
	{file: "06-restaurant-update-location", want: Change{Type: TypeRestaurant, Op: OpUpsert, ID: "1", RestaurantID: "1", Lat: 34.0522, Lon: -118.2437,
		Doc: []byte(`{"id":1,"name":"Tartine","cuisines":["bakery","cafe"]}`)}},
	{file: "07-dish-delete", dish: true, want: Change{Type: TypeDish, Op: OpDelete, ID: "10", RestaurantID: "1"}},
	{file: "08-dish-tombstone", dish: true, skip: true, want: Change{Type: TypeDish, Op: OpDelete}},
}

// readCaptured reads a captured event's key and value, and its
// source.lsn.
func readCaptured(t testing.TB, shape, file string) (key, value []byte, lsn int64) {
	t.Helper()
	dir := filepath.Join("testdata", "debezium", shape)
	key, err := os.ReadFile(filepath.Join(dir, file+".key.json"))
	if err != nil {
		t.Fatal(err)
	}
	value, err = os.ReadFile(filepath.Join(dir, file+".value.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(value) == 0 {
		return key, nil, 0
	}
	var ev struct {
		Source struct {
			LSN int64 `json:"lsn"`
		} `json:"source"`
		Payload *struct {
			Source struct {
				LSN int64 `json:"lsn"`
			} `json:"source"`
		} `json:"payload"`
	}
	if err := json.Unmarshal(value, &ev); err != nil {
		t.Fatalf("%s/%s: %v", shape, file, err)
	}
	lsn = ev.Source.LSN
	if ev.Payload != nil {
		lsn = ev.Payload.Source.LSN
	}
	return key, value, lsn
}

// TestDecodeDebeziumCaptured decodes the change events a real Debezium
// Postgres connector wrote (testdata/debezium, both converter shapes):
// a snapshot, inserts, a dish moved to another restaurant, a restaurant
// moved, a delete with its REPLICA IDENTITY FULL before image, and the
// tombstone. Restaurant events are decoded with their own keys; dish
// events with the key the repartitioner gives them.
func TestDecodeDebeziumCaptured(t *testing.T) {
	for _, shape := range []string{"schemaless", "schemas"} {
		d := testDebezium(t, capturedMapping)
		for _, ev := range capturedEvents {
			t.Run(shape+"/"+ev.file, func(t *testing.T) {
				key, value, lsn := readCaptured(t, shape, ev.file)
				topic := dbzRestaurantTopic
				if ev.dish {
					topic = "ingest.dishes-by-restaurant"
					rid, ok := d.restaurantID(value)
					if ok != (ev.want.RestaurantID != "") || rid != ev.want.RestaurantID {
						t.Errorf("restaurantID = %q, %v; want %q", rid, ok, ev.want.RestaurantID)
					}
					key = []byte(rid)
				} else if id, ok := d.keyID(key); !ok || id != ev.want.ID {
					t.Errorf("keyID(%s) = %q, %v; want %q", key, id, ok, ev.want.ID)
				}
				c, skip, bad := d.decode(topic, key, value, 0)
				if bad != nil {
					t.Fatalf("decode = %v", bad)
				}
				want := ev.want
				want.Version = lsn
				if skip != ev.skip || c.Type != want.Type || c.Op != want.Op || c.ID != want.ID || c.RestaurantID != want.RestaurantID ||
					c.FormerRestaurantID != want.FormerRestaurantID || c.Version != want.Version || c.Lat != want.Lat || c.Lon != want.Lon ||
					!jsonEqual(c.Doc, want.Doc) {
					t.Errorf("decode = %+v skip %v doc %s\nwant     %+v skip %v doc %s", *c, skip, c.Doc, want, ev.skip, want.Doc)
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
	restaurant := func(op, before, after string) string { return dbzValue("restaurants", op, before, after, 24023128) }
	for _, s := range []struct {
		dish       bool
		key, value string
	}{
		{false, `{"id":42}`, restaurant("c", "", nopaRow)},
		{false, `{"id":42}`, withSchema(restaurantSchema(""), restaurant("c", "", `{"id":42,"rating":"Lw==","latitude":"AkBLNA==","longitude":"+LR7OA=="}`))},
		{false, `{"id":42}`, restaurant("d", `{"id":42}`, "")},
		{false, `{"schema":{},"payload":{"id":42}}`, restaurant("r", "", `{"id":42,"latitude":{"scale":4,"value":"BcOV"},"longitude":1}`)},
		{true, "42", dbzValue("dishes", "u", strings.Replace(dishRow, "42", "41", 1), dishRow, 9)},
		{true, "", dbzValue("dishes", "u", toastRow, toastRow, 9)},
		{true, "", dbzValue("dishes", "d", dishRow, "", 9)},
		{true, "", ""},
		{false, "", `{"op":"t","source":{"lsn":1}}`},
	} {
		f.Add(s.dish, []byte(s.key), []byte(s.value))
	}
	for _, shape := range []string{"schemaless", "schemas"} {
		for _, ev := range capturedEvents {
			key, value, _ := readCaptured(f, shape, ev.file)
			f.Add(ev.dish, key, value)
		}
	}
	// Each input is read under both mappings: the synthetic seeds' and
	// the captured events'.
	ds := []*debezium{testDebezium(f, dbzMapping), testDebezium(f, capturedMapping)}
	f.Fuzz(func(t *testing.T, dish bool, key, value []byte) {
		topic := dbzRestaurantTopic
		if dish {
			topic = dbzDishTopic
		}
		for _, d := range ds {
			d.keyID(key)
			d.restaurantID(value)
			c, skip, bad := d.decode(topic, key, value, 1<<16)
			if c == nil {
				t.Fatal("nil Change")
			}
			if bad != nil || skip {
				continue
			}
			if c.ID == "" || c.RestaurantID == "" || c.Version < 0 {
				t.Fatalf("valid event %+v has an empty id or a negative version", c)
			}
			if c.Op == OpUpsert {
				members, err := docMembers(c.Doc)
				if err != nil {
					t.Fatalf("docMembers(%s) = %v", c.Doc, err)
				}
				body := dishBody(members, c.ID, c.RestaurantID, c.Version, 0x89c25c0000000000|1<<40, 10)
				if !jsonValid(body) {
					t.Fatalf("dish body %s is not valid JSON", body)
				}
			}
		}
	})
}

// BenchmarkDecode decodes a native restaurant and dish event, for
// comparison with BenchmarkDecodeDebezium.
func BenchmarkDecode(b *testing.B) {
	restaurant := []byte(`{"type":"restaurant","op":"upsert","id":"42","version":24023128,"location":{"lat":37.7749,"lon":-122.4194},"doc":{"id":42,"name":"Nopa","cuisines":["californian","brunch"],"open":true,"closed_on":null}}`)
	dish := []byte(`{"type":"dish","op":"upsert","id":"7","restaurant_id":"42","version":24023200,"doc":{"id":7,"name":"burrata","price_cents":1450,"diets":["vegetarian"]}}`)
	f, key := nativeFormat{}, []byte("42")
	b.ReportAllocs()
	b.SetBytes(int64(len(restaurant) + len(dish)))
	for b.Loop() {
		if _, _, bad := f.decode("restaurants", key, restaurant, 0); bad != nil {
			b.Fatal(bad)
		}
		if _, _, bad := f.decode("dishes", key, dish, 0); bad != nil {
			b.Fatal(bad)
		}
	}
}

// BenchmarkDecodeDebezium decodes a Debezium restaurant and dish event
// (the same rows as BenchmarkDecode's), bare and in the schema envelope.
func BenchmarkDecodeDebezium(b *testing.B) {
	for _, shape := range []string{"bare", "schema"} {
		b.Run(shape, func(b *testing.B) {
			d := testDebezium(b, dbzMapping)
			restaurant := dbzValue("restaurants", "u", "", nopaRow, 24023128)
			dish := dbzValue("dishes", "u", "", dishRow, 24023200)
			if shape == "schema" {
				restaurant = withSchema(restaurantSchema(""), restaurant)
				dish = withSchema(restaurantSchema(""), dish)
			}
			rv, dv, rk, dk := []byte(restaurant), []byte(dish), []byte(`{"id":42}`), []byte("42")
			b.ReportAllocs()
			b.SetBytes(int64(len(rv) + len(dv)))
			for b.Loop() {
				if _, _, bad := d.decode(dbzRestaurantTopic, rk, rv, 0); bad != nil {
					b.Fatal(bad)
				}
				if _, _, bad := d.decode("ingest.dishes-by-restaurant", dk, dv, 0); bad != nil {
					b.Fatal(bad)
				}
			}
		})
	}
}
