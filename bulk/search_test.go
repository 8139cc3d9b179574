package bulk

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
)

func TestCountAndSearch(t *testing.T) {
	realenv.Parallel(t)
	e := newAdminEnv(t)
	a := e.a
	ctx := context.Background()
	v1, alias := e.menu(t)
	if n, err := a.Count(ctx, alias, nil, SearchParams{}); n != 4 || err != nil {
		t.Errorf("Count = %d, %v, want 4", n, err)
	}
	if n, err := a.Count(ctx, alias, json.RawMessage(`{"term":{"k":"a"}}`), SearchParams{Routing: "a"}); n != 2 || err != nil {
		t.Errorf("Count(k=a, routing a) = %d, %v, want 2", n, err)
	}
	page, err := a.Search(ctx, alias, []byte(`{"size":10,"sort":[{"k":"asc"}],"query":{"match_all":{}}}`), SearchParams{})
	if err != nil || len(page.Hits) != 4 || page.Total != 4 || page.Hits[0].Routing != "a" || page.Hits[0].Index != v1 || len(page.Hits[0].Sort) != 1 || page.Shards != 3 {
		t.Errorf("Search = %+v, %v", page, err)
	}
}

func TestComposite(t *testing.T) {
	realenv.Parallel(t)
	e := newAdminEnv(t)
	a := e.a
	ctx := context.Background()
	v1 := e.index(t, "menu-v1")
	if err := a.CreateIndex(ctx, v1, []byte(`{"settings":{"number_of_shards":2},"mappings":{"properties":{"k":{"type":"keyword"}}}}`)); err != nil {
		t.Fatal(err)
	}
	w, err := New(e.client, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, k := range []string{"a", "b", "b", "c", "c", "c"} {
		w.Add(ctx, Item{Index: v1, ID: string(rune('0' + i)), Body: []byte(`{"k":"` + k + `"}`)})
	}
	w.Close(ctx)
	if err := a.Refresh(ctx, v1); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var after json.RawMessage
	pages := 0
	for {
		comp := `{"size":2,"sources":[{"k":{"terms":{"field":"k"}}}]`
		if after != nil {
			comp += `,"after":` + string(after)
		}
		pg, err := a.Composite(ctx, v1, "ks", []byte(`{"size":0,"aggs":{"ks":{"composite":`+comp+`}}}}`), SearchParams{})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, b := range pg.Buckets {
			got[strings.Trim(string(b.Key["k"]), `"`)] = b.DocCount
		}
		if len(pg.Buckets) < 2 {
			break
		}
		after = pg.AfterKey
	}
	if !reflect.DeepEqual(got, map[string]int64{"a": 1, "b": 2, "c": 3}) || pages != 2 {
		t.Errorf("Composite pages: %v in %d pages", got, pages)
	}
	if _, err := a.Composite(ctx, v1, "other", []byte(`{"size":0,"aggs":{"ks":{"composite":{"sources":[{"k":{"terms":{"field":"k"}}}]}}}}`), SearchParams{}); err == nil {
		t.Error("Composite of an aggregation the body does not hold succeeded")
	}
}
