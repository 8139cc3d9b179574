// Package dbztest holds the Debezium fixtures that the decoder's tests
// (package decode) and the pipeline's end-to-end tests share: builders of
// change events as Debezium's Postgres connector writes them through
// Kafka Connect's JSON converter, the mappings that read them, and the
// real change events captured in decode/testdata/debezium with the
// Changes they must decode to.
//
// It is test machinery: only tests import it. It imports decode (for
// Change) and nothing else of geoshard.
package dbztest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/decode"
)

// The topics of Mapping's tables.
const (
	RestaurantTopic = "pg.public.restaurants"
	DishTopic       = "pg.public.dishes"
)

// Shapes are the two shapes of captured events: the JSON converter
// without and with schemas, each a directory of decode/testdata/debezium.
var Shapes = []string{"schemaless", "schemas"}

// Source is a Postgres connector's source block.
func Source(table string, lsn any) string {
	return fmt.Sprintf(`{"version":"2.7.3.Final","connector":"postgresql","name":"pg","ts_ms":1700000000123,"snapshot":"false","db":"menu","sequence":"[null,\"24023000\"]","schema":"public","table":%q,"txId":780,"lsn":%v,"xmin":null}`, table, lsn)
}

// Value is a change event as the JSON converter writes it without
// schemas; before and after are JSON ("" for null).
func Value(table, op, before, after string, lsn any) string {
	if before == "" {
		before = "null"
	}
	if after == "" {
		after = "null"
	}
	return fmt.Sprintf(`{"before":%s,"after":%s,"source":%s,"op":%q,"ts_ms":1700000000456,"transaction":null}`, before, after, Source(table, lsn), op)
}

// WithSchema wraps a value or a key in the JSON converter's schema
// envelope.
func WithSchema(schema, payload string) string {
	return `{"schema":` + schema + `,"payload":` + payload + `}`
}

// RestaurantSchema is a value schema of the restaurants table with
// latitude, longitude and rating numeric (Decimal, scale 6, 6 and 1).
func RestaurantSchema(extra string) string {
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

// Unscaled is the JSON converter's base64 of an unscaled decimal: the
// shortest big-endian two's complement.
func Unscaled(v int64) string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(v))
	i := 0
	for i < 7 && (b[i] == 0 && b[i+1]&0x80 == 0 || b[i] == 0xff && b[i+1]&0x80 != 0) {
		i++
	}
	return base64.StdEncoding.EncodeToString(b[i:])
}

// Rows of the two tables as a change event carries them, and the
// documents the decoder makes of them under Mapping.
const (
	NopaRow   = `{"id":42,"title":"Nopa","cuisines":["californian","brunch"],"open":true,"closed_on":null,"latitude":37.7749,"longitude":-122.4194}`
	NopaDoc   = `{"id":42,"name":"Nopa","cuisines":["californian","brunch"],"open":true,"closed_on":null}`
	ToastRow  = `{"id":7,"restaurant_id":42,"name":"burrata","notes":"__debezium_unavailable_value"}`
	DishRow   = `{"id":7,"restaurant_id":42,"name":"burrata","price_cents":1450,"diets":["vegetarian"]}`
	DishDoc   = `{"id":7,"name":"burrata","price_cents":1450,"diets":["vegetarian"]}`
	DishKeyed = `{"id":7}`
)

// Mapping is the mapping of the synthetic events (Value): its topics are
// RestaurantTopic and DishTopic, and it copies every column but the
// location, title renamed name.
const Mapping = `{
  "restaurants": {"topic": "pg.public.restaurants", "table": "restaurants", "schema": "public",
    "id": "id", "lat": "latitude", "lon": "longitude", "exclude": ["latitude", "longitude"], "rename": {"title": "name"}},
  "dishes": {"topic": "pg.public.dishes", "table": "dishes", "schema": "public",
    "id": "id", "restaurant_id": "restaurant_id", "exclude": ["restaurant_id"]}
}`

// CapturedMapping maps the tables of the real change events in
// decode/testdata/debezium (internal/cdc captured them from a real
// connector).
const CapturedMapping = `{
  "restaurants": {"table": "restaurants", "schema": "menu", "id": "id", "lat": "lat", "lon": "lon", "exclude": ["lat", "lon"]},
  "dishes": {"table": "dishes", "schema": "menu", "id": "id", "restaurant_id": "restaurant_id", "exclude": ["restaurant_id"]}
}`

// Captured is one real change event of decode/testdata/debezium and the
// Change it must decode to (Version: the event's own source.lsn).
type Captured struct {
	// File names the event's two files, <File>.key.json and
	// <File>.value.json, in each shape's directory.
	File string
	// Dish: a dish table's event, read from the dish topic; else a
	// restaurant's.
	Dish bool
	Want decode.Change
	// Skip: the event finishes with no write (a tombstone).
	Skip bool
}

// CapturedEvents are the events of decode/testdata/debezium, in the order
// the connector wrote them, each in both shapes (Shapes).
var CapturedEvents = []Captured{
	{File: "01-restaurant-snapshot", Want: decode.Change{Type: decode.TypeRestaurant, Op: decode.OpUpsert, ID: "1", RestaurantID: "1", Lat: 37.7614, Lon: -122.4241,
		Doc: []byte(`{"id":1,"name":"Tartine","cuisines":["bakery","cafe"]}`)}},
	{File: "02-dish-snapshot", Dish: true, Want: decode.Change{Type: decode.TypeDish, Op: decode.OpUpsert, ID: "10", RestaurantID: "1",
		Doc: []byte(`{"id":10,"name":"Morning bun","price_cents":550,"allergens":["gluten","dairy"],"diets":["vegetarian"]}`)}},
	{File: "03-restaurant-insert", Want: decode.Change{Type: decode.TypeRestaurant, Op: decode.OpUpsert, ID: "2", RestaurantID: "2", Lat: 40.7223, Lon: -73.9874,
		Doc: []byte(`{"id":2,"name":"Katz's","cuisines":["deli"]}`)}},
	{File: "04-dish-insert", Dish: true, Want: decode.Change{Type: decode.TypeDish, Op: decode.OpUpsert, ID: "11", RestaurantID: "1",
		Doc: []byte(`{"id":11,"name":"Country loaf","price_cents":1400,"allergens":["gluten"],"diets":["vegan"]}`)}},
	{File: "05-dish-update-restaurant", Dish: true, Want: decode.Change{Type: decode.TypeDish, Op: decode.OpUpsert, ID: "11", RestaurantID: "2", FormerRestaurantID: "1",
		Doc: []byte(`{"id":11,"name":"Country loaf","price_cents":1400,"allergens":["gluten"],"diets":["vegan"]}`)}},
	{File: "06-restaurant-update-location", Want: decode.Change{Type: decode.TypeRestaurant, Op: decode.OpUpsert, ID: "1", RestaurantID: "1", Lat: 34.0522, Lon: -118.2437,
		Doc: []byte(`{"id":1,"name":"Tartine","cuisines":["bakery","cafe"]}`)}},
	{File: "07-dish-delete", Dish: true, Want: decode.Change{Type: decode.TypeDish, Op: decode.OpDelete, ID: "10", RestaurantID: "1"}},
	{File: "08-dish-tombstone", Dish: true, Skip: true, Want: decode.Change{Type: decode.TypeDish, Op: decode.OpDelete}},
}

// ReadCaptured reads a captured event's key and value, and its
// source.lsn, from dir (the path of decode/testdata/debezium from the
// calling test's package) in shape, "schemaless" or "schemas".
func ReadCaptured(t testing.TB, dir, shape, file string) (key, value []byte, lsn int64) {
	t.Helper()
	dir = filepath.Join(dir, shape)
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

// Seed is a fuzz seed: a key and a value of a restaurant event, or of a
// dish event if Dish.
type Seed struct {
	Dish       bool
	Key, Value []byte
}

// Seeds are the seeds of the Debezium fuzz tests: synthetic events of
// every op and shape, and the captured events (read from dir, as by
// ReadCaptured).
func Seeds(t testing.TB, dir string) []Seed {
	t.Helper()
	restaurant := func(op, before, after string) string { return Value("restaurants", op, before, after, 24023128) }
	var out []Seed
	for _, s := range []struct {
		dish       bool
		key, value string
	}{
		{false, `{"id":42}`, restaurant("c", "", NopaRow)},
		{false, `{"id":42}`, WithSchema(RestaurantSchema(""), restaurant("c", "", `{"id":42,"rating":"Lw==","latitude":"AkBLNA==","longitude":"+LR7OA=="}`))},
		{false, `{"id":42}`, restaurant("d", `{"id":42}`, "")},
		{false, `{"schema":{},"payload":{"id":42}}`, restaurant("r", "", `{"id":42,"latitude":{"scale":4,"value":"BcOV"},"longitude":1}`)},
		{true, "42", Value("dishes", "u", strings.Replace(DishRow, "42", "41", 1), DishRow, 9)},
		{true, "", Value("dishes", "u", ToastRow, ToastRow, 9)},
		{true, "", Value("dishes", "d", DishRow, "", 9)},
		{true, "", ""},
		{false, "", `{"op":"t","source":{"lsn":1}}`},
	} {
		out = append(out, Seed{Dish: s.dish, Key: []byte(s.key), Value: []byte(s.value)})
	}
	for _, shape := range Shapes {
		for _, ev := range CapturedEvents {
			key, value, _ := ReadCaptured(t, dir, shape, ev.File)
			out = append(out, Seed{Dish: ev.Dish, Key: key, Value: value})
		}
	}
	return out
}
