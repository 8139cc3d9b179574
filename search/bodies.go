package search

import (
	"encoding/json"
	"strings"

	"github.com/geoshard/geoshard/schema"
)

// The request bodies, as pure functions of the query so that each is
// pinned by a golden file (testdata/bodies, TestRequestBodies).

// facetsBody counts the matching dishes and their sidebar facets.
func facetsBody(q DishQuery) map[string]any {
	ranges := make([]any, len(PriceBands))
	for i, b := range PriceBands {
		r := map[string]any{"key": b.Key}
		if b.From > 0 {
			r["from"] = b.From
		}
		if b.To > 0 {
			r["to"] = b.To
		}
		ranges[i] = r
	}
	return map[string]any{
		"size": 0, "track_total_hits": true, "query": q.dishQuery(),
		"aggs": map[string]any{
			"allergens": map[string]any{"terms": map[string]any{"field": "allergens", "size": facetSize}},
			"diets":     map[string]any{"terms": map[string]any{"field": "diets", "size": facetSize}},
			"price":     map[string]any{"range": map[string]any{"field": "price_cents", "keyed": true, "ranges": ranges}},
		},
	}
}

// nearestBody asks the nearest size restaurants that serve a matching
// dish, after the sort values after (none: from the nearest), with the
// cuisine counts of all of them.
func nearestBody(q DishQuery, size int, after []json.RawMessage) map[string]any {
	b := map[string]any{
		"size": size, "query": q.restaurantQuery(), "sort": distanceSort(q.Area),
		"_source": []string{"name", schema.FieldLocation},
		"aggs":    map[string]any{"cuisines": map[string]any{"terms": map[string]any{"field": "cuisines", "size": facetSize}}},
	}
	if len(after) > 0 {
		b["search_after"] = after
	}
	return b
}

// partial is a restaurant whose dishes up to and including dish were on
// the page before.
type partial struct {
	restaurantID string // without prefix, as dishes carry it
	dish         string // doc_id
}

// dishesOfBody asks up to size matching dishes of the restaurants ids,
// by doc_id, leaving out those of p's restaurant up to p's dish, with
// the number of them each restaurant has (so that a page can tell
// whether it saw all of a restaurant's dishes).
func dishesOfBody(q DishQuery, ids []string, p *partial, size int) map[string]any {
	own := q
	own.Area, own.Cuisines = Area{}, nil // these restaurants satisfy both
	dq := own.dishQuery()
	if strings.TrimSpace(q.Text) != "" {
		dq = q.dishQuery() // the text may match the restaurant's name
	}
	b := map[string]any{"filter": []any{dq, map[string]any{"terms": map[string]any{schema.FieldRestaurantID: ids}}}}
	if p != nil {
		b["must_not"] = []any{map[string]any{"bool": map[string]any{"filter": []any{
			map[string]any{"term": map[string]any{schema.FieldRestaurantID: p.restaurantID}},
			map[string]any{"range": map[string]any{schema.FieldDocID: map[string]any{"lte": p.dish}}},
		}}}}
	}
	return map[string]any{
		"size": size, "track_total_hits": true,
		"query":   map[string]any{"bool": b},
		"sort":    []any{map[string]any{schema.FieldDocID: "asc"}},
		"_source": []string{"name", schema.FieldRestaurantID, "allergens", "diets", "price_cents"},
		// Every dish of a restaurant is on its restaurant's shard, so
		// each shard's count of a restaurant is the whole count.
		"aggs": map[string]any{"per_restaurant": map[string]any{"terms": map[string]any{"field": schema.FieldRestaurantID, "size": len(ids)}}},
	}
}

// restaurantsBody is a restaurant search's one request.
func restaurantsBody(q RestaurantQuery, size int, after []json.RawMessage) map[string]any {
	b := map[string]any{
		"size": size, "track_total_hits": true, "query": q.query(), "sort": distanceSort(q.Area),
		"_source": []string{"name", "cuisines", schema.FieldLocation},
		"aggs":    map[string]any{"cuisines": map[string]any{"terms": map[string]any{"field": "cuisines", "size": facetSize}}},
	}
	if len(after) > 0 {
		b["search_after"] = after
	}
	return b
}

// vocabularyBody asks every value of the filtered fields the index
// holds.
func vocabularyBody() map[string]any {
	aggs := map[string]any{}
	for _, f := range vocabularyFields {
		aggs[f] = map[string]any{"terms": map[string]any{"field": f, "size": vocabularySize}}
	}
	return map[string]any{"size": 0, "track_total_hits": false, "aggs": aggs}
}
