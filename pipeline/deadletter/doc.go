// Package deadletter is ingest's dead letters: the message written to
// the dead-letter topic for an event that cannot be indexed, and the
// record that writes it once per event (Once).
//
// # What it owns
//
//   - The dead letter (letter.go): a Letter carries its event as an
//     opaque value the package hands back, the event's key and value, a
//     reason and a detail; its Message names the event's source place in
//     headers (HeaderSourceTopic, HeaderSourcePartition,
//     HeaderSourceOffset), which the read-back parses. Writer is the
//     topic's writer: a letter of partition N goes to partition N modulo
//     the topic's partition count, where the partition's next owner reads
//     it back.
//   - Once (once.go, readback.go): the places dead-lettered at or after
//     the committed offsets of the partitions the member owns, from its
//     own dead letters and from the dead-letter topic read back at each
//     generation, so that an event decided again is not dead-lettered
//     again. once.go's comment is the one statement of that design.
//
// The owner (package pipeline) queues the letters in an outbox (package
// outbox), counts them, and tells Once of its generations, commits and
// parked dishes through the package's own types: Place, Generation,
// Config.
//
// # Boundaries
//
// deadletter knows Kafka and the dead-letter topic, not the pipeline's
// events, generations or offsets: it reads Kafka through kafkarange and
// retries with bulk's backoff.
//
//	imports: bulk decode kafkarange
//	never:   pipeline migrate
package deadletter
