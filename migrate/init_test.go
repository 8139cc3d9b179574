package migrate

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

func testMap(t *testing.T, name string) *router.Map {
	t.Helper()
	data, err := os.ReadFile("../testdata/maps/" + name)
	if err != nil {
		t.Fatal(err)
	}
	m, err := router.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testAdmin(t *testing.T) (*bulk.Admin, *osfake.TestServer) {
	t.Helper()
	srv := osfake.NewTestServer(osfake.Options{})
	t.Cleanup(srv.Close)
	c, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	return bulk.NewAdmin(c), srv
}

func TestInitCreatesIndexAndAlias(t *testing.T) {
	a, srv := testAdmin(t)
	ctx := context.Background()
	m := testMap(t, "us-18-rns576.json")
	cfg := InitConfig{Map: m, Index: "menu-v1", Alias: "menu"}
	if err := Init(ctx, a, cfg); err != nil {
		t.Fatal(err)
	}
	got, index, err := schema.LoadMap(ctx, a, "menu")
	if err != nil || index != "menu-v1" || got.Hash() != m.Hash() {
		t.Fatalf("LoadMap(menu) = %v, %q, %v; want the map of menu-v1", got, index, err)
	}
	// Idempotent: again is fine.
	if err := Init(ctx, a, cfg); err != nil {
		t.Errorf("second Init = %v, want nil", err)
	}
	// Every routing key of the map reaches its own shard of the index:
	// the index was created with the map's routing_num_shards.
	client, _ := bulk.NewClient(bulk.ClientConfig{Addresses: []string{srv.URL}})
	w, _ := bulk.New(client, bulk.Config{})
	for i := 0; i < m.NumShards(); i++ {
		w.Add(ctx, bulk.Item{Action: bulk.Index, Index: "menu", ID: "restaurant:" + strconv.Itoa(i), Routing: m.Shard(i).Routing,
			Body: []byte(`{"relation":"restaurant"}`)})
	}
	w.Close(ctx)
	a.Refresh(ctx, "menu")
	for i := 0; i < m.NumShards(); i++ {
		n, err := a.Count(ctx, "menu-v1", nil, bulk.SearchParams{Preference: "_shards:" + strconv.Itoa(i)})
		if err != nil || n != 1 {
			t.Errorf("shard %d holds %d documents (%v), want exactly its own routing key's one", i, n, err)
		}
	}
	// Another map for the same index is refused, naming both hashes.
	other := testMap(t, "us-18.json")
	err = Init(ctx, a, InitConfig{Map: other, Index: "menu-v1", Alias: "menu"})
	if !errors.Is(err, ErrMapMismatch) || !strings.Contains(err.Error(), other.ShortHash()) || !strings.Contains(err.Error(), m.ShortHash()) {
		t.Errorf("Init(other map) = %v, want ErrMapMismatch naming both hashes", err)
	}
	// An alias that points elsewhere is not moved.
	if err := Init(ctx, a, InitConfig{Map: m, Index: "menu-v2", Alias: "menu"}); err == nil || !strings.Contains(err.Error(), `already points to "menu-v1"`) {
		t.Errorf("Init(menu-v2 under menu) = %v, want a refusal", err)
	}
	if err := Init(ctx, a, InitConfig{Map: m, Index: "menu", Alias: "menu"}); err == nil {
		t.Errorf("Init(index == alias) succeeded")
	}
}
