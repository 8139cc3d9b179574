package schema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/geoshard/geoshard/router"
)

// Field names every document carries.
const (
	// FieldRelation is the join field: "restaurant", or {"name":"dish",
	// "parent":"restaurant:<id>"}.
	FieldRelation = "relation"
	// FieldGeoCell is the S2 token, at the map's level, of the restaurant's
	// location (for a dish, its restaurant's). Reshard recomputes routing
	// from it.
	FieldGeoCell = "geo_cell"
	// FieldVersion is the source system's version of the document, also
	// written as its external version.
	FieldVersion = "version"
	// FieldDocID repeats _id as a keyword, for sorting and resumable scans.
	FieldDocID = "doc_id"
	// FieldLocation is a restaurant's geo_point.
	FieldLocation = "location"
	// FieldRestaurantID is a dish's restaurant id (without prefix).
	FieldRestaurantID = "restaurant_id"
)

// ReservedFields are the fields of a document that ingest sets itself:
// relation, geo_cell, version, doc_id, and location (restaurant) or
// restaurant_id (dish). A source document cannot override them: they are
// stripped from it first (at the top level, which is where they live),
// and a Debezium mapping may not copy a column into one.
var ReservedFields = []string{
	FieldRelation, FieldGeoCell, FieldVersion,
	FieldDocID, FieldLocation, FieldRestaurantID,
}

// IsReserved reports whether a top-level field is one of ReservedFields.
func IsReserved(field string) bool {
	for _, r := range ReservedFields {
		if field == r {
			return true
		}
	}
	return false
}

// Relation names of the join field.
const (
	RelationRestaurant = "restaurant"
	RelationDish       = "dish"
)

// RestaurantID is the _id of restaurant id.
func RestaurantID(id string) string { return "restaurant:" + id }

// DishID is the _id of dish id.
func DishID(id string) string { return "dish:" + id }

// ParseID splits an _id into its relation and source id.
func ParseID(docID string) (relation, id string, err error) {
	rel, id, ok := strings.Cut(docID, ":")
	if !ok || id == "" || (rel != RelationRestaurant && rel != RelationDish) {
		return "", "", fmt.Errorf("schema: %q is not restaurant:<id> or dish:<id>", docID)
	}
	return rel, id, nil
}

// MetaKey is the key under the mapping _meta that holds the map.
const MetaKey = "geoshard"

// Meta is what an index records about its map in its mapping _meta.
type Meta struct {
	// MapHash is the map's content hash.
	MapHash string `json:"map_hash"`
	// Map is the map file itself.
	Map json.RawMessage `json:"map"`
}

// Mappings returns the index mappings for a map: routing required (a
// document without routing would land where searches never look), the
// join field, the fields above, the typed fields of restaurant and dish
// documents, and the map in _meta. Other document fields are mapped
// dynamically, on first sight, by each shard.
func Mappings(m *router.Map) (map[string]any, error) {
	mapJSON, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, mapJSON); err != nil {
		return nil, err
	}
	keyword := map[string]any{"type": "keyword"}
	return map[string]any{
		"_routing": map[string]any{"required": true},
		"_meta":    map[string]any{MetaKey: Meta{MapHash: m.Hash(), Map: compact.Bytes()}},
		"properties": map[string]any{
			FieldRelation:     map[string]any{"type": "join", "relations": map[string]any{RelationRestaurant: RelationDish}},
			FieldGeoCell:      keyword,
			FieldVersion:      map[string]any{"type": "long"},
			FieldDocID:        keyword,
			FieldLocation:     map[string]any{"type": "geo_point"},
			FieldRestaurantID: keyword,
			"name":            map[string]any{"type": "text", "fields": map[string]any{"keyword": map[string]any{"type": "keyword", "ignore_above": 256}}},
			"cuisines":        keyword,
			"city":            keyword,
			"price_level":     map[string]any{"type": "byte"},
			// A decimal whose first value may be written as an integer (4 for
			// 4.0): left to dynamic mapping, two shards that see the field
			// first at the same moment, as 4.3 and as 4, map it as float and
			// as long, and the server rejects one of the writes.
			"rating":      map[string]any{"type": "float"},
			"description": map[string]any{"type": "text"},
			"allergens":   keyword,
			"diets":       keyword,
			"price_cents": map[string]any{"type": "integer"},
		},
	}, nil
}

// IndexOptions are the settings of an index besides its shard counts.
type IndexOptions struct {
	// Replicas is index.number_of_replicas. Default 0 when Loading, else 1.
	Replicas *int
	// Loading sets what suits a bulk load: no replicas and no periodic
	// refresh. Reshard restores both before cutover.
	Loading bool
	// GCDeletes, if set, is index.gc_deletes (e.g. "1h" during a migration,
	// so that a late backfill copy cannot resurrect a document deleted by a
	// live write).
	GCDeletes string
}

// IndexBody is the create-index request body for a map: number_of_shards
// and number_of_routing_shards from the map (the routing keys depend on
// both), the options, and Mappings.
func IndexBody(m *router.Map, opt IndexOptions) ([]byte, error) {
	mappings, err := Mappings(m)
	if err != nil {
		return nil, err
	}
	replicas := 1
	if opt.Loading {
		replicas = 0
	}
	if opt.Replicas != nil {
		replicas = *opt.Replicas
	}
	settings := map[string]any{
		"number_of_shards":         m.NumShards(),
		"number_of_routing_shards": m.RoutingNumShards(),
		"number_of_replicas":       replicas,
	}
	if opt.Loading {
		settings["refresh_interval"] = "-1"
	}
	if opt.GCDeletes != "" {
		settings["gc_deletes"] = opt.GCDeletes
	}
	return json.Marshal(map[string]any{"settings": map[string]any{"index": settings}, "mappings": mappings})
}

// ErrNoMap reports an index whose mapping _meta holds no geoshard map.
var ErrNoMap = errors.New("schema: the index records no geoshard map in its mapping _meta")

// MapFromMeta reads the map an index recorded in its mapping _meta (the
// whole _meta object) and checks it against the recorded hash.
func MapFromMeta(meta json.RawMessage) (*router.Map, error) {
	var wrapper map[string]json.RawMessage
	if len(meta) == 0 || json.Unmarshal(meta, &wrapper) != nil || len(wrapper[MetaKey]) == 0 {
		return nil, ErrNoMap
	}
	var md Meta
	if err := json.Unmarshal(wrapper[MetaKey], &md); err != nil {
		return nil, fmt.Errorf("schema: _meta.%s: %w", MetaKey, err)
	}
	m, err := router.Parse(md.Map)
	if err != nil {
		return nil, fmt.Errorf("schema: _meta.%s.map: %w", MetaKey, err)
	}
	if m.Hash() != md.MapHash {
		return nil, fmt.Errorf("schema: _meta.%s: recorded hash %s, but the recorded map hashes to %s", MetaKey, md.MapHash, m.Hash())
	}
	return m, nil
}

// MetaSource reads what LoadMap needs from a cluster; *bulk.Admin is one.
type MetaSource interface {
	// WriteIndex resolves an alias (or an index name) to its write index.
	WriteIndex(ctx context.Context, name string) (string, error)
	// Meta returns an index's mapping _meta.
	Meta(ctx context.Context, index string) (json.RawMessage, error)
}

// LoadMap reads the map that an alias's write index (or a concrete index)
// was built with, from its mapping _meta, and returns it with the index
// name.
func LoadMap(ctx context.Context, src MetaSource, alias string) (*router.Map, string, error) {
	index, err := src.WriteIndex(ctx, alias)
	if err != nil {
		return nil, "", err
	}
	meta, err := src.Meta(ctx, index)
	if err != nil {
		return nil, "", err
	}
	m, err := MapFromMeta(meta)
	if err != nil {
		return nil, "", fmt.Errorf("index %q: %w", index, err)
	}
	return m, index, nil
}
