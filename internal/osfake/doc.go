// Package osfake is an in-process OpenSearch emulator that speaks the REST
// API over HTTP, for tests and for the embedded demo mode. It answers as
// the version it reports: OpenSearch 3.9.0 by default, a 2.19.x version
// on request (Options.Version).
//
// It is test and demo machinery. Production code never imports it, except
// the --embedded wiring in cmd/, which serves it inside the real binary.
// It must not import pipeline, migrate, bulk or router: it knows
// OpenSearch, not geoshard. It depends only on the standard library and on
// opensearch-go's shardhash, the server's own routing hash.
//
// Fidelity to the real server matters more than breadth: every component
// that writes to or reads from OpenSearch is tested against this emulator,
// so where it answers, it answers as the OpenSearch version it reports
// does ("Release lines" below says what differs between 3.9 and 2.19) —
// the same document placement (shard = murmur3 of the routing value,
// scaled by index.number_of_routing_shards), the same response shapes,
// error types, reasons and HTTP statuses. The real client
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
// Options.Version chooses the version: DefaultVersion (3.9.0), or any
// 2.19.x or 3.9.x version. Options.Validate refuses any other, and a
// Server given one answers every request with a 500 that says so.
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
//	go run ./internal/osfake/cmd/osfake -addr 127.0.0.1:9200 [-version 2.19.6]
//
// It refuses a -version it does not know, saying which it knows, and an
// address that is not loopback unless -allow-remote is given: the
// emulator has no authentication and accepts any request.
//
// # Endpoints
//
// Cluster and info:
//
//	GET|HEAD /                                  Options.Version (3.9.0 or 2.19.x), distribution opensearch,
//	                                            the line's lucene_version and compatibility versions
//	GET  /_cluster/health[/{index}]             level, wait_for_status, wait_for_active_shards, wait_for_nodes, timeout
//	GET  /_cluster/settings                     include_defaults (the disk allocation settings only), flat_settings
//	GET  /_nodes/stats/fs                       each pretend node's roles and fs.total, from Options.Disk
//	GET  /_cat/indices[/{index}]                format=json or text, v, h, s, bytes
//	GET  /_cat/shards[/{index}]
//	GET  /_cat/aliases[/{name}]
//	GET  /_cat/count[/{index}]
//
// Indices, settings and mappings:
//
//	PUT  /{index}                               settings, mappings, aliases; wait_for_active_shards, timeout
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
//	                                            (writes: wait_for_active_shards, timeout)
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
// what was injected (rejected_items, failed_requests, dropped_responses
// and delayed_requests; also Server.FaultStats), and DELETE /_osfake/faults
// clears them (Server.ClearFaults). Setting faults resets the counters.
// Unknown fields and out-of-range values are rejected with HTTP 400 naming
// the field; requests to /_osfake itself never fail.
//
//	PUT /_osfake/faults
//	{
//	  "seed": 42,
//	  "reject_items": 3,                    // the next 3 bulk items rejected with 429…
//	  "reject_rate": 0.05,                  // …then 5% of them
//	  "reject_type": "rejected_execution_exception",
//	  "fail_requests": 2,                   // the next 2 requests fail whole, nothing applied…
//	  "fail_rate": 0.01,                    // …then 1% of them
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
// OpenSearch cluster of the 3.9 or the 2.19 line with the build tag
// realcluster:
//
//	GEOSHARD_OPENSEARCH_URL=http://127.0.0.1:9200 go test -tags realcluster ./internal/osfake/
//
// A test whose answers differ by line states the answer of each
// (target_test.go's byLine) and runs once per line (eachLine): against
// the emulator at 2.19.6 and at 3.9.0, each in a subtest named after its
// line, so the 2.19 answers stay tested without a 2.19 node; against a
// real cluster at the line its GET / reports. A cluster of any other line
// fails those tests rather than skip them: no answer of its line is known.
//
// Each test creates uniquely named indices (deleted afterwards) so a shared
// cluster can be used, and writes its documents through _bulk. Tests that
// need the emulator itself — its clock, its faults, its 501 answers, its
// replica placement or white-box checks of its state — are skipped there.
// A test whose answer depends on the number of nodes (a one-node cluster
// cannot place replicas; the emulator pretends three data nodes) derives
// what it expects from the number_of_data_nodes the target reports, or
// is emulator-only. On a real cluster of several nodes a write fails on
// a primary that may be on another node, and its cause then reads as the
// transport protocol carries it (target_test.go's overTransport); the
// tests expect that shape exactly when the primary is elsewhere. A test
// asserts no duration, except that an answer came no earlier than the
// timeout it waited for.
//
// Run them against a cluster of three with deploy/local/real.sh
// (OPENSEARCH_NODES=3) as well as against a single node, and against a
// node of each line (OPENSEARCH_VERSION=2.19.6 for the 2.x line). The
// transport shapes of overTransport were read off a cluster of three
// nodes of each line.
//
// # Release lines
//
// Run against a real 3.9.0 and a real 2.19.6 node, the conformance tests
// found these differences between the lines; the emulator answers each
// as the line of the version it reports, from its dialect (dialect.go),
// and the named tests pin both answers:
//
//   - GET / reports the version, Lucene 10.5.1 on 3.9 (9.12.3 on 2.19.6),
//     minimum_wire_compatibility_version 2.19.0 (7.10.0) and
//     minimum_index_compatibility_version 2.0.0 (7.0.0); an index's
//     index.version.created is the version's id, 137307827 for 3.9.0 and
//     136408427 for 2.19.6 (TestRootReportsTheVersion).
//   - The JSON parser's failures. Where 2.19 raises json_parse_exception
//     for a value that is not the number or boolean it must be, 3.x
//     raises input_coercion_exception; where 2.19 raises
//     json_e_o_f_exception for input that ends early, 3.x raises
//     unexpected_end_of_input_exception. 3.x wraps each in another
//     exception with the same reason — of the same type, or a syntax
//     error's json_parse_exception over a stream_read_exception — where
//     2.19 raises it bare; the root cause is the outer one. Its messages
//     say "cannot use numeric value accessors" for 2.19's "can not", and
//     name a number's Java type in backticks with its range: "out of
//     range of `long` (-9223372036854775808 - 9223372036854775807)" for
//     2.19's "long (…)", "`short` (-32768 - 32767)" for 2.19's "Java
//     short". Its positions read "byte offset: #27" for 2.19's "line: 1,
//     column: 28"; the emulator gives none on either line
//     (TestPutAliasBodyErrors, TestBulkPerItemErrors,
//     TestParserFailuresInWrites, TestNumericRangeChecks,
//     TestMappedFieldsRejectValuesOfTheWrongKind,
//     TestDynamicMappingConflicts).
//   - A search of size 0 with aggregations reports terminated_early: true
//     on 3.9 once a shard it ran on holds documents, whether or not its
//     query matches any; 2.19 never reports it. The server reports it
//     also for a shard whose documents were all deleted, whose segments
//     remain; the emulator, which keeps no segments, does not
//     (TestSizeZeroAggregationsTerminateEarly).
//   - _search_shards gives each shard copy "searchOnly": false on 3.9
//     (TestSearchShardsCopyFields).
//
// The lines differ too where the emulator does not follow either, so no
// test pins it: the parser's own reasons for syntax errors ("was
// expecting double-quote to start property name" on 3.x, "field name" on
// 2.19; the emulator gives Go's), a duplicate key ("Duplicate Object
// property" on 3.x, "Duplicate field" on 2.19; the emulator takes the
// document), and relevance scores: a term query on a keyword field
// scores a constant 1.0 (times its boost) on 3.9, and BM25 on 2.19,
// where the emulator scores 1.0 whatever the boost; other scored queries
// score by BM25 on both lines, with other values. Where the server names indices
// in a hash map's order (the alias errors below), the two nodes' orders
// differed, and the tests accept either.
//
// # Known differences from OpenSearch
//
// Each difference below names the test that pins the emulator's side of
// it (or says why none does); each holds on both lines unless it says
// otherwise. Differences found against a real 2.19.6 node and since fixed
// are listed at the end.
//
// Cluster and state:
//
//   - One node's worth of state, but three pretend data nodes: replicas are
//     not stored separately. Up to two replicas per shard count as assigned
//     (STARTED); more stay UNASSIGNED and make the index yellow
//     (TestClusterHealthFollowsReplicas, emulator-only; and against the
//     number of nodes any engine reports, TestReplicaCopiesAndHealth,
//     TestHealthFollowsNumberOfReplicas). As the copies never change but
//     by number_of_replicas, a wait_for_active_shards that they do not
//     meet is met only if that setting changes while the request waits
//     (activeshards.go). Health is never
//     red, except for an index that does not exist; no shard is ever
//     initializing or relocating, so an index is green as soon as it
//     exists, where a real node reports a new index yellow while its
//     primaries initialize (TestClusterHealthMissingIndexIsRed accepts
//     either from a real node). Node names (osfake-0…2), ids and IPs
//     (127.0.0.1) are synthetic.
//   - Disks are figures, not files (disk.go): each pretend node reports
//     Options.Disk's (DefaultNodeDisk unless set: 1 TiB, 900 GiB
//     available), which writes never use up, and no watermark is enforced.
//     _nodes/stats/fs gives fs.total only, without the per-path data
//     entries and io_stats; GET /_cluster/settings has no persistent or
//     transient setting (PUT is not served) and, with include_defaults,
//     lists the disk allocation settings where a node lists some 900
//     (TestNodesStatsFSShape and TestClusterSettingsDiskShape hold both to
//     the shapes a real node answers; TestDiskOptions pins the figures).
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
//     parameters are stored as given. Some mapping errors are worded in
//     the emulator's own way: a second join field, a property that is
//     not an object, a _routing that is not an object.
//   - Dynamic mapping never detects dates: a new string field is always
//     text with a keyword sub-field, where the server maps a string that
//     reads as strict_date_optional_time as a date (and so rejects
//     ["2024-01-01", "x"], whose values map as a date and as text).
//     date_detection and numeric_detection are accepted and ignored, and
//     a dynamic template's match_mapping_type date or binary never
//     matches (TestDynamicTemplates uses neither).
//   - Dynamic templates read match_pattern regex in Go's RE2 syntax, not
//     Java's; a pattern RE2 cannot read is 501. A template's mapping is
//     added as given, {name} and {dynamic_type} replaced, and checked for
//     its type only.
//   - Nothing persists; there is no security, no request size limit and no
//     rate limiting other than injected faults.
//
// Responses and errors:
//
//   - Object keys come in alphabetical order (bulk and single-document
//     write responses excepted, which are written in the server's order).
//     The JSON is the same; no test pins key order, as every test decodes
//     what it reads.
//   - The server puts the parser's [line:column] before parse errors,
//     appends the JSON parser's "at [Source: …; line: 1, column: 28]" (on
//     3.x "at [Source: …; byte offset: #27]") to its exceptions and
//     " at 1:6" to the document parser's "Can't get text on a
//     START_OBJECT", and adds line and col fields to a parsing_exception;
//     the emulator leaves the positions out (TestAliasesErrors,
//     TestNumericRangeChecks and TestMappedFieldsRejectValuesOfTheWrongKind
//     strip them from the node's answers).
//   - Malformed JSON in a document, a bulk body or an update body gets the
//     server's error types (mapper_parsing_exception over the parser's,
//     as each line names them: see Release lines), but the reasons are in
//     Go's wording, not the server's (TestBulkPerItemErrors and
//     TestParserFailuresInWrites check the types only). Malformed JSON in
//     other request bodies (a search, a mapping, settings, aliases) is a
//     parse_exception "Failed to parse content to map" with Go's reason
//     and no cause, where the server raises the parser's exceptions, or
//     wraps them in its own (not pinned). Duplicate keys in a source are
//     accepted, where the server rejects them. A search option of the
//     wrong JSON type ("size": true) is the emulator's parsing_exception
//     "[search] failed to parse field [size]", where the server raises
//     the parser's exception (not pinned).
//   - filter_path is applied to successful responses only, as on the
//     server, and the filtered response is re-encoded with its keys sorted
//     (TestFilterPath).
//   - Unknown URL parameters are ignored rather than rejected.
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
//   - POST /_aliases reads the fields of an action in name order, where
//     the server reads them in document order, so with several bad fields
//     it may name another (TestAliasesErrors uses one bad field a case).
//   - Index names in "alias [a] has more than one write index [x,y]" and
//     "alias [a] has more than one index associated with it [x, y]" are
//     sorted, as are those in "aliases [a, b] missing"; the server's order
//     is its hash map's (TestAliasesErrors and TestBulkAliasTargets accept
//     either order).
//   - Removing an alias that does not exist follows 2.12 and later (3.9
//     alike): a request whose actions all resolve to nothing is 404
//     aliases_not_found_exception; beside other effective actions the
//     missing alias is ignored, unless the remove has must_exist: true
//     (TestAliasesErrors,
//     TestAliasesRemoveMissingBesideOtherActionsIsTolerated).
//
// # Known differences: documents and search
//
// Documents (_doc, _create, _update, _source and _bulk):
//
//   - refresh=wait_for refreshes at once instead of waiting for the next
//     periodic refresh. refresh=true refreshes only the shards the request
//     wrote to: unrefreshed writes on the index's other shards stay
//     invisible.
//   - There are no ingest pipelines: an index or create naming any
//     pipeline other than _none fails (per item in a bulk) with 400
//     "pipeline with id [x] does not exist".
//   - Scripted updates answer 501. An update never returns the document
//     (its _source and get options are ignored), and GET honours
//     _source=false but ignores _source_includes and _source_excludes.
//   - An update merges its partial document into the stored source as raw
//     JSON, so untouched values keep their original spelling (4.50 stays
//     4.50); the server re-encodes the merged source.
//   - Values are checked against the mapping as the server's document
//     parser checks them (TestMappedFieldsRejectValuesOfTheWrongKind,
//     TestDynamicMappingConflicts, TestNumericRangeChecks), except that a
//     date is not checked unless it is an object, a geo_point's GeoJSON
//     object or WKT string is checked only for the coordinates of a WKT
//     POINT, and scaled_float values are not range-checked (no test: the
//     project maps none of these). With several bad fields the error
//     names the one whose path is alphabetically first, where the server
//     names the first in document order; the same goes for the keys of a
//     geo_point object.
//   - Two shards of one index that take the first values of a new field
//     at the same moment, in one _bulk (4.3 on one shard, 4 on the
//     other), map it each in its own way (float, long); the master takes
//     one mapping update and refuses the other, and that shard's write
//     fails with 400 illegal_argument_exception "mapper [rating] cannot
//     be changed from type [float] to [long]" (or from [long] to
//     [float]). In 30 such bulks to a fresh two-shard index of a one-node
//     2.19.6 cluster, every bulk lost one write, either way round. The
//     emulator applies the items one at a time in request order, so the
//     first maps the field and the second is parsed against that mapping:
//     4 is taken by a float, 4.3 truncated to 4 by a long, and nothing
//     fails. No test can pin a race; map such fields explicitly. What is
//     deterministic on the server the emulator does alike: two items on
//     one shard, which the shard applies in order
//     (TestDynamicMappingOnOneShardFollowsItemOrder), and two values in
//     one document, which conflict ([4, 4.3], TestDynamicMappingConflicts).
//   - Injected rejections (reject_items, reject_rate) are decided per item;
//     a real cluster rejects a whole shard's part of a bulk at once.
//   - Auto-generated ids are random 20-character URL-safe ids drawn from a
//     generator with a fixed seed, so a fresh emulator hands out the same
//     sequence; the server's are time-based.
//   - A tombstone expires when its age reaches index.gc_deletes; the server
//     keeps it until its age exceeds it.
//   - A write's _shards.total counts the primary and every replica, and
//     successful the primary and the replicas three nodes can hold (at
//     most two); a one-node cluster succeeds on the primary only
//     (TestUpdateDocument accepts either for a bulk noop).
//   - A delete of a missing document takes a sequence number and leaves a
//     tombstone, as the engine does, under internal versioning too.
//   - An update item with version or version_type fails the whole bulk
//     with 400 while it is parsed, before anything is applied.
//
// Search (_search, _count, _search_shards and point in time):
//
//   - There is no relevance scoring: every hit scores 1.0, except 0 under a
//     bool query with neither must nor should clauses and the boost of
//     match_all and constant_score. Hits without a sort, and hits whose
//     sort values tie, come in (index, shard, _id) order; the server
//     orders them by score, then by shard and Lucene doc id (roughly
//     indexing order), and the shard order of ties can differ from one
//     request to the next (no test depends on the order of ties).
//   - The values of a _doc sort are each hit's position among its shard's
//     documents in _id order, standing in for Lucene doc ids.
//   - Text is analysed by lowercasing and splitting on every character that
//     is not a letter or a digit: no stop words, no Unicode word rules.
//     ignore_above is kept in the mapping but not applied.
//   - terms aggregations count exactly: doc_count_error_upper_bound is
//     always 0. range aggregations take field, ranges (from, to, key) and
//     keyed; a range's from and to are written as Java doubles (1000.0).
//   - has_parent and has_child join per shard, as the server does, but
//     score a constant (score and score_mode are accepted and ignored; no
//     inner_hits), and evaluate their inner query on the shards' refreshed
//     documents even under a point in time (TestQueryTypes).
//   - geo_bounding_box takes top_left/bottom_right (or the other two
//     corners, or top, left, bottom and right) in any point form, edges
//     included exactly (the server quantises indexed points and box edges
//     to 32-bit integers, so a point on an edge may fall either side), and
//     a box whose left is east of its right crosses the antimeridian; no
//     wkt, no validation_method. The _geo_distance sort is the arc
//     distance of a document's nearest point (farthest with mode max or a
//     descending order) in its unit; a document without a point is
//     +Infinity away, first in a descending sort as on the node
//     (TestGeoDistanceSort).
//   - The server runs a can_match phase before the query phase, whose
//     shard failures carry phase "can_match"; the emulator models it where
//     it runs for a field sort (a primary sort on a field, more than one
//     shard: the sort and search_after fail there, TestQueryErrors and
//     TestSearchAfterValidation), not where it runs to skip shards for a
//     query that matches nothing on more than 128 shards. _shards.skipped
//     is always 0 (TestPITSliceMembership checks it is 0 on the node too
//     for sliced searches, whose shards outside the slice are asked, not
//     skipped).
//   - search_after dates, like all dates, are read in the default
//     strict_date_optional_time||epoch_millis layouts whatever the field's
//     format, which the error names (TestSearchAfterValidation uses the
//     default format).
//   - A point in time expires exactly when its keep-alive runs out; the
//     server's reaper can leave it open up to a minute longer. A malformed
//     pit_id gets a 400 with a message of the emulator's own.
//   - A filtered _source is re-encoded with its keys sorted and its numbers
//     spelled as stored (the server writes 4.50 as 4.5); an unfiltered one
//     is returned exactly as stored.
//   - _search_shards shows an alias's filter as it was given, not as the
//     server renders the parsed query.
//   - There is no date math: "now-1d" or "2020-01-01||+1M" fails like any
//     date that does not parse.
//   - Slices split the documents by _id only; slice.field is 501.
//   - Query types, search options and aggregations the emulator does not
//     implement (prefix, highlight, scroll, avg, …) answer 501
//     osfake_not_implemented rather than being silently ignored.
//   - A boost that is not a number is ignored, where the server fails
//     each query type in its own way (TestQueryBoostNotValidated,
//     emulator-only).
//
// # Differences found against a real node and fixed
//
// Run against OpenSearch 2.19.6, the conformance tests found these; the
// emulator now answers as the node does, and the named tests pin it. Each
// holds on 3.9 as well, the parser's exceptions named as 3.x names them
// (Release lines):
//
//   - Root causes are chosen as the server's guessRootCauses chooses them:
//     an OpenSearch exception caused by a plain Java one is the root cause
//     itself (mapper_parsing_exception, not the parser's exception under
//     it); nested parser errors report the innermost; a search that fails
//     on every shard lists one root cause per distinct shard failure, and
//     a plain Java shard failure shows as caused by itself
//     (TestAliasesErrors, TestBodiesThatAreNotObjects,
//     TestResultWindowAndPagingValidation, TestSearchAfterValidation).
//   - POST /_aliases: no actions is 400 illegal_argument_exception "No
//     action specified"; an alias named like an index is "Invalid alias
//     name [x], an index exists with the same name as the alias" (also on
//     index creation); parse errors nest as the server's parsers nest them
//     ("[aliases] failed to parse field [actions]", "[alias_action] failed
//     to parse field [add]", "[add] failed to parse field [x]"), with its
//     type complaints ("[add] index doesn't support values of type:
//     START_ARRAY"), its leniency (numbers read as names, "true" as a
//     boolean, a scalar before an action object stepped over), its
//     NullPointerException for an empty action, and must_exist only on
//     remove (TestAliasesErrors, TestAliasesLenientValues,
//     TestCreateIndexAliasErrors). PUT /{index}/_alias/{name} reads its
//     body by hand and fails plainly: "unknown field [x]"
//     (TestPutAliasBodyErrors).
//   - A single-document operation through an alias of several indices is
//     "alias [a] has more than one index associated with it [x, y], can't
//     execute a single index op" (TestBulkAliasTargets).
//   - A source that is not a JSON object is mapper_parsing_exception
//     "failed to parse" caused by not_x_content_exception; an update body
//     that is not an object is "[UpdateRequest] Expected START_OBJECT but
//     was: START_ARRAY", and a doc or upsert that is not one "[UpdateRequest]
//     doc doesn't support values of type: VALUE_NUMBER"
//     (TestBulkPerItemErrors, TestBodiesThatAreNotObjects).
//   - A field mapper given an object fails with "failed to parse field
//     [k] of type [keyword] in document with id '1'. Preview of field's
//     value: '{a=1}'", the object printed as the server's HashMap prints
//     it, caused by the parser's complaint (illegal_state_exception "Can't
//     get text on a START_OBJECT" or, on 2.19, json_parse_exception
//     "Current token (START_OBJECT) not numeric …"); an object mapping
//     given a concrete value fails with "object mapping for [o] tried to
//     parse field [o] as object, but found a concrete value" ([null]
//     inside an array); a
//     dotted name through a field that is not an object, with "Could not
//     dynamically add mapping for field [k.x]. Existing mapping for [k]
//     must be of type object but found [keyword]."; a geo_point with the
//     point parser's exceptions (parse_exception "geo_point expected",
//     "unsupported symbol [a] in geohash [abc]", "field [lon] missing",
//     "illegal latitude value [100.0] for g", …); text that is not a number
//     with number_format_exception (illegal_argument_exception for a
//     long), and a number given to a boolean with the parser's exception
//     (json_parse_exception on 2.19). Empty text is a null number. Each value of a new field gets a mapper
//     of its own, and mappers that differ fail the document when they are
//     merged, in the server's merge order ("mapper [x] cannot be changed
//     from type [long] to [text]", "can't merge a non object mapping [x]
//     with an object mapping"). Under dynamic strict, null and [] are new
//     fields too, and the error names the field and the object it is in;
//     an object's own dynamic setting applies to its fields. Dynamic
//     templates apply (match_mapping_type, match, unmatch, path_match,
//     path_unmatch, match_pattern), and the mapping returns them. A new
//     index's mapping error is wrapped in "Failed to parse mapping [_doc]:
//     …" (TestMappedFieldsRejectValuesOfTheWrongKind,
//     TestDynamicMappingConflicts, TestStrictDynamicNamesTheObject,
//     TestDynamicTemplates; a bulk item fails as a single write does).
//   - An unmapped integer too big for a long is mapped as a long and fails
//     like one (input_coercion_exception); out-of-range and non-finite
//     numbers fail with the parser's or the mapper's exception and a
//     preview of the number as the JVM spells it (TestNumericRangeChecks,
//     TestSourceIsStoredAsGiven).
//   - A noop update in a bulk reports its shard's copies in _shards, like
//     the other items of its shard; the update API reports none
//     (TestUpdateDocument).
//   - term on a geo_point is "Geometry fields do not support exact
//     searching, use dedicated geometry queries instead: [f]"; parent_id
//     without a join field is "[parent_id] no join field found for index
//     [i]"; a query_shard_exception names its index; a date that does not
//     parse is a parse_exception over the date parser's exceptions; a bool
//     clause that is not a query is "[bool] must doesn't support values of
//     type: VALUE_STRING", and a clause that fails to parse fails inside
//     "[bool] failed to parse field [must]" (TestQueryErrors).
//   - from with search_after, and a slice outside a scroll or point in
//     time, fail each shard with a 500 search_exception; search_after
//     needs a sort ("Sort must contain at least one field."), as many
//     values as sort clauses, and values its sort types can read ("Failed
//     to parse search_after value for field [f]."); an empty search_after
//     and one that is not an array of scalars fail the whole request; a
//     null value for a numeric sort is the collector's
//     NullPointerException, HTTP 500 (TestResultWindowAndPagingValidation,
//     TestSearchAfterValidation).
//   - Composite keys of a boolean are true and false, of a date its epoch
//     milliseconds; the after key is converted by each shard
//     (number_format_exception for a date string); a composite terms
//     source takes no format (TestAggregationKeysByFieldType,
//     TestCompositeAfterConversion).
//   - Sort values, bucket keys and scores are spelled as the JVM spells
//     doubles and floats (4.0, 1.0E19); a float field's bucket key is the
//     float widened to a double (3.9000000953674316), its search_after
//     value is read as a float; documents missing a field sorted as a Java
//     int (integer, short, byte, boolean) sort as Integer.MAX_VALUE or
//     MIN_VALUE (TestSortValuesAndKeysAsTheServerSpellsThem).
//   - Slices are split per index, and a shard that several slices share
//     splits its documents by the server's hash of the encoded _id
//     (murmur3 with seed 7919), so each slice reads the documents it reads
//     on the server; a sliced search asks, and _shards counts, every shard
//     of its point in time (TestPITSliceMembership).
//   - wait_for_active_shards on index creation, index, create, update,
//     delete and _bulk was ignored. Now a count above the copies refuses
//     a create (400, the index not created), a create whose count is not
//     met in time answers shards_acknowledged false, and a write whose
//     shard has too few active copies fails at the request's timeout
//     (default 1m) with 503 unavailable_shards_exception, per item in a
//     _bulk; a count is parsed as ActiveShardCount parses it
//     (TestWaitForActiveShards).
//   - active_shards_percent_as_number of a health that names indices was
//     computed over them; the server's is over every copy of the cluster,
//     or 100 when what was asked about is green
//     (TestHealthFollowsNumberOfReplicas).
//
// Three behaviours the documentation used to list as not yet checked were
// checked against the node: a sliced search's _shards.total counts every
// shard of the point in time (the emulator counted only the slice's; now
// fixed, TestPITSliceMembership); composite keys of a boolean are true and
// false and of a date its epoch milliseconds, not a date string (the
// emulator gave strings; now fixed, TestAggregationKeysByFieldType); and
// documents missing a double field sort with the strings "Infinity" and
// "-Infinity", as the emulator had it — and so do those missing a float
// (TestSortValuesAndKeysAsTheServerSpellsThem). Numeric coercion was
// checked as well and is as the emulator had it: a fraction in an
// integer field is truncated toward zero, an integer in a float field
// and a numeric string in any numeric field are taken
// (TestNumbersAreCoerced).
package osfake
