package bulk

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/osfake"
)

func TestAdminCalls(t *testing.T) {
	srv := osfake.NewTestServer(osfake.Options{})
	defer srv.Close()
	client, err := NewClient(ClientConfig{Addresses: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	a := NewAdmin(client)
	ctx := context.Background()
	body := []byte(`{"settings":{"number_of_shards":3,"number_of_replicas":0},"mappings":{"_meta":{"owner":"geoshard"},"properties":{"k":{"type":"keyword"}}}}`)
	if err := a.CreateIndex(ctx, "menu-v1", body); err != nil {
		t.Fatal(err)
	}
	err = a.CreateIndex(ctx, "menu-v1", body)
	if ae, ok := err.(*APIError); !ok || ae.Status != 400 || ae.Type != "resource_already_exists_exception" {
		t.Errorf("second CreateIndex = %v, want a 400 resource_already_exists_exception", err)
	}
	if ok, err := a.IndexExists(ctx, "menu-v1"); !ok || err != nil {
		t.Errorf("IndexExists(menu-v1) = %v, %v", ok, err)
	}
	if ok, err := a.IndexExists(ctx, "nope"); ok || err != nil {
		t.Errorf("IndexExists(nope) = %v, %v", ok, err)
	}
	meta, err := a.Meta(ctx, "menu-v1")
	if err != nil || !strings.Contains(string(meta), `"owner":"geoshard"`) {
		t.Errorf("Meta = %s, %v", meta, err)
	}
	yes := true
	if err := a.UpdateAliases(ctx, []AliasAction{{Add: &AliasSpec{Index: "menu-v1", Alias: "menu", IsWriteIndex: &yes}}}); err != nil {
		t.Fatal(err)
	}
	if w, err := a.WriteIndex(ctx, "menu"); w != "menu-v1" || err != nil {
		t.Errorf("WriteIndex(menu) = %q, %v", w, err)
	}
	if w, err := a.WriteIndex(ctx, "menu-v1"); w != "menu-v1" || err != nil {
		t.Errorf("WriteIndex(menu-v1) = %q, %v", w, err)
	}
	if _, err := a.WriteIndex(ctx, "nothing"); err == nil {
		t.Errorf("WriteIndex(nothing) succeeded")
	}
	// Documents through the writer, then counted, searched and fetched.
	w, err := New(client, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []string{"a", "b", "c", "a"} {
		w.Add(ctx, Item{Action: Index, Index: "menu", ID: string(rune('1' + i)), Routing: r, Body: []byte(`{"k":"` + r + `"}`)})
	}
	w.Close(ctx)
	if err := a.Refresh(ctx, "menu"); err != nil {
		t.Fatal(err)
	}
	if n, err := a.Count(ctx, "menu", nil, SearchParams{}); n != 4 || err != nil {
		t.Errorf("Count = %d, %v, want 4", n, err)
	}
	if n, err := a.Count(ctx, "menu", json.RawMessage(`{"term":{"k":"a"}}`), SearchParams{Routing: "a"}); n != 2 || err != nil {
		t.Errorf("Count(k=a, routing a) = %d, %v, want 2", n, err)
	}
	page, err := a.Search(ctx, "menu", []byte(`{"size":10,"sort":[{"k":"asc"}],"query":{"match_all":{}}}`), SearchParams{})
	if err != nil || len(page.Hits) != 4 || page.Total != 4 || page.Hits[0].Routing != "a" || len(page.Hits[0].Sort) != 1 || page.Shards != 3 {
		t.Errorf("Search = %+v, %v", page, err)
	}
	src, v, found, err := a.Get(ctx, "menu", "2", "b")
	if !found || v != 1 || string(src) != `{"k":"b"}` || err != nil {
		t.Errorf("Get(2, b) = %s, %d, %v, %v", src, v, found, err)
	}
	if _, _, found, err := a.Get(ctx, "menu", "2", "a"); found || err != nil {
		t.Errorf("Get(2, wrong routing) = found %v, %v", found, err)
	}
	if err := a.PutSettings(ctx, "menu-v1", map[string]any{"number_of_replicas": 1}); err != nil {
		t.Errorf("PutSettings: %v", err)
	}
	if err := a.Health(ctx, "menu-v1", "green", "1s"); err != nil {
		t.Errorf("Health(green): %v", err)
	}
}
