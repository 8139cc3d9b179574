package bulk

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/opensearch-project/opensearch-go/v4"
)

// adminEnv is what the admin tests talk to: a fresh emulator, or under
// -tags realcluster the real node, where every index a test names gets a
// prefix unique to the run and is deleted when the test ends.
type adminEnv struct {
	client *opensearch.Client
	a      *Admin
	prefix string
}

func newAdminEnv(t *testing.T) *adminEnv {
	t.Helper()
	url := realenv.OpenSearchURL()
	if !realenv.Enabled() {
		srv := osfake.NewTestServer(osfake.Options{})
		t.Cleanup(srv.Close)
		url = srv.URL
	}
	client, err := NewClient(ClientConfig{Addresses: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	return &adminEnv{client: client, a: NewAdmin(client), prefix: realenv.Unique("bulk-admin") + "-"}
}

// index is the name of an index the test creates (or means to be
// missing); on the real node it is deleted when the test ends.
func (e *adminEnv) index(t *testing.T, base string) string {
	name := e.prefix + base
	if realenv.Enabled() {
		t.Cleanup(func() {
			if err := e.a.DeleteIndex(context.Background(), name); err != nil && !IsNotFound(err) {
				t.Errorf("delete %s: %v", name, err)
			}
		})
	}
	return name
}

// alias is the name of an alias; it goes with its indices.
func (e *adminEnv) alias(base string) string { return e.prefix + base }

func TestAdminCalls(t *testing.T) {
	realenv.Parallel(t)
	e := newAdminEnv(t)
	a, client := e.a, e.client
	ctx := context.Background()
	v1, alias, nope, nothing := e.index(t, "menu-v1"), e.alias("menu"), e.index(t, "nope"), e.index(t, "nothing")
	body := []byte(`{"settings":{"number_of_shards":3,"number_of_replicas":0},"mappings":{"_meta":{"owner":"geoshard"},"properties":{"k":{"type":"keyword"}}}}`)
	if err := a.CreateIndex(ctx, v1, body); err != nil {
		t.Fatal(err)
	}
	err := a.CreateIndex(ctx, v1, body)
	if ae, ok := err.(*APIError); !ok || ae.Status != 400 || ae.Type != "resource_already_exists_exception" {
		t.Errorf("second CreateIndex = %v, want a 400 resource_already_exists_exception", err)
	}
	if ok, err := a.IndexExists(ctx, v1); !ok || err != nil {
		t.Errorf("IndexExists(%s) = %v, %v", v1, ok, err)
	}
	if ok, err := a.IndexExists(ctx, nope); ok || err != nil {
		t.Errorf("IndexExists(%s) = %v, %v", nope, ok, err)
	}
	meta, err := a.Meta(ctx, v1)
	if err != nil || !strings.Contains(string(meta), `"owner":"geoshard"`) {
		t.Errorf("Meta = %s, %v", meta, err)
	}
	yes := true
	if err := a.UpdateAliases(ctx, []AliasAction{{Add: &AliasSpec{Index: v1, Alias: alias, IsWriteIndex: &yes}}}); err != nil {
		t.Fatal(err)
	}
	if w, err := a.WriteIndex(ctx, alias); w != v1 || err != nil {
		t.Errorf("WriteIndex(%s) = %q, %v", alias, w, err)
	}
	if w, err := a.WriteIndex(ctx, v1); w != v1 || err != nil {
		t.Errorf("WriteIndex(%s) = %q, %v", v1, w, err)
	}
	if _, err := a.WriteIndex(ctx, nothing); err == nil {
		t.Errorf("WriteIndex(%s) succeeded", nothing)
	}
	// Documents through the writer, then counted, searched and fetched.
	w, err := New(client, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []string{"a", "b", "c", "a"} {
		w.Add(ctx, Item{Action: Index, Index: alias, ID: string(rune('1' + i)), Routing: r, Body: []byte(`{"k":"` + r + `"}`)})
	}
	w.Close(ctx)
	if st := w.Stats(); st.OK != 4 {
		t.Fatalf("writer: %+v, want 4 ok", st)
	}
	if err := a.Refresh(ctx, alias); err != nil {
		t.Fatal(err)
	}
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
	src, v, found, err := a.Get(ctx, alias, "2", "b")
	if !found || v != 1 || string(src) != `{"k":"b"}` || err != nil {
		t.Errorf("Get(2, b) = %s, %d, %v, %v", src, v, found, err)
	}
	// Routing a and b go to different shards of three, so the document
	// is not where routing a points.
	if _, _, found, err := a.Get(ctx, alias, "2", "a"); found || err != nil {
		t.Errorf("Get(2, wrong routing) = found %v, %v", found, err)
	}
	// One replica is assigned only where there is a second data node:
	// the emulator pretends to have three, the local real node is alone,
	// and there the wait for green times out (408).
	var cluster struct {
		DataNodes int `json:"number_of_data_nodes"`
	}
	if err := a.Send(ctx, Request{Method: http.MethodGet, Path: "/_cluster/health"}, &cluster); err != nil || cluster.DataNodes < 1 {
		t.Fatalf("cluster health = %+v, %v", cluster, err)
	}
	if err := a.PutSettings(ctx, v1, map[string]any{"number_of_replicas": 1}); err != nil {
		t.Errorf("PutSettings: %v", err)
	}
	if err := a.Health(ctx, v1, "yellow", "5s"); err != nil {
		t.Errorf("Health(yellow): %v", err)
	}
	err = a.Health(ctx, v1, "green", "1s")
	switch {
	case cluster.DataNodes > 1 && err != nil:
		t.Errorf("Health(green) with %d data nodes: %v", cluster.DataNodes, err)
	case cluster.DataNodes == 1 && (err == nil || !strings.Contains(err.Error(), "did not reach green within 1s")):
		t.Errorf("Health(green) with one data node and a replica = %v, want it to say green was not reached", err)
	}
}
