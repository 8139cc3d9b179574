// Package migrate is the reshard workflow: it creates menu indexes under a
// geoshard map and moves an alias from one index to another safely. Its
// state lives in OpenSearch, so that a killed job, a second operator and
// the ingest instances all see the same truth.
//
// # The state machine
//
// One document per alias in schema.MigrationsIndex (schema/migration.go
// is the contract with ingest) holds the migration: its phase, both
// indexes with their maps, the settings to restore, the backfill
// checkpoints and the last verification. Every change is a conditional
// write (if_seq_no, if_primary_term); on a conflict the change is
// re-applied to what the other writer stored, re-checking its
// precondition (stateStore.Update).
//
//	(none) ─create─▶ created ─dual-writes─▶ dual_writes ─backfill─▶ backfilling ─▶ backfilled
//	                                                                                  │   ▲
//	                                                                    verify passed │   │ verify failed, repair
//	                                                                                  ▼   │
//	   completed ◀─complete── cut_over ◀─────────────────cutover────────────────── verified
//	                            │                                                      ▲
//	                   rollback │                                                      │ verify passed
//	                            ▼                                                      │
//	                       rolled_back ────────────────────────────────────────────────┘
//
//	cancel: created … verified, rolled_back ─▶ cancelled
//	create: completed, cancelled ─▶ created (the alias's next migration)
//
// The diagram draws the transition table (transitions.go), which every
// step reads; listed step by step, the phases each starts from, the phase
// it leaves, and the phases it also runs in without moving the migration
// (resuming, re-checking or only reporting):
//
//	create       (none), completed, cancelled ─▶ created
//	             also runs in created, dual_writes, backfilling, backfilled, verified, cut_over, rolled_back
//	dual-writes  created ─▶ dual_writes
//	             also runs in dual_writes, backfilling, backfilled, verified, cut_over, rolled_back
//	backfill     dual_writes, backfilling ─▶ backfilled (backfilling while it runs)
//	             also runs in backfilled, verified, cut_over, rolled_back
//	verify       backfilled, verified, rolled_back ─▶ verified
//	             also runs in cut_over
//	repair       backfilled, verified ─▶ backfilled
//	             also runs in rolled_back
//	cutover      verified ─▶ cut_over
//	             also runs in cut_over
//	complete     cut_over ─▶ completed
//	             also runs in completed
//	rollback     cut_over ─▶ rolled_back
//	             also runs in rolled_back
//	cancel       created, dual_writes, backfilling, backfilled, verified, rolled_back ─▶ cancelled
//	             also runs in cancelled
//
// Each step is a method of Migrator and is idempotent: run again, it
// continues where a killed run stopped, or does nothing if it is done.
// Run chains create … cutover from the recorded phase. Complete is the
// point of no return (ingest stops writing the old index); everything
// before it can be undone, including cutover, which Rollback reverses with
// the same code (switchAlias, with a Direction).
//
// # Safety
//
//   - Create refuses, before it records anything, a target index the data
//     nodes have no room for: the source's primary store size times its
//     copies, with DiskHeadroom, against each node's available disk less
//     what the high watermark keeps free (disk.go: EstimateDisk, a pure
//     function; diskread.go reads its figures). CreateConfig.SkipDiskCheck
//     overrides it.
//   - Ingest writes both indexes from dual_writes to cut_over (and in
//     rolled_back); the job goes on only when every live ingest instance
//     says so in its heartbeat.
//   - The backfill writes every copy with version_type=external and the
//     document's own version, so a live write always wins, and gc_deletes
//     is raised on both indexes so that a delete's tombstone outlives any
//     copy in flight. Checkpoints move only behind acknowledged writes.
//   - Backfill workers (processes, or one process's copiers) share the
//     slices by leases in the stored state (lease.go): a slice's
//     checkpoint is written only by the holder of its current claim, and
//     never moves back; a dead worker's slice is taken over from its
//     checkpoint once its lease expires.
//   - The verification reports a missing, extra or duplicated id, listed
//     or only counted, only once real-time reads find it before and after
//     every live ingest instance has finished the changes it had in
//     flight when the id was seen (the progress epoch of its heartbeat;
//     suspects.go): a change caught between its two writes is not a
//     difference.
//   - Cutover needs a passed verification, restores the target's
//     replicas and refresh, waits for green, and moves the alias in one
//     atomic _aliases call.
//   - An index is deleted (complete --delete-old, cancel) only when no
//     live ingest instance writes it and the alias does not point to it.
//
// # Boundaries
//
// migrate imports bulk (the OpenSearch wire), router and schema. It never
// imports pipeline or any Kafka package: ingest learns about a migration
// only through the state migrate stores.
//
//	imports: bulk router schema
//	never:   pipeline internal github.com/segmentio/kafka-go github.com/twmb/franz-go
package migrate
