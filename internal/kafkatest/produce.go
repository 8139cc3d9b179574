package kafkatest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The harness produces with franz-go's kgo rather than kafka-go's Writer:
//
//   - kgo reports the partition and offset of every record it acknowledges;
//     kafka-go's Writer does not, and tests need offsets to check what a
//     consumer committed.
//   - Producing with a different client from the one under test means a
//     kafka-go quirk cannot hide itself by being on both sides of a test.
//
// kgo only carries the bytes: the harness picks every partition itself (see
// partitionFor), so placement does not depend on kgo's partitioner.

// Message is one record for ProduceBatch.
type Message struct {
	Key   []byte // nil means no key: the message is placed round-robin
	Value []byte
}

// Produced is where the broker stored one message.
type Produced struct {
	Partition int
	Offset    int64
}

// newProducer builds the harness's kgo client. Settings that differ from
// kgo's defaults, and why:
//   - ManualPartitioner: partitionFor has already chosen the partition.
//   - ProducerLinger(0): tests produce a few records and wait for them;
//     lingering would only add latency.
//   - NoCompression: matches kafka-go Writer's default, so readers under
//     test see the same batches a production writer would send.
func newProducer(addrs []string) (*kgo.Client, error) {
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addrs...),
		kgo.ClientID("kafkatest-producer"),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
	)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: new producer for %v: %w", addrs, err)
	}
	return cl, nil
}

// Produce writes one message to topic and returns where it was stored. A
// non-nil key picks the partition the way Kafka's default partitioner does
// (murmur2 of the key modulo the partition count), so equal keys always land
// on the same partition; a nil key goes round-robin.
func (c *Cluster) Produce(ctx context.Context, topic string, key, value []byte) (partition int, offset int64, err error) {
	out, err := c.produce(ctx, topic, []Message{{Key: key, Value: value}}, -1)
	if err != nil {
		return -1, -1, err
	}
	return out[0].Partition, out[0].Offset, nil
}

// ProduceJSON writes v, encoded as JSON, to topic under key. An empty key
// means no key (round-robin placement), matching the kafka-go convention
// that a nil Key is absent.
func (c *Cluster) ProduceJSON(ctx context.Context, topic, key string, v any) (partition int, offset int64, err error) {
	value, err := json.Marshal(v)
	if err != nil {
		return -1, -1, fmt.Errorf("kafkatest: produce to %s: encode %T: %w", topic, v, err)
	}
	var k []byte
	if key != "" {
		k = []byte(key)
	}
	return c.Produce(ctx, topic, k, value)
}

// ProduceTo writes one message to the given partition of topic, whatever
// its key, and returns its offset.
func (c *Cluster) ProduceTo(ctx context.Context, topic string, partition int, key, value []byte) (offset int64, err error) {
	if partition < 0 {
		return -1, fmt.Errorf("kafkatest: produce to %s: partition %d is negative", topic, partition)
	}
	out, err := c.produce(ctx, topic, []Message{{Key: key, Value: value}}, partition)
	if err != nil {
		return -1, err
	}
	return out[0].Offset, nil
}

// ProduceBatch writes msgs to topic in one call and waits for all of them.
// The result is index-aligned with msgs. If some messages fail, the error
// joins one error per failed message, naming its index, and those entries
// hold partition and offset -1; the others were stored.
//
// Messages with the same key are stored in the order given.
func (c *Cluster) ProduceBatch(ctx context.Context, topic string, msgs []Message) ([]Produced, error) {
	if len(msgs) == 0 {
		return nil, nil
	}
	return c.produce(ctx, topic, msgs, -1)
}

// produce places msgs (on partition pin when pin >= 0, else by key) and
// produces them synchronously.
func (c *Cluster) produce(ctx context.Context, topic string, msgs []Message, pin int) ([]Produced, error) {
	// kgo fails a record whose context ends only while it can still be
	// unsent; checking first makes "cancelled means not produced" certain.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("kafkatest: produce to %s: %w", topic, err)
	}
	n, err := c.partitionCount(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("kafkatest: produce to %s: %w", topic, err)
	}
	if pin >= n {
		return nil, fmt.Errorf("kafkatest: produce to %s: partition %d out of range [0, %d)", topic, pin, n)
	}

	recs := make([]*kgo.Record, len(msgs))
	index := make(map[*kgo.Record]int, len(msgs))
	for i, m := range msgs {
		p := pin
		if p < 0 {
			p = c.partitionFor(m.Key, n)
		}
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(p), Key: m.Key, Value: m.Value}
		index[recs[i]] = i
	}

	out := make([]Produced, len(msgs))
	var errs []error
	// ProduceSync returns results in completion order, not input order, so
	// each result is matched back to its message by record pointer.
	for _, res := range c.producer.ProduceSync(ctx, recs...) {
		i := index[res.Record]
		if res.Err != nil {
			out[i] = Produced{Partition: -1, Offset: -1}
			err := res.Err
			if errors.Is(err, kgo.ErrClientClosed) {
				err = ErrClosed
			}
			errs = append(errs, fmt.Errorf("message %d: %w", i, err))
			continue
		}
		out[i] = Produced{Partition: int(res.Record.Partition), Offset: res.Record.Offset}
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("kafkatest: produce %d messages to %s: %w", len(msgs), topic, errors.Join(errs...))
	}
	return out, nil
}

// partitionFor returns the partition, out of n, for a message with key.
//
// A keyed message uses kafka-go's Murmur2Balancer with Consistent set: the
// same hash as the Java client's default partitioner and kgo's, so a key
// lands where any mainstream producer would put it. A nil key goes
// round-robin over the partitions, shared across all calls on c.
func (c *Cluster) partitionFor(key []byte, n int) int {
	if key == nil {
		return int((c.nilKeys.Add(1) - 1) % uint64(n))
	}
	return murmur2.Balance(kafka.Message{Key: key}, partitionIDs(n)...)
}

// murmur2 is stateless with Consistent set, so one value serves every call.
var murmur2 = kafka.Murmur2Balancer{Consistent: true}

func partitionIDs(n int) []int {
	ids := make([]int, n)
	for i := range ids {
		ids[i] = i
	}
	return ids
}
