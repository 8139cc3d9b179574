package search

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/geoshard/geoshard/schema"
)

// DishQuery is a dish search.
type DishQuery struct {
	// Area is where the dishes' restaurants are; the zero Area is
	// anywhere (every shard).
	Area Area
	// Text matches the dish's name or its restaurant's.
	Text string
	// AllergenFree keeps dishes that contain none of these allergens.
	AllergenFree []string
	// Diets keeps dishes that suit every one of these diets.
	Diets []string
	// Cuisines keeps dishes of restaurants that serve one of these.
	Cuisines []string
	// MinPriceCents and MaxPriceCents bound the price (0: unbounded).
	MinPriceCents, MaxPriceCents int
	// Size is the number of dishes returned, nearest restaurant first.
	// Default 20, at most 100.
	Size int
	// AllShards asks every shard even for an area (to compare).
	AllShards bool
}

// Dish is a dish found, with its restaurant.
type Dish struct {
	ID           string   `json:"id"`
	Name         string   `json:"name"`
	RestaurantID string   `json:"restaurant_id"`
	Restaurant   string   `json:"restaurant"`
	DistanceM    float64  `json:"distance_m"` // from the area's centre; -1 without an area
	Allergens    []string `json:"allergens"`
	Diets        []string `json:"diets"`
	PriceCents   int      `json:"price_cents"`
}

// Facets are the sidebar counts. Allergens, Diets and PriceBands count
// the matching dishes; Cuisines counts the restaurants that serve one.
type Facets struct {
	Allergens  map[string]int64 `json:"allergens"`
	Diets      map[string]int64 `json:"diets"`
	Cuisines   map[string]int64 `json:"cuisines"`
	PriceBands map[string]int64 `json:"price_bands"`
}

// DishResult is what a dish search found.
type DishResult struct {
	Routed
	// Total is the number of matching dishes.
	Total  int64  `json:"total"`
	Dishes []Dish `json:"dishes"`
	Facets Facets `json:"facets"`
	// Took is the wall time of the search, all its requests.
	Took time.Duration `json:"-"`
}

// PriceBands are the price facet's bands, in cents.
var PriceBands = []struct {
	Key      string
	From, To int // To 0: open
}{
	{"under $10", 0, 1000}, {"$10-$20", 1000, 2000}, {"$20-$30", 2000, 3000}, {"$30 and up", 3000, 0},
}

const (
	defaultSize = 20
	maxSize     = 100
	facetSize   = 50
)

func (q DishQuery) size() int {
	switch {
	case q.Size <= 0:
		return defaultSize
	case q.Size > maxSize:
		return maxSize
	}
	return q.Size
}

// restaurantFilter is what the dish's restaurant must satisfy: the area
// and the cuisines.
func (q DishQuery) restaurantFilter() []any {
	var f []any
	if g := q.Area.filter(); g != nil {
		f = append(f, g)
	}
	if len(q.Cuisines) > 0 {
		f = append(f, map[string]any{"terms": map[string]any{"cuisines": q.Cuisines}})
	}
	return f
}

// dishOwnFilter is what the dish itself must satisfy, its restaurant
// aside.
func (q DishQuery) dishOwnFilter() (filter, mustNot []any) {
	filter = []any{map[string]any{"term": map[string]any{schema.FieldRelation: schema.RelationDish}}}
	for _, d := range q.Diets {
		filter = append(filter, map[string]any{"term": map[string]any{"diets": d}})
	}
	if q.MinPriceCents > 0 || q.MaxPriceCents > 0 {
		r := map[string]any{}
		if q.MinPriceCents > 0 {
			r["gte"] = q.MinPriceCents
		}
		if q.MaxPriceCents > 0 {
			r["lte"] = q.MaxPriceCents
		}
		filter = append(filter, map[string]any{"range": map[string]any{"price_cents": r}})
	}
	if len(q.AllergenFree) > 0 {
		mustNot = append(mustNot, map[string]any{"terms": map[string]any{"allergens": q.AllergenFree}})
	}
	return filter, mustNot
}

// dishQuery is the query of matching dishes: their own filter, their
// restaurant's through has_parent, and the text on either name.
func (q DishQuery) dishQuery() map[string]any {
	filter, mustNot := q.dishOwnFilter()
	if rf := q.restaurantFilter(); len(rf) > 0 {
		filter = append(filter, hasParent(map[string]any{"bool": map[string]any{"filter": rf}}))
	}
	b := map[string]any{"filter": filter}
	if len(mustNot) > 0 {
		b["must_not"] = mustNot
	}
	if t := strings.TrimSpace(q.Text); t != "" {
		b["should"] = []any{
			map[string]any{"match": map[string]any{"name": t}},
			hasParent(map[string]any{"match": map[string]any{"name": t}}),
		}
		b["minimum_should_match"] = 1
	}
	return map[string]any{"bool": b}
}

// restaurantQuery is the query of the restaurants that serve a matching
// dish.
func (q DishQuery) restaurantQuery() map[string]any {
	filter := append([]any{map[string]any{"term": map[string]any{schema.FieldRelation: schema.RelationRestaurant}}}, q.restaurantFilter()...)
	child := q
	child.Area, child.Cuisines = Area{}, nil // the restaurant's part is asked here
	own, mustNot := child.dishOwnFilter()
	cb := map[string]any{"filter": own}
	if len(mustNot) > 0 {
		cb["must_not"] = mustNot
	}
	if t := strings.TrimSpace(q.Text); t != "" {
		// The dish's name, or the restaurant's: either makes the
		// restaurant one that serves a match.
		named := map[string]any{"filter": own, "must": []any{map[string]any{"match": map[string]any{"name": t}}}}
		if len(mustNot) > 0 {
			named["must_not"] = mustNot
		}
		return map[string]any{"bool": map[string]any{"filter": filter, "minimum_should_match": 1, "should": []any{
			map[string]any{"has_child": map[string]any{"type": schema.RelationDish, "query": map[string]any{"bool": named}}},
			map[string]any{"bool": map[string]any{"filter": []any{
				map[string]any{"match": map[string]any{"name": t}},
				map[string]any{"has_child": map[string]any{"type": schema.RelationDish, "query": map[string]any{"bool": cb}}},
			}}},
		}}}
	}
	filter = append(filter, map[string]any{"has_child": map[string]any{"type": schema.RelationDish, "query": map[string]any{"bool": cb}}})
	return map[string]any{"bool": map[string]any{"filter": filter}}
}

func hasParent(q map[string]any) map[string]any {
	return map[string]any{"has_parent": map[string]any{"parent_type": schema.RelationRestaurant, "query": q}}
}

// distanceSort orders restaurants by distance from the area's centre, or
// by id without an area.
func distanceSort(a Area) []any {
	if a.IsZero() {
		return []any{map[string]any{schema.FieldDocID: "asc"}}
	}
	lat, lng := a.Center()
	return []any{map[string]any{"_geo_distance": map[string]any{
		schema.FieldLocation: map[string]any{"lat": lat, "lon": lng}, "order": "asc", "unit": "m"}},
		map[string]any{schema.FieldDocID: "asc"}}
}

// searchResponse is the part of a search answer read here.
type searchResponse struct {
	Hits struct {
		Total struct {
			Value int64 `json:"value"`
		} `json:"total"`
		Hits []struct {
			ID     string            `json:"_id"`
			Source json.RawMessage   `json:"_source"`
			Sort   []json.RawMessage `json:"sort"`
		} `json:"hits"`
	} `json:"hits"`
	Aggregations map[string]struct {
		Buckets json.RawMessage `json:"buckets"`
	} `json:"aggregations"`
}

// termsCounts reads a terms aggregation's buckets.
func (r *searchResponse) termsCounts(name string) (map[string]int64, error) {
	out := map[string]int64{}
	a, ok := r.Aggregations[name]
	if !ok {
		return out, nil
	}
	var bs []struct {
		Key      json.RawMessage `json:"key"`
		DocCount int64           `json:"doc_count"`
	}
	if err := json.Unmarshal(a.Buckets, &bs); err != nil {
		return nil, fmt.Errorf("aggregation %s: %w", name, err)
	}
	for _, b := range bs {
		var k string
		if json.Unmarshal(b.Key, &k) != nil {
			k = string(b.Key)
		}
		out[k] = b.DocCount
	}
	return out, nil
}

// keyedCounts reads a keyed range aggregation's buckets.
func (r *searchResponse) keyedCounts(name string) (map[string]int64, error) {
	out := map[string]int64{}
	a, ok := r.Aggregations[name]
	if !ok {
		return out, nil
	}
	var bs map[string]struct {
		DocCount int64 `json:"doc_count"`
	}
	if err := json.Unmarshal(a.Buckets, &bs); err != nil {
		return nil, fmt.Errorf("aggregation %s: %w", name, err)
	}
	for k, b := range bs {
		out[k] = b.DocCount
	}
	return out, nil
}

// Dishes runs a dish search.
func (c *Client) Dishes(ctx context.Context, q DishQuery) (*DishResult, error) {
	start := time.Now()
	_, routed, err := c.route(ctx, q.Area, q.AllShards)
	if err != nil {
		return nil, err
	}
	size := q.size()
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
	facetBody, err := json.Marshal(map[string]any{
		"size": 0, "track_total_hits": true, "query": q.dishQuery(),
		"aggs": map[string]any{
			"allergens": map[string]any{"terms": map[string]any{"field": "allergens", "size": facetSize}},
			"diets":     map[string]any{"terms": map[string]any{"field": "diets", "size": facetSize}},
			"price":     map[string]any{"range": map[string]any{"field": "price_cents", "keyed": true, "ranges": ranges}},
		},
	})
	if err != nil {
		return nil, err
	}
	restBody, err := json.Marshal(map[string]any{
		"size": size, "query": q.restaurantQuery(), "sort": distanceSort(q.Area),
		"_source": []string{"name", schema.FieldLocation},
		"aggs":    map[string]any{"cuisines": map[string]any{"terms": map[string]any{"field": "cuisines", "size": facetSize}}},
	})
	if err != nil {
		return nil, err
	}
	var facets, rests searchResponse
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return c.post(gctx, routed, facetBody, &facets) })
	g.Go(func() error { return c.post(gctx, routed, restBody, &rests) })
	if err := g.Wait(); err != nil {
		return nil, fmt.Errorf("search: dishes: %w", err)
	}
	res := &DishResult{Routed: routed, Total: facets.Hits.Total.Value, Dishes: []Dish{}}
	if res.Facets.Allergens, err = facets.termsCounts("allergens"); err != nil {
		return nil, err
	}
	if res.Facets.Diets, err = facets.termsCounts("diets"); err != nil {
		return nil, err
	}
	if res.Facets.PriceBands, err = facets.keyedCounts("price"); err != nil {
		return nil, err
	}
	if res.Facets.Cuisines, err = rests.termsCounts("cuisines"); err != nil {
		return nil, err
	}

	// The dishes of the nearest restaurants, nearest first.
	type place struct {
		name     string
		distance float64
		order    int
	}
	places := map[string]place{}
	var ids []string
	for i, h := range rests.Hits.Hits {
		_, rid, err := schema.ParseID(h.ID)
		if err != nil {
			continue
		}
		var src struct {
			Name string `json:"name"`
		}
		_ = json.Unmarshal(h.Source, &src)
		d := -1.0 // no area: no distance
		if !q.Area.IsZero() && len(h.Sort) > 0 {
			_ = json.Unmarshal(h.Sort[0], &d)
		}
		places[rid] = place{name: src.Name, distance: d, order: i}
		ids = append(ids, rid)
	}
	if len(ids) > 0 {
		own := q
		own.Area, own.Cuisines = Area{}, nil // these restaurants satisfy both
		dq := own.dishQuery()
		if t := strings.TrimSpace(q.Text); t != "" {
			dq = q.dishQuery() // the text may match the restaurant's name
		}
		body, err := json.Marshal(map[string]any{
			"size": maxSize * 4,
			"query": map[string]any{"bool": map[string]any{"filter": []any{
				dq, map[string]any{"terms": map[string]any{schema.FieldRestaurantID: ids}},
			}}},
			"sort":    []any{map[string]any{schema.FieldDocID: "asc"}},
			"_source": []string{"name", schema.FieldRestaurantID, "allergens", "diets", "price_cents"},
		})
		if err != nil {
			return nil, err
		}
		var dishes searchResponse
		if err := c.post(ctx, routed, body, &dishes); err != nil {
			return nil, fmt.Errorf("search: dishes: %w", err)
		}
		for _, h := range dishes.Hits.Hits {
			var src struct {
				Name         string   `json:"name"`
				RestaurantID string   `json:"restaurant_id"`
				Allergens    []string `json:"allergens"`
				Diets        []string `json:"diets"`
				PriceCents   int      `json:"price_cents"`
			}
			if err := json.Unmarshal(h.Source, &src); err != nil {
				return nil, fmt.Errorf("search: dish %s: %w", h.ID, err)
			}
			_, id, _ := schema.ParseID(h.ID)
			p := places[src.RestaurantID]
			res.Dishes = append(res.Dishes, Dish{
				ID: id, Name: src.Name, RestaurantID: src.RestaurantID, Restaurant: p.name, DistanceM: p.distance,
				Allergens: orEmpty(src.Allergens), Diets: orEmpty(src.Diets), PriceCents: src.PriceCents,
			})
		}
		sort.SliceStable(res.Dishes, func(i, j int) bool {
			return places[res.Dishes[i].RestaurantID].order < places[res.Dishes[j].RestaurantID].order
		})
		if len(res.Dishes) > size {
			res.Dishes = res.Dishes[:size]
		}
	}
	res.Took = time.Since(start)
	return res, nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
