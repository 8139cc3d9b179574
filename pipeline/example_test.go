package pipeline_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/kafkatest"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/pipeline"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// A Pipeline consumes restaurant and dish change events and writes each
// document under its restaurant's geoshard. Here against the in-process
// Kafka broker and the project's OpenSearch emulator: an index made as
// reshard init makes it, one restaurant and two of its dishes produced to
// one event topic keyed by restaurant, the pipeline run until all three
// are finished, and the index searched for where the dishes went.
func ExampleNew() {
	ctx := context.Background()
	brokers, err := kafkatest.New(kafkatest.WithInProcess(), kafkatest.WithTopic("menu-events", 4), kafkatest.WithTopic("menu-dlq", 4))
	if err != nil {
		log.Fatal(err)
	}
	defer brokers.Close()
	srv := osfake.NewTestServer(osfake.Options{})
	defer srv.Close()

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

	// Events keyed by restaurant: a restaurant and its dishes share a
	// partition, so they are decided in order.
	w := &kafka.Writer{Addr: kafka.TCP(brokers.Addrs()...), Topic: "menu-events", Balancer: &kafka.Hash{}}
	err = w.WriteMessages(ctx,
		kafka.Message{Key: []byte("r1"), Value: []byte(`{"type":"restaurant","op":"upsert","id":"r1","version":1,"location":{"lat":37.7599,"lon":-122.4148},"doc":{"name":"Mission Thai"}}`)},
		kafka.Message{Key: []byte("r1"), Value: []byte(`{"type":"dish","op":"upsert","id":"d1","restaurant_id":"r1","version":1,"doc":{"name":"pad thai"}}`)},
		kafka.Message{Key: []byte("r1"), Value: []byte(`{"type":"dish","op":"upsert","id":"d2","restaurant_id":"r1","version":1,"doc":{"name":"green curry"}}`)},
	)
	if err != nil {
		log.Fatal(err)
	}
	w.Close()

	p, err := pipeline.New(pipeline.Config{
		Brokers:         brokers.Addrs(),
		RestaurantTopic: "menu-events",
		DishTopic:       "menu-events",
		Group:           "ingest",
		DLQTopic:        "menu-dlq",
		Alias:           "menu",
	}, client)
	if err != nil {
		log.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(runCtx) }()
	for p.Stats().Finished < 3 {
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-done; err != nil {
		log.Fatal(err)
	}

	if err := admin.Refresh(ctx, "menu"); err != nil {
		log.Fatal(err)
	}
	i, err := m.Locate(37.7599, -122.4148)
	if err != nil {
		log.Fatal(err)
	}
	shard := m.Shard(i)
	n, err := admin.Count(ctx, "menu", []byte(`{"term":{"relation":"dish"}}`), bulk.SearchParams{Routing: shard.Routing})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("finished %d events; geoshard %s holds %d dishes of %s\n", p.Stats().Finished, shard.Name, n, schema.RestaurantID("r1"))
	// Output:
	// finished 3 events; geoshard bravo holds 2 dishes of restaurant:r1
}
