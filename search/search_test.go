package search

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/golang/geo/s2"
	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// fixture is an index of restaurants on rings around San Francisco and
// New York, at distances far from any radius the tests ask (so the
// server's quantised geo points cannot put one on the other side of an
// edge), each with dishes of known allergens, diets and prices.
type fixture struct {
	client *opensearch.Client
	admin  *bulk.Admin
	m      *router.Map
	alias  string
	index  string
	rests  []fRest
	dishes []fDish
}

type fRest struct {
	id, name string
	lat, lng float64
	cuisines []string
}

type fDish struct {
	id, rid, name    string
	allergens, diets []string
	price            int
}

var (
	sfLat, sfLng = 37.7749, -122.4194
	nyLat, nyLng = 40.7128, -74.0060
)

// ringKM are the fixture's distances from each centre; the tests' radii
// (5, 15 and 50 miles: 8.05, 24.1 and 80.5 km) fall between them.
var ringKM = []float64{1, 4, 12, 20, 30, 60, 100}

// newEmptyFixture makes the fixture's index and alias, without documents.
func newEmptyFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{m: testenv.LoadMap(t, testenv.MapUS18), alias: realenv.Unique("menu-search")}
	f.index = f.alias + "-v1"
	// The real node keeps the fixture's indexes only while the test
	// runs: StartCluster deletes them before and after it.
	c := testenv.StartCluster(t, testenv.ClusterOptions{RequestTimeout: testenv.RequestTimeout, Clear: []string{f.alias + "*"}})
	f.client, f.admin = c.Client, c.Admin
	replicas := 0
	ctx := context.Background()
	if err := migrate.Init(ctx, f.admin, migrate.InitConfig{Map: f.m, Index: f.index, Alias: f.alias, Replicas: &replicas}); err != nil {
		t.Fatal(err)
	}
	return f
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := newEmptyFixture(t)
	cuisines := [][]string{{"thai"}, {"italian", "pizza"}, {"mexican"}, {"vegan", "thai"}}
	menu := []struct {
		name             string
		allergens, diets []string
		price            int
	}{
		{"pad thai", []string{"peanut", "egg"}, nil, 1450},
		{"green curry", nil, []string{"vegan", "gluten_free"}, 1650},
		{"margherita pizza", []string{"milk", "wheat"}, []string{"vegetarian"}, 1800},
		{"tiramisu", []string{"milk", "egg", "wheat"}, []string{"vegetarian"}, 900},
		{"carnitas taco", nil, []string{"gluten_free"}, 450},
		{"tasting menu", []string{"fish", "shellfish"}, nil, 8500},
	}
	n := 0
	for ci, c := range []struct {
		name     string
		lat, lng float64
	}{{"sf", sfLat, sfLng}, {"ny", nyLat, nyLng}} {
		for ri, km := range ringKM {
			for k := range 3 {
				bearing := float64(k)*120 + float64(ri)*17
				lat, lng := offset(c.lat, c.lng, km, bearing)
				r := fRest{id: fmt.Sprintf("%s-%d-%d", c.name, ri, k), lat: lat, lng: lng, cuisines: cuisines[n%len(cuisines)]}
				r.name = fmt.Sprintf("%s %s kitchen %d", strings.ToUpper(c.name), r.cuisines[0], n)
				f.rests = append(f.rests, r)
				for j := range 3 {
					d := menu[(n+j+ci)%len(menu)]
					f.dishes = append(f.dishes, fDish{id: fmt.Sprintf("%s-%d", r.id, j), rid: r.id, name: d.name, allergens: d.allergens, diets: d.diets, price: d.price})
				}
				n++
			}
		}
	}
	f.write(t)
	return f
}

// offset moves km along a bearing (degrees from north) on the sphere.
func offset(lat, lng, km, bearing float64) (float64, float64) {
	const r = 6371.0087714
	d := km / r
	b := bearing * math.Pi / 180
	la, lo := lat*math.Pi/180, lng*math.Pi/180
	la2 := math.Asin(math.Sin(la)*math.Cos(d) + math.Cos(la)*math.Sin(d)*math.Cos(b))
	lo2 := lo + math.Atan2(math.Sin(b)*math.Sin(d)*math.Cos(la), math.Cos(d)-math.Sin(la)*math.Sin(la2))
	return la2 * 180 / math.Pi, lo2 * 180 / math.Pi
}

func (f *fixture) write(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var first error
	w, err := bulk.New(f.client, bulk.Config{OnResult: func(r bulk.Result) {
		if r.Outcome != bulk.OK && first == nil {
			first = fmt.Errorf("%s: %v %v", r.Item.ID, r.Outcome, r.Err)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	shardOf := map[string]router.Shard{}
	for _, r := range f.rests {
		cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(r.lat, r.lng)).Parent(f.m.Level())
		sh := f.m.Shard(f.m.LocateCell(cell))
		shardOf[r.id] = sh
		body, _ := json.Marshal(map[string]any{
			schema.FieldRelation: schema.RelationRestaurant, schema.FieldGeoCell: cell.ToToken(), schema.FieldVersion: 1,
			schema.FieldDocID: schema.RestaurantID(r.id), schema.FieldLocation: map[string]any{"lat": r.lat, "lon": r.lng},
			"name": r.name, "cuisines": r.cuisines,
		})
		if err := w.Add(ctx, bulk.Item{Action: bulk.Index, Index: f.index, ID: schema.RestaurantID(r.id), Routing: sh.Routing, Shard: sh.Name, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range f.dishes {
		sh := shardOf[d.rid]
		body, _ := json.Marshal(map[string]any{
			schema.FieldRelation: map[string]any{"name": schema.RelationDish, "parent": schema.RestaurantID(d.rid)},
			schema.FieldVersion:  1, schema.FieldDocID: schema.DishID(d.id), schema.FieldRestaurantID: d.rid,
			"name": d.name, "allergens": d.allergens, "diets": d.diets, "price_cents": d.price,
		})
		if err := w.Add(ctx, bulk.Item{Action: bulk.Index, Index: f.index, ID: schema.DishID(d.id), Routing: sh.Routing, Shard: sh.Name, Body: body}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if first != nil {
		t.Fatal(first)
	}
	if err := f.admin.Refresh(ctx, f.index); err != nil {
		t.Fatal(err)
	}
}

// expect is the model's answer to a dish query: the matching dishes' ids
// and the facet counts.
func (f *fixture) expect(q DishQuery, lat, lng, radiusKM float64) (ids []string, facets Facets) {
	rests := map[string]fRest{}
	for _, r := range f.rests {
		rests[r.id] = r
	}
	facets = Facets{Allergens: map[string]int64{}, Diets: map[string]int64{}, Cuisines: map[string]int64{}, PriceBands: map[string]int64{}}
	serving := map[string]bool{}
	for _, d := range f.dishes {
		r := rests[d.rid]
		if radiusKM > 0 && distKM(lat, lng, r.lat, r.lng) > radiusKM {
			continue
		}
		if len(q.Cuisines) > 0 && !overlaps(r.cuisines, q.Cuisines) {
			continue
		}
		if overlaps(d.allergens, q.AllergenFree) {
			continue
		}
		ok := true
		for _, diet := range q.Diets {
			ok = ok && slices.Contains(d.diets, diet)
		}
		if !ok || q.MinPriceCents > 0 && d.price < q.MinPriceCents || q.MaxPriceCents > 0 && d.price > q.MaxPriceCents {
			continue
		}
		if t := q.Text; t != "" && !strings.Contains(d.name, t) && !strings.Contains(strings.ToLower(r.name), t) {
			continue
		}
		ids = append(ids, d.id)
		for _, a := range d.allergens {
			facets.Allergens[a]++
		}
		for _, x := range d.diets {
			facets.Diets[x]++
		}
		for _, b := range PriceBands {
			if d.price >= b.From && (b.To == 0 || d.price < b.To) {
				facets.PriceBands[b.Key]++
			}
		}
		serving[r.id] = true
	}
	for rid := range serving {
		for _, c := range rests[rid].cuisines {
			facets.Cuisines[c]++
		}
	}
	for _, b := range PriceBands {
		if _, ok := facets.PriceBands[b.Key]; !ok {
			facets.PriceBands[b.Key] = 0
		}
	}
	sort.Strings(ids)
	return ids, facets
}

func distKM(lat1, lng1, lat2, lng2 float64) float64 {
	x1, x2 := lat1*math.Pi/180, lat2*math.Pi/180
	h := (1-math.Cos(x1-x2))/2 + math.Cos(x1)*math.Cos(x2)*(1-math.Cos((lng1-lng2)*math.Pi/180))/2
	return 2 * 6371.0087714 * math.Asin(math.Sqrt(h))
}

func overlaps(a, b []string) bool {
	for _, x := range a {
		if slices.Contains(b, x) {
			return true
		}
	}
	return false
}

// TestDishSearch: each search, routed to the shards that cover its circle,
// finds exactly the model's dishes and facet counts, the same as the
// search of every shard, nearest restaurant first; a small circle asks
// fewer shards than the map has.
func TestDishSearch(t *testing.T) {
	realenv.Parallel(t)
	f := newFixture(t)
	ctx := context.Background()
	c, err := Open(ctx, f.client, Config{Alias: f.alias})
	if err != nil {
		t.Fatal(err)
	}
	const mile = 1.609344
	cases := []struct {
		name     string
		lat, lng float64
		miles    float64
		q        DishQuery
	}{
		{"sf 15 mi", sfLat, sfLng, 15, DishQuery{}},
		{"ny 5 mi", nyLat, nyLng, 5, DishQuery{}},
		{"sf 50 mi peanut-free", sfLat, sfLng, 50, DishQuery{AllergenFree: []string{"peanut"}}},
		{"ny 15 mi vegetarian", nyLat, nyLng, 15, DishQuery{Diets: []string{"vegetarian"}}},
		{"sf 50 mi vegan gluten-free", sfLat, sfLng, 50, DishQuery{Diets: []string{"vegan", "gluten_free"}}},
		{"ny 50 mi thai", nyLat, nyLng, 50, DishQuery{Cuisines: []string{"thai"}}},
		{"sf 15 mi $10-$20", sfLat, sfLng, 15, DishQuery{MinPriceCents: 1000, MaxPriceCents: 2000}},
		{"ny 50 mi text dish name", nyLat, nyLng, 50, DishQuery{Text: "pizza"}},
		{"sf 50 mi text restaurant name", sfLat, sfLng, 50, DishQuery{Text: "mexican"}},
		{"sf 15 mi milk- and egg-free", sfLat, sfLng, 15, DishQuery{AllergenFree: []string{"milk", "egg"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := tc.q
			q.Area, q.Size = Circle(tc.lat, tc.lng, tc.miles*mile*1000), 100
			wantIDs, wantFacets := f.expect(q, tc.lat, tc.lng, tc.miles*mile)
			routed, err := c.Dishes(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			q.AllShards = true
			all, err := c.Dishes(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if !all.AllShards || len(all.Shards) != f.m.NumShards() || routed.AllShards || routed.Routing == "" {
				t.Errorf("routing: routed asked %v (%q), all asked %d shards", routed.Shards, routed.Routing, len(all.Shards))
			}
			if tc.miles <= 15 && len(routed.Shards) >= f.m.NumShards() {
				t.Errorf("a %v-mile search asked %d of %d shards", tc.miles, len(routed.Shards), f.m.NumShards())
			}
			for _, r := range []*DishResult{routed, all} {
				if r.Total != int64(len(wantIDs)) {
					t.Errorf("total %d (all shards %v), want %d", r.Total, r.AllShards, len(wantIDs))
				}
				got := make([]string, len(r.Dishes))
				for i, d := range r.Dishes {
					got[i] = d.ID
				}
				sort.Strings(got)
				if !slices.Equal(got, wantIDs) {
					t.Errorf("dishes (all shards %v) = %v, want %v", r.AllShards, got, wantIDs)
				}
				if !facetsEqual(r.Facets, wantFacets) {
					t.Errorf("facets (all shards %v) = %+v, want %+v", r.AllShards, r.Facets, wantFacets)
				}
				for i := 1; i < len(r.Dishes); i++ {
					if r.Dishes[i].DistanceM < r.Dishes[i-1].DistanceM {
						t.Errorf("dish %d at %.0f m after one at %.0f m: want nearest first", i, r.Dishes[i].DistanceM, r.Dishes[i-1].DistanceM)
						break
					}
				}
				for _, d := range r.Dishes {
					if d.Restaurant == "" || d.DistanceM < 0 || d.DistanceM > tc.miles*mile*1000 {
						t.Errorf("dish %+v: want its restaurant named and a distance within the radius", d)
						break
					}
				}
			}
		})
	}
}

func facetsEqual(a, b Facets) bool {
	eq := func(x, y map[string]int64) bool {
		for k, v := range x {
			if v != 0 && y[k] != v {
				return false
			}
		}
		for k, v := range y {
			if v != 0 && x[k] != v {
				return false
			}
		}
		return true
	}
	return eq(a.Allergens, b.Allergens) && eq(a.Diets, b.Diets) && eq(a.Cuisines, b.Cuisines) && eq(a.PriceBands, b.PriceBands)
}

// A rectangle is routed like a circle; no area asks every shard, and
// says so.
func TestRectangleAndNoArea(t *testing.T) {
	realenv.Parallel(t)
	f := newFixture(t)
	ctx := context.Background()
	c, err := Open(ctx, f.client, Config{Alias: f.alias})
	if err != nil {
		t.Fatal(err)
	}
	// About 30 km on a side around San Francisco: the 1, 4 and 12 km rings.
	rect := Rect(sfLat-0.14, sfLng-0.18, sfLat+0.14, sfLng+0.18)
	r, err := c.Dishes(ctx, DishQuery{Area: rect, Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, d := range f.dishes {
		for _, x := range f.rests {
			if x.id == d.rid && x.lat >= sfLat-0.14 && x.lat <= sfLat+0.14 && x.lng >= sfLng-0.18 && x.lng <= sfLng+0.18 {
				want++
			}
		}
	}
	if r.Total != int64(want) || len(r.Dishes) != want || r.AllShards {
		t.Errorf("rectangle: total %d, %d dishes, all shards %v; want %d routed", r.Total, len(r.Dishes), r.AllShards, want)
	}
	none, err := c.Dishes(ctx, DishQuery{Size: 5})
	if err != nil {
		t.Fatal(err)
	}
	if !none.AllShards || none.Routing != "" || none.Total != int64(len(f.dishes)) || len(none.Dishes) != 5 || none.Dishes[0].DistanceM != -1 {
		t.Errorf("no area: all shards %v, routing %q, total %d, %d dishes; want every shard and all %d dishes", none.AllShards, none.Routing, none.Total, len(none.Dishes), len(f.dishes))
	}
}

// A pinned map that is not the index's is refused naming both hashes; a
// client follows the alias to another index after CheckInterval.
func TestPinnedMapAndAliasChanges(t *testing.T) {
	realenv.Parallel(t)
	f := newFixture(t)
	ctx := context.Background()
	_, err := Open(ctx, f.client, Config{Alias: f.alias, MapHash: strings.Repeat("0", 64)})
	var mm *MapMismatchError
	if !errors.As(err, &mm) || mm.Actual != f.m.Hash() || !strings.Contains(err.Error(), f.m.Hash()) {
		t.Fatalf("Open with another pinned map = %v, want a *MapMismatchError naming %s", err, f.m.Hash())
	}
	now := time.Now()
	c, err := Open(ctx, f.client, Config{Alias: f.alias, MapHash: f.m.Hash(), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if idx, _, _ := c.Index(ctx); idx != f.index {
		t.Fatalf("index %s, want %s", idx, f.index)
	}
	// Another index under the same map, and the alias moved to it.
	other := f.alias + "-v2"
	replicas := 0
	if err := migrate.Init(ctx, f.admin, migrate.InitConfig{Map: f.m, Index: other, Alias: f.alias + "-tmp", Replicas: &replicas}); err != nil {
		t.Fatal(err)
	}
	yes := true
	swap, err := bulk.UpdateAliasesRequest([]bulk.AliasAction{
		{Remove: &bulk.AliasSpec{Index: f.index, Alias: f.alias}},
		{Add: &bulk.AliasSpec{Index: other, Alias: f.alias, IsWriteIndex: &yes}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.admin.Send(ctx, swap, nil); err != nil {
		t.Fatal(err)
	}
	if idx, _, _ := c.Index(ctx); idx != f.index {
		t.Errorf("index %s before CheckInterval, want the one read, %s", idx, f.index)
	}
	now = now.Add(DefaultCheckInterval)
	r, err := c.Dishes(ctx, DishQuery{Area: Circle(sfLat, sfLng, 24000)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Index != other || r.Total != 0 {
		t.Errorf("after the alias moved: searched %s (%d dishes), want the empty %s", r.Index, r.Total, other)
	}
}

// A restaurant search finds the model's restaurants, nearest first; with
// Serves, only those that serve a dish that passes it (has_child).
func TestRestaurantSearch(t *testing.T) {
	realenv.Parallel(t)
	f := newFixture(t)
	ctx := context.Background()
	c, err := Open(ctx, f.client, Config{Alias: f.alias})
	if err != nil {
		t.Fatal(err)
	}
	const radiusKM = 24.14 // 15 miles
	for _, tc := range []struct {
		name string
		q    RestaurantQuery
		keep func(r fRest) bool
	}{
		{"all", RestaurantQuery{}, func(fRest) bool { return true }},
		{"thai", RestaurantQuery{Cuisines: []string{"thai"}}, func(r fRest) bool { return slices.Contains(r.cuisines, "thai") }},
		{"serving vegan", RestaurantQuery{Serves: DishQuery{Diets: []string{"vegan"}}}, func(r fRest) bool {
			for _, d := range f.dishes {
				if d.rid == r.id && slices.Contains(d.diets, "vegan") {
					return true
				}
			}
			return false
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []string
			for _, r := range f.rests {
				if distKM(sfLat, sfLng, r.lat, r.lng) <= radiusKM && tc.keep(r) {
					want = append(want, r.id)
				}
			}
			sort.Strings(want)
			q := tc.q
			q.Area, q.Size = Circle(sfLat, sfLng, radiusKM*1000), 100
			for _, all := range []bool{false, true} {
				q.AllShards = all
				res, err := c.Restaurants(ctx, q)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for i, r := range res.Restaurants {
					got = append(got, r.ID)
					if i > 0 && r.DistanceM < res.Restaurants[i-1].DistanceM {
						t.Errorf("restaurant %d nearer than the one before", i)
					}
				}
				sort.Strings(got)
				if !slices.Equal(got, want) || res.Total != int64(len(want)) || res.AllShards != all {
					t.Errorf("all shards %v: %v (total %d), want %v", all, got, res.Total, want)
				}
			}
		})
	}
}
