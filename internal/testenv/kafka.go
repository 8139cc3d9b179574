package testenv

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/internal/kafkatest"
)

// CaughtUp reports whether group has committed every partition of topic
// up to its high watermark; if not, why says which partition lags.
func CaughtUp(ctx context.Context, k *kafkatest.Cluster, group, topic string) (ok bool, why string) {
	hw, err := k.HighWatermarks(ctx, topic)
	if err != nil {
		return false, err.Error()
	}
	co, err := k.CommittedOffsets(ctx, group, topic)
	if err != nil {
		return false, err.Error()
	}
	for p, h := range hw {
		if h > 0 && co[p] != h {
			return false, fmt.Sprintf("%s/%d committed %d, high watermark %d", topic, p, co[p], h)
		}
	}
	return true, ""
}

// ReadTopic reads every message written to topic so far, partition by
// partition, each partition's in offset order, within 20s.
func ReadTopic(t testing.TB, k *kafkatest.Cluster, topic string) []kafka.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	hw, err := k.HighWatermarks(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []kafka.Message
	for p, h := range hw {
		if h == 0 {
			continue
		}
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: k.Addrs(), Topic: topic, Partition: p, MinBytes: 1, MaxBytes: 4 << 20, MaxWait: 100 * time.Millisecond})
		for {
			m, err := r.ReadMessage(ctx)
			if err != nil {
				r.Close()
				t.Fatalf("read %s partition %d: %v", topic, p, err)
			}
			out = append(out, m)
			if m.Offset+1 >= h {
				break
			}
		}
		r.Close()
	}
	return out
}

// maxBrokerMessage bounds the messages BrokerStream keeps: the broker
// refuses a record over 1 MiB.
const maxBrokerMessage = 900 << 10

// BrokerStream generates datagen's event stream for sc around the
// project's cities, without the messages the broker would refuse (the
// oversized poison message): the pipeline's own size check is tested
// with a smaller bound.
func BrokerStream(t testing.TB, sc datagen.StreamConfig) []datagen.Message {
	t.Helper()
	cities, err := datagen.Cities()
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := datagen.Stream(cities, sc)
	if err != nil {
		t.Fatal(err)
	}
	kept := msgs[:0]
	for _, m := range msgs {
		if len(m.Value) < maxBrokerMessage {
			kept = append(kept, m)
		}
	}
	return kept
}
