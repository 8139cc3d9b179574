package main

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// seedPlace writes n restaurants, each with one dish, at lat, lng into
// index under m.
func seedPlace(t *testing.T, url, index string, m *router.Map, id string, lat, lng float64, n int) {
	t.Helper()
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	w, _ := bulk.New(client, bulk.Config{OnResult: func(r bulk.Result) {
		if r.Outcome != bulk.OK {
			failed++
		}
	}})
	ctx := context.Background()
	cell, _ := m.Cell(lat, lng)
	s := m.Shard(m.LocateCell(cell))
	for k := range n {
		rid := fmt.Sprintf("%s-%d", id, k)
		did := schema.DishID(rid + "-0")
		for _, it := range []struct{ id, body string }{
			{schema.RestaurantID(rid), fmt.Sprintf(`{"relation":"restaurant","geo_cell":%q,"version":1,"doc_id":%q,"location":{"lat":%g,"lon":%g}}`,
				cell.ToToken(), schema.RestaurantID(rid), lat, lng)},
			{did, fmt.Sprintf(`{"relation":{"name":"dish","parent":%q},"geo_cell":%q,"version":1,"doc_id":%q,"restaurant_id":%q}`,
				schema.RestaurantID(rid), cell.ToToken(), did, rid)},
		} {
			w.Add(ctx, bulk.Item{Action: bulk.Index, Index: index, ID: it.id, Routing: s.Routing, Version: 1, VersionType: bulk.External, Body: []byte(it.body)})
		}
	}
	w.Close(ctx)
	if failed > 0 {
		t.Fatalf("%d seed writes failed", failed)
	}
}

// verdictReport is the verdict of plan --from-index --json.
type verdictReport struct {
	Docs    int64
	Verdict *migrate.Verdict `json:"verdict"`
}

// initMenu creates menu-v1 under m, aliased menu, and fills it with
// restaurants[i] restaurants (and a dish each) at places[i].
func initMenu(t *testing.T, url string, m *router.Map, restaurants []int) int64 {
	t.Helper()
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	admin := bulk.NewAdmin(client)
	ctx := context.Background()
	zero := 0
	if err := migrate.Init(ctx, admin, migrate.InitConfig{Map: m, Index: "menu-v1", Alias: "menu", Replicas: &zero}); err != nil {
		t.Fatal(err)
	}
	var docs int64
	for i, n := range restaurants {
		seedPlace(t, url, "menu-v1", m, places[i].id, places[i].lat, places[i].lng, n)
		docs += 2 * int64(n)
	}
	if err := admin.Refresh(ctx, "menu"); err != nil {
		t.Fatal(err)
	}
	return docs
}

// planVerdict runs plan --from-index menu with args, as JSON and as text.
func planVerdict(t *testing.T, url string, args ...string) (verdictReport, string) {
	t.Helper()
	base := append([]string{"plan", "--from-index", "menu", "--opensearch", url}, args...)
	stdout := mustRun(t, append(base, "--json")...)
	var rep verdictReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("plan --json: %v\n%s", err, stdout)
	}
	if rep.Verdict == nil {
		t.Fatalf("plan --from-index --json has no verdict:\n%s", stdout)
	}
	return rep, mustRun(t, base...)
}

// lastLine is the text's last non-empty line.
func lastLine(text string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return lines[len(lines)-1]
}

// An index whose map was planned on its own documents: the plan is the
// same map, nothing moves, not worth a migration.
func TestPlanVerdictBalanced(t *testing.T) {
	url := openSearch(t)
	restaurants := []int{4, 4, 4, 4, 4, 4, 4, 4}
	per := map[s2.CellID]int64{}
	for i, p := range places {
		per[s2.CellIDFromLatLng(s2.LatLngFromDegrees(p.lat, p.lng)).Parent(10)] += 2 * int64(restaurants[i])
	}
	var cellLoads []router.CellLoad
	for c, n := range per {
		cellLoads = append(cellLoads, router.CellLoad{Cell: c, Docs: n})
	}
	slices.SortFunc(cellLoads, func(a, b router.CellLoad) int { return cmp.Compare(a.Cell, b.Cell) })
	work, err := router.DeriveWorkload(cellLoads, 10, router.DefaultDerivedCentres)
	if err != nil {
		t.Fatal(err)
	}
	cfg := router.PlanConfig{Level: 10, Shards: 4, MinShards: 1, MaxImbalance: 0.5}
	m, err := router.Plan(cellLoads, work, cfg)
	if err != nil {
		t.Fatal(err)
	}
	docs := initMenu(t, url, m, restaurants)
	met, err := router.Evaluate(m, cellLoads, work)
	if err != nil {
		t.Fatal(err)
	}

	rep, text := planVerdict(t, url, "--shards", "4", "--min-shards", "1", "--max-imbalance", "0.5")
	v := rep.Verdict
	if rep.Docs != docs || v.Docs != docs || v.Moved != 0 || v.Worth {
		t.Errorf("verdict = %+v (of %d docs); want %d docs, none moved, not worth", v, rep.Docs, docs)
	}
	if v.Now != v.Proposed || v.Now.Imbalance != met.MaxOverMean || v.Now.Fanout != met.Fanout {
		t.Errorf("verdict figures now %+v, new %+v; want both %v and fan-out %v", v.Now, v.Proposed, met.MaxOverMean, met.Fanout)
	}
	if v.AlertImbalance != 1.5 || v.WorthImbalanceDrop != 0.2 || v.WorthFanoutDrop != 0.1 {
		t.Errorf("verdict thresholds %v, %v, %v; want 1.5, 0.2, 0.1", v.AlertImbalance, v.WorthImbalanceDrop, v.WorthFanoutDrop)
	}
	if !strings.HasPrefix(v.Reason, "not worth a migration: ") || lastLine(text) != v.Reason {
		t.Errorf("text ends %q, JSON reason %q; want the same \"not worth a migration: …\"", lastLine(text), v.Reason)
	}
	for _, want := range []string{
		fmt.Sprintf("max/mean load  %.4f   %.4f", v.Now.Imbalance, v.Proposed.Imbalance),
		fmt.Sprintf("documents whose physical shard changes: 0 of %d (0.0%%)", docs),
		"worth a migration when max/mean is above 1.50 (the GeoshardMapImbalanced alert) and the new map lowers it, or it drops by at least 0.20, or the fan-out drops by at least 0.10",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan --from-index does not say %q:\n%s", want, text)
		}
	}
}

// An index where one geoshard holds most documents: worth a migration.
// Under the three-shard map (from the duplicates test) the places put 12
// documents on ares, 40 on bravo (New York's 24 among them) and none on
// cosmo: max/mean 40/(52/3) = 2.3077. The new map splits them 4, 24, 24:
// 1.3846, and the documents of New York's neighbours move.
func TestPlanVerdictSkewed(t *testing.T) {
	url := openSearch(t)
	_, m := smallMap(t, t.TempDir(), "old.json", "000001", "864a23", "89c25d")
	// 12 restaurants in New York, 2 at each other place, a dish each.
	restaurants := []int{2, 12, 2, 2, 2, 2, 2, 2}
	docs := initMenu(t, url, m, restaurants)
	per := make([]float64, m.NumShards())
	for i, p := range places {
		c, _ := m.Cell(p.lat, p.lng)
		per[m.LocateCell(c)] += 2 * float64(restaurants[i])
	}
	mean := float64(docs) / 3
	wantNow := max(per[0], per[1], per[2]) / mean

	rep, text := planVerdict(t, url, "--shards", "3", "--min-shards", "1", "--max-imbalance", "0.9", "--queries", usQueries)
	v := rep.Verdict
	if v.Docs != docs || math.Abs(v.Now.Imbalance-wantNow) > 1e-12 || v.Now.Imbalance <= 1.5 || v.Proposed.Imbalance >= v.Now.Imbalance || !v.Worth {
		t.Errorf("verdict = %+v; want %d docs, max/mean now %v (per shard %v), lower with the new map, worth it", v, docs, wantNow, per)
	}
	if per[0] != 12 || per[1] != 40 || per[2] != 0 || docs != 52 {
		t.Fatalf("the fixture puts %v documents on the shards (%d in all), want 12, 40, 0", per, docs)
	}
	if math.Abs(v.Now.Imbalance-40/(52.0/3)) > 1e-12 || math.Abs(v.Proposed.Imbalance-24/(52.0/3)) > 1e-12 || v.Moved != 32 {
		t.Errorf("verdict = %+v; want max/mean 2.3077 → 1.3846 and 32 documents moved", v)
	}
	// The held-out searches over the eight places: most ask one shard.
	if round(v.Now.Fanout, 4) != 1.19 || round(v.Proposed.Fanout, 4) != 1.019 {
		t.Errorf("verdict fan-out %v → %v, want 1.1900 → 1.0190", v.Now.Fanout, v.Proposed.Fanout)
	}
	for _, want := range []string{
		"max/mean load  2.3077   1.3846",
		"fan-out (shards per search)  1.1900   1.0190",
		"documents whose physical shard changes: 32 of 52 (61.5%)",
		"worth a migration: max/mean 2.31 is above the alert threshold 1.50 and the new map brings it to 1.38; 32 of 52 documents change shard",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("plan --from-index does not say %q:\n%s", want, text)
		}
	}
	if !strings.HasPrefix(v.Reason, "worth a migration: max/mean ") || !strings.Contains(v.Reason, "above the alert threshold 1.50") || lastLine(text) != v.Reason {
		t.Errorf("text ends %q, JSON reason %q; want \"worth a migration: …above the alert threshold 1.50…\"", lastLine(text), v.Reason)
	}
	if !strings.Contains(text, "workload: "+usQueries) {
		t.Errorf("the verdict does not name its workload:\n%s", text)
	}
}
