package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// seed makes an emulator with the menu index under the us-18 map and two
// San Francisco restaurants with a dish each.
func seed(t *testing.T) (url string, m *router.Map) {
	t.Helper()
	srv := osfake.NewTestServer(osfake.Options{})
	t.Cleanup(srv.Close)
	data, err := os.ReadFile("../../testdata/maps/us-18.json")
	if err != nil {
		t.Fatal(err)
	}
	if m, err = router.Parse(data); err != nil {
		t.Fatal(err)
	}
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	admin := bulk.NewAdmin(client)
	ctx := context.Background()
	replicas := 0
	if err := migrate.Init(ctx, admin, migrate.InitConfig{Map: m, Index: "menu-v1", Alias: "menu", Replicas: &replicas}); err != nil {
		t.Fatal(err)
	}
	var items []bulk.Item
	for i, r := range []struct {
		id, name, dish string
		lat, lng       float64
		allergens      []string
	}{
		{"r1", "Mission Thai", "pad thai", 37.76, -122.42, []string{"peanut"}},
		{"r2", "North Beach Pizza", "margherita", 37.80, -122.41, []string{"milk"}},
	} {
		cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(r.lat, r.lng)).Parent(m.Level())
		sh := m.Shard(m.LocateCell(cell))
		rb, _ := json.Marshal(map[string]any{"relation": "restaurant", "geo_cell": cell.ToToken(), "version": 1, "doc_id": schema.RestaurantID(r.id),
			"location": map[string]any{"lat": r.lat, "lon": r.lng}, "name": r.name, "cuisines": []string{"c" + string(rune('a'+i))}})
		db, _ := json.Marshal(map[string]any{"relation": map[string]any{"name": "dish", "parent": schema.RestaurantID(r.id)}, "version": 1,
			"doc_id": schema.DishID(r.id + "-d"), "restaurant_id": r.id, "name": r.dish, "allergens": r.allergens, "price_cents": 1200})
		items = append(items,
			bulk.Item{Action: bulk.Index, Index: "menu-v1", ID: schema.RestaurantID(r.id), Routing: sh.Routing, Shard: sh.Name, Body: rb},
			bulk.Item{Action: bulk.Index, Index: "menu-v1", ID: schema.DishID(r.id + "-d"), Routing: sh.Routing, Shard: sh.Name, Body: db})
	}
	w, err := bulk.New(client, bulk.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := w.Do(ctx, items...)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Outcome != bulk.OK {
			t.Fatalf("%s: %v %v", r.Item.ID, r.Outcome, r.Err)
		}
	}
	w.Close(ctx)
	if err := admin.Refresh(ctx, "menu-v1"); err != nil {
		t.Fatal(err)
	}
	return srv.URL, m
}

func TestSearchJSON(t *testing.T) {
	url, m := seed(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--opensearch", url, "--lat", "37.7749", "--lng", "-122.4194", "--radius", "15mi",
		"--allergen-free", "milk", "--json"}, envOf(nil), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var got struct {
		Shards  []string `json:"shards"`
		Routing string   `json:"routing"`
		Total   int64    `json:"total"`
		Dishes  []struct {
			ID, Name, RestaurantID, Restaurant string
			DistanceM                          float64 `json:"distance_m"`
			Allergens, Diets                   []string
		} `json:"dishes"`
		Facets struct {
			Allergens, Diets, Cuisines map[string]int64
		} `json:"facets"`
		TookMS *int64 `json:"took_ms"`
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if got.Total != 1 || len(got.Dishes) != 1 || got.Dishes[0].Name != "pad thai" || got.Dishes[0].Restaurant != "Mission Thai" ||
		got.Facets.Allergens["peanut"] != 1 || got.TookMS == nil || got.Routing == "" || len(got.Shards) >= m.NumShards() {
		t.Errorf("search --json = %s", out.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"--opensearch", url, "--rect", "37.7,-122.5,37.85,-122.3", "--restaurants"}, envOf(nil), &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "Mission Thai") || !strings.Contains(out.String(), "North Beach Pizza") {
		t.Errorf("search --rect --restaurants: exit %d\n%s%s", code, out.String(), errb.String())
	}
	out.Reset()
	if code := run(context.Background(), []string{"--opensearch", url, "--all-shards", "--query", "pizza"}, envOf(nil), &out, &errb); code != 0 ||
		!strings.Contains(out.String(), "every shard (18)") || !strings.Contains(out.String(), "margherita") {
		t.Errorf("search --all-shards --query pizza: exit %d\n%s%s", code, out.String(), errb.String())
	}
}

func TestBadFlagsExit2(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--lat", "1", "--lng", "2"}, nil, "needs --lat, --lng and --radius"},
		{[]string{"--lat", "1", "--lng", "2", "--radius", "5", "--rect", "1,2,3,4"}, nil, "not both"},
		{[]string{"--lat", "91", "--lng", "2", "--radius", "5mi"}, nil, "--lat 91: out of range: want -90 to 90"},
		{[]string{"--lat", "1", "--lng", "-181", "--radius", "5mi"}, nil, "--lng -181: out of range: want -180 to 180"},
		{[]string{"--lat", "1", "--lng", "2", "--radius", "30000km"}, nil, "--radius 30000km: radius out of range: want more than 0 and at most 20015 km"},
		{[]string{"--lat", "1", "--lng", "2", "--radius", "0mi"}, nil, "--radius 0mi: radius out of range: want more than 0"},
		{[]string{"--lat", "1", "--lng", "2", "--radius", "5"}, nil, "--radius 5: want a number and a unit"},
		{[]string{"--rect", "1,2,3"}, nil, "want south,west,north,east, 4 numbers; got 3"},
		{[]string{"--rect", "1,2,0,4"}, nil, "south 1 is north of north 0"},
		{[]string{"--rect", "95,2,96,4"}, nil, "south 95: out of range: want -90 to 90"},
		{[]string{"--size", "500"}, nil, "--size 500: out of range: want 1 to 100"},
		{nil, map[string]string{"GEOSHARD_SEARCH_SIZE": "0"}, "--size 0: out of range: want 1 to 100"},
		{[]string{"stray"}, nil, `unexpected argument "stray" (search --help lists the flags)`},
		{nil, map[string]string{"GEOSHARD_OPENSEARCH_INSECURE": "maybe"}, `GEOSHARD_OPENSEARCH_INSECURE="maybe"`},
		{[]string{"--map", "/nonexistent.json"}, nil, "--map"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, envOf(tc.env), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) || strings.Count(errb.String(), "\n") != 1 || strings.Count(errb.String(), "search: ") != 1 {
			t.Errorf("search %v: exit %d, %q; want 2 and one line with %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
