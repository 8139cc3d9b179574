// Package chaos is the fault-schedule explorer: it runs seeded,
// randomized schedules of the ingest pipeline's worst days against the
// in-process engines (the kfake broker of internal/kafkatest and the
// OpenSearch emulator of internal/osfake), and judges each against the
// model computed from the event log alone: every document once, on its
// geoshard, at its newest version; the dead letters the model names; every
// offset committed.
//
// # What a schedule does
//
// One seed draws the topics (one shared topic, or a restaurant and a dish
// topic, keyed by restaurant or by dish with --dish-key dish and any of the
// partitioners ingest knows), the order the topics are produced in, a
// stream of events from pipeline's generator (moves, dishes that change
// restaurant, deletes, replays, overtaken versions, early and orphan
// dishes, poison) cut into parts, and a list of steps between the parts:
// members join, leave with their drain, are killed (no leave, no commit,
// their requests failing) or frozen (their requests held, the group
// hearing nothing, past the session timeout or not) and thawed; the
// emulator rejects items with 429, fails requests, slows shards, cuts off
// answers; one member's answers are lost. At the end every fault is
// lifted, a member runs, and the group must catch up; then the index is
// read back shard by shard and judged.
//
// # Running it
//
//	go test ./internal/chaos -run TestExplore -chaos.schedules=50 -chaos.duration=5m
//	go test ./internal/chaos -run TestExplore -chaos.seed=N -chaos.schedules=1   # replay
//
// The flags can also be set from GEOSHARD_CHAOS_SEED, GEOSHARD_CHAOS_SCHEDULES
// and GEOSHARD_CHAOS_DURATION; make test-chaos and make test-chaos-ci run it.
// A failure prints the seed, the schedule as a list of steps, each anomaly
// (which document, expected against found) and the log's history of the
// first documents it names.
//
// # Layout
//
//   - gen_test.go: the event generator, ported from pipeline's;
//     model_test.go: the expected state;
//   - judge_test.go: reading the world back and comparing it with the
//     model; judge_self_test.go: the judge shown to fail on a world broken
//     on purpose;
//   - schedule_test.go: schedules drawn from a seed (schedule_self_test.go:
//     a seed is all a replay needs);
//   - faults_test.go: a member killed or frozen, at the broker and at its
//     transport (faults_self_test.go: shown to do what they say);
//     world_test.go: the engines, the producer and the members;
//     reshard_test.go: the reshard job beside them;
//   - explore_test.go: TestExplore, its flags, and running one schedule.
//
// # What a fault is made of, and what it is not
//
// A killed member's group requests are refused and its requests to the
// emulator fail; the step returns once its Run has, so nothing of it runs
// after. A frozen member's group requests (heartbeats, commits, joins,
// a first join without a member id among them: faults_test.go) and its
// requests to the emulator are held until the thaw; but its
// fetches are not — the broker cannot tell them apart — so a frozen member
// goes on reading and deciding while nothing it sends arrives: a member
// cut off from the coordinator and from OpenSearch rather than a stopped
// process. Holding its fetches too needs a hook in pipeline (a member's
// Kafka dialer, which pipeline keeps unexported).
//
// Not yet covered: a broker that fails or moves leaders, a rollback
// after the cutover, the emulator's clock (tombstones that expire,
// index.gc_deletes), Debezium's format, more than one reshard, and
// shrinking a failing schedule to the steps it needs.
//
// The package has no non-test code besides this comment; nothing imports
// it. It may import anything, but production code is only ever driven
// through its exported API (pipeline.New and Run, Stats).
package chaos
