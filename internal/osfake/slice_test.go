package osfake

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// sliceIDs are _ids of every encoding the server's _id term has: digits,
// URL-safe base64 and anything else as UTF-8.
var sliceIDs = []string{"1", "22", "333", "4444", "55555", "0", "9876543210", "r00001", "r00002", "r00003", "r00004",
	"r00005", "r00006", "r00007", "r00008", "AbCd", "Zm9vYg", "Zm9vYmE", "_-_-", "____", "---A", "/0", "é"}

// TestPITSliceMembership pins which documents each slice of a point in
// time reads, as a real node splits them: per index, whole shards by
// position, and the documents of a shard that several slices share by a
// hash of their encoded _id. Every shard is asked, in or out of the
// slice, so _shards.total is the point in time's shard count, and none
// is skipped.
func TestPITSliceMembership(t *testing.T) {
	tg := newTarget(t)
	one, two := tg.name("slice-one"), tg.name("slice-two")
	for name, shards := range map[string]string{one: "1", two: "2"} {
		tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":`+shards+`,"number_of_replicas":0}}`)
		var docs []seedDoc
		for _, id := range sliceIDs {
			docs = append(docs, seedDoc{id: id, source: `{}`})
		}
		seed(tg, name, "true", docs...)
	}
	pit := func(indices ...string) string {
		resp, err := tg.client.PointInTime.Create(context.Background(), opensearchapi.PointInTimeCreateReq{Indices: indices,
			Params: opensearchapi.PointInTimeCreateParams{KeepAlive: time.Minute}})
		if err != nil {
			t.Fatalf("create PIT on %v: %v", indices, err)
		}
		return resp.PitID
	}
	pits := map[string]string{one: pit(one), two: pit(two), "both": pit(one, two)}
	cases := []struct {
		pit     string
		id, max int
		shards  string
		want    string // index:id, sorted
	}{
		{one, 0, 2, "1", "one:333 one:4444 one:55555 one:9876543210 one:AbCd one:r00002 one:r00005 one:é"},
		{one, 1, 3, "1", "one:---A one:/0 one:1 one:Zm9vYg"},
		{one, 0, 5, "1", "one:---A one:333 one:Zm9vYmE"},
		{one, 4, 5, "1", "one:Zm9vYg one:_-_- one:r00006 one:é"},
		{two, 1, 2, "2", "two:---A two:/0 two:0 two:4444 two:55555 two:9876543210 two:AbCd two:Zm9vYg two:_-_- two:____"},
		{two, 0, 3, "2", "two:333 two:r00002 two:r00005 two:é"},
		{two, 2, 5, "2", "two:1"},
		{two, 3, 5, "2", "two:---A two:/0 two:0 two:Zm9vYg two:_-_- two:____"},
		// Each index is split on its own.
		{"both", 2, 5, "3", "one:0 one:1 one:55555 one:r00004 one:r00007 one:r00008 two:1"},
	}
	for _, tc := range cases {
		out := tg.mustDo(200, "POST", "/_search", `{"size":100,"pit":{"id":"`+pits[tc.pit]+`"},"slice":{"id":`+itoa(tc.id)+`,"max":`+itoa(tc.max)+`}}`)
		hits, _ := dig(out, "hits", "hits").([]any)
		var got []string
		for _, h := range hits {
			got = append(got, strings.TrimPrefix(str(dig(h, "_index")), tg.prefix+"slice-")+":"+str(dig(h, "_id")))
		}
		slices.Sort(got)
		if strings.Join(got, " ") != tc.want || str(dig(out, "_shards", "total")) != tc.shards || str(dig(out, "_shards", "successful")) != tc.shards ||
			str(dig(out, "_shards", "skipped")) != "0" {
			t.Errorf("slice %d of %d on %s = %v, _shards %v; want %s on %s shards", tc.id, tc.max, tc.pit, got, out["_shards"], tc.want, tc.shards)
		}
	}
}
