// Package placement knows where the restaurant topic's producer put each
// restaurant, and re-keys dish events keyed by dish to the same place.
//
// # What it owns
//
//   - The partitioners a producer places keys with (murmur2, crc32,
//     fnv1a, sarama) and the key templates that spell a restaurant id as
//     its key; a Placement is both, and checks a restaurant event against
//     them (placement.go).
//   - Reading the placement from the restaurant topic's last events, or
//     checking the partitioner named against them, and refusing a topic
//     that no one placement fits (detect.go).
//   - The Placer, which knows the placement or learns it while dish events
//     wait, and why waiting strands no dish (learn.go).
//   - The Repartitioner, which consumes the dish topic in a consumer
//     group of its own and writes each event to the repartition topic in
//     its restaurant's partition, with its origin in headers that OriginOf
//     reads back (repartition.go).
//
// Its Config is its own: package pipeline builds it from pipeline.Config
// in one place. Event formats stay the pipeline's: it reads restaurant
// ids through Keys, and reports through Hooks (failure, counts, the
// pipeline's fetch loop and backoff).
//
// # Boundaries
//
// It talks to Kafka through kafka-go and reads ranges of partitions
// through kafkarange; it knows nothing of the pipeline's events,
// index or consumer group beyond what Config, Keys and Hooks carry.
//
//	imports: bulk kafkarange
//	never:   pipeline migrate
package placement
