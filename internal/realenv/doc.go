// Package realenv says which engines the tests run against: the fast
// in-process ones (franz-go's kfake broker and the internal/osfake
// emulator), or a real OpenSearch node and a real Kafka broker.
//
// The real engines are selected by one build tag and one set of variables:
//
//	make real-up
//	GEOSHARD_OPENSEARCH_URL=http://127.0.0.1:9200 GEOSHARD_KAFKA_BROKERS=127.0.0.1:9092 \
//		go test -tags realcluster -p 1 ./...
//
// Under the tag both variables are required: a test binary built with the
// tag and started without them panics at init, so a real-engine suite can
// never pass without having run. Without the tag the variables are ignored
// and every test uses the in-process engines.
//
// Each variable is a comma-separated list: the single node and broker of
// `make real-up`, or every node and broker of real.sh's cluster profile
// (REAL_CLUSTER=3), which `real.sh env` prints comma-joined. The clients
// get them all; Nodes and Brokers say how many there are, so that a test
// can adapt to the cluster's shape (TopicReplicas, IndexReplicas).
//
// Beside them, where the machine has PostgreSQL, real.sh starts a
// change-data-capture source: a PostgreSQL server and a Kafka Connect
// worker with Debezium's Postgres connector, named by two more variables
// (GEOSHARD_POSTGRES_DSN, GEOSHARD_CONNECT_URL). They are optional under
// the tag: the suites that need them ask through CDC, which skips without
// them, or fails with GEOSHARD_REQUIRE_REAL=1 (CI) — except against a
// cluster, where real.sh starts none and CDC skips.
//
// The real engines are shared by every test of a run, so a test that uses
// them runs alone (Parallel is a no-op there) and names what it creates so
// that nothing collides with what an earlier test left (see Unique).
//
// It imports only the standard library, so any test package may use it.
package realenv
