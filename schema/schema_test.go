package schema

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
)

func TestIndexBodyRoundTripsTheMap(t *testing.T) {
	m := testenv.LoadMap(t, testenv.MapUS18)
	body, err := IndexBody(m, IndexOptions{Loading: true, GCDeletes: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	var idx struct {
		Settings struct {
			Index map[string]any
		}
		Mappings struct {
			Routing    map[string]bool `json:"_routing"`
			Meta       json.RawMessage `json:"_meta"`
			Properties map[string]map[string]any
		}
	}
	if err := json.Unmarshal(body, &idx); err != nil {
		t.Fatal(err)
	}
	s := idx.Settings.Index
	if s["number_of_shards"] != float64(18) || s["number_of_routing_shards"] != float64(18) || s["number_of_replicas"] != float64(0) ||
		s["refresh_interval"] != "-1" || s["gc_deletes"] != "1h" {
		t.Errorf("settings = %v", s)
	}
	if !idx.Mappings.Routing["required"] || idx.Mappings.Properties[FieldRelation]["type"] != "join" || idx.Mappings.Properties[FieldGeoCell]["type"] != "keyword" {
		t.Errorf("mappings = %+v", idx.Mappings)
	}
	back, err := MapFromMeta(idx.Mappings.Meta)
	if err != nil || back.Hash() != m.Hash() {
		t.Errorf("MapFromMeta(IndexBody) = %v, %v; want the same map", back, err)
	}
}

func TestMapFromMetaRejects(t *testing.T) {
	m := testenv.LoadMap(t, testenv.MapUS18)
	mappings, _ := Mappings(m)
	good, _ := json.Marshal(mappings["_meta"])
	tampered := strings.Replace(string(good), m.Hash(), strings.Repeat("0", 64), 1)
	for _, tc := range []struct{ name, meta, want string }{
		{"absent", ``, "records no geoshard map"},
		{"other meta", `{"owner":"search"}`, "records no geoshard map"},
		{"bad map", `{"geoshard":{"map_hash":"x","map":{"version":1}}}`, "_meta.geoshard.map"},
		{"hash mismatch", tampered, "recorded hash 0000"},
	} {
		_, err := MapFromMeta(json.RawMessage(tc.meta))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: MapFromMeta error = %v, want %q", tc.name, err, tc.want)
		}
	}
	if _, err := MapFromMeta(nil); !errors.Is(err, ErrNoMap) {
		t.Errorf("MapFromMeta(nil) = %v, want ErrNoMap", err)
	}
}

func TestIDs(t *testing.T) {
	for _, tc := range []struct{ in, rel, id string }{{RestaurantID("r1"), RelationRestaurant, "r1"}, {DishID("d:9"), RelationDish, "d:9"}} {
		rel, id, err := ParseID(tc.in)
		if err != nil || rel != tc.rel || id != tc.id {
			t.Errorf("ParseID(%q) = %q, %q, %v", tc.in, rel, id, err)
		}
	}
	for _, bad := range []string{"r1", "menu:r1", "dish:", ""} {
		if _, _, err := ParseID(bad); err == nil {
			t.Errorf("ParseID(%q) succeeded", bad)
		}
	}
}

// The real-engine suites clear the migration state index between tests
// by name.
func TestRealSuitesClearTheMigrationsIndex(t *testing.T) {
	if !slices.Contains(realenv.MenuIndexes, MigrationsIndex) {
		t.Errorf("realenv.MenuIndexes = %v, which lacks %s", realenv.MenuIndexes, MigrationsIndex)
	}
}
