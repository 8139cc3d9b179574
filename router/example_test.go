package router_test

import (
	"fmt"
	"os"

	"github.com/geoshard/geoshard/router"
)

func loadExampleMap() *router.Map {
	data, err := os.ReadFile("../testdata/maps/us-18.json")
	if err != nil {
		panic(err)
	}
	m, err := router.Parse(data)
	if err != nil {
		panic(err)
	}
	return m
}

func ExampleMap_Locate() {
	m := loadExampleMap()
	i, err := m.Locate(37.7749, -122.4194) // San Francisco
	if err != nil {
		panic(err)
	}
	cell, _ := m.Cell(37.7749, -122.4194)
	fmt.Println(m.Shard(i).Name, cell.ToToken(), m.Shard(i).Routing)
	// Output: bravo 808581 bravo-3
}

func ExampleMap_CoverCircle() {
	m := loadExampleMap()
	const mile = 1609.344
	cov, err := m.CoverCircle(37.7749, -122.4194, 25*mile)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(cov.Cells), m.Names(cov.Shards), m.Routing(cov.Shards))
	// Output: 98 [bravo] bravo-3
}

func ExampleRoutingKey() {
	// Geoshard 9 of 18 on an index with OpenSearch's default
	// number_of_routing_shards.
	fmt.Println(router.RoutingKey("juno", 9, router.DefaultRoutingNumShards(18), 18))
	// Output: juno-13
}
