// Package benchrun measures ingest on the real engines (a real OpenSearch
// node and a real Kafka broker, deploy/local/real.sh): a soak of one long
// run (Soak), and ingest beside Benthos on the same stream (Peer). Command
// benchrun (cmd/benchrun) runs them; `make bench-soak` and `make
// bench-peer` run it against a pair real.sh brings up.
//
// What it owns: building the commands under test and running them as
// child processes, the event stream they consume (produced once by
// internal/datagen/cmd/produce into fresh topics), the fresh indexes,
// aliases and consumer groups of every run (named with a run id, removed
// afterwards), and what is measured: a group's committed offsets against
// the topics' end offsets (kadm), the child's /metrics, the index's
// _stats, and /proc (RSS, CPU) of the child and of the engines.
//
// The pure parts — offset comparison, rate windows, medians, /proc and
// Prometheus text parsing, log lines, goal checks, the report — are
// separate from the parts that talk to engines and processes, and their
// tests need no engine. Results are reported, never asserted: a goal
// missed is a FAIL line in the report, not an error.
//
// It imports no geoshard package: it measures the commands from outside,
// as an operator would.
package benchrun
