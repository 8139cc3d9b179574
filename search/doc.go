// Package search is the query side of geoshard: "dishes near here" and
// "restaurants near here", asked of only the shards that cover the area,
// with the counts that feed a filter sidebar.
//
// A Client is opened on an alias. It reads the geoshard map from the
// alias's write index exactly as ingest does (the map in the index's
// mapping _meta), so a search is routed with the map the documents were
// written with, and it reads the alias again every CheckInterval, so a
// reshard's cutover or rollback is followed without a restart. A search
// of an area covers it with the map's cells, and asks the shards that
// own them, by their routing keys; a search with no area asks every
// shard, and says so.
//
// Dishes are children of their restaurant in the join field, so the
// location of a dish is its restaurant's: a dish search filters with
// has_parent on the restaurant's geo_point. A dish search makes three
// requests, all to the same shards: the facet counts and total of the
// matching dishes, the nearest restaurants that serve one (sorted by
// distance, with the cuisine counts), and the matching dishes of those
// restaurants, ordered by their restaurant's distance (two more when
// those restaurants have more than four pages of dishes, to read exactly
// the page's).
//
// Results come a page at a time: a page that has more after it carries
// a token (Next) that the next search passes back (After), and the
// listing continues with search_after on the same total order (cursor.go).
// The values of the filtered fields the index holds are its Vocabulary,
// which checks a query's allergens, diets and cuisines before it is sent
// (vocabulary.go). Request bodies are built in bodies.go and pinned by
// golden files under testdata/bodies.
//
// # Boundaries
//
// search reads the index through bulk's client and routes with router and
// schema, the same as ingest. It is the query side only: it never imports
// the ingest pipeline, the reshard workflow or Kafka.
//
//	imports: bulk router schema
//	never:   pipeline migrate internal github.com/segmentio/kafka-go github.com/twmb/franz-go
package search
