package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
)

// newPagingFixture is restaurants in groups of three at one point each
// (so their distances tie exactly), the groups at distances from the
// San Francisco centre far apart, each restaurant with its own number of
// dishes; one restaurant has more dishes than a page's first fetch
// reads (4×100), so that the exact fetch is taken too.
func newPagingFixture(t *testing.T, big int) *fixture {
	t.Helper()
	f := newEmptyFixture(t)
	for gi, km := range []float64{0.5, 3, 9, 18} {
		lat, lng := offset(sfLat, sfLng, km, float64(gi)*70)
		for k := range 3 {
			// Ids not in distance order, so that the tiebreak shows.
			r := fRest{id: fmt.Sprintf("p%d-%c", gi, 'c'-k), lat: lat, lng: lng, cuisines: []string{"thai"}}
			r.name = "paging " + r.id
			f.rests = append(f.rests, r)
			n := 1 + (gi*3+k)%5
			if gi == 1 && k == 1 {
				n = big
			}
			for j := range n {
				d := fDish{id: fmt.Sprintf("%s-%03d", r.id, j), rid: r.id, name: "noodles", price: 1000 + j}
				if j%2 == 0 {
					d.diets = []string{"vegan"}
				}
				f.dishes = append(f.dishes, d)
			}
		}
	}
	f.write(t)
	return f
}

// listing is the model's nearest-first order of the dishes a keep
// function passes: by restaurant distance, then restaurant id, then dish
// id.
func (f *fixture) listing(keep func(fDish) bool) []string {
	rests := map[string]fRest{}
	for _, r := range f.rests {
		rests[r.id] = r
	}
	var ds []fDish
	for _, d := range f.dishes {
		if keep(d) {
			ds = append(ds, d)
		}
	}
	sort.Slice(ds, func(i, j int) bool {
		a, b := rests[ds[i].rid], rests[ds[j].rid]
		da, db := distKM(sfLat, sfLng, a.lat, a.lng), distKM(sfLat, sfLng, b.lat, b.lng)
		switch {
		case da != db:
			return da < db
		case a.id != b.id:
			return a.id < b.id
		}
		return ds[i].id < ds[j].id
	})
	ids := make([]string, len(ds))
	for i, d := range ds {
		ids[i] = d.id
	}
	return ids
}

// pageAll follows Next from the first page to the last.
func pageAll(t *testing.T, c *Client, q DishQuery) (ids []string, pages int) {
	t.Helper()
	ctx := context.Background()
	for {
		res, err := c.Dishes(ctx, q)
		if err != nil {
			t.Fatalf("page %d: %v", pages+1, err)
		}
		pages++
		if len(res.Dishes) > q.size() {
			t.Fatalf("page %d: %d dishes, more than the size %d", pages, len(res.Dishes), q.size())
		}
		for _, d := range res.Dishes {
			ids = append(ids, d.ID)
		}
		if res.Next == "" {
			return ids, pages
		}
		if len(res.Dishes) < q.size() {
			t.Fatalf("page %d: %d dishes, fewer than the size %d, yet a next page", pages, len(res.Dishes), q.size())
		}
		if pages > 1000 {
			t.Fatal("more than 1000 pages")
		}
		q.After = res.Next
	}
}

// TestDishPagesConcatenate: paging through the dishes in pages of any
// size gives the one nearest-first listing, every dish once, ties at
// equal distance included, whether a page ends between restaurants or
// inside one, and a first page of 100 is its first 100.
func TestDishPagesConcatenate(t *testing.T) {
	realenv.Parallel(t)
	f := newPagingFixture(t, 405)
	ctx := context.Background()
	c, err := Open(ctx, f.client, Config{Alias: f.alias})
	if err != nil {
		t.Fatal(err)
	}
	area := Circle(sfLat, sfLng, 30_000)
	all := f.listing(func(fDish) bool { return true })
	vegan := f.listing(func(d fDish) bool { return slices.Contains(d.diets, "vegan") })
	for _, tc := range []struct {
		name string
		q    DishQuery
		want []string
	}{
		{"size 100", DishQuery{Area: area, Size: 100}, all},
		{"size 7", DishQuery{Area: area, Size: 7}, all},
		{"size 2 vegan", DishQuery{Area: area, Size: 2, Diets: []string{"vegan"}}, vegan},
		{"size 1 vegan text", DishQuery{Area: area, Size: 1, Diets: []string{"vegan"}, Text: "noodles"}, vegan},
		{"size 3 no area", DishQuery{Size: 3, Cuisines: []string{"thai"}, MaxPriceCents: 1003}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := tc.want
			if tc.q.Area.IsZero() {
				// Without an area, restaurants come by doc_id.
				var ds []fDish
				for _, d := range f.dishes {
					if d.price <= 1003 {
						ds = append(ds, d)
					}
				}
				sort.Slice(ds, func(i, j int) bool {
					if ds[i].rid != ds[j].rid {
						return ds[i].rid < ds[j].rid
					}
					return ds[i].id < ds[j].id
				})
				for _, d := range ds {
					want = append(want, d.id)
				}
			}
			got, pages := pageAll(t, c, tc.q)
			if !slices.Equal(got, want) {
				t.Errorf("%d pages: %d dishes\n%v\nwant %d\n%v", pages, len(got), got, len(want), want)
			}
			if n := (len(want) + tc.q.size() - 1) / tc.q.size(); pages != n {
				t.Errorf("%d pages of %d for %d dishes, want %d: the last page has no next token", pages, tc.q.size(), len(want), n)
			}
		})
	}
	first, err := c.Dishes(ctx, DishQuery{Area: area, Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range first.Dishes {
		ids = append(ids, d.ID)
	}
	if !slices.Equal(ids, all[:100]) || first.Total != int64(len(all)) || first.Next == "" {
		t.Errorf("first page of 100: %v (total %d, next %q), want %v", ids, first.Total, first.Next, all[:100])
	}
}

// TestRestaurantPagesConcatenate: restaurant pages follow one another
// nearest first with ties by id, each restaurant once.
func TestRestaurantPagesConcatenate(t *testing.T) {
	realenv.Parallel(t)
	f := newPagingFixture(t, 3)
	ctx := context.Background()
	c, err := Open(ctx, f.client, Config{Alias: f.alias})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	rests := slices.Clone(f.rests)
	sort.Slice(rests, func(i, j int) bool {
		a, b := rests[i], rests[j]
		if da, db := distKM(sfLat, sfLng, a.lat, a.lng), distKM(sfLat, sfLng, b.lat, b.lng); da != db {
			return da < db
		}
		return a.id < b.id
	})
	for _, r := range rests {
		want = append(want, r.id)
	}
	for _, size := range []int{1, 2, 5, 100} {
		q := RestaurantQuery{Area: Circle(sfLat, sfLng, 30_000), Size: size}
		var got []string
		for pages := 0; ; pages++ {
			if pages > 100 {
				t.Fatal("more than 100 pages")
			}
			res, err := c.Restaurants(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range res.Restaurants {
				got = append(got, r.ID)
			}
			if res.Next == "" {
				break
			}
			if len(res.Restaurants) != size {
				t.Fatalf("size %d: a page of %d before the last", size, len(res.Restaurants))
			}
			q.After = res.Next
		}
		if !slices.Equal(got, want) {
			t.Errorf("size %d: %v, want %v", size, got, want)
		}
	}
}

// TestCursorRefused: a token is refused, before anything is asked,
// when it is not one, when it is a restaurant search's given to a dish
// search, and when its area, text or filters differ; the same filters
// in another order, another size, or all shards are the same search.
func TestCursorRefused(t *testing.T) {
	realenv.Parallel(t)
	f := newPagingFixture(t, 3)
	ctx := context.Background()
	c, err := Open(ctx, f.client, Config{Alias: f.alias})
	if err != nil {
		t.Fatal(err)
	}
	area := Circle(sfLat, sfLng, 30_000)
	q := DishQuery{Area: area, Size: 2, Diets: []string{"vegan", "halal"}, AllergenFree: []string{"milk"}}
	res, err := c.Dishes(ctx, DishQuery{Area: area, Size: 2, Diets: []string{"vegan"}})
	if err != nil {
		t.Fatal(err)
	}
	rres, err := c.Restaurants(ctx, RestaurantQuery{Area: area, Size: 2})
	if err != nil || res.Next == "" || rres.Next == "" {
		t.Fatalf("first pages: %v, next %q and %q", err, res.Next, rres.Next)
	}
	q.Diets = []string{"vegan"}
	q.AllergenFree = nil
	for _, tc := range []struct {
		name  string
		after string
		edit  func(q *DishQuery)
		ok    bool
	}{
		{"same", res.Next, func(*DishQuery) {}, true},
		{"other size, all shards", res.Next, func(q *DishQuery) { q.Size, q.AllShards = 5, true }, true},
		{"other diet", res.Next, func(q *DishQuery) { q.Diets = []string{"halal"} }, false},
		{"more filters", res.Next, func(q *DishQuery) { q.AllergenFree = []string{"milk"} }, false},
		{"other radius", res.Next, func(q *DishQuery) { q.Area = Circle(sfLat, sfLng, 20_000) }, false},
		{"text", res.Next, func(q *DishQuery) { q.Text = "noodles" }, false},
		{"restaurants' token", rres.Next, func(*DishQuery) {}, false},
		{"garbage", "not-a-token", func(*DishQuery) {}, false},
		{"truncated", res.Next[:len(res.Next)/2], func(*DishQuery) {}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := q
			tc.edit(&q)
			q.After = tc.after
			_, err := c.Dishes(ctx, q)
			var ce *CursorError
			if tc.ok && err != nil || !tc.ok && !errors.As(err, &ce) {
				t.Errorf("Dishes(after %q) = %v, want ok %v or a *CursorError", tc.after, err, tc.ok)
			}
		})
	}
	// Filters are sets: the same ones in another order are one search.
	q2 := DishQuery{Area: area, Size: 2, Diets: []string{"vegan", "halal"}}
	q3 := DishQuery{Area: area, Size: 2, Diets: []string{"halal", "vegan", "vegan"}}
	if digest(kindDishes, q2.identity()) != digest(kindDishes, q3.identity()) {
		t.Error("the same diets in another order make another search")
	}
}

// TestCursorTokenRoundTrip: a token reads back as it was written.
func TestCursorTokenRoundTrip(t *testing.T) {
	c := cursor{V: cursorVersion, Kind: kindDishes, Query: "abc", After: []json.RawMessage{json.RawMessage(`1234.5678901234567`), json.RawMessage(`"restaurant:p1-b"`)},
		Rest: "restaurant:p2-c", Dish: "dish:p2-c-004"}
	got, err := decodeCursor(c.token(), kindDishes, "abc")
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != c.Kind || got.Rest != c.Rest || got.Dish != c.Dish || len(got.After) != 2 ||
		string(got.After[0]) != "1234.5678901234567" || string(got.After[1]) != `"restaurant:p1-b"` {
		t.Errorf("decodeCursor(token()) = %+v, want %+v", got, c)
	}
}

// FuzzDecodeCursor: any text is a cursor or a *CursorError, never a
// panic, and a cursor read back writes the same token.
func FuzzDecodeCursor(f *testing.F) {
	f.Add(cursor{V: cursorVersion, Kind: kindDishes, Query: "q", After: []json.RawMessage{json.RawMessage(`12.5`), json.RawMessage(`"restaurant:a"`)}}.token())
	f.Add(cursor{V: cursorVersion, Kind: kindDishes, Query: "q", Rest: "restaurant:a", Dish: "dish:b"}.token())
	f.Add("")
	f.Add("eyJ2IjoxfQ")
	f.Fuzz(func(t *testing.T, token string) {
		c, err := decodeCursor(token, kindDishes, "q")
		var ce *CursorError
		if err != nil {
			if !errors.As(err, &ce) {
				t.Fatalf("decodeCursor(%q) = %v, not a *CursorError", token, err)
			}
			return
		}
		if _, err := decodeCursor(c.token(), kindDishes, "q"); err != nil {
			t.Fatalf("decodeCursor(%q) read back: %v", c.token(), err)
		}
	})
}
