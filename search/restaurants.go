package search

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/geoshard/geoshard/schema"
)

// RestaurantQuery is a restaurant search: restaurants in an area, by
// cuisine and name, and — when Serves has a filter — only those that
// serve a dish that passes it (has_child).
type RestaurantQuery struct {
	// Area, Cuisines and Text (on the restaurant's name) as in DishQuery.
	Area     Area
	Cuisines []string
	Text     string
	// Serves, if it sets any filter (its Area, Cuisines and Size are
	// ignored), keeps restaurants with at least one dish that passes it.
	Serves DishQuery
	// Size is the number of restaurants returned, nearest first. Default
	// 20, at most 100.
	Size int
	// AllShards asks every shard even for an area.
	AllShards bool
	// After is the Next of the page before; "" starts at the nearest.
	After string
}

// Restaurant is a restaurant found.
type Restaurant struct {
	ID        string   `json:"id"`
	Name      string   `json:"name"`
	Cuisines  []string `json:"cuisines"`
	Lat       float64  `json:"lat"`
	Lng       float64  `json:"lng"`
	DistanceM float64  `json:"distance_m"` // from the area's centre; -1 without an area
}

// RestaurantResult is what a restaurant search found.
type RestaurantResult struct {
	Routed
	Total       int64        `json:"total"`
	Restaurants []Restaurant `json:"restaurants"`
	// Cuisines counts the matching restaurants by cuisine.
	Cuisines map[string]int64 `json:"cuisines"`
	// Next asks the page after this one (RestaurantQuery.After); "" when
	// this page is the last.
	Next string        `json:"next,omitempty"`
	Took time.Duration `json:"-"`
}

// servesFilter reports whether a dish query filters the dishes at all.
func (q DishQuery) servesFilter() bool {
	return strings.TrimSpace(q.Text) != "" || len(q.AllergenFree) > 0 || len(q.Diets) > 0 || q.MinPriceCents > 0 || q.MaxPriceCents > 0
}

// query is the restaurant query.
func (q RestaurantQuery) query() map[string]any {
	filter := []any{map[string]any{"term": map[string]any{schema.FieldRelation: schema.RelationRestaurant}}}
	if g := q.Area.filter(); g != nil {
		filter = append(filter, g)
	}
	if len(q.Cuisines) > 0 {
		filter = append(filter, map[string]any{"terms": map[string]any{"cuisines": q.Cuisines}})
	}
	if t := strings.TrimSpace(q.Text); t != "" {
		filter = append(filter, map[string]any{"match": map[string]any{"name": t}})
	}
	if q.Serves.servesFilter() {
		d := q.Serves
		d.Area, d.Cuisines = Area{}, nil
		own, mustNot := d.dishOwnFilter()
		b := map[string]any{"filter": own}
		if len(mustNot) > 0 {
			b["must_not"] = mustNot
		}
		if t := strings.TrimSpace(d.Text); t != "" {
			b["must"] = []any{map[string]any{"match": map[string]any{"name": t}}}
		}
		filter = append(filter, map[string]any{"has_child": map[string]any{"type": schema.RelationDish, "query": map[string]any{"bool": b}}})
	}
	return map[string]any{"bool": map[string]any{"filter": filter}}
}

// Restaurants runs a restaurant search.
func (c *Client) Restaurants(ctx context.Context, q RestaurantQuery) (*RestaurantResult, error) {
	start := time.Now()
	var cur cursor
	if q.After != "" {
		var err error
		if cur, err = decodeCursor(q.After, kindRestaurants, digest(kindRestaurants, q.identity())); err != nil {
			return nil, err
		}
	}
	_, routed, err := c.route(ctx, q.Area, q.AllShards)
	if err != nil {
		return nil, err
	}
	size := DishQuery{Size: q.Size}.size()
	// One more than the page says whether any follow.
	body, err := json.Marshal(restaurantsBody(q, size+1, cur.After))
	if err != nil {
		return nil, err
	}
	var resp searchResponse
	if err := c.post(ctx, routed, body, &resp); err != nil {
		return nil, fmt.Errorf("search: restaurants: %w", err)
	}
	res := &RestaurantResult{Routed: routed, Total: resp.Hits.Total.Value, Restaurants: []Restaurant{}}
	if res.Cuisines, err = resp.termsCounts("cuisines"); err != nil {
		return nil, err
	}
	hits := resp.Hits.Hits
	more := len(hits) > size
	if more {
		hits = hits[:size]
	}
	for _, h := range hits {
		_, id, err := schema.ParseID(h.ID)
		if err != nil {
			continue
		}
		var src struct {
			Name     string   `json:"name"`
			Cuisines []string `json:"cuisines"`
			Location struct {
				Lat float64 `json:"lat"`
				Lon float64 `json:"lon"`
			} `json:"location"`
		}
		if err := json.Unmarshal(h.Source, &src); err != nil {
			return nil, fmt.Errorf("search: restaurant %s: %w", h.ID, err)
		}
		d := -1.0
		if !q.Area.IsZero() && len(h.Sort) > 0 {
			_ = json.Unmarshal(h.Sort[0], &d)
		}
		res.Restaurants = append(res.Restaurants, Restaurant{ID: id, Name: src.Name, Cuisines: orEmpty(src.Cuisines),
			Lat: src.Location.Lat, Lng: src.Location.Lon, DistanceM: d})
	}
	if more {
		next := cursor{V: cursorVersion, Kind: kindRestaurants, Query: digest(kindRestaurants, q.identity()), After: hits[size-1].Sort}
		res.Next = next.token()
	}
	res.Took = time.Since(start)
	return res, nil
}
