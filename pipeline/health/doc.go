// Package health is what an ingest instance waits for, if anything: the
// Kafka brokers or OpenSearch. A Monitor holds each engine's failure
// (since when, doing what, the last error) and gives the instance's
// state, which /readyz, the heartbeat, the progress line and reshard
// status show: consuming, starting, or what is awaited and why.
//
// # What it owns
//
//   - The state (health.go): Monitor, its engines (Broker, Search), the
//     Health it reports and the log lines of a wait's start and end.
//   - What tells it (reach.go): the one reading of an error as a failure
//     to reach a server (Unreachable) and of a kafka-go error logger's
//     message (BrokerLogged); the probe of the brokers while they fail;
//     the start-up's wait for them (AwaitBrokers); and the OpenSearch
//     transport that reports every request's answer (Observe).
//
// Where the pipeline tells the Monitor of a failure or an answer (its
// consumer group, its fetches, its start-up) is package pipeline's.
//
// # Boundaries
//
// health knows the engines only as clients (kafka-go's and
// opensearch-go's) and the states schema names; it knows nothing of
// events, the directory or the write side.
//
//	imports: bulk schema
//	never:   pipeline migrate
package health
