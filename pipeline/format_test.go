package pipeline

import (
	"strings"
	"testing"

	"github.com/geoshard/geoshard/decode"
)

// formatMapping is a valid mapping of the topics menu.public.restaurants
// and menu.public.dishes (decode/mapping_test.go's goodMapping).
const formatMapping = `{
  "version": "source.lsn",
  "restaurants": {"topic": "menu.public.restaurants", "table": "restaurants", "schema": "public",
    "id": "id", "lat": "latitude", "lon": "longitude", "exclude": ["latitude", "longitude"], "rename": {"title": "name"}},
  "dishes": {"topic": "menu.public.dishes", "id": "id", "restaurant_id": "restaurant_id",
    "columns": ["name", "price_cents"], "rename": {"price_cents": "price"}}
}`

// TestConfigFormat: the format's defaults and refusals.
func TestConfigFormat(t *testing.T) {
	m, err := decode.ParseMapping([]byte(formatMapping))
	if err != nil {
		t.Fatal(err)
	}
	base := Config{Brokers: []string{"k:9092"}}
	d := base.withDefaults()
	if d.Format != decode.FormatNative || d.DishKey != DishKeyRestaurant {
		t.Errorf("defaults: format %q, dish key %q; want native and restaurant", d.Format, d.DishKey)
	}
	dbz := base
	dbz.Format, dbz.Mapping = decode.FormatDebezium, m
	if err := dbz.Validate(); err != nil {
		t.Fatalf("debezium with a mapping: %v", err)
	}
	d = dbz.withDefaults()
	if d.DishKey != DishKeyDish || d.RestaurantTopic != "menu.public.restaurants" || d.DishTopic != "menu.public.dishes" {
		t.Errorf("debezium defaults: dish key %q, topics %q and %q; want dish and the mapping's topics", d.DishKey, d.RestaurantTopic, d.DishTopic)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"unknown format", func(c *Config) { c.Format = "avro" }, `format "avro": want "native" or "debezium"`},
		{"debezium without a mapping", func(c *Config) { c.Mapping = nil }, "needs a mapping"},
		{"mapping with native", func(c *Config) { c.Format = decode.FormatNative }, `mapping: only read with format "debezium"`},
		{"dishes keyed by restaurant", func(c *Config) { c.DishKey = DishKeyRestaurant }, "Debezium keys the dish topic by the dish's own id"},
		{"another restaurant topic", func(c *Config) { c.RestaurantTopic = "restaurants" }, `the mapping's restaurants.topic is "menu.public.restaurants"`},
		{"another dish topic", func(c *Config) { c.DishTopic = "dishes" }, `the mapping's dishes.topic is "menu.public.dishes"`},
		{"a bad mapping", func(c *Config) { c.Mapping = &decode.Mapping{} }, "restaurants: missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dbz
			tc.edit(&c)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Validate = %v, want an error saying %q", err, tc.want)
			}
		})
	}
}
