// Package datagen generates deterministic, realistic synthetic workloads
// for geoshard from real city data, and owns the fixtures under testdata/.
//
// It turns the embedded GeoNames extract (data/cities.csv, see
// data/README.md for provenance and the required attribution) into
// restaurants placed around city centres in proportion to population
// (Generate), aggregates their documents into S2 cells (Loads), and draws
// radius searches that follow where the documents are (Queries). It also
// turns them into the Kafka change events the ingest pipeline consumes,
// with the replays, reordering and poison messages of a real source
// (Stream; the schema is in testdata/events/README.md). The same inputs
// always give bit-for-bit identical output.
//
// The load and query formats belong to package router, the pure geoshard
// model: Loads returns []router.CellLoad and Queries []router.Query, and the
// fixtures are written with router.WriteLoads and router.WriteQueries, so
// router.ReadLoads and router.ReadQueries read them back.
//
// This is test and demo machinery. Production code never imports it, except
// for wiring that serves the embedded data behind an --embedded option. It
// imports only the standard library, third-party libraries
// (github.com/golang/geo) and router; it must not import any other geoshard
// package.
//
// Regenerate the committed fixtures with
//
//	go generate ./internal/datagen
//
// which runs cmd/gendata; TestFixtures fails when they drift.
package datagen

//go:generate go run ./cmd/gendata -out ../../testdata
