// Package bulk writes documents to OpenSearch through the _bulk API,
// batched per target shard, retrying only what failed, and reporting one
// outcome for every item it accepted.
//
// # Model
//
// A caller adds Items. Each item belongs to a shard key (its geoshard name,
// else its index and routing); items of one key go to one queue, split into
// Config.ShardConcurrency lanes by a hash of the document id, so that all
// operations on one document share a lane. A lane sends one batch at a
// time, which keeps the operations on a document in the order they were
// added; within a batch only the newest version of a document is sent and
// the older ones are counted as coalesced. A batch is sent when it reaches
// FlushItems or FlushBytes, or FlushInterval after its first item arrived,
// by a pool of Workers.
//
// Each lane has its own queue limit and at most one request in flight, so a
// slow or rejecting shard slows only its own lanes: the workers keep
// serving the others. A global memory budget (bytes and items) bounds
// everything queued; Add blocks, cancellably, when it is full, and never
// drops.
//
// # Outcomes
//
// Every item ends in exactly one Result: OK, Stale (409 under external
// versioning: a newer version is already stored, which is success),
// NotFound (a delete of a missing document, also success), Permanent (a
// client error, with the server's status, type and reason in an
// *ItemError — the caller dead-letters it), or Failed (the retry budget ran
// out, or the writer closed first). Items rejected with 429, and items that
// failed with 500, 502, 503 or 504, are resent with exponential backoff and
// full jitter — only those items, never the ones that succeeded. A request
// that fails whole (transport error, one of those statuses, a connection
// dropped mid-response) is resent whole; external versioning makes that
// safe, since a copy that already landed comes back Stale. Classify is the
// one place that decides.
//
// Admin.Bulk is the Writer's opposite for a small, known set of items:
// one _bulk request (BulkRequest, which a dry run prints), sent once,
// with one Result per item by the same Classify.
//
// # The engine
//
// Admin.Engine asks a node which engine and version it runs (GET /), and
// CheckEngine decides whether geoshard runs on it: the OpenSearch releases
// CI tests (SupportedEngines), no older one, and no Elasticsearch. An
// OpenSearch newer than the newest tested is an EngineError of its own
// kind (EngineUntested), which a command lets its operator run on anyway.
//
// # Boundaries
//
// bulk owns the OpenSearch wire: items, NDJSON, batching, retries and
// outcomes. It must not import pipeline, migrate or any Kafka package.
//
//	imports: none
//	never:   pipeline migrate search internal github.com/segmentio/kafka-go github.com/twmb/franz-go
package bulk
