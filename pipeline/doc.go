// Package pipeline is the ingest pipeline: it consumes restaurant and dish
// change events from Kafka, validates them, routes each document to the
// geoshard of its restaurant's location, writes it through package bulk
// with external versioning, and commits Kafka offsets only behind writes
// that OpenSearch acknowledged.
//
// # What it owns
//
// The write side of ingest: the stages a message goes through, each a
// type that no other stage writes, in the order it meets them — the
// consumer-group member (group.go), the decoder (decoder.go), the loop
// (loop.go), the indexer (indexer.go and its concerns in indexer_*.go:
// deciding, moves and deletes, gained partitions, the fence, the warm,
// the writes to the targets), the spread of a dish that changed
// restaurant (reparent.go), outcomes (outcomes.go), the tracker
// (tracker.go) and the committer (committer.go); beside them, the modes
// of a migration (modes.go) and the parker (parking.go). Pipeline
// (pipeline.go) builds them in New and runs them. The life of an event
// through them is told once, in docs/architecture.md.
//
// What does not touch the write side's state is a package of its own:
// decode (events and Debezium envelopes), placement (re-keying dish
// topics keyed by dish), topics (the Kafka layout), directory (id →
// cell), pending (dishes waiting for their restaurant), deadletter (a
// dead letter once per event), outbox (the ordered writer of dead
// letters and parking records) and health (what an instance waits for).
//
// # Guarantees
//
// Delivery is at least once: whatever is not finished when the process
// stops is fetched again by the next consumer. Every write carries the
// event's source version with version_type=external, so a replay or a
// reordering never overwrites newer data; the Kafka offset is never used
// as a version. Dishes are always written under their restaurant's
// routing, so parent and child share a shard. Whatever is not finished
// when the process stops includes no waiting dish: those are parked, and
// the next owner of their partition reads them back (parking.go).
//
// Nothing transient stops the pipeline: a request that times out, a 429
// or a 5xx is retried with the project's backoff for as long as it takes
// (the writer's items too: bulk.NoRetryLimit), while back-pressure stops
// the fetching; only what waiting cannot mend (a write block, a missing
// index, a map that changed) stops it. During a migration's dual
// writes all of this holds for each of the two indexes, each under its
// own map, and an event counts as finished only when both sides are
// settled.
//
// # Dual-write rules
//
// During a migration's dual writes (migration.go, indexer_moves.go):
//
// These rules are stated here once; the code that enforces them, and the
// job's and schema's comments, point here.
//
//   - In every phase with dual writes, cut_over included, an event's write
//     goes to the migration's source first (only the source holds every
//     delete's tombstone, those made before dual writes began), and to the
//     target only after the source's answer, which the target side
//     mirrors: a change the source refuses as stale (its tombstone of a
//     delete made before dual writes began, or a newer version) is
//     finished as stale for the target without a write, and a rejected
//     or failed source write is not repeated on the target. A delete, and
//     an upsert the source holds live at exactly its version (the same
//     event delivered again), still go to the target, so a redelivery
//     repairs an event cut short between the two. The wait for the
//     source's answer delays each event, not the others: events of other
//     restaurants go on meanwhile (indexer_targets.go, sourceWrite).
//   - A restaurant move, the in-place geo_cell rewrite of a cell change
//     and a restaurant delete take the restaurant's dishes from the
//     source, which has them all, and apply the step to every index,
//     with external_gte at each dish's version, whether the index holds
//     the dish or not: a dish the target lacks is written at the new
//     place, and a delete of an old copy it lacks leaves a tombstone
//     that refuses a backfill copy read before the change and written
//     after it.
//
// # Several instances in one group
//
// Each instance is a member of one consumer group (kafka-go's
// ConsumerGroup; group.go): each generation gives it its partitions, it
// reads each from the group's committed offset, commits through the
// generation, and lands what it has in flight before it joins the next.
// It reads the directory from the index once it has joined. At a later
// generation it keeps what it knows of the restaurants of the partitions
// it kept: the group's balancer gives partition N of every event topic to
// one member (topics.Copartitioned), so they had no other writer. The
// restaurants of a partition it gained are looked up in the index at
// their first event there (indexer_gained.go says how, and why that sees
// every acknowledged write). The events of a partition it lost that
// still wait it leaves unfinished to the new owner (releaseUnowned), as
// it does every message of an ended generation still queued behind its
// readers (loop.ended). A directory read from the index knows no delete
// made before the read, so a restaurant it does not know is taken as
// live only once the index has taken its write (confirmRestaurant).
//
// # Limits
//
//   - External versions live per shard. A delete leaves its tombstone on
//     the shard it ran on, for index.gc_deletes (60s by default): a replay
//     of an event older than a delete is stale only while the tombstone
//     lives, and after a restaurant moved, a replay of a dish event older
//     than a delete made before the move reaches the new shard, where no
//     tombstone is.
//   - A dish that changes restaurant is stored once, under its newest
//     version (reparent.go): its write is followed by a delete of the
//     dish at its version under every other shard's routing, which removes
//     an older copy, is refused by a newer one (and then removes its own),
//     and leaves tombstones that refuse older versions arriving later.
//     Tombstones live index.gc_deletes (60s by default): a dish's first
//     version (an INSERT, or a native version of 0 or 1), which is not
//     spread, arriving more than that after a later version under another
//     restaurant was written, is kept beside it; and a version under a
//     former restaurant arriving more than that after the dish was
//     deleted is written. reshard verify reports such duplicates and
//     reshard repair deletes the older copy.
//   - With separate restaurant and dish topics their relative order is
//     undefined, so a dish upsert may be processed after its restaurant's
//     delete even though it was produced before; it then waits and is
//     dead-lettered as unknown_restaurant. Any restaurant delete finishes
//     the dishes waiting for that restaurant (they belong to a deleted
//     restaurant).
//   - A write refused by the index itself (a write block, a missing
//     index) stops the pipeline (ErrIndexUnwritable) rather than
//     dead-lettering every event; the events are written when it starts
//     again.
//   - During a migration an instance whose heartbeat cannot be written
//     looks gone to the job, which then stops waiting for it; the writes
//     it performs stay those of the phase it applies. Restaurants that are
//     not yet in the migration's target index are written there only when
//     they change: the copy of the rest is the job's.
//   - Ownership is fenced by generation (indexer_fence.go): once a member's
//     generation has ended it makes no new decision for that
//     generation's events, withdraws the writes it had queued and only
//     lands what was on the wire. It waits for that before it joins the
//     next generation (the handover, group.go), but at most half the
//     rebalance timeout: a member whose requests do not come back in
//     that time (a shard that does not answer) joins without, and those
//     requests can land after the new owner of their partitions has read
//     the index — old versions under external versioning, which the new
//     owner's decisions supersede (a same-version copy under another
//     routing included: reparent.go). A member that stops without leaving
//     the group (SIGKILL, a lost host) settles nothing; its writes in
//     flight land or fail within the request timeout, long before its
//     session expires.
//   - Dead letters are written once per event, as far as the dead-letter
//     topic can tell; what can still make a repeat (a dead letter that
//     lands after the new owner read the topic, clock skew beyond the
//     read's margin, partitions added to the dead-letter topic) is stated
//     in package deadletter (once.go).
//
// # Boundaries
//
// pipeline imports bulk (the OpenSearch wire), router and schema, and
// talks to Kafka through github.com/segmentio/kafka-go. It never imports
// migrate: it learns about a migration only through the migration state
// document and the alias (schema/migration.go is the whole contract), and
// answers only with its heartbeat.
//
//	imports: bulk decode kafkarange pipeline/deadletter pipeline/directory pipeline/health pipeline/outbox pipeline/pending pipeline/placement pipeline/topics router schema
//	never:   migrate search internal github.com/twmb/franz-go
package pipeline
