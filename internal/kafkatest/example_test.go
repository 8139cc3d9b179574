package kafkatest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/geoshard/geoshard/internal/kafkatest"
)

// A cluster outside a test, as the embedded demo mode runs it: New, then
// Close when done, and always in-process, whatever backend the tests run
// against. Tests use kafkatest.Start instead.
func ExampleNew() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	c, err := kafkatest.New(kafkatest.WithInProcess(), kafkatest.WithTopic("restaurants", 6))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	type restaurant struct {
		Name string  `json:"name"`
		Lat  float64 `json:"lat"`
		Lng  float64 `json:"lng"`
	}
	// The same key always lands on the same partition.
	for _, r := range []restaurant{{"Chez Nous", 48.85, 2.35}, {"Chez Nous", 48.85, 2.35}} {
		p, off, err := c.ProduceJSON(ctx, "restaurants", "chez-nous", r)
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("partition %d offset %d\n", p, off)
	}
	lag, err := c.Lag(ctx, "indexer", "restaurants")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("lag of a group that has read nothing:", lag)
	// Output:
	// partition 4 offset 0
	// partition 4 offset 1
	// lag of a group that has read nothing: 2
}
