package testenv

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"

	"github.com/geoshard/geoshard/bulk"
)

// docIDField is schema.FieldDocID, the document's _id as a sortable
// keyword. This package cannot import schema: schema's tests import it.
const docIDField = "doc_id"

// ShardPreference is the search preference that reads only physical
// shard i: _shards:i.
func ShardPreference(i int) string { return "_shards:" + strconv.Itoa(i) }

// ScanDocs calls fn with every document of index that a search with p
// reads (ShardPreference(i) for one shard), in doc_id order, page
// documents a request, paging with search_after. It does not refresh
// the index first.
func ScanDocs(t testing.TB, admin *bulk.Admin, index string, p bulk.SearchParams, page int, fn func(bulk.Hit)) {
	t.Helper()
	ctx := context.Background()
	var after json.RawMessage
	for {
		q := map[string]any{"size": page, "sort": []any{map[string]string{docIDField: "asc"}}}
		if after != nil {
			q["search_after"] = []json.RawMessage{after}
		}
		body, err := json.Marshal(q)
		if err != nil {
			t.Fatal(err)
		}
		pg, err := admin.Search(ctx, index, body, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range pg.Hits {
			fn(h)
		}
		if len(pg.Hits) < page {
			return
		}
		after = pg.Hits[len(pg.Hits)-1].Sort[0]
	}
}

// ShardCounts counts the documents of each of index's n physical
// shards, with ShardPreference(i).
func ShardCounts(t testing.TB, admin *bulk.Admin, index string, n int) []int64 {
	t.Helper()
	out := make([]int64, n)
	for i := range out {
		c, err := admin.Count(context.Background(), index, nil, bulk.SearchParams{Preference: ShardPreference(i)})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = c
	}
	return out
}

// ReadDoc reads the source of document id of index into v; found is
// false, and v untouched, if there is no such document.
func ReadDoc(ctx context.Context, admin *bulk.Admin, index, id string, v any) (found bool, err error) {
	src, _, found, err := admin.Get(ctx, index, id, "")
	if err != nil || !found {
		return false, err
	}
	return true, json.Unmarshal(src, v)
}
