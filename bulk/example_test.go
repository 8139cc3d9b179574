package bulk_test

import (
	"context"
	"fmt"
	"log"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
)

// A Writer batches items per shard and answers each one. Here against the
// project's OpenSearch emulator: two documents written under external
// versioning, then an older version of one of them (Stale: the newer one
// stays) and a delete of a document that was never there (NotFound) —
// both successes.
func ExampleWriter() {
	srv := osfake.NewTestServer(osfake.Options{})
	defer srv.Close()
	ctx := context.Background()

	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{srv.URL}})
	if err != nil {
		log.Fatal(err)
	}
	admin := bulk.NewAdmin(client)
	if err := admin.CreateIndex(ctx, "menu", []byte(`{"settings":{"number_of_shards":2,"number_of_replicas":0}}`)); err != nil {
		log.Fatal(err)
	}

	w, err := bulk.New(client, bulk.Config{})
	if err != nil {
		log.Fatal(err)
	}
	defer w.Close(ctx)

	doc := func(id string, version int64, body string) bulk.Item {
		return bulk.Item{Action: bulk.Index, Index: "menu", ID: id, Version: version, VersionType: bulk.External, Body: []byte(body)}
	}
	batches := [][]bulk.Item{
		{doc("dish:1", 2, `{"name":"pad thai"}`), doc("dish:2", 1, `{"name":"tiramisu"}`)},
		{doc("dish:1", 1, `{"name":"pad see ew"}`), {Action: bulk.Delete, Index: "menu", ID: "dish:3", Version: 1, VersionType: bulk.External}},
	}
	for _, items := range batches {
		// Do answers its items in their order, once all are answered.
		results, err := w.Do(ctx, items...)
		if err != nil {
			log.Fatal(err)
		}
		for _, r := range results {
			fmt.Printf("%s %s v%d: %s (succeeded %v)\n", r.Item.Action, r.Item.ID, r.Item.Version, r.Outcome, r.Outcome.Succeeded())
		}
	}

	if err := admin.Refresh(ctx, "menu"); err != nil {
		log.Fatal(err)
	}
	n, err := admin.Count(ctx, "menu", nil, bulk.SearchParams{})
	if err != nil {
		log.Fatal(err)
	}
	src, version, _, err := admin.Get(ctx, "menu", "dish:1", "")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d documents; dish:1 is v%d %s\n", n, version, src)
	// Output:
	// index dish:1 v2: ok (succeeded true)
	// index dish:2 v1: ok (succeeded true)
	// index dish:1 v1: stale (succeeded true)
	// delete dish:3 v1: not_found (succeeded true)
	// 2 documents; dish:1 is v2 {"name":"pad thai"}
}
