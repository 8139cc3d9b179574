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
	// After is the Next of the page before, to continue the listing
	// there; "" starts at the nearest. A token of another search is a
	// *CursorError.
	After string
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

	docID string // the _id, which orders a restaurant's dishes
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
	// Next asks the page after this one (DishQuery.After); "" when this
	// page is the last.
	Next string `json:"next,omitempty"`
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

// Dishes runs a dish search: a page of at most Size dishes, nearest
// restaurant first, and Next to ask the page after it.
func (c *Client) Dishes(ctx context.Context, q DishQuery) (*DishResult, error) {
	start := time.Now()
	var cur cursor
	if q.After != "" {
		var err error
		if cur, err = decodeCursor(q.After, kindDishes, digest(kindDishes, q.identity())); err != nil {
			return nil, err
		}
	}
	_, routed, err := c.route(ctx, q.Area, q.AllShards)
	if err != nil {
		return nil, err
	}
	size := q.size()
	facetBody, err := json.Marshal(facetsBody(q))
	if err != nil {
		return nil, err
	}
	// One restaurant more than a page can need says whether any follow.
	restBody, err := json.Marshal(nearestBody(q, size+1, cur.After))
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
	hits := rests.Hits.Hits
	more := len(hits) > size
	if more {
		hits = hits[:size]
	}
	places := make([]place, 0, len(hits))
	for _, h := range hits {
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
		places = append(places, place{id: rid, docID: h.ID, name: src.Name, distance: d, sort: h.Sort})
	}
	var skip *partial
	if cur.Rest != "" && len(places) > 0 && places[0].docID == cur.Rest {
		skip = &partial{restaurantID: places[0].id, dish: cur.Dish}
	}
	if err := c.dishesOf(ctx, routed, q, places, skip, size); err != nil {
		return nil, err
	}
	dishes, next := page(places, size, cur, more)
	res.Dishes = dishes
	if next != nil {
		next.V, next.Kind, next.Query = cursorVersion, kindDishes, digest(kindDishes, q.identity())
		res.Next = next.token()
	}
	res.Took = time.Since(start)
	return res, nil
}

// place is a restaurant of a dish page, in the order of the listing,
// with its dishes.
type place struct {
	id, docID string // the source id, and the _id
	name      string
	distance  float64
	sort      []json.RawMessage
	// dishes are its matching dishes fetched, by doc_id; count is how
	// many it has (after the page before's).
	dishes []Dish
	count  int64
}

// dishesOf fills the places' dishes: the first size of the listing at
// least, and each place's count.
//
// One request usually does: every matching dish of the places, up to
// 4×size. When they have more, the counts that request brought pick the
// places the page needs (the nearest whose counts add up to size), and
// two more requests fetch exactly the page's dishes: those of all but the
// last of them (fewer than size), and the first of the last's.
func (c *Client) dishesOf(ctx context.Context, routed Routed, q DishQuery, places []place, skip *partial, size int) error {
	if len(places) == 0 {
		return nil
	}
	ids := make([]string, len(places))
	for i, p := range places {
		ids[i] = p.id
	}
	var first searchResponse
	if err := c.fetchDishes(ctx, routed, q, ids, skip, maxSize*4, &first); err != nil {
		return err
	}
	counts, err := first.termsCounts("per_restaurant")
	if err != nil {
		return err
	}
	for i := range places {
		places[i].count = counts[places[i].id]
	}
	if int64(len(first.Hits.Hits)) >= first.Hits.Total.Value {
		return fill(places, &first)
	}
	var n int64
	k := 0
	for k < len(places) && n < int64(size) {
		n += places[k].count
		k++
	}
	last := places[k-1].id
	var before int64
	for _, p := range places[:k-1] {
		before += p.count
	}
	var head, tail searchResponse
	g, gctx := errgroup.WithContext(ctx)
	if k > 1 {
		g.Go(func() error { return c.fetchDishes(gctx, routed, q, ids[:k-1], skip, int(before), &head) })
	}
	g.Go(func() error { return c.fetchDishes(gctx, routed, q, []string{last}, skip, size-int(before), &tail) })
	if err := g.Wait(); err != nil {
		return err
	}
	if err := fill(places, &head); err != nil {
		return err
	}
	return fill(places, &tail)
}

func (c *Client) fetchDishes(ctx context.Context, routed Routed, q DishQuery, ids []string, skip *partial, size int, out *searchResponse) error {
	body, err := json.Marshal(dishesOfBody(q, ids, skip, size))
	if err != nil {
		return err
	}
	if err := c.post(ctx, routed, body, out); err != nil {
		return fmt.Errorf("search: dishes: %w", err)
	}
	return nil
}

// fill adds the dishes of r to their places.
func fill(places []place, r *searchResponse) error {
	at := make(map[string]int, len(places))
	for i, p := range places {
		at[p.id] = i
	}
	for _, h := range r.Hits.Hits {
		var src struct {
			Name         string   `json:"name"`
			RestaurantID string   `json:"restaurant_id"`
			Allergens    []string `json:"allergens"`
			Diets        []string `json:"diets"`
			PriceCents   int      `json:"price_cents"`
		}
		if err := json.Unmarshal(h.Source, &src); err != nil {
			return fmt.Errorf("search: dish %s: %w", h.ID, err)
		}
		i, ok := at[src.RestaurantID]
		if !ok {
			continue
		}
		_, id, _ := schema.ParseID(h.ID)
		p := &places[i]
		p.dishes = append(p.dishes, Dish{
			ID: id, Name: src.Name, RestaurantID: src.RestaurantID, Restaurant: p.name, DistanceM: p.distance,
			Allergens: orEmpty(src.Allergens), Diets: orEmpty(src.Diets), PriceCents: src.PriceCents, docID: h.ID,
		})
	}
	for i := range places {
		d := places[i].dishes
		sort.Slice(d, func(a, b int) bool { return d[a].docID < d[b].docID })
	}
	return nil
}

// page takes the first size dishes of the places, in order, and says
// where the next page starts: a cursor without its kind and digest, or
// none when nothing follows. more is whether restaurants follow the
// places.
func page(places []place, size int, cur cursor, more bool) ([]Dish, *cursor) {
	out := []Dish{}
	after := cur.After // the last restaurant listed in full
	for i, p := range places {
		for j, d := range p.dishes {
			if len(out) == size {
				// The page ends inside p, or before it.
				next := &cursor{After: after}
				if j > 0 {
					next.Rest, next.Dish = p.docID, p.dishes[j-1].docID
				}
				return out, next
			}
			out = append(out, d)
		}
		if int64(len(p.dishes)) < p.count {
			// Fetched in part (the page ends here): resume inside p.
			if len(p.dishes) == 0 {
				return out, &cursor{After: after}
			}
			return out, &cursor{After: after, Rest: p.docID, Dish: p.dishes[len(p.dishes)-1].docID}
		}
		after = p.sort
		if len(out) == size && (i < len(places)-1 || more) {
			return out, &cursor{After: after}
		}
	}
	if more {
		return out, &cursor{After: after}
	}
	return out, nil
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
