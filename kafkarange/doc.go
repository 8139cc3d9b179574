// Package kafkarange reads a range of one partition of a Kafka topic with
// a raw kafka.Client: partition P of topic T from offset A up to offset B
// (or up to the partition's end as it is now), each record handed to a
// callback in offset order, then closed. It also reads topics' partition
// counts, which such a read is usually planned with.
//
// It is the one fetch loop for reads that are not a consumer's: the
// parking topic read back, the restaurant topic sampled for its
// placement, the dead-letter topic read back. A consumer reads through
// kafka-go's Reader instead.
//
// # Boundaries
//
// It knows Kafka, not geoshard: package pipeline and its subpackages
// import it, and it imports no package of the module.
//
//	imports: none
//	never:   pipeline migrate
package kafkarange
