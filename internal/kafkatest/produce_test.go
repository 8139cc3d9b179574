package kafkatest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

type dish struct {
	ID         string  `json:"id"`
	Restaurant string  `json:"restaurant"`
	Price      float64 `json:"price"`
}

// TestProduceRoundTrip produces with each Produce variant, reads the
// messages back with a kafka-go reader, and checks keys, values and
// placement: the same key always lands on the same partition, the one
// Kafka's default partitioner picks.
func TestProduceRoundTrip(t *testing.T) {
	realenv.Parallel(t)
	const partitions = 6
	keys := []string{"nova", "lyon-7", "lyon-7", "paris-11", "nova", "berlin", "paris-11", "nova"}

	type produced struct {
		key, value []byte
		at         pos
	}
	tests := []struct {
		name string
		// produce writes one message per key and reports where each went.
		produce func(ctx context.Context, c *Cluster, topic string) ([]produced, error)
		// pinned is the partition every message must land on, or -1 to
		// check placement by key.
		pinned int
	}{
		{
			name:   "Produce",
			pinned: -1,
			produce: func(ctx context.Context, c *Cluster, topic string) ([]produced, error) {
				var out []produced
				for i, k := range keys {
					v := fmt.Appendf(nil, "value-%d", i)
					p, off, err := c.Produce(ctx, topic, []byte(k), v)
					if err != nil {
						return nil, err
					}
					out = append(out, produced{[]byte(k), v, pos{p, off}})
				}
				return out, nil
			},
		},
		{
			name:   "ProduceJSON",
			pinned: -1,
			produce: func(ctx context.Context, c *Cluster, topic string) ([]produced, error) {
				var out []produced
				for i, k := range keys {
					d := dish{ID: fmt.Sprintf("dish-%d", i), Restaurant: k, Price: 9.5 + float64(i)}
					p, off, err := c.ProduceJSON(ctx, topic, k, d)
					if err != nil {
						return nil, err
					}
					v, err := json.Marshal(d)
					if err != nil {
						return nil, err
					}
					out = append(out, produced{[]byte(k), v, pos{p, off}})
				}
				return out, nil
			},
		},
		{
			name:   "ProduceBatch",
			pinned: -1,
			produce: func(ctx context.Context, c *Cluster, topic string) ([]produced, error) {
				msgs := make([]Message, len(keys))
				for i, k := range keys {
					msgs[i] = Message{Key: []byte(k), Value: fmt.Appendf(nil, "value-%d", i)}
				}
				res, err := c.ProduceBatch(ctx, topic, msgs)
				if err != nil {
					return nil, err
				}
				var out []produced
				for i, r := range res {
					out = append(out, produced{msgs[i].Key, msgs[i].Value, pos(r)})
				}
				return out, nil
			},
		},
		{
			name:   "ProduceTo",
			pinned: 4,
			produce: func(ctx context.Context, c *Cluster, topic string) ([]produced, error) {
				var out []produced
				for i, k := range keys {
					v := fmt.Appendf(nil, "value-%d", i)
					off, err := c.ProduceTo(ctx, topic, 4, []byte(k), v)
					if err != nil {
						return nil, err
					}
					out = append(out, produced{[]byte(k), v, pos{4, off}})
				}
				return out, nil
			},
		},
	}

	c := Start(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			topic := realenv.Unique("dishes-" + strings.ToLower(tt.name))
			if err := c.CreateTopic(ctx, topic, partitions); err != nil {
				t.Fatal(err)
			}
			out, err := tt.produce(ctx, c, topic)
			if err != nil {
				t.Fatalf("produce: %v", err)
			}

			// Placement.
			byKey := make(map[string]int)
			for _, p := range out {
				want := tt.pinned
				if want < 0 {
					want = kafkaDefaultPartition(p.key, partitions)
				}
				if p.at.Partition != want {
					t.Errorf("key %q went to partition %d, want %d", p.key, p.at.Partition, want)
				}
				if prev, ok := byKey[string(p.key)]; ok && prev != p.at.Partition {
					t.Errorf("key %q went to partitions %d and %d, want one", p.key, prev, p.at.Partition)
				}
				byKey[string(p.key)] = p.at.Partition
			}

			// Round trip through kafka-go.
			r := c.NewReader(realenv.Unique("roundtrip"), topic)
			defer r.Close()
			got, err := fetchN(ctx, r, len(out))
			if err != nil {
				t.Fatal(err)
			}
			byPos := make(map[pos]kafka.Message)
			for _, m := range got {
				byPos[posOf(m)] = m
			}
			for _, p := range out {
				m, ok := byPos[p.at]
				switch {
				case !ok:
					t.Errorf("message %v (key %q) not read back", p.at, p.key)
				case string(m.Key) != string(p.key) || string(m.Value) != string(p.value):
					t.Errorf("message %v read back as key %q value %s, want key %q value %s", p.at, m.Key, m.Value, p.key, p.value)
				case m.Topic != topic:
					t.Errorf("message %v read back from topic %q, want %q", p.at, m.Topic, topic)
				}
			}
			if len(byPos) != len(out) {
				t.Errorf("read back %d distinct messages, want %d", len(byPos), len(out))
			}
		})
	}
}

// kafkaDefaultPartition is where franz-go's default partitioner, which
// follows the Java client's, puts a keyed record: murmur2 of the key,
// made positive, modulo the partition count. It checks partitionFor
// against an implementation other than the one it uses.
func kafkaDefaultPartition(key []byte, partitions int) int {
	return kgo.StickyKeyPartitioner(nil).ForTopic("any").Partition(&kgo.Record{Key: key}, partitions)
}

// TestProduceWithoutKeyRoundRobins checks that keyless messages are spread
// evenly over the partitions.
func TestProduceWithoutKeyRoundRobins(t *testing.T) {
	realenv.Parallel(t)
	const partitions, rounds = 5, 3
	ctx := testContext(t)
	topic := realenv.Unique("events")
	c := Start(t, WithTopic(topic, partitions))
	counts := make(map[int]int)
	for i := range partitions * rounds {
		p, _, err := c.Produce(ctx, topic, nil, fmt.Appendf(nil, "%d", i))
		if err != nil {
			t.Fatal(err)
		}
		counts[p]++
	}
	hw, err := c.HighWatermarks(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for p := range partitions {
		if counts[p] != rounds || hw[p] != rounds {
			t.Errorf("partition %d got %d messages (high watermark %d), want %d", p, counts[p], hw[p], rounds)
		}
	}
}

func TestProduceErrors(t *testing.T) {
	realenv.Parallel(t)
	ctx := testContext(t)
	dishes, nope := realenv.Unique("dishes"), realenv.Unique("nope")
	c := Start(t, WithTopic(dishes, 3))
	tests := []struct {
		name    string
		produce func() error
		want    error  // matched with errors.Is, when set
		wantMsg string // a substring of the error
	}{
		{
			name:    "unknown topic",
			produce: func() error { _, _, err := c.Produce(ctx, nope, nil, []byte("v")); return err },
			want:    ErrUnknownTopic,
			wantMsg: fmt.Sprintf(`produce to %s: kafkatest: unknown topic %q`, nope, nope),
		},
		{
			name:    "partition past the end",
			produce: func() error { _, err := c.ProduceTo(ctx, dishes, 3, nil, []byte("v")); return err },
			wantMsg: "partition 3 out of range [0, 3)",
		},
		{
			name:    "negative partition",
			produce: func() error { _, err := c.ProduceTo(ctx, dishes, -1, nil, []byte("v")); return err },
			wantMsg: "partition -1 is negative",
		},
		{
			name:    "value JSON cannot encode",
			produce: func() error { _, _, err := c.ProduceJSON(ctx, dishes, "k", make(chan int)); return err },
			wantMsg: "encode chan int",
		},
		{
			name: "cancelled context",
			produce: func() error {
				cctx, cancel := context.WithCancel(ctx)
				cancel()
				_, _, err := c.Produce(cctx, dishes, nil, []byte("v"))
				return err
			},
			want: context.Canceled,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.produce()
			if err == nil {
				t.Fatal("produce = nil error, want one")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("produce = %v, want errors.Is %v", err, tt.want)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("produce = %q, want it to contain %q", err, tt.wantMsg)
			}
		})
	}
	hw, err := c.HighWatermarks(ctx, dishes)
	if err != nil {
		t.Fatal(err)
	}
	for p, h := range hw {
		if h != 0 {
			t.Errorf("after failed produces, partition %d high watermark = %d, want 0", p, h)
		}
	}
}
