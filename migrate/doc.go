// Package migrate is the reshard workflow: it creates menu indexes under a
// geoshard map and moves an alias from one index to another safely. Its
// state lives in OpenSearch, so that a killed job, a second operator and
// the ingest instances all see the same truth.
//
// migrate imports bulk (the OpenSearch wire), router and schema. It never
// imports pipeline or any Kafka package: ingest learns about a migration
// only through the state migrate stores.
package migrate
