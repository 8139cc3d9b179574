// Package osfake is an in-process OpenSearch 2.x emulator that speaks the
// REST API over HTTP, for tests and for the embedded demo mode.
//
// It is test and demo machinery. Production code never imports it, except
// the --embedded wiring in cmd/, which serves it inside the real binary.
// It must not import pipeline, migrate, bulk or router: it knows
// OpenSearch, not geoshard. It depends only on the standard library and on
// opensearch-go's shardhash, the server's own routing hash.
//
// Fidelity to the real server matters more than breadth: every component
// that writes to or reads from OpenSearch is tested against this emulator,
// so where it answers, it answers as OpenSearch 2.19 does — the same
// document placement (shard = murmur3 of the routing value, scaled by
// index.number_of_routing_shards), the same response shapes, error types,
// reasons and HTTP statuses. The real client
// (github.com/opensearch-project/opensearch-go/v4/opensearchapi) works
// against it unchanged. A path it does not know gets the server's 400 "no
// handler found"; where it knowingly lacks a feature of a known endpoint it
// says so in the error (type osfake_not_implemented with HTTP 501, or a
// reason that starts with "osfake:") rather than make up an answer.
//
// # Starting it
//
// In a test, NewTestServer starts it on a random 127.0.0.1 port:
//
//	clock := osfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
//	ts := osfake.NewTestServer(osfake.Options{Clock: clock.Now})
//	defer ts.Close()
//	client, _ := opensearchapi.NewClient(opensearchapi.Config{
//		Client: opensearch.Config{Addresses: []string{ts.URL}}})
//
// The injectable clock drives refresh intervals, delete tombstone expiry
// (index.gc_deletes) and point-in-time expiry, so a test moves time with
// clock.Advance instead of sleeping. A *Server is an http.Handler, so New
// can also be served by any http.Server:
//
//	srv := &http.Server{Addr: "127.0.0.1:9200", Handler: osfake.New(osfake.Options{})}
//
// The command osfake serves it until SIGINT or SIGTERM:
//
//	go run ./internal/osfake/cmd/osfake -addr 127.0.0.1:9200
//
// It refuses an address that is not loopback unless -allow-remote is
// given: the emulator has no authentication and accepts any request.
//
// # Endpoints
//
// Cluster and info:
//
//	GET|HEAD /                                  version 2.19.1, distribution opensearch
//	GET  /_cluster/health[/{index}]             level, wait_for_status, wait_for_active_shards, wait_for_nodes, timeout
//	GET  /_cat/indices[/{index}]                format=json or text, v, h, s, bytes
//	GET  /_cat/shards[/{index}]
//	GET  /_cat/aliases[/{name}]
//	GET  /_cat/count[/{index}]
//
// Indices, settings and mappings:
//
//	PUT  /{index}                               settings, mappings, aliases
//	GET  /{index}   HEAD /{index}   DELETE /{index}
//	GET  /_settings   GET /{index}/_settings    flat_settings
//	PUT  /{index}/_settings                     dynamic settings only
//	GET  /_mapping    GET /{index}/_mapping
//	PUT|POST /{index}/_mapping
//	POST|GET /_refresh   POST|GET /{index}/_refresh
//
// Aliases:
//
//	POST /_aliases                              add, remove, remove_index; atomic
//	GET  /_aliases
//	GET|HEAD /_alias[/{name}]   GET|HEAD /{index}/_alias[/{name}]
//	PUT|POST /{index}/_alias/{name}             optional body: routing, filter, is_write_index, …
//	DELETE   /{index}/_alias/{name}
//
// Documents:
//
//	POST|PUT /_bulk   POST|PUT /{index}/_bulk
//	POST /{index}/_doc   PUT|POST /{index}/_doc/{id}
//	PUT|POST /{index}/_create/{id}
//	GET|HEAD|DELETE /{index}/_doc/{id}
//	POST /{index}/_update/{id}
//	GET|HEAD /{index}/_source/{id}
//
// Search:
//
//	GET|POST /_search   GET|POST /{index}/_search
//	GET|POST /_count    GET|POST /{index}/_count
//	GET|POST /{index}/_search_shards
//	POST /{index}/_search/point_in_time
//	DELETE /_search/point_in_time   GET|DELETE /_search/point_in_time/_all
//
// Index expressions accept comma-separated names, aliases, * wildcards
// and _all wherever the server does.
//
// # Fault injection
//
// PUT /_osfake/faults sets the faults to inject (Server.SetFaults takes the
// same as a Faults value), GET /_osfake/faults shows them with counters of
// what was injected (also Server.FaultStats), and DELETE /_osfake/faults
// clears them (Server.ClearFaults). Setting faults resets the counters.
// Unknown fields and out-of-range values are rejected with HTTP 400 naming
// the field; requests to /_osfake itself never fail.
//
//	PUT /_osfake/faults
//	{
//	  "seed": 42,
//	  "reject_rate": 0.05,                  // bulk items rejected with 429
//	  "reject_items": 3,                    // …and the next 3 items for sure
//	  "reject_type": "rejected_execution_exception",
//	  "fail_requests": 2,                   // whole requests failed, before anything is applied
//	  "fail_rate": 0.01,
//	  "fail_status": 503,                   // 503 OpenSearch JSON error; 502/504 a proxy's plain text
//	  "fail_endpoints": ["bulk", "search"], // bulk (default), search, count, doc, admin, all
//	  "shard_latency": [{"index": "restaurants", "shard": 3, "delay": "2s"}],
//	  "drop_responses": 1,                  // bulk applied, response cut off mid-body
//	  "write_block": ["restaurants"]        // writes fail with 403 cluster_block_exception
//	}
//
// (The comments are for this page only; the body is plain JSON.) Random
// choices come from a generator seeded with seed, so a test that sends the
// same requests in the same order sees the same faults. Injected latency is
// slept outside the server's lock and delays only the requests that touch
// the slow shard. Note that the real client retries 502, 503 and 504 by
// itself, so a single injected failure is invisible through it.
//
// # Conformance tests against a real cluster
//
// The tests of this package are written as conformance tests: each runs
// against a target that is a fresh emulator by default, and a real
// OpenSearch 2.x cluster with the build tag realcluster:
//
//	GEOSHARD_OPENSEARCH_URL=http://127.0.0.1:9200 go test -tags realcluster ./internal/osfake/
//
// Each test creates uniquely named indices (deleted afterwards) so a shared
// cluster can be used. Tests that need the emulator — its clock, its
// faults, or white-box checks of its state — are skipped there.
//
// # Known differences from OpenSearch
//
// Cluster and state:
//
//   - One node's worth of state, but three pretend data nodes: replicas are
//     not stored separately. Up to two replicas per shard count as assigned
//     (STARTED); more stay UNASSIGNED and make the index yellow. Health is
//     never red, except for an index that does not exist; no shard is ever
//     initializing or relocating. Node names (osfake-0…2), ids and IPs
//     (127.0.0.1) are synthetic.
//   - One mutex serialises all requests, so every request is atomic; on a
//     real cluster, concurrent requests interleave per shard.
//   - Periodic refresh is lazy: it happens when state is read after
//     index.refresh_interval has passed on the injected clock. A client
//     cannot tell the difference, but nothing happens while nobody reads.
//     The same holds for index.gc_deletes: tombstones are pruned when the
//     document id is next written.
//   - Indices created automatically by a write (action.auto_create_index)
//     get the default settings (1 shard, 1 replica); there are no index
//     templates, data streams, closed or hidden indices, and no date math
//     or "-" exclusions in index expressions.
//   - Index settings the emulator does not know are accepted and returned
//     without validation. index.routing_partition_size other than 1 is
//     rejected (partitioned routing is not emulated). Mapping field types
//     outside a fixed list (keyword, text, numbers, boolean, date,
//     geo_point, join, object, nested) are rejected; other mapping
//     parameters are stored as given.
//   - Nothing persists; there is no security, no request size limit and no
//     rate limiting other than injected faults.
//
// Health, _cat and aliases:
//
//   - Cluster-health waits poll the state every 10 ms of real time (not the
//     injected clock). wait_for_events, wait_for_no_relocating_shards and
//     wait_for_no_initializing_shards are accepted and hold at once.
//   - _cat store sizes are approximations (208 bytes per shard plus the
//     _source of its searchable documents). docs.deleted counts every
//     delete and overwrite since the index was created: there are no
//     segment merges to reclaim them. docs counts top-level documents only
//     (Lucene also counts nested child documents). A replica reports its
//     primary's documents.
//   - _cat renders JSON and plain text only (format=yaml, cbor or smile is
//     501); help is not supported. Hidden aliases are listed like others.
//   - _cat/count through an alias does not apply the alias's filter.
//   - Alias filters are stored and returned but not validated against the
//     mapping when the alias is added.
//   - Parse errors in POST /_aliases have the server's status, type and
//     key sentence ("Too many operations declared on operation entry", "[x]
//     can't be empty", "unknown field [x]"), but not its [line:column]
//     positions; an action entry with no operation gets a message of the
//     emulator's own. Names in "aliases [a, b] missing" are sorted (the
//     server's order is a hash set's).
//   - Removing an alias that does not exist follows 2.12–2.19: a request
//     whose actions all resolve to nothing is 404 aliases_not_found_exception;
//     beside other effective actions the missing alias is ignored, unless
//     the remove has must_exist: true.
//
// # Known differences: documents and search
//
// TODO: list the differences of the document endpoints (_doc, _create,
// _update, _source, _bulk) and of the search endpoints (_search, _count,
// _search_shards, point in time) here. One already applies to all of
// search: there is no relevance scoring.
package osfake
