// Package directory is ingest's restaurant directory: for each restaurant
// id, the cell of its location and the newest version seen of it, of an
// upsert or of a delete, in about 40 bytes a restaurant.
//
// # What it owns
//
// The Directory (directory.go): its rules (a version older than or equal
// to what it holds changes nothing; a delete is kept as a tombstone for
// the life of the process, so that an older upsert replayed later is
// recognised as stale; Replace takes what the index holds of one
// restaurant but keeps a newer delete), its live count, which Len reads
// concurrently for stats and metrics, and its compact storage
// (further down directory.go): 24-byte records, an open-addressing table of slots and an
// arena for ids longer than 7 bytes.
//
// What fills it (the warm-up from the index, restaurant events, the
// look-ups of gained partitions) and how its cells route documents is
// package pipeline's.
//
// # Boundaries
//
// directory is a data structure: no I/O, no logging, no context, and it
// knows nothing of events, Kafka or OpenSearch.
//
//	imports: none
//	never:   pipeline migrate
package directory
