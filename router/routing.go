package router

import (
	"math/bits"
	"strconv"
	"strings"

	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
)

// RoutingKey returns the routing value for shard i of a map with the given
// shard counts: the shard's name itself if OpenSearch's routing hash sends
// it to physical shard i, else the first of name-1, name-2, … that does.
// The choice is deterministic, so the same name, position and counts always
// give the same key.
//
// Each candidate lands on shard i with probability 1/numShards, so the
// search takes numShards tries on average; the loop always ends because the
// hash of name-k spreads over every shard as k grows.
func RoutingKey(name string, i, routingNumShards, numShards int) string {
	if shardhash.ForRouting(name, routingNumShards, numShards) == i {
		return name
	}
	var b strings.Builder
	for k := 1; ; k++ {
		b.Reset()
		b.WriteString(name)
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(k))
		if shardhash.ForRouting(b.String(), routingNumShards, numShards) == i {
			return b.String()
		}
	}
}

// DefaultRoutingNumShards is the index.number_of_routing_shards OpenSearch
// gives an index of n shards when the create request does not set it:
// n·2^k with k = max(1, 10 − ⌈log2 n⌉), e.g. 18 → 576, 36 → 576, 9 → 576.
// (MetadataCreateIndexService.calculateNumRoutingShards.)
func DefaultRoutingNumShards(n int) int {
	if n <= 0 {
		return 0
	}
	log2 := 0
	if n > 1 {
		log2 = bits.Len(uint(n - 1))
	}
	splits := max(1, 10-log2)
	return n << splits
}
