// Package e2e holds the cross-package end-to-end tests: scenarios that
// run the real ingest pipeline (package pipeline) and the real reshard
// workflow (package migrate) together, against the in-process Kafka broker
// (internal/kafkatest) and the OpenSearch emulator (internal/osfake), fed
// by the project's event generator (internal/datagen).
//
// # Why a package of its own
//
// The production packages must not import each other across the
// ingest/reshard boundary: pipeline never imports migrate, and migrate
// never imports pipeline or Kafka; they meet only in the migration state
// document (schema/migration.go). Each package's own tests therefore stand
// in for the other side (migrate's tests fake ingest's heartbeats and
// writes; pipeline's tests write the migration document by hand). The
// tests here are the one place where both real sides run at once, so they
// check the contract itself: that the job waits for the heartbeat the real
// pipeline writes, that the writes the real pipeline makes during each
// phase are the ones the job's backfill, verification and cutover rely
// on, and that the end state equals what the event log says it must be.
//
// # What it may import
//
// Anything: pipeline, migrate, bulk, router, schema and the internal
// harnesses. The package has no non-test code besides this comment, and
// nothing may import it.
//
// # How the tests judge the result
//
// The expected final state is computed from the produced event log alone
// (model_test.go), with the rules of the event schema and of the pipeline
// (newest version wins; a dish waits for its restaurant and is
// dead-lettered if it never comes; a dish lives on its restaurant's
// shard), never from what either side wrote. Each index is then read back
// shard by shard (preference=_shards:i) and compared document by document
// and shard by shard with that state, under the index's own map.
//
// # Layout
//
//   - env_test.go: the stack (broker, emulator, menu-v1 behind menu), a
//     running pipeline, the heartbeat and drain waits.
//   - feed_test.go: live traffic from datagen.Stream, and the event log.
//   - model_test.go: the expected state; check_test.go: reading an index
//     back and comparing it.
//   - scenario_test.go: a running stack with traffic, step marks, and the
//     diagnosis printed when a step fails.
//   - reshard_test.go, resume_test.go, heartbeat_test.go: the scenarios;
//     move_test.go, replay_test.go: two dual-write cases, reproduced
//     deterministically.
//
// A restaurant that moves during the backfill (TestMoveDuringBackfill)
// and a stale upsert replayed during dual writes after a delete made
// before them (TestReplayAfterDeleteAcrossDualWrites) are now covered,
// and TestReshardUnderLiveIngest runs with both in its traffic.
package e2e
