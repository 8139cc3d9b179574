// Package kafkatest runs an in-process Kafka cluster for tests and for the
// embedded demo mode, or connects the same API to a real broker when the
// tests run against the real engines (package realenv).
//
// It is test and demo machinery. Production code never imports it, except
// the --embedded wiring in cmd/, which runs the cluster inside the real
// binary; for that reason the package does not import "testing" (Start
// takes the small TB interface instead). It must not import pipeline,
// migrate, bulk or router: it knows Kafka, not geoshard.
//
// # What it wraps
//
// The cluster is franz-go's kfake, a fake broker that speaks the real
// Kafka wire protocol on 127.0.0.1 (never any other address). Clients
// connect to Addrs exactly as to a real cluster, so the pipeline's
// kafka-go readers run unmodified against it. On top of kfake this package
// adds:
//
//   - Start / New / Close, with topics, broker count and ports as Options;
//   - Produce, ProduceJSON, ProduceTo and ProduceBatch, which report the
//     partition and offset of every message (through franz-go's kgo client;
//     see produce.go for why not kafka-go's Writer);
//   - HighWatermarks, CommittedOffsets, Lag, DescribeGroup and
//     WaitGroupStable, read from the broker's state in-process (over the
//     wire on the real backend, see below);
//   - ReaderConfig and NewReader: kafka-go consumer-group readers tuned so
//     a rebalance takes well under a second instead of tens of seconds.
//
// Fake returns the kfake cluster itself for fault injection (Fault,
// ControlKey), leader moves and the rest of its API.
//
// # Two backends
//
// New chooses the backend. Without the realcluster build tag it is always
// the in-process kfake broker. With the tag (realenv.Enabled) New connects
// to realenv.KafkaBrokers() instead and starts nothing; WithInProcess
// overrides that, for callers whose broker must be in-process whatever the
// tags, such as the embedded demo mode. Real reports which backend a
// Cluster has; Fake is nil on the real one, and tests that need kfake's
// faults, ControlKey, leader moves or its clock skip there with
// realenv.EmulatorOnly.
//
// On the real backend the API is the same, over the wire:
//
//   - CreateTopic and WithTopic create exactly the names given, with
//     one replica per broker up to three (Replicas: 1 on the single
//     broker of `make real-up`, 3 on real.sh's cluster profile, whose
//     brokers take an acks=all write only with two replicas in sync), and
//     return once every partition has a leader that answers ListOffsets
//     and enough replicas in sync; creating an existing topic fails, as
//     in-process. Close deletes the topics the Cluster created (best
//     effort) and closes its clients; groups and their offsets stay.
//     Since the broker is shared and outlives every Cluster, tests name
//     their topics and groups with realenv.Unique.
//   - Produce, ProduceJSON, ProduceTo and ProduceBatch use the same kgo
//     producer; the partition count comes from a Metadata request.
//   - HighWatermarks and Lag use ListOffsets (earliest and latest, read
//     uncommitted), CommittedOffsets uses OffsetFetch, DescribeGroup and
//     WaitGroupStable use DescribeGroups, all through kadm. Calls that
//     meet a retriable error (a fresh broker answers the first group call
//     with COORDINATOR_NOT_AVAILABLE while it creates __consumer_offsets)
//     are tried again until ctx ends.
//   - Group.Generation is -1: DescribeGroups does not report a classic
//     group's generation. A group the coordinator does not know is "Dead"
//     on both backends.
//   - ReaderConfig's session timeout is the larger of 3 s and the
//     brokers' group.min.session.timeout.ms, which New reads with
//     DescribeConfigs: a broker refuses a JoinGroup below its minimum with
//     INVALID_SESSION_TIMEOUT (26), and kafka-go retries that forever.
//   - Options that describe brokers New would start cannot apply: New
//     fails on WithPorts and on WithBrokers(n) for n other than 1, and
//     ignores WithLogger (the broker keeps its own log).
//
// # What kfake emulates, and what it does not
//
// It implements produce and fetch with real record batches, list offsets,
// metadata, topic admin, classic consumer groups (join, sync, heartbeat,
// leave, offset commit and fetch) and the newer KIP-848 groups, idempotent
// and transactional producers with read_committed fetching, ACLs and SASL,
// and dynamic configs; retention and compaction run when asked
// (Fake().ApplyRetention, Fake().Compact).
//
// It does not emulate:
//
//   - durability or replication: every partition is one copy in memory,
//     acks=all is satisfied at once and everything is gone after Close
//     (kfake can persist to a directory; this package does not use that);
//   - throttling or quota enforcement, tiered storage, delegation tokens,
//     rack-aware fetching, or log divergence detection;
//   - transactions as a state machine: a transaction is either open or
//     done, completion is synchronous and there are no PrepareCommit or
//     PrepareAbort states to observe.
//
// # Where it differs from a real broker
//
// Behaviour a test sees in-process that a production cluster would not
// show:
//
//   - No initial rebalance delay. A real broker holds the first JoinGroup of
//     a new group for group.initial.rebalance.delay.ms (3 s by default) to
//     gather members; kfake answers at once, so a group's first generation
//     forms sooner here than in production.
//   - The smallest accepted session timeout is 100 ms here, where real
//     brokers (and kfake by default) refuse anything under
//     group.min.session.timeout.ms = 6 s. ReaderConfig asks for 3 s
//     in-process; on the real backend it raises that to the broker's
//     minimum (see above), but a ReaderConfig taken from an in-process
//     Cluster must not be reused against a real broker.
//   - Topics are never created implicitly (kfake's default; a real broker's
//     default auto.create.topics.enable is true). Declare every topic with
//     WithTopic or CreateTopic.
//   - Writes are applied when the request arrives; nothing waits on
//     followers, so produce latency says nothing about production.
//
// # Protocol versions
//
// kafka-go v0.4.51 reads with fixed or narrowly negotiated versions; all
// are inside kfake's supported ranges, so consumer groups work without any
// configuration. Seen on the wire: ApiVersions v0, Metadata v6, Fetch v10,
// ListOffsets v1, FindCoordinator v0, JoinGroup v2, SyncGroup v0,
// LeaveGroup v0, OffsetCommit v2, OffsetFetch v1; Heartbeat is fixed at v0
// in kafka-go's source. kfake's lowest versions are Produce v3 and Fetch v4
// (the record-batch formats); every other key starts at v0.
//
// Kafka 4.0 removed the oldest versions of many requests (KIP-896), among
// them JoinGroup v0-v1, which kafka-go before v0.4.48 sent. The versions
// above all remain, and the consumer-group tests here pass against Kafka
// 4.1 with no request refused.
//
// # kafka-go consumer-group behaviour the tests pin
//
// These hold against any broker; the tests here make them visible.
//
//   - At-least-once across a rebalance: every new generation restarts each
//     assigned partition at its committed offset, so every message fetched
//     but not committed is delivered again, once, to the partition's new
//     owner, and also on the partitions a member keeps
//     (TestConsumerGroupRebalance).
//   - Commits are not fenced by the generation they belong to.
//     CommitMessages stamps the commit with the reader's current
//     generation, and the coordinator checks member and generation but not
//     partition ownership. A member that commits, after a rebalance, a
//     message fetched before it, for a partition it has lost, succeeds and
//     can move the new owner's offset backwards
//     (TestCommitFromEarlierGenerationIsAccepted).
//   - Messages already queued inside a Reader when a generation ends are
//     not discarded: FetchMessage can return them after their partition
//     moved, while the new owner reads the same messages from the committed
//     offset. This comes from kafka-go's source (Reader.unsubscribe says
//     so); the tests avoid it by draining the first reader before the
//     rebalance rather than asserting it.
package kafkatest
