package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/decode"
)

const exampleMapping = "../../deploy/debezium/mapping.json"

// TestFormatFlags: --format and --mapping (and their variables) set the
// pipeline's format and mapping; the mapping's topics stand in for topic
// flags not given.
func TestFormatFlags(t *testing.T) {
	var errb bytes.Buffer
	o, err := parseFlags([]string{"--format", "debezium", "--mapping", exampleMapping}, envOf(nil), &errb)
	if err != nil {
		t.Fatal(err)
	}
	if o.pipe.Format != decode.FormatDebezium || o.pipe.Mapping == nil || o.pipe.DishKey != "" {
		t.Errorf("format %q, mapping %v, dish key %q; want debezium, the mapping, and the pipeline's default keying", o.pipe.Format, o.pipe.Mapping, o.pipe.DishKey)
	}
	if o.pipe.RestaurantTopic != "menu.public.restaurants" || o.pipe.DishTopic != "menu.public.dishes" {
		t.Errorf("topics %q and %q, want the mapping's", o.pipe.RestaurantTopic, o.pipe.DishTopic)
	}
	o, err = parseFlags([]string{"--dish-topic", "cdc.dishes"}, envOf(map[string]string{"GEOSHARD_FORMAT": "debezium", "GEOSHARD_MAPPING": exampleMapping}), &errb)
	if err != nil {
		t.Fatal(err)
	}
	if o.pipe.Format != decode.FormatDebezium || o.pipe.DishTopic != "cdc.dishes" || o.pipe.RestaurantTopic != "menu.public.restaurants" {
		t.Errorf("from the environment: format %q, topics %q and %q", o.pipe.Format, o.pipe.RestaurantTopic, o.pipe.DishTopic)
	}
	o, err = parseFlags(nil, envOf(nil), &errb)
	if err != nil || o.pipe.Format != decode.FormatNative || o.pipe.Mapping != nil || o.pipe.RestaurantTopic != "restaurants" {
		t.Errorf("defaults: %+v, %v; want native, no mapping, topic restaurants", o.pipe, err)
	}
}

// TestFormatFlagsExit2: a bad format or mapping stops ingest at start,
// with exit status 2 and what to fix.
func TestFormatFlagsExit2(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"restaurants":{"topic":"r","id":"id","lat":"lat"},"dishes":{"topic":"d","id":"id","restaurant_id":"rid"},"colour":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	invalid := filepath.Join(t.TempDir(), "invalid.json")
	if err := os.WriteFile(invalid, []byte(`{"restaurants":{"topic":"r","id":"id","lat":"lat"},"dishes":{"topic":"d","id":"id","restaurant_id":"rid"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown format", []string{"--format", "avro"}, nil, `--format "avro": want native or debezium`},
		{"unknown format from the environment", nil, map[string]string{"GEOSHARD_FORMAT": "avro"}, `--format "avro"`},
		{"debezium without a mapping", []string{"--format", "debezium"}, nil, "--format debezium: needs --mapping"},
		{"mapping without debezium", []string{"--mapping", exampleMapping}, nil, "only read with --format debezium"},
		{"mapping file missing", []string{"--format", "debezium", "--mapping", "/nonexistent/mapping.json"}, nil, "/nonexistent/mapping.json"},
		{"unknown key in the mapping", []string{"--format", "debezium", "--mapping", bad}, nil, `unknown field "colour"`},
		{"invalid mapping", nil, map[string]string{"GEOSHARD_FORMAT": "debezium", "GEOSHARD_MAPPING": invalid}, "restaurants.lon: missing"},
		{"debezium with dishes keyed by restaurant", []string{"--format", "debezium", "--mapping", exampleMapping, "--dish-key", "restaurant", "--metrics-addr", ""}, nil,
			"Debezium keys the dish topic by the dish's own id"},
		{"topic flag against the mapping", []string{"--format", "debezium", "--mapping", exampleMapping, "--restaurant-topic", "restaurants", "--metrics-addr", ""}, nil,
			`the mapping's restaurants.topic is "menu.public.restaurants"`},
		{"debezium embedded", []string{"--embedded", "--format", "debezium", "--mapping", exampleMapping}, nil, "embedded mode produces native events"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, envOf(tc.env), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("ingest %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
			}
		})
	}
}
