package datagen_test

import (
	"fmt"

	"github.com/geoshard/geoshard/internal/datagen"
)

func ExampleStream() {
	cities, err := datagen.Cities()
	if err != nil {
		panic(err)
	}
	msgs, err := datagen.Stream(cities, datagen.StreamConfig{Restaurants: 2, MeanDishes: 2, Seed: 1})
	if err != nil {
		panic(err)
	}
	for _, m := range msgs {
		fmt.Printf("%-11s %s %s\n", m.Topic, m.Key, m.Kind)
	}
	fmt.Printf("%s\n", msgs[0].Value)
	// Output:
	// restaurants r000001 restaurant_upsert
	// dishes      r000001 dish_upsert
	// dishes      r000001 dish_upsert
	// restaurants r000002 restaurant_upsert
	// dishes      r000002 dish_upsert
	// {"type":"restaurant","op":"upsert","id":"r000001","version":1,"location":{"lat":40.672645,"lon":-74.313528},"doc":{"name":"New York City Bistro","cuisines":["french"],"city":"New York City","price_level":2,"rating":4.3}}
}
