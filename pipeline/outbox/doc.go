// Package outbox writes messages to a Kafka topic in the order they were
// queued, each acknowledged by the broker, retrying with backoff until it
// is written. Ingest writes its dead letters and its parking records
// through outboxes.
//
// # What it owns
//
// The Outbox (outbox.go): its queue, bounded for back-pressure (WaitRoom)
// and drained on demand (WaitEmpty); the batches it writes and the order
// it keeps when a batch partly fails; and the callbacks that tell the
// owner a message was written, or let it skip one no longer worth
// writing. What a message holds, which topic it goes to and what its
// acknowledgement lets the owner do is the owner's (package pipeline:
// outcomes.go, parking.go; package deadletter).
//
// # Boundaries
//
// outbox speaks to Kafka through github.com/segmentio/kafka-go's
// messages and a one-method Producer, and knows nothing of events, dead
// letters or parking.
//
//	imports: bulk
//	never:   pipeline migrate
package outbox
