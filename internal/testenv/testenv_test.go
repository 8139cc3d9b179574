package testenv_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/schema"
)

func TestPathsFromAnyWorkingDirectory(t *testing.T) {
	root := testenv.Root(t)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("Root = %s: %v", root, err)
	}
	t.Chdir(t.TempDir())
	for _, tc := range []struct {
		name, rel string
		shards    int
	}{
		{"us-18", testenv.MapUS18, 18},
		{"us-18 other routing", testenv.MapUS18RNS576, 18},
		{"us-24", testenv.MapUS24, 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if m := testenv.LoadMap(t, tc.rel); m.NumShards() != tc.shards {
				t.Errorf("LoadMap(%s) has %d shards, want %d", tc.rel, m.NumShards(), tc.shards)
			}
		})
	}
	if _, err := os.Stat(testenv.Path(t, testenv.LoadsUS)); err != nil {
		t.Errorf("Path(%s): %v", testenv.LoadsUS, err)
	}
}

// The scan sorts on the field schema names; testenv cannot import schema.
func TestScanSortsOnTheDocIDField(t *testing.T) {
	if schema.FieldDocID != "doc_id" {
		t.Fatalf("schema.FieldDocID = %q: update testenv's docIDField", schema.FieldDocID)
	}
}

func TestScanDocsAndShardCounts(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{RequestTimeout: testenv.RequestTimeout})
	ctx := context.Background()
	const index, shards, docs = "menu-testenv", 3, 25
	body := fmt.Appendf(nil, `{"settings":{"number_of_shards":%d},"mappings":{"properties":{"doc_id":{"type":"keyword"}}}}`, shards)
	if err := c.Admin.CreateIndex(ctx, index, body); err != nil {
		t.Fatal(err)
	}
	for i := range docs {
		id := fmt.Sprintf("d%02d", i)
		if _, err := c.Admin.IndexDoc(ctx, index, id, fmt.Appendf(nil, `{"doc_id":%q}`, id), bulk.DocOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Admin.Refresh(ctx, index); err != nil {
		t.Fatal(err)
	}
	var ids []string
	testenv.ScanDocs(t, c.Admin, index, bulk.SearchParams{}, 4, func(h bulk.Hit) { ids = append(ids, h.ID) })
	var want []string
	for i := range docs {
		want = append(want, fmt.Sprintf("d%02d", i))
	}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("ScanDocs read %v, want %v in doc_id order", ids, want)
	}
	counts := testenv.ShardCounts(t, c.Admin, index, shards)
	perShard := 0
	for i := range shards {
		n := 0
		testenv.ScanDocs(t, c.Admin, index, bulk.SearchParams{Preference: testenv.ShardPreference(i)}, 4, func(bulk.Hit) { n++ })
		if int64(n) != counts[i] {
			t.Errorf("shard %d: ScanDocs read %d documents, ShardCounts says %d", i, n, counts[i])
		}
		perShard += n
	}
	if perShard != docs {
		t.Errorf("shards hold %d documents in all (%v), want %d", perShard, counts, docs)
	}
	var got struct {
		DocID string `json:"doc_id"`
	}
	if found, err := testenv.ReadDoc(ctx, c.Admin, index, "d07", &got); err != nil || !found || got.DocID != "d07" {
		t.Errorf("ReadDoc(d07) = %v, %v, %+v; want found d07", found, err, got)
	}
	if found, err := testenv.ReadDoc(ctx, c.Admin, index, "nope", &got); err != nil || found {
		t.Errorf("ReadDoc(nope) = %v, %v; want not found", found, err)
	}
}

// The cluster's client is given every node: the emulator's one, or each
// real node realenv names, all of them members of one cluster.
func TestStartClusterNamesEveryNode(t *testing.T) {
	c := testenv.StartCluster(t, testenv.ClusterOptions{RequestTimeout: testenv.RequestTimeout})
	want := []string{c.URL}
	if realenv.Enabled() {
		want = realenv.OpenSearchURLs()
	}
	if !reflect.DeepEqual(c.URLs, want) || c.URL != c.URLs[0] {
		t.Errorf("URL, URLs = %s, %v; want %s first of %v", c.URL, c.URLs, want[0], want)
	}
	var health struct {
		Nodes int `json:"number_of_nodes"`
	}
	if err := c.Admin.Send(context.Background(), bulk.Request{Method: http.MethodGet, Path: "/_cluster/health"}, &health); err != nil {
		t.Fatal(err)
	}
	if health.Nodes < len(c.URLs) {
		t.Errorf("the cluster has %d nodes, fewer than the %d addresses given", health.Nodes, len(c.URLs))
	}
}

func TestSortedKeys(t *testing.T) {
	if got := testenv.SortedKeys(map[string]int{"b": 1, "c": 2, "a": 3}); !reflect.DeepEqual(got, []string{"a", "b", "c"}) {
		t.Errorf("SortedKeys = %v, want [a b c]", got)
	}
}
