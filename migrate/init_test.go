package migrate

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/schema"
)

func testAdmin(t *testing.T) (*bulk.Admin, *opensearch.Client) {
	t.Helper()
	c, _ := testCluster(t, osfake.Options{})
	return bulk.NewAdmin(c), c
}

func TestInitCreatesIndexAndAlias(t *testing.T) {
	realenv.Parallel(t)
	a, client := testAdmin(t)
	ctx := context.Background()
	m := testenv.LoadMap(t, testenv.MapUS18RNS576)
	alias := realenv.Unique("menu")
	v1, v2 := alias+"-v1", alias+"-v2"
	cfg := InitConfig{Map: m, Index: v1, Alias: alias}
	if err := Init(ctx, a, cfg); err != nil {
		t.Fatal(err)
	}
	got, index, err := schema.LoadMap(ctx, a, alias)
	if err != nil || index != v1 || got.Hash() != m.Hash() {
		t.Fatalf("LoadMap(%s) = %v, %q, %v; want the map of %s", alias, got, index, err, v1)
	}
	// Idempotent: again is fine.
	if err := Init(ctx, a, cfg); err != nil {
		t.Errorf("second Init = %v, want nil", err)
	}
	// Every routing key of the map reaches its own shard of the index:
	// the index was created with the map's routing_num_shards.
	w, _ := bulk.New(client, bulk.Config{})
	for i := 0; i < m.NumShards(); i++ {
		w.Add(ctx, bulk.Item{Action: bulk.Index, Index: alias, ID: "restaurant:" + strconv.Itoa(i), Routing: m.Shard(i).Routing,
			Body: []byte(`{"relation":"restaurant"}`)})
	}
	w.Close(ctx)
	a.Refresh(ctx, alias)
	for i := 0; i < m.NumShards(); i++ {
		n, err := a.Count(ctx, v1, nil, bulk.SearchParams{Preference: "_shards:" + strconv.Itoa(i)})
		if err != nil || n != 1 {
			t.Errorf("shard %d holds %d documents (%v), want exactly its own routing key's one", i, n, err)
		}
	}
	// Another map for the same index is refused, naming both hashes.
	other := testenv.LoadMap(t, testenv.MapUS18)
	err = Init(ctx, a, InitConfig{Map: other, Index: v1, Alias: alias})
	if !errors.Is(err, ErrMapMismatch) || !strings.Contains(err.Error(), other.ShortHash()) || !strings.Contains(err.Error(), m.ShortHash()) {
		t.Errorf("Init(other map) = %v, want ErrMapMismatch naming both hashes", err)
	}
	// An alias that points elsewhere is not moved.
	if err := Init(ctx, a, InitConfig{Map: m, Index: v2, Alias: alias}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("already points to %q", v1)) {
		t.Errorf("Init(%s under %s) = %v, want a refusal", v2, alias, err)
	}
	if err := Init(ctx, a, InitConfig{Map: m, Index: alias, Alias: alias}); err == nil {
		t.Errorf("Init(index == alias) succeeded")
	}
}
