package deadletter

import (
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/decode"
)

// Dead-letter headers. The three source headers name one event (for a
// repartitioned event, its place in the dish topic): a consumer that
// meets a repeat recognises it by them, and Once reads them back.
const (
	HeaderReason          = "geoshard-reason"
	HeaderError           = "geoshard-error"
	HeaderSourceTopic     = "geoshard-source-topic"
	HeaderSourcePartition = "geoshard-source-partition"
	HeaderSourceOffset    = "geoshard-source-offset"
)

// Place is where an event is in Kafka: a topic, a partition and an
// offset. As a dead letter's source it is what its source headers name;
// as a commit point, Offset is the next offset to read.
type Place struct {
	Topic     string
	Partition int
	Offset    int64
}

// Letter is one event on its way to the dead-letter topic. Event is the
// owner's, opaque here: Once hands it back (Once.Written, Once.Skip's
// dropped).
type Letter[E any] struct {
	Event E
	// Own is where the member read the event; Source is the place its
	// dead letter names: Own, or, for a repartitioned event, its place in
	// the dish topic (pipeline/placement/repartition.go).
	Own, Source Place
	// Key and Value are the dead letter's: the event's, a repartitioned
	// event's key being its origin's.
	Key, Value []byte
	Reason     decode.Reason
	Detail     string
	// Result is the owner's label for the event's end once the letter is
	// written (dead_letter, pending_expired); the package only keeps it.
	Result string
}

// Message is the dead letter as written: its key and value, and headers
// for the reason and the source place. Its Partition is the number of
// the partition the event was read from, for Writer's balancer: a
// partition's dead letters are read back from one place (Once.Enter).
func (d *Letter[E]) Message() kafka.Message {
	s := d.Source
	return kafka.Message{
		Key:       d.Key,
		Value:     d.Value,
		Partition: d.Own.Partition,
		Headers: []kafka.Header{
			{Key: HeaderReason, Value: []byte(d.Reason)},
			{Key: HeaderError, Value: []byte(d.Detail)},
			{Key: HeaderSourceTopic, Value: []byte(s.Topic)},
			{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(s.Partition), 10)},
			{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, s.Offset, 10)},
		},
	}
}

// SourceOf reads a dead letter's source headers; ok is false when one is
// missing or does not parse.
func SourceOf(hs []kafka.Header) (p Place, ok bool) {
	seen := 0
	for _, h := range hs {
		var err error
		switch h.Key {
		case HeaderSourceTopic:
			p.Topic = string(h.Value)
			seen |= 1
		case HeaderSourcePartition:
			p.Partition, err = strconv.Atoi(string(h.Value))
			seen |= 2
		case HeaderSourceOffset:
			p.Offset, err = strconv.ParseInt(string(h.Value), 10, 64)
			seen |= 4
		}
		if err != nil {
			return p, false
		}
	}
	return p, seen == 7
}

// Writer is the dead-letter topic's writer: acknowledged by every
// in-sync replica, each dead letter of an event of partition N in
// partition N modulo the topic's partition count, where the partition's
// next owner reads it back (Once.Enter). A restaurant's events are all in
// partition N of the event topics, so its dead letters stay in order.
func Writer(brokers []string, topic string, t *kafka.Transport) *kafka.Writer {
	return &kafka.Writer{
		Addr:  kafka.TCP(brokers...),
		Topic: topic,
		Balancer: kafka.BalancerFunc(func(m kafka.Message, partitions ...int) int {
			return partitions[m.Partition%len(partitions)]
		}),
		RequiredAcks: kafka.RequireAll,
		BatchSize:    500,
		BatchTimeout: 5 * time.Millisecond,
		MaxAttempts:  3,
		Transport:    t,
	}
}
