// Package topics holds the layout of Kafka topics ingest relies on: the
// event topics co-partitioned (partition N of each holds the same
// restaurants), the consumer group's balancer that gives partition N of
// every event topic to one member, and the topics ingest keeps itself
// (repartition, parking), each with the restaurant topic's partition
// count.
//
// # Boundaries
//
// topics speaks to Kafka through kafka-go and reads partition counts
// through kafkarange; it knows nothing of events or of OpenSearch.
//
//	imports: kafkarange
//	never:   pipeline migrate bulk github.com/opensearch-project
package topics
