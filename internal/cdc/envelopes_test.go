//go:build realcluster

package cdc

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite the samples in decode/testdata/debezium from this run's events")

// samplesDir holds real Debezium events, as the connector wrote them to
// Kafka, for the pipeline's decoder tests.
const samplesDir = "decode/testdata/debezium"

// A sample is one event the test waits for: the topic's table, its place
// among that topic's records, and what it must say.
type sample struct {
	file  string // name in the shape's directory, without .key.json / .value.json
	table string // restaurants or dishes
	index int    // its place in its topic
	op    string // Debezium's op; "" for a tombstone
	id    float64
	check func(t *testing.T, e envelope)
}

// samples are the events of the changes TestDebeziumEnvelopes makes, in
// the order each table's topic carries them.
var samples = []sample{
	{file: "01-restaurant-snapshot", table: "restaurants", index: 0, op: "r", id: 1},
	{file: "02-dish-snapshot", table: "dishes", index: 0, op: "r", id: 10},
	{file: "03-restaurant-insert", table: "restaurants", index: 1, op: "c", id: 2},
	{file: "04-dish-insert", table: "dishes", index: 1, op: "c", id: 11},
	{file: "05-dish-update-restaurant", table: "dishes", index: 2, op: "u", id: 11, check: func(t *testing.T, e envelope) {
		if e.Before["restaurant_id"] != 1.0 || e.After["restaurant_id"] != 2.0 {
			t.Errorf("dish 11 moved from restaurant %v to %v, want 1 to 2", e.Before["restaurant_id"], e.After["restaurant_id"])
		}
	}},
	{file: "06-restaurant-update-location", table: "restaurants", index: 2, op: "u", id: 1, check: func(t *testing.T, e envelope) {
		if e.Before["lat"] != 37.7614 || e.After["lat"] != 34.0522 || e.After["lon"] != -118.2437 {
			t.Errorf("restaurant 1 moved from lat %v to %v, %v; want 37.7614 to 34.0522, -118.2437", e.Before["lat"], e.After["lat"], e.After["lon"])
		}
	}},
	{file: "07-dish-delete", table: "dishes", index: 3, op: "d", id: 10, check: func(t *testing.T, e envelope) {
		// REPLICA IDENTITY FULL: the whole row, not only its key.
		if e.Before["name"] != "Morning bun" || e.Before["restaurant_id"] != 1.0 || e.After != nil {
			t.Errorf("delete of dish 10: before %v, after %v; want the whole row before, nothing after", e.Before, e.After)
		}
	}},
	{file: "08-dish-tombstone", table: "dishes", index: 4, op: "", id: 10},
}

// The two shapes of Connect's JSON converter: with schemas.enable each key
// and value is {"schema":…,"payload":…}.
var shapes = []struct {
	dir     string
	schemas bool
}{
	{dir: "schemaless", schemas: false},
	{dir: "schemas", schemas: true},
}

// TestDebeziumEnvelopes makes each kind of change the pipeline must
// decode — a snapshot read, an insert, an update that moves a dish to
// another restaurant, an update of a restaurant's location, a delete and
// its tombstone — with two connectors on the same tables, one writing
// schemaless JSON and one with schemas, and checks what each wrote to
// Kafka: the operations in order, the before and after images, and the
// shape of every key and value against the samples in
// decode/testdata/debezium. With -update it writes this run's events
// there instead, under fixed names (schema menu, topic prefixes geoshard
// and geoshard_schemas).
func TestDebeziumEnvelopes(t *testing.T) {
	name := func(base string) string {
		if *update {
			return base
		}
		return identifier(realenv.Unique(base))
	}
	e := newCDCEnv(t, name("menu"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e.exec(ctx, "INSERT INTO "+e.schema+".restaurants VALUES (1, 'Tartine', 37.7614, -122.4241, '{bakery,cafe}')")
	e.exec(ctx, "INSERT INTO "+e.schema+".dishes VALUES (10, 1, 'Morning bun', 550, '{gluten,dairy}', '{vegetarian}')")

	srcs := make([]Source, len(shapes))
	var topics []string
	for i, sh := range shapes {
		prefix := name("geoshard")
		if sh.schemas {
			prefix = name("geoshard_schemas")
		}
		srcs[i] = Source{Slot: prefix, Publication: prefix, TopicPrefix: prefix, Schemas: sh.schemas}
		e.startSource(ctx, prefix, srcs[i])
		r, d := e.topics(srcs[i])
		topics = append(topics, r, d)
	}
	e.waitTopics(ctx, topics...)
	// Each snapshot first, so that no change below is both in a
	// snapshot and in the stream.
	e.readUntil(ctx, topics, func(got []record) bool { return len(got) >= len(topics) })

	e.exec(ctx, "INSERT INTO "+e.schema+".restaurants VALUES (2, 'Katz''s', 40.7223, -73.9874, '{deli}')")
	e.exec(ctx, "INSERT INTO "+e.schema+".dishes VALUES (11, 1, 'Country loaf', 1400, '{gluten}', '{vegan}')")
	e.exec(ctx, "UPDATE "+e.schema+".dishes SET restaurant_id = 2 WHERE id = 11")
	e.exec(ctx, "UPDATE "+e.schema+".restaurants SET lat = 34.0522, lon = -118.2437 WHERE id = 1")
	e.exec(ctx, "DELETE FROM "+e.schema+".dishes WHERE id = 10")

	want := map[string]int{"restaurants": 3, "dishes": 5}
	got := e.readUntil(ctx, topics, func(got []record) bool {
		n := map[string]int{}
		for _, r := range got {
			n[r.Topic]++
		}
		for _, tp := range topics {
			if n[tp] < want[tp[strings.LastIndex(tp, ".")+1:]] {
				return false
			}
		}
		return true
	})
	byTopic := map[string][]record{}
	for _, r := range got {
		byTopic[r.Topic] = append(byTopic[r.Topic], r)
	}

	for i, sh := range shapes {
		restaurants, dishes := e.topics(srcs[i])
		t.Run(sh.dir, func(t *testing.T) {
			for tp, n := range map[string]int{restaurants: 3, dishes: 5} {
				if len(byTopic[tp]) != n {
					t.Errorf("%s: %d records, want %d", tp, len(byTopic[tp]), n)
				}
			}
			dir := testenv.Path(t, filepath.Join(samplesDir, sh.dir))
			for _, s := range samples {
				tp := restaurants
				if s.table == "dishes" {
					tp = dishes
				}
				if s.index >= len(byTopic[tp]) {
					t.Errorf("%s: no record %d in %s", s.file, s.index, tp)
					continue
				}
				r := byTopic[tp][s.index]
				checkSample(t, s, r, sh.schemas, e.schema)
				if *update {
					writeSample(t, dir, s.file, r)
					continue
				}
				compareShape(t, dir, s.file, r)
			}
		})
	}
}

// envelope is the part of a Debezium change event the checks read.
type envelope struct {
	Op     string         `json:"op"`
	Before map[string]any `json:"before"`
	After  map[string]any `json:"after"`
	Source struct {
		Connector string `json:"connector"`
		Schema    string `json:"schema"`
		Table     string `json:"table"`
		Snapshot  string `json:"snapshot"`
		LSN       *int64 `json:"lsn"`
	} `json:"source"`
}

// payload returns the payload of a converter's message: the message
// itself, or with schemas its "payload", after checking it has a schema.
func payload(t *testing.T, what string, b []byte, schemas bool) []byte {
	t.Helper()
	if !schemas {
		return b
	}
	var w struct {
		Schema  json.RawMessage `json:"schema"`
		Payload json.RawMessage `json:"payload"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatalf("%s: %v in %s", what, err, b)
	}
	if len(w.Schema) == 0 || string(w.Schema) == "null" {
		t.Errorf("%s: no schema in %s", what, b)
	}
	return w.Payload
}

// checkSample checks what the record says against what the sample's
// change did.
func checkSample(t *testing.T, s sample, r record, schemas bool, schema string) {
	t.Helper()
	var key struct{ ID float64 }
	if err := json.Unmarshal(payload(t, s.file+" key", r.Key, schemas), &key); err != nil {
		t.Fatalf("%s key: %v in %s", s.file, err, r.Key)
	}
	if key.ID != s.id {
		t.Errorf("%s: key id %v, want %v", s.file, key.ID, s.id)
	}
	if s.op == "" {
		if r.Value != nil {
			t.Errorf("%s: value %s, want a tombstone (null)", s.file, r.Value)
		}
		return
	}
	var e envelope
	if err := json.Unmarshal(payload(t, s.file+" value", r.Value, schemas), &e); err != nil {
		t.Fatalf("%s value: %v in %s", s.file, err, r.Value)
	}
	if e.Op != s.op {
		t.Errorf("%s: op %q, want %q", s.file, e.Op, s.op)
	}
	if e.Source.Connector != "postgresql" || e.Source.Schema != schema || e.Source.Table != s.table || e.Source.LSN == nil {
		t.Errorf("%s: source connector %q schema %q table %q lsn %v; want postgresql, %s, %s and an lsn",
			s.file, e.Source.Connector, e.Source.Schema, e.Source.Table, e.Source.LSN, schema, s.table)
	}
	if snap := e.Source.Snapshot != "" && e.Source.Snapshot != "false"; snap != (s.op == "r") {
		t.Errorf("%s: source.snapshot %q with op %q", s.file, e.Source.Snapshot, e.Op)
	}
	if row := e.After; row != nil {
		arrays := []string{"cuisines"}
		if s.table == "dishes" {
			arrays = []string{"allergens", "diets"}
		}
		for _, col := range arrays {
			if _, ok := row[col].([]any); !ok {
				t.Errorf("%s: after.%s = %#v, want a JSON array", s.file, col, row[col])
			}
		}
	}
	if s.check != nil {
		s.check(t, e)
	}
}

// writeSample writes the record's key and value as they came from Kafka;
// a tombstone's value file is empty.
func writeSample(t *testing.T, dir, file string, r record) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for ext, b := range map[string][]byte{".key.json": r.Key, ".value.json": r.Value} {
		if err := os.WriteFile(filepath.Join(dir, file+ext), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// compareShape checks that the record's key and value have the fields, at
// every depth, of the sample in dir: what this Debezium writes is still
// what the decoder is tested on.
func compareShape(t *testing.T, dir, file string, r record) {
	t.Helper()
	for ext, b := range map[string][]byte{".key.json": r.Key, ".value.json": r.Value} {
		path := filepath.Join(dir, file+ext)
		want, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%v (go test -tags realcluster -run TestDebeziumEnvelopes ./internal/cdc -update writes it)", err)
			continue
		}
		if len(bytes.TrimSpace(want)) == 0 || b == nil {
			if (len(bytes.TrimSpace(want)) == 0) != (b == nil) {
				t.Errorf("%s: this run's %s is %q, the sample's %q", file, ext, b, want)
			}
			continue
		}
		gotPaths, wantPaths := fieldPaths(t, b), fieldPaths(t, want)
		if !slices.Equal(gotPaths, wantPaths) {
			t.Errorf("%s%s: fields differ from the sample's\n got: %v\nwant: %v", file, ext, gotPaths, wantPaths)
		}
	}
}

// fieldPaths lists the object keys of a JSON document at every depth,
// sorted: "source.lsn", "schema.fields[].field"; the elements of an array
// share its path.
func fieldPaths(t *testing.T, b []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	seen := map[string]bool{}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				p := k
				if prefix != "" {
					p = prefix + "." + k
				}
				seen[p] = true
				walk(p, c)
			}
		case []any:
			for _, c := range v {
				walk(prefix+"[]", c)
			}
		}
	}
	walk("", v)
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// identifier turns a realenv.Unique name into a Postgres identifier, a
// replication slot name and a topic prefix alike: lowercase letters,
// digits and underscores.
func identifier(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_':
			return r
		case r >= 'A' && r <= 'Z':
			return r - 'A' + 'a'
		}
		return '_'
	}, s)
}
