// Package eventmodel is the test suites' model of an event log: the
// documents the log leaves in the index, computed from the log alone
// (never from what the pipeline wrote), under the rules of the event
// schema and of the pipeline's contract (pipeline/doc.go):
//
//   - per document, the newest version wins; an older version, a replay
//     or an overtaken version changes nothing; a delete removes the
//     document and keeps its version, so that an older upsert after it
//     changes nothing either;
//   - a restaurant delete removes its dishes;
//   - a dish lives where its restaurant finally is: its geo_cell and
//     routing are its restaurant's.
//
// A document's source is the event's doc, less the fields the pipeline
// owns (Reserved), plus those fields: relation, geo_cell (the
// restaurant's cell at the map's level), version, doc_id, and location
// (restaurant) or restaurant_id (dish).
//
// What a suite reads its log from, and how it tracks the dishes that wait
// for their restaurant and the events that must be dead-lettered, is its
// own (internal/chaos's generated events, internal/e2e's datagen
// messages); State is what they share.
//
// # Boundaries
//
// Test machinery over the index's contract: it imports router and schema
// only, never pipeline, so that pipeline's own tests can use it too.
//
//	imports: router schema
//	never:   pipeline migrate bulk github.com/segmentio/kafka-go github.com/twmb/franz-go
package eventmodel
