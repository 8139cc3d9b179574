package search_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
	"github.com/geoshard/geoshard/search"
)

// A Client searches an alias with the map its write index was built with,
// asking only the shards that cover the area. Here against the project's
// OpenSearch emulator: an index made as reshard init makes it, three
// restaurants (two in San Francisco, one in New York) with their dishes,
// written as ingest writes them — each under its restaurant's geoshard —
// and two searches within 10 km of San Francisco's centre. A search
// matches a dish's name or its restaurant's.
func ExampleClient() {
	srv := osfake.NewTestServer(osfake.Options{})
	defer srv.Close()
	ctx := context.Background()

	data, err := os.ReadFile("../testdata/maps/us-18.json")
	if err != nil {
		log.Fatal(err)
	}
	m, err := router.Parse(data)
	if err != nil {
		log.Fatal(err)
	}
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{srv.URL}})
	if err != nil {
		log.Fatal(err)
	}
	admin := bulk.NewAdmin(client)
	replicas := 0
	if err := migrate.Init(ctx, admin, migrate.InitConfig{Map: m, Index: "menu-v1", Alias: "menu", Replicas: &replicas}); err != nil {
		log.Fatal(err)
	}

	type restaurant struct {
		id, name, cuisine string
		lat, lng          float64
		dishes            []string
	}
	restaurants := []restaurant{
		{"r1", "Mission Thai", "thai", 37.7599, -122.4148, []string{"pad thai", "green curry"}},
		{"r2", "North Beach Pizza", "italian", 37.8006, -122.4103, []string{"margherita pizza"}},
		{"r3", "Canal Street Noodles", "thai", 40.7191, -74.0003, []string{"pad thai"}},
	}
	var items []bulk.Item
	for _, r := range restaurants {
		cell, err := m.Cell(r.lat, r.lng)
		if err != nil {
			log.Fatal(err)
		}
		sh := m.Shard(m.LocateCell(cell))
		body, _ := json.Marshal(map[string]any{
			schema.FieldRelation: schema.RelationRestaurant, schema.FieldGeoCell: cell.ToToken(), schema.FieldVersion: 1,
			schema.FieldDocID: schema.RestaurantID(r.id), schema.FieldLocation: map[string]any{"lat": r.lat, "lon": r.lng},
			"name": r.name, "cuisines": []string{r.cuisine},
		})
		items = append(items, bulk.Item{Index: "menu", ID: schema.RestaurantID(r.id), Routing: sh.Routing, Body: body})
		for i, name := range r.dishes {
			id := fmt.Sprintf("%s-%d", r.id, i)
			body, _ := json.Marshal(map[string]any{
				schema.FieldRelation: map[string]any{"name": schema.RelationDish, "parent": schema.RestaurantID(r.id)},
				schema.FieldVersion:  1, schema.FieldDocID: schema.DishID(id), schema.FieldRestaurantID: r.id,
				"name": name, "allergens": []string{}, "diets": []string{}, "price_cents": 1200,
			})
			items = append(items, bulk.Item{Index: "menu", ID: schema.DishID(id), Routing: sh.Routing, Body: body})
		}
	}
	w, err := bulk.New(client, bulk.Config{})
	if err != nil {
		log.Fatal(err)
	}
	results, err := w.Do(ctx, items...)
	if err != nil {
		log.Fatal(err)
	}
	for _, r := range results {
		if r.Outcome != bulk.OK {
			log.Fatalf("%s: %s %v", r.Item.ID, r.Outcome, r.Err)
		}
	}
	if err := w.Close(ctx); err != nil {
		log.Fatal(err)
	}
	if err := admin.Refresh(ctx, "menu"); err != nil {
		log.Fatal(err)
	}

	c, err := search.Open(ctx, client, search.Config{Alias: "menu"})
	if err != nil {
		log.Fatal(err)
	}
	sf := search.Circle(37.7749, -122.4194, 10_000)

	rs, err := c.Restaurants(ctx, search.RestaurantQuery{Area: sf})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("restaurants: %d of %d shards asked\n", len(rs.Shards), m.NumShards())
	for _, r := range rs.Restaurants {
		fmt.Printf("  %s %q %.1f km\n", r.ID, r.Name, r.DistanceM/1000)
	}

	ds, err := c.Dishes(ctx, search.DishQuery{Area: sf, Text: "curry"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("dishes: %d, cuisines %v\n", ds.Total, ds.Facets.Cuisines)
	for _, d := range ds.Dishes {
		fmt.Printf("  %s %q at %q %.1f km\n", d.ID, d.Name, d.Restaurant, d.DistanceM/1000)
	}
	// Output:
	// restaurants: 1 of 18 shards asked
	//   r1 "Mission Thai" 1.7 km
	//   r2 "North Beach Pizza" 3.0 km
	// dishes: 1, cuisines map[thai:1]
	//   r1-1 "green curry" at "Mission Thai" 1.7 km
}
