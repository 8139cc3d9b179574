package osfake

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
)

// Placement conformance: for random routing values on 5, 18 and 36 shards,
// with the server's default and with explicit routing_num_shards, the
// per-shard counts from _count?preference=_shards:i and from _cat/shards
// equal the counts shardhash predicts. Against a real cluster this checks
// the prediction; against the emulator it checks both.
func TestPlacementMatchesShardhash(t *testing.T) {
	tg := newTarget(t)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	for _, tc := range []struct {
		shards, rns int // rns 0: the server's default
	}{{5, 0}, {5, 5}, {18, 0}, {18, 18}, {36, 0}, {36, 72}} {
		t.Run(fmt.Sprintf("%d-shards-rns-%d", tc.shards, tc.rns), func(t *testing.T) {
			name := tg.name(fmt.Sprintf("place-%d-%d", tc.shards, tc.rns))
			settings := fmt.Sprintf(`{"settings":{"number_of_shards":%d,"number_of_replicas":0`, tc.shards)
			rns := defaultRoutingNumShards(tc.shards)
			if tc.rns > 0 {
				settings += fmt.Sprintf(`,"number_of_routing_shards":%d`, tc.rns)
				rns = tc.rns
			}
			settings += `}}`
			if _, err := tg.client.Indices.Create(ctx, opensearchapi.IndicesCreateReq{Index: name, Body: strings.NewReader(settings)}); err != nil {
				t.Fatal(err)
			}
			want := make([]int, tc.shards)
			var body strings.Builder
			for i := 0; i < 1200; i++ {
				id := "d" + strconv.Itoa(i)
				routing := ""
				if i%6 != 0 { // every sixth document is placed by its _id
					routing = randomRouting(rng)
				}
				key := routing
				if key == "" {
					key = id
				}
				want[shardhash.ForRouting(key, rns, tc.shards)]++
				fmt.Fprintf(&body, `{"index":{"_index":%q,"_id":%q`, name, id)
				if routing != "" {
					fmt.Fprintf(&body, `,"routing":%q`, routing)
				}
				fmt.Fprintf(&body, "}}\n{\"n\":%d}\n", i)
			}
			resp, err := tg.client.Bulk(ctx, opensearchapi.BulkReq{Body: strings.NewReader(body.String()),
				Params: opensearchapi.BulkParams{Refresh: "true"}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Errors {
				t.Fatalf("bulk reported errors")
			}
			for i := 0; i < tc.shards; i++ {
				out := tg.mustDo(200, "GET", fmt.Sprintf("/%s/_count?preference=_shards:%d", name, i), "")
				if got := str(out["count"]); got != strconv.Itoa(want[i]) {
					t.Errorf("_count on shard %d = %s, want %d", i, got, want[i])
				}
			}
			cat, err := tg.client.Cat.Shards(ctx, &opensearchapi.CatShardsReq{Indices: []string{name}})
			if err != nil {
				t.Fatal(err)
			}
			seen := 0
			for _, row := range cat.Shards {
				if row.Prirep != "p" {
					continue
				}
				seen++
				if row.Docs == nil || *row.Docs != strconv.Itoa(want[row.Shard]) {
					t.Errorf("_cat/shards shard %d docs = %v, want %d", row.Shard, row.Docs, want[row.Shard])
				}
			}
			if seen != tc.shards {
				t.Errorf("_cat/shards listed %d primaries, want %d", seen, tc.shards)
			}
		})
	}
}

// randomRouting returns a routing value of 1 to 24 characters, sometimes
// outside ASCII, so the UTF-16 encoding of the hash is exercised.
func randomRouting(rng *rand.Rand) string {
	alphabet := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_:.éßΓ中🙂")
	n := 1 + rng.IntN(24)
	r := make([]rune, n)
	for i := range r {
		r[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(r)
}
