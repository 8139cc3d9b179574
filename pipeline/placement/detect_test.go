package placement

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/internal/kafkatest"
	"github.com/geoshard/geoshard/internal/realenv"
)

// TestSampleKeysReadsTheEnd: only the last SamplePerPartition events of
// each partition are sampled, however many it holds.
func TestSampleKeysReadsTheEnd(t *testing.T) {
	realenv.Parallel(t)
	const n = 3
	topic := realenv.Unique("restaurants")
	c := kafkatest.Start(t, kafkatest.WithTopic(topic, n))
	ctx := context.Background()
	var msgs []kafkatest.Message
	for i := range 50 + 250*n {
		msgs = append(msgs, kafkatest.Message{Key: []byte(restaurantKey(i)), Value: []byte("{}")})
	}
	if _, err := c.ProduceBatch(ctx, topic, msgs); err != nil {
		t.Fatal(err)
	}
	ends, err := c.HighWatermarks(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := range n {
		if ends[p] < SamplePerPartition {
			t.Fatalf("partition %d holds %d events, the test needs %d in each", p, ends[p], SamplePerPartition)
		}
	}
	client := &kafka.Client{Addr: kafka.TCP(c.Addrs()...), Timeout: 10 * time.Second}
	log := slog.New(slog.DiscardHandler)
	got, samples, err := sampleKeys(ctx, client, log, topic, SamplePerPartition, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if got != n {
		t.Errorf("sampleKeys read %d partitions, want %d", got, n)
	}
	per := map[int]int{}
	for _, s := range samples {
		per[s.partition]++
		if s.offset < ends[s.partition]-SamplePerPartition || len(s.key) == 0 {
			t.Errorf("sampled %d/%d (key %q), want only the last %d of its %d events", s.partition, s.offset, s.key, SamplePerPartition, ends[s.partition])
		}
	}
	for p := range n {
		if per[p] != SamplePerPartition {
			t.Errorf("sampled %d events of partition %d, want the last %d", per[p], p, SamplePerPartition)
		}
	}
}
