// Package decode reads change events and validates them: it turns the
// key and value of a Kafka message into a Change (a restaurant or a dish,
// upserted or deleted, at a version), or says with a Reason why it
// cannot.
//
// It owns:
//
//   - the native format, geoshard's own events (Decode, native.go): one
//     JSON object per message, keyed by restaurant id, checked in a fixed
//     order so an event with several defects always gets the same reason;
//   - the Debezium format (debezium.go, debezium_json.go): change events of
//     a restaurant table and a dish table as Debezium's Postgres connector
//     writes them through Kafka Connect's JSON converter, bare or in the
//     schema envelope, read through a Mapping;
//   - the mapping file (Mapping, TableMapping, LoadMapping, ParseMapping,
//     mapping.go): which table is which and which columns say what;
//   - the dead-letter reasons (Reason, Reasons, InvalidEventError,
//     errors.go), used as the geoshard-reason header and a metric label;
//   - Decoder, the reading of one Format (New): the pipeline decodes
//     every message through it, re-keys dish events by the restaurant id
//     it reads, and learns the restaurant topic's placement from the
//     restaurant ids it reads back from keys.
//
// Decoding holds no state of the write side: it needs no connection,
// no clock and no logger, so applications can validate events with it
// before they produce them. The Debezium decoder caches the decimal
// columns of the last value schema it saw; it is safe for concurrent use.
//
// # Boundaries
//
// decode imports only schema, for the document fields ingest sets itself
// (a mapping may not copy a column into one), and through it router. It
// never imports pipeline, migrate, bulk or any Kafka client: it reads
// bytes, not messages.
//
//	imports: schema
//	never:   pipeline migrate github.com/segmentio/kafka-go
package decode
