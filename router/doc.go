// Package router is the geoshard model: it places a location on a named
// geoshard and turns a search area into the few shards to ask.
//
// A Map is an ordered list of shards over the S2 cells of one level (10 by
// default, about 81 km² a cell). Shard i owns the half-open range of cell IDs
// from its start cell to the next shard's start cell, so the shards together
// partition the sphere: every valid cell belongs to exactly one shard. Because
// S2 cell IDs follow a Hilbert curve, a contiguous range of IDs is a
// contiguous patch of the map within a cube face, and look-up is a binary
// search over the start cells with no per-cell table.
//
// Each shard carries a routing key chosen so that OpenSearch's own routing
// hash (opensearchutil/shardhash) sends it to exactly physical shard i of an
// index created with the map's number_of_shards and routing_num_shards:
// geoshard i ↔ physical shard i, a bijection.
//
// The package also holds the planner that computes a map from the document
// load per cell, and the evaluation of a map against a search workload.
//
// # Boundaries
//
// Package router is pure: it does no file or network I/O, no logging and takes
// no context. It must not import any other geoshard package.
//
//	imports: none
//	never:   net os context log/slog
package router
