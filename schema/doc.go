// Package schema is the contract between ingest and reshard: the shape of
// the menu index and the state of a migration.
//
//   - The index (schema.go): document ids (restaurant:<id>, dish:<id>), the
//     fields every document carries and the join field that makes dishes
//     children of their restaurant, the mappings and settings an index is
//     created with, and the geoshard map an index records in its mapping
//     _meta (LoadMap, MapFromMeta), which every reader routes by.
//   - A migration (migration.go): the document the reshard job writes in
//     MigrationsIndex and every ingest instance reads, its Phases (with
//     what each asks of ingest: DualWrites, TargetIsPrimary, Done), each
//     side's index and map (Side.ParseMap), and the heartbeats by which
//     instances acknowledge a phase.
//   - Index names OpenSearch accepts (CheckIndexName).
//
// Ingest (pipeline) writes documents in this shape and applies the phases;
// reshard (migrate) creates indexes, copies documents and moves the
// phases; search reads the map. How ingest writes during dual writes is
// stated in package pipeline's doc.
//
// # Boundaries
//
// All of them import this package; it imports only router, and none of
// them.
//
//	imports: router
//	never:   bulk pipeline migrate search internal github.com/segmentio/kafka-go github.com/twmb/franz-go
package schema
