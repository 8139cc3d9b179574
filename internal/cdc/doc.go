// Package cdc drives the real change-data-capture source that
// deploy/local/real.sh starts beside OpenSearch and Kafka: a PostgreSQL
// server with logical decoding, and a Kafka Connect worker with Debezium's
// Postgres connector writing to the real broker. Its tests run the chain
// Postgres → Debezium → Kafka → ingest → OpenSearch.
//
// The package's own code is the Connect side, standard library only:
// Connect, a client of the worker's REST API (add a connector, wait until
// it and its task run, remove it), and Source, the settings of one
// Debezium Postgres connector. The Postgres side (pgx) is in the tests
// alone, which carry the realcluster build tag and find the engines
// through realenv.CDC: they skip without them, and fail under
// GEOSHARD_REQUIRE_REAL=1.
//
//   - envelopes_test.go (TestDebeziumEnvelopes): the connector's events
//     for each kind of change, checked against the samples in
//     decode/testdata/debezium, which -update rewrites from a real run.
//   - chain_test.go (TestChain): rows, snapshot, live changes, an ingest
//     killed mid-stream and a reshard, then the database compared with
//     the index shard by shard.
//
// It is test machinery: production code never imports it, and it imports
// nothing of geoshard's but, in its tests, what they drive.
package cdc
