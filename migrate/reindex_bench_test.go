package migrate

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// reindexBenchDocs is the size of BenchmarkBackfillVsReindex's source
// index. The default keeps one run (the source written once, then nine
// copies) to about two minutes on a 2-core machine with one real node.
var reindexBenchDocs = flag.Int("reindex-bench-docs", 80_000, "documents in BenchmarkBackfillVsReindex's source index")

// reindexSlices are the slice counts compared: a few, and one per source
// shard (what _reindex?slices=auto picks for the 18-shard source).
var reindexSlices = []int{1, 2, 4, 18}

// BenchmarkBackfillVsReindex copies one source index (18 shards under the
// US map, -reindex-bench-docs restaurants and dishes) into a fresh
// 24-shard target three ways, at the same slice counts:
//
//	backfill        Migrator.Backfill: one slice per source shard, Slices
//	                at a time, routed by the new map, checkpointed
//	reindex         POST _reindex?slices=N&wait_for_completion=true into a
//	                target with the same mappings and settings: the copies
//	                keep the source's routing, so most land on the wrong
//	                shard of the new map (reported as misplaced/op)
//	routed-reindex  the same with a painless script that sets ctx._routing
//	                from geo_cell and the new map (routingScript); every
//	                copy is then checked to be on its shard
//
// Every target is created as Create creates it (no replicas, no refresh,
// the map's shard counts) and every copy keeps the document's version as
// its external version. Against the emulator only the backfill runs: the
// emulator has no _reindex.
func BenchmarkBackfillVsReindex(b *testing.B) {
	e, docs := benchSource(b, *reindexBenchDocs)
	want := int64(len(docs))

	r := &reindexer{e: e, admin: e.admin, want: want}
	if realenv.Enabled() {
		// A reindex of the whole source is one request; the default
		// request timeout (60s) is too short for a large one.
		long, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{realenv.OpenSearchURL()}, RequestTimeout: time.Hour})
		if err != nil {
			b.Fatal(err)
		}
		r.admin = bulk.NewAdmin(long)
	} else {
		b.Log("reindex and routed-reindex skipped: the emulator has no _reindex (run with -tags realcluster)")
	}
	// The three ways side by side at each slice count, so that they meet
	// the same load on a shared node.
	for _, slices := range reindexSlices {
		b.Run(fmt.Sprintf("slices=%d/backfill", slices), func(b *testing.B) {
			r.run(b, func(ctx context.Context, _ int) (string, error) {
				if _, err := e.m.Load(ctx); err == nil {
					if err := e.m.Cancel(ctx, AckConfig{}); err != nil {
						return "", err
					}
				}
				mig, err := e.m.Create(ctx, CreateConfig{Map: e.dst})
				if err != nil {
					return "", err
				}
				_, err = e.m.DualWrites(ctx, AckConfig{})
				return mig.Target.Index, err
			}, func(ctx context.Context, _ string) error {
				rep, err := e.m.Backfill(ctx, BackfillConfig{Slices: slices, Progress: func(BackfillProgress) {}})
				if err == nil && rep.Copied != want {
					err = fmt.Errorf("backfill copied %d documents, want %d", rep.Copied, want)
				}
				return err
			}, true)
		})
		for _, routed := range []bool{false, true} {
			name := "reindex"
			if routed {
				name = "routed-reindex"
			}
			b.Run(fmt.Sprintf("slices=%d/%s", slices, name), func(b *testing.B) {
				if !realenv.Enabled() {
					b.Skip("the emulator has no _reindex")
				}
				r.run(b, func(ctx context.Context, i int) (string, error) {
					target := fmt.Sprintf("%s-%s-%d-%d", e.alias, name, slices, i)
					return target, r.createTarget(ctx, target)
				}, func(ctx context.Context, target string) error {
					return r.reindex(ctx, target, slices, routed)
				}, routed)
			})
		}
	}
}

// run times b.N copies: before each (untimed) setup makes the target,
// then fill copies the source into it (timed), then the target is checked against the
// source shard by shard and deleted. A copy that must route by the new
// map fails on any misplaced document; the others report theirs.
func (r *reindexer) run(b *testing.B, setup func(ctx context.Context, i int) (string, error), fill func(ctx context.Context, target string) error, mustRoute bool) {
	ctx := context.Background()
	b.ReportAllocs()
	var elapsed time.Duration
	var misplaced int64
	b.StopTimer()
	for i := range b.N {
		target, err := setup(ctx, i)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		t0 := time.Now()
		err = fill(ctx, target)
		elapsed += time.Since(t0)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		n, err := r.misplaced(ctx, target)
		if err != nil {
			b.Fatal(err)
		}
		if mustRoute && n != 0 {
			b.Fatalf("%s: %d documents not on the shard the new map gives them", target, n)
		}
		misplaced += n
		if err := r.admin.DeleteIndex(ctx, target); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(r.want)*float64(b.N)/elapsed.Seconds(), "docs/s")
	b.ReportMetric(float64(misplaced)/float64(b.N), "misplaced/op")
}

// reindexer runs the _reindex side of BenchmarkBackfillVsReindex.
type reindexer struct {
	e     *env
	admin *bulk.Admin
	want  int64
}

// createTarget creates an index as Create creates a migration's target.
func (r *reindexer) createTarget(ctx context.Context, name string) error {
	body, err := schema.IndexBody(r.e.dst, schema.IndexOptions{Loading: true, GCDeletes: DefaultGCDeletes})
	if err != nil {
		return err
	}
	return r.admin.CreateIndex(ctx, name, body)
}

// reindexAnswer is what the check of a _reindex answer reads.
type reindexAnswer struct {
	Total            int64             `json:"total"`
	Created          int64             `json:"created"`
	VersionConflicts int64             `json:"version_conflicts"`
	Noops            int64             `json:"noops"`
	Failures         []json.RawMessage `json:"failures"`
	TimedOut         bool              `json:"timed_out"`
}

// reindex copies the source into target with _reindex in slices, routed
// by the new map if routed, and checks that it created every document.
func (r *reindexer) reindex(ctx context.Context, target string, slices int, routed bool) error {
	req := map[string]any{
		"source": map[string]any{"index": r.e.v1, "size": DefaultPage},
		"dest":   map[string]any{"index": target, "version_type": "external"},
	}
	if routed {
		req["script"] = routingScript(r.e.dst)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var out reindexAnswer
	path := "/_reindex?wait_for_completion=true&slices=" + strconv.Itoa(slices)
	if err := r.admin.Send(ctx, bulk.Request{Method: http.MethodPost, Path: path, Body: body}, &out); err != nil {
		return err
	}
	if len(out.Failures) > 0 || out.TimedOut || out.Created != r.want || out.VersionConflicts != 0 {
		return fmt.Errorf("_reindex into %s: total %d, created %d, version conflicts %d, noops %d, timed out %v, failures %s",
			target, out.Total, out.Created, out.VersionConflicts, out.Noops, out.TimedOut, out.Failures)
	}
	return nil
}

// misplaced checks target shard by shard against the source as Verify
// does (source range, documents on the shard, documents out of range)
// and returns the documents not on the shard the new map gives them.
// Anything else that differs is an error.
func (r *reindexer) misplaced(ctx context.Context, target string) (int64, error) {
	v := &verifier{s: r.admin, tgtMap: r.e.dst, cfg: VerifyConfig{}.withDefaults(),
		mig: &schema.Migration{Source: schema.Side{Index: r.e.v1}, Target: schema.Side{Index: target}}}
	if err := v.refresh(ctx); err != nil {
		return 0, err
	}
	var out, total int64
	for i := range r.e.dst.NumShards() {
		rep, err := v.counts(ctx, i)
		if err != nil {
			return 0, err
		}
		out += rep.OutOfRange
		total += rep.Target
	}
	if total != r.want {
		return out, fmt.Errorf("%s holds %d documents, want %d", target, total, r.want)
	}
	return out, nil
}

// routingScript is the painless script of a routed _reindex: it routes
// every copy under m by its geo_cell, as the backfill does.
//
// A token is the cell id in lower-case hex without its trailing zeros;
// padded with zeros to 16 digits it is the whole 64-bit id, and padded
// tokens compare as strings the way the unsigned ids compare, whatever
// the tokens' levels. The script pads the document's token, binary
// searches the shards' padded start tokens for the last one at or before
// it (the first shard's range has no lower bound) and sets that shard's
// routing key.
func routingScript(m *router.Map) map[string]any {
	starts := make([]string, m.NumShards())
	routing := make([]string, m.NumShards())
	for i := range m.NumShards() {
		starts[i] = padToken(m.Shard(i).Start)
		routing[i] = m.Shard(i).Routing
	}
	return map[string]any{
		"lang":   "painless",
		"source": routingPainless,
		"params": map[string]any{"starts": starts, "routing": routing},
	}
}

// routingPainless fails the copy of a document without a geo_cell (the
// backfill stops on one too).
const routingPainless = `
String t = ctx._source.geo_cell;
if (t == null || t.length() == 0 || t.length() > 16) {
  throw new IllegalArgumentException('document ' + ctx._id + ' has no usable geo_cell');
}
String k = t.length() == 16 ? t : (t + '0000000000000000').substring(0, 16);
List s = params.starts;
int lo = 0;
int hi = s.size() - 1;
while (lo < hi) {
  int mid = (lo + hi + 1) >>> 1;
  if (((String) s.get(mid)).compareTo(k) <= 0) { lo = mid; } else { hi = mid - 1; }
}
ctx._routing = params.routing.get(lo);
`

// padToken is a cell token padded with zeros to the 16 hex digits of the
// cell id.
func padToken(tok string) string {
	return tok + strings.Repeat("0", max(0, 16-len(tok)))
}
