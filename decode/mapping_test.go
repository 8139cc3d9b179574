package decode

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goodMapping is a valid mapping, edited by the cases below.
const goodMapping = `{
  "version": "source.lsn",
  "restaurants": {"topic": "menu.public.restaurants", "table": "restaurants", "schema": "public",
    "id": "id", "lat": "latitude", "lon": "longitude", "exclude": ["latitude", "longitude"], "rename": {"title": "name"}},
  "dishes": {"topic": "menu.public.dishes", "id": "id", "restaurant_id": "restaurant_id",
    "columns": ["name", "price_cents"], "rename": {"price_cents": "price"}}
}`

func TestParseMapping(t *testing.T) {
	m, err := ParseMapping([]byte(goodMapping))
	if err != nil {
		t.Fatalf("ParseMapping(good) = %v", err)
	}
	if m.Restaurants.Lat != "latitude" || m.Dishes.RestaurantID != "restaurant_id" || m.Version != VersionLSN {
		t.Errorf("ParseMapping(good) = %+v", m)
	}
	edit := func(old, new string) string {
		if !strings.Contains(goodMapping, old) {
			t.Fatalf("%q is not in the good mapping", old)
		}
		return strings.Replace(goodMapping, old, new, 1)
	}
	for _, tc := range []struct {
		name, mapping string
		want          string // in the error
	}{
		{"not JSON", `restaurants: x`, "not a JSON object"},
		{"two objects", goodMapping + goodMapping, "more than one JSON value"},
		{"unknown key", edit(`"version"`, `"versoin"`), `unknown field "versoin"`},
		{"unknown key in a table", edit(`"exclude"`, `"exlude"`), `unknown field "exlude"`},
		{"restaurants missing", `{"dishes": {"topic": "d", "id": "id", "restaurant_id": "rid"}}`, "restaurants: missing"},
		{"dishes missing", `{"restaurants": {"topic": "r", "id": "id", "lat": "a", "lon": "o"}}`, "dishes: missing"},
		{"neither topic nor table", edit(`"topic": "menu.public.dishes", `, ``), "dishes: give its topic, its table, or both"},
		{"schema without table", edit(`"topic": "menu.public.dishes",`, `"topic": "menu.public.dishes", "schema": "public",`), `dishes.schema "public": only with dishes.table`},
		{"id missing", edit(`"id": "id", "lat"`, `"lat"`), "restaurants.id: missing"},
		{"lat missing", edit(`"lat": "latitude", `, ``), "restaurants.lat: missing"},
		{"lon missing", edit(`"lon": "longitude", `, ``), "restaurants.lon: missing"},
		{"restaurant id missing", edit(`"restaurant_id": "restaurant_id",`, ``), "dishes.restaurant_id: missing"},
		{"restaurant id on restaurants", edit(`"lat": "latitude",`, `"lat": "latitude", "restaurant_id": "id",`), "restaurants.restaurant_id: only dishes have one"},
		{"location on dishes", edit(`"restaurant_id": "restaurant_id",`, `"restaurant_id": "restaurant_id", "lat": "lat",`), "a dish has no location of its own"},
		{"bad version", edit(`"source.lsn"`, `"lsn"`), `version: "lsn": want source.lsn`},
		{"empty version column", edit(`"source.lsn"`, `"column:"`), `version: "column:"`},
		{"bad table version", edit(`"id": "id", "restaurant_id"`, `"id": "id", "version": "source.xid", "restaurant_id"`), `dishes.version: "source.xid"`},
		{"columns and exclude", edit(`"columns"`, `"exclude": ["x"], "columns"`), "dishes: columns (copy these) and exclude (copy all but these) given together"},
		{"empty column", edit(`["name", "price_cents"]`, `["name", "", "price_cents"]`), "dishes.columns: an empty column name"},
		{"empty excluded column", edit(`["latitude", "longitude"]`, `["latitude", " "]`), "restaurants.exclude: an empty column name"},
		{"column twice", edit(`["name", "price_cents"]`, `["name", "price_cents", "name"]`), `dishes.columns: "name" listed twice`},
		{"column of a reserved name", edit(`["name", "price_cents"]`, `["name", "price_cents", "location"]`), `"location" would be the document's "location", a field ingest sets itself`},
		{"renamed to a reserved name", edit(`{"title": "name"}`, `{"title": "geo_cell"}`), `restaurants.rename: "title" renamed to "geo_cell", a field ingest sets itself`},
		{"listed column renamed to a reserved name", edit(`{"price_cents": "price"}`, `{"price_cents": "version"}`), `"price_cents" would be the document's "version"`},
		{"renamed to nothing", edit(`{"title": "name"}`, `{"title": ""}`), `restaurants.rename: "title" renamed to an empty name`},
		{"rename of a column not listed", edit(`{"price_cents": "price"}`, `{"price_cents": "price", "cost": "c"}`), `dishes.rename: "cost" is not in dishes.columns`},
		{"rename of an excluded column", edit(`{"title": "name"}`, `{"latitude": "lat"}`), `restaurants.rename: "latitude" is excluded`},
		{"two renamed alike", edit(`{"title": "name"}`, `{"title": "name", "label": "name"}`), `restaurants.rename: "label" and "title" both renamed to "name"`},
		{"renamed onto a listed column", edit(`{"price_cents": "price"}`, `{"price_cents": "name"}`), `columns "name" and "price_cents" would both be the document's "name"`},
		{"one topic for both", edit(`"menu.public.dishes"`, `"menu.public.restaurants"`), "restaurants.topic and dishes.topic are both"},
		{"one table for both", edit(`"topic": "menu.public.dishes",`, `"topic": "menu.public.dishes", "table": "restaurants", "schema": "public",`), "restaurants.table and dishes.table are both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ParseMapping([]byte(tc.mapping))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseMapping = %+v, %v\nwant an error saying %q", m, err, tc.want)
			}
		})
	}
	// Every problem at once.
	_, err = ParseMapping([]byte(`{"restaurants": {"topic": "r"}, "dishes": {"table": "d", "lat": "x"}, "version": "now"}`))
	for _, want := range []string{"version:", "restaurants.id", "restaurants.lat", "restaurants.lon", "dishes.id", "dishes.restaurant_id", "dishes.lat and dishes.lon"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMapping(many problems) = %v, want it to name %s", err, want)
		}
	}
}

// TestLoadMapping loads the example mapping shipped in deploy/debezium,
// and names the file it cannot read or parse.
func TestLoadMapping(t *testing.T) {
	m, err := LoadMapping(filepath.Join("..", "deploy", "debezium", "mapping.json"))
	if err != nil {
		t.Fatalf("LoadMapping(example) = %v", err)
	}
	if m.Restaurants.Topic != "menu.public.restaurants" || m.Dishes.Topic != "menu.public.dishes" {
		t.Errorf("example mapping topics %q, %q", m.Restaurants.Topic, m.Dishes.Topic)
	}
	if _, err := LoadMapping(filepath.Join(t.TempDir(), "missing.json")); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Errorf("LoadMapping(missing) = %v, want an error naming the file", err)
	}
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"restaurants":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadMapping(bad); err == nil || !strings.HasPrefix(err.Error(), bad+": mapping: ") {
		t.Errorf("LoadMapping(bad) = %v, want an error naming %s", err, bad)
	}
}
