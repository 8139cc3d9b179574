// Package pipeline is the ingest pipeline: it consumes restaurant and dish
// change events from Kafka, validates them, routes each document to the
// geoshard of its restaurant's location, writes it through package bulk
// with external versioning, and commits Kafka offsets only behind writes
// that OpenSearch acknowledged.
//
// # What it owns
//
// The files follow a message: the consumer group (group.go) fetches it,
// the decoder (decoder.go, through package decode, which reads geoshard's
// own events and Debezium's) decodes it, the loop (loop.go) tracks it and hands it to the
// indexer (indexer.go), which decides its writes (indexer_decide.go, indexer_gained.go,
// indexer_moves.go), follows a dish that changes restaurant (reparent.go), keeps
// account of what is in flight (inflight.go) and makes them (indexer_targets.go);
// outcomes (outcomes.go) finishes it, and the committer (committer.go)
// commits its offset. Pipeline (pipeline.go) wires them and runs them.
// Dish topics keyed by dish are re-keyed first (placement/repartition.go),
// to where the restaurant topic's partitioner put each restaurant
// (placement/placement.go), once that is known (placement/learn.go).
//
//   - Membership of the consumer group (group.go): a generation's
//     partitions, each read from the committed offset, commits through
//     the generation, and the handover before the next join; no decision
//     once the generation has ended (indexer_fence.go).
//   - Decoding and validation of events (decoder.go; package decode). A
//     bad event goes to the dead-letter topic with a bounded reason code;
//     nothing is dropped silently, and nothing is dead-lettered twice
//     (package deadletter; outcomes.go queues and counts).
//   - The write targets: an index and the geoshard map it was built with,
//     read from the index's mapping _meta through the alias, re-checked
//     periodically (indexer_targets.go). Routing is computed and items are emitted
//     per target in one place, so that dual writes during a reshard are a
//     second entry in the list.
//   - Its side of a reshard migration (migration.go, modes_heartbeat.go): it
//     polls the alias's migration state, writes both indexes while the
//     phase asks for dual writes, switches between events once nothing is
//     in flight, and records the phase it applies in a heartbeat the job
//     waits on.
//   - The write side (indexer.go): many events in flight at once, events
//     of one restaurant (and its dishes) decided and written in order,
//     and the slow work of a move or a restaurant delete on tasks that
//     hold up only that restaurant. Its doc comment states what is in
//     flight, who owns what, what orders what, and the lock order.
//   - The restaurant directory, id → cell of the location, in about 40
//     bytes a restaurant (package directory), warmed from the index at start
//     (indexer_warm.go) and kept current from restaurant events, and the bounded
//     set of dishes that wait for their restaurant (package pending), each
//     parked durably in a compacted topic of ingest's own so that its
//     offset is committed while it waits (parking.go). A document is never
//     written without routing.
//   - Restaurant moves and deletes, which carry the restaurant's dishes
//     with them in an order that a crash half-way cannot break (indexer_moves.go),
//     and the index refreshes their searches need, shared by every move,
//     delete and lookup waiting at that moment (refresher.go).
//   - Offset tracking per partition and commits (tracker.go, committer.go): an offset is
//     committed only when every event below it is finished — written
//     (ok, stale or not found) to every target, dead-lettered, or parked
//     to wait for its restaurant.
//   - Metrics (metrics.go), Stats and Ready (stats.go), and the run and
//     its shutdown (pipeline.go).
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
// # Index documents
//
// A document's source is the event's doc plus the fields the pipeline
// owns: relation, geo_cell, version, doc_id, and location (restaurant) or
// restaurant_id (dish). Top-level doc fields with those names are dropped
// before the pipeline's own are added, so an event cannot override them.
// Other fields pass through untouched; OpenSearch's verdict on them (a
// mapping conflict, a metadata field) comes back as a permanent error and
// the event is dead-lettered with reason rejected.
//
// # Several instances in one group
//
// Each instance is a member of one consumer group (kafka-go's
// ConsumerGroup; group.go): each generation gives it its partitions, it
// reads each from the group's committed offset, commits through the
// generation, and lands what it has in flight before it joins the next.
// It reads the directory from the index once it has joined. At a later
// generation it keeps what it knows of the
// restaurants of the partitions it kept: the group's balancer gives
// partition N of every event topic to one member (topics.Copartitioned), so they
// had no other writer. The restaurants of a partition it gained, whose
// previous owner may have created, moved or deleted them, are looked up
// in the index at their first event there, in batches, while the events
// of the other partitions flow on (indexer_gained.go). The events of a partition
// it lost that still wait in it it leaves unfinished to the new owner
// (releaseUnowned), as it does every message of an ended generation still
// queued behind its readers (loop.ended). A directory read from the index knows no
// delete made before the read, so a restaurant it does not know is taken
// as live only once the index has taken its write (confirmRestaurant).
// Before the lookups everything the instance has in flight
// is answered and the index refreshed, so they see every acknowledged
// write; what a previous owner had not acknowledged it had not committed,
// so those events are delivered again.
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
