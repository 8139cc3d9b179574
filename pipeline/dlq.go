package pipeline

import (
	"context"
	"log/slog"
	"strconv"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/pipeline/outbox"
)

// Dead-letter headers. The three source headers name one event (for a
// repartitioned event, its place in the dish topic): a consumer that
// meets a repeat (dlqonce.go) recognises it by them.
const (
	HeaderReason          = "geoshard-reason"
	HeaderError           = "geoshard-error"
	HeaderSourceTopic     = "geoshard-source-topic"
	HeaderSourcePartition = "geoshard-source-partition"
	HeaderSourceOffset    = "geoshard-source-offset"
)

// producer is the part of kafka-go's Writer the dead-letter queue uses.
type producer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
	Close() error
}

var _ producer = (*kafka.Writer)(nil)

// deadLetter is one event on its way to the dead-letter topic.
type deadLetter struct {
	ev     *event
	reason decode.Reason
	detail string
	// result is the event's result label once written: dead_letter, or
	// pending_expired for a dish that waited too long.
	result string
}

// Message is the dead letter as written: the event's key and value, and
// headers for the reason and the event's place. A repartitioned event's
// place and key are its origin's in the dish topic (placement/repartition.go). Its
// Partition is the number of the partition the event was read from, for
// dlqWriter's balancer: a partition's dead letters are read back from
// one place (dlqonce.go).
func (d *deadLetter) Message() kafka.Message {
	ev := d.ev
	key, topic, partition, offset := ev.key, ev.part.topic, ev.part.partition, ev.offset
	if o := ev.origin; o != nil {
		key, topic, partition, offset = o.Key, o.Topic, o.Partition, o.Offset
	}
	return kafka.Message{
		Key:       key,
		Value:     ev.value,
		Partition: ev.part.partition,
		Headers: []kafka.Header{
			{Key: HeaderReason, Value: []byte(d.reason)},
			{Key: HeaderError, Value: []byte(d.detail)},
			{Key: HeaderSourceTopic, Value: []byte(topic)},
			{Key: HeaderSourcePartition, Value: strconv.AppendInt(nil, int64(partition), 10)},
			{Key: HeaderSourceOffset, Value: strconv.AppendInt(nil, offset, 10)},
		},
	}
}

// dlq is the dead-letter queue: an outbox (package outbox) of dead
// letters, which keeps their order and retries them until written.
type dlq = outbox.Outbox[*deadLetter]

func newDLQ(w producer, log *slog.Logger, written func(*deadLetter), skip func(*deadLetter) bool) *dlq {
	return outbox.New(w, log, "dead-letter", written, skip)
}
