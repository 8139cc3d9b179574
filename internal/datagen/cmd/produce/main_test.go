package main

import (
	"context"
	"testing"

	"github.com/geoshard/geoshard/internal/kafkatest"
)

// The stream lands whole on topics that produce created, and a second
// createTopics finds them there and is content.
func TestCreateTopicsAndProduce(t *testing.T) {
	c, err := kafkatest.New(kafkatest.WithInProcess())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for range 2 {
		if err := createTopics(ctx, c.Addrs(), 3, "restaurants", "dishes", "geoshard.dlq", "dishes"); err != nil {
			t.Fatalf("createTopics: %v", err)
		}
	}
	n, err := produce(ctx, c.Addrs(), "restaurants", "dishes", 600, 5)
	if err != nil || n == 0 {
		t.Fatalf("produce = %d, %v", n, err)
	}
	total := int64(0)
	for _, topic := range []string{"restaurants", "dishes", "geoshard.dlq"} {
		hw, err := c.HighWatermarks(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(hw) != 3 {
			t.Errorf("%s has %d partitions, want 3", topic, len(hw))
		}
		for _, h := range hw {
			total += h
		}
	}
	if total != int64(n) {
		t.Errorf("the topics hold %d messages, produce reported %d", total, n)
	}
}
