package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// The backfill copies the source into the target while ingest writes
// every change to both.
//
// Each source shard is one slice, read with preference=_shards:<i>,
// sorted by doc_id and paged with search_after on doc_id: the position of
// a scan is a document id, not a point in time or a scroll, so a scan
// resumes from its checkpoint however long the job was away. Without a
// point in time each page sees the latest refresh; that is enough,
// because every change made after dual writes began reaches the target
// through ingest anyway. What the scan must see is every document written
// before: the source is refreshed once dual writes are acknowledged and
// before the first page.
//
// Every copy is written with version_type=external and the document's
// own version, so a live write always wins: when ingest has written a
// newer version (or the same one) first, the copy fails with 409 and is
// counted stale. A live delete leaves a tombstone that refuses the late
// copy of the deleted document for index.gc_deletes, which the migration
// raised to far more than the few seconds between reading a page and its
// acknowledged write. A document is routed under the new map from its
// geo_cell; a dish carries its restaurant's geo_cell, so parent and
// children land on the same shard.
//
// A slice's checkpoint (the last doc_id copied, and the count) is stored
// after each page, only once every write of the page is acknowledged: a
// killed job re-reads at most the pages that were in flight, and copies
// them again harmlessly (stale).

// Searcher reads documents and counts; *bulk.Admin is one.
type Searcher interface {
	Search(ctx context.Context, index string, body []byte, p bulk.SearchParams) (*bulk.Page, error)
	Count(ctx context.Context, index string, query json.RawMessage, p bulk.SearchParams) (int64, error)
	Refresh(ctx context.Context, index string) error
}

var _ Searcher = (*bulk.Admin)(nil)

// BackfillConfig configures Backfill.
type BackfillConfig struct {
	// Slices is how many source shards are copied at once. Default, and
	// maximum, the number of source shards (one slice per shard).
	Slices int
	// Page is the number of documents read, written and checkpointed at a
	// time, 1 to 10,000. Default 1,000.
	Page int
	// MaxDocsPerSecond limits the copy, all slices together. Default 0:
	// no limit.
	MaxDocsPerSecond float64
	// Restart forgets the checkpoints and copies everything again (after a
	// verification found documents missing). Only before verification.
	Restart bool
	// Ack bounds the check, before copying, that every live ingest
	// instance writes both indexes.
	Ack AckConfig
	// Bulk configures each slice's writer; FlushItems defaults to Page,
	// Workers to 2 and MaxBufferedItems to bulk's default or four
	// flushes, whichever is more. OnResult and Registerer are ignored.
	Bulk bulk.Config
	// Progress, if set, receives progress every ProgressInterval and once
	// at the end, from one goroutine.
	Progress func(BackfillProgress)
	// ProgressInterval defaults to 2s.
	ProgressInterval time.Duration
}

// Defaults and bounds of BackfillConfig.
const (
	DefaultPage             = 1000
	MaxPage                 = 10000
	DefaultProgressInterval = 2 * time.Second
)

// withDefaults fills every zero field with its default. The default of
// Slices is the number of source shards, which only the recorded
// migration knows.
func (c BackfillConfig) withDefaults(sourceShards int) BackfillConfig {
	if c.Slices == 0 {
		c.Slices = sourceShards
	}
	if c.Page == 0 {
		c.Page = DefaultPage
	}
	if c.ProgressInterval <= 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	w := &c.Bulk
	if w.FlushItems == 0 {
		w.FlushItems = c.Page
	}
	if w.Workers == 0 {
		w.Workers = 2
	}
	if w.MaxBufferedItems == 0 {
		w.MaxBufferedItems = max(bulk.DefaultMaxBufferedItems, 4*w.FlushItems)
	}
	return c
}

// Validate reports every bad field at once.
func (c BackfillConfig) Validate() error {
	var p []string
	if c.Slices < 0 {
		p = append(p, fmt.Sprintf("slices %d: must not be negative", c.Slices))
	}
	if c.Page < 0 || c.Page > MaxPage {
		p = append(p, fmt.Sprintf("page %d: want 1 to %d", c.Page, MaxPage))
	}
	if c.MaxDocsPerSecond < 0 {
		p = append(p, fmt.Sprintf("max docs per second %v: must not be negative", c.MaxDocsPerSecond))
	}
	if len(p) > 0 {
		return fmt.Errorf("migrate: backfill config: %s", joinProblems(p))
	}
	return nil
}

// The words of a backfill's figures, in its report, its log, its
// progress and reshard status:
//
//   - checkpointed: a document whose write was acknowledged and recorded
//     in its slice's checkpoint; the figures over the whole migration are
//     of checkpointed documents.
//   - copied: a checkpointed document written to the target.
//   - stale: a checkpointed document the target refused because it
//     already held as new a version (a live write came first).
//
// checkpointed = copied + stale.

// BackfillProgress is a snapshot of a running backfill.
type BackfillProgress struct {
	// Docs is the number of documents checkpointed over the whole
	// migration; Copied and Stale split it (BackfillTotals.Counted).
	Docs   int64
	Copied int64
	Stale  int64
	// Counted: Copied + Stale = Docs. False when a slice was
	// checkpointed by a job that did not count them.
	Counted bool
	// Total is the number of documents in the source when this run began.
	Total int64
	// Read is the number of documents this run read (checkpointed or not
	// yet).
	Read int64
	// Rate is the documents this run checkpointed per second; 0 until it
	// has checkpointed any (nothing measured yet).
	Rate float64
	// ETA is the time left at Rate (0 when unknown).
	ETA time.Duration
	// Slices are the slices' checkpoints.
	Slices []schema.SliceState
	// Done is set on the last report.
	Done bool
}

// BackfillTotals are a backfill's figures over the whole migration, from
// its checkpoints (the words: see BackfillProgress).
type BackfillTotals struct {
	Checkpointed int64 `json:"checkpointed"`
	Copied       int64 `json:"copied"`
	Stale        int64 `json:"stale"`
	// Counted: Copied + Stale = Checkpointed. False when a slice was
	// checkpointed by a job that did not count them: then only
	// Checkpointed is known.
	Counted    bool `json:"counted"`
	SlicesDone int  `json:"slices_done"`
	Slices     int  `json:"slices"`
}

// backfillTotals sums the slices' checkpoints and counts. The split is
// known only when every slice's Copied + Stale is its Docs.
func backfillTotals(ss []schema.SliceState) BackfillTotals {
	t := BackfillTotals{Slices: len(ss), Counted: true}
	for _, s := range ss {
		t.Checkpointed += s.Docs
		if s.Done {
			t.SlicesDone++
		}
		if t.Counted {
			t.Copied += s.Copied
			t.Stale += s.Stale
			t.Counted = s.Copied+s.Stale == s.Docs
		}
	}
	if !t.Counted {
		t.Copied, t.Stale = 0, 0
	}
	return t
}

// BackfillReport is what a backfill run did.
type BackfillReport struct {
	// Read, Copied and Stale are this run's documents read, copied, and
	// stale (see BackfillProgress for the words).
	Read   int64 `json:"read"`
	Copied int64 `json:"copied"`
	Stale  int64 `json:"stale"`
	// Docs is the number checkpointed over the migration
	// (Totals.Checkpointed).
	Docs int64 `json:"docs"`
	// Totals are the figures over the migration.
	Totals  BackfillTotals      `json:"totals"`
	Elapsed time.Duration       `json:"elapsed_ns"`
	Slices  []schema.SliceState `json:"slices"`
	// Already is set when the backfill had finished before this run.
	Already bool `json:"already"`
}

// Backfill copies the source into the target, resuming from the
// checkpoints. Phase backfilling while it runs, backfilled at the end.
func (m *Migrator) Backfill(ctx context.Context, cfg BackfillConfig) (*BackfillReport, error) {
	ctx = m.withStep(ctx, StepBackfill)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	rec, err := m.store.Load(ctx)
	if err != nil {
		return nil, err
	}
	mig := &rec.Migration
	// A restart starts from the phase a backfill leaves too (backfilled),
	// and from no later one.
	t := rule(StepBackfill)
	startable := func(p schema.Phase) bool { return t.starts(p) || cfg.Restart && p == t.to }
	switch {
	case startable(mig.Phase):
	case t.accepts(mig.Phase) && !cfg.Restart:
		t := backfillTotals(mig.Backfill)
		return &BackfillReport{Already: true, Docs: t.Checkpointed, Totals: t, Slices: mig.Backfill}, nil
	default:
		return nil, t.refuse(m.cfg.Alias, mig.Phase, false)
	}
	srcMap, err := sideMap(mig.Source)
	if err != nil {
		return nil, err
	}
	tgtMap, err := sideMap(mig.Target)
	if err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults(srcMap.NumShards())
	if cfg.Slices > srcMap.NumShards() {
		n := srcMap.NumShards()
		shards := fmt.Sprintf("%d shards", n)
		if n == 1 {
			shards = "1 shard"
		}
		return nil, fmt.Errorf("migrate: backfill: slices %d: want 0 to %d (a slice reads one source shard, and the source has %s)", cfg.Slices, n, shards)
	}
	if err := m.checkIndexMap(ctx, mig.Target.Index, mig.Target.MapHash); err != nil {
		return nil, err
	}
	// Copying before every live instance writes both indexes would miss
	// the changes of the one that does not.
	if _, err := m.awaitAcks(ctx, "dual writes", writesBoth(mig), cfg.Ack); err != nil {
		// The error says "migrate:" and what was waited for already.
		return nil, fmt.Errorf("%w (the backfill copies nothing until they do)", err)
	}
	rec, err = m.store.Update(ctx, func(x *schema.Migration) error {
		if !startable(x.Phase) {
			return t.refuse(m.cfg.Alias, x.Phase, true)
		}
		x.Phase = t.running
		if len(x.Backfill) != srcMap.NumShards() || cfg.Restart {
			x.Backfill = make([]schema.SliceState, srcMap.NumShards())
			for i := range x.Backfill {
				x.Backfill[i] = schema.SliceState{Slice: i, SourceShard: i}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	mig = &rec.Migration
	m.met.setPhase(mig.Phase)

	b := &backfill{m: m, cfg: cfg, mig: mig, tgtMap: tgtMap, searcher: m.searcher(), start: time.Now()}
	if err := b.prepare(ctx); err != nil {
		return nil, err
	}
	runErr := b.run(ctx)
	rep := b.report()
	if runErr != nil {
		return rep, runErr
	}
	rec, err = m.store.setPhase(ctx, StepBackfill, t.to, t.running)
	if err != nil {
		return rep, err
	}
	m.met.setPhase(rec.Migration.Phase)
	m.log.Info("backfill finished", "step", StepBackfill, "checkpointed", rep.Totals.Checkpointed, "copied", rep.Totals.Copied, "stale", rep.Totals.Stale,
		"run_read", rep.Read, "run_copied", rep.Copied, "run_stale", rep.Stale, "elapsed", rep.Elapsed.Round(time.Millisecond))
	return rep, nil
}

func sliceDocs(ss []schema.SliceState) int64 {
	var n int64
	for _, s := range ss {
		n += s.Docs
	}
	return n
}

// searcher is what the backfill and the verification read through.
func (m *Migrator) searcher() Searcher {
	if m.search != nil {
		return m.search
	}
	return m.admin
}

// backfill is one run of the copy.
type backfill struct {
	m        *Migrator
	cfg      BackfillConfig
	mig      *schema.Migration
	tgtMap   *router.Map
	searcher Searcher
	bucket   *tokenBucket
	start    time.Time
	total    int64

	read, copied, stale atomic.Int64

	mu     sync.Mutex
	slices []schema.SliceState // latest checkpoints, by slice
	// startDocs were checkpointed before this run: the rate is of the
	// documents checkpointed since.
	startDocs int64
}

// prepare counts the source and refreshes it, so that the scan sees every
// document written before dual writes began.
func (b *backfill) prepare(ctx context.Context) error {
	if b.bucket = newTokenBucket(b.cfg.MaxDocsPerSecond, float64(b.cfg.Page)); b.bucket != nil {
		b.bucket.now, b.bucket.sleep = b.m.clock.Now, b.m.clock.Sleep
	}
	b.slices = append([]schema.SliceState(nil), b.mig.Backfill...)
	b.startDocs = sliceDocs(b.slices)
	src := b.mig.Source.Index
	if err := retryRead(ctx, "refresh "+src, func() error { return b.searcher.Refresh(ctx, src) }); err != nil {
		return fmt.Errorf("migrate: backfill: refresh %s: %w", src, err)
	}
	var total int64
	err := retryRead(ctx, "count "+src, func() (err error) {
		total, err = b.searcher.Count(ctx, src, nil, bulk.SearchParams{})
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate: backfill: count %s: %w", src, err)
	}
	b.total = total
	return nil
}

// run copies every slice that is not done, cfg.Slices at a time. The
// first failure stops the others (each at a checkpoint).
func (b *backfill) run(ctx context.Context) error {
	todo := make(chan schema.SliceState, len(b.slices))
	for _, s := range b.slices {
		if !s.Done {
			todo <- s
		}
	}
	close(todo)
	b.m.log.Info("backfill started", "step", StepBackfill, "source", b.mig.Source.Index, "index", b.mig.Target.Index,
		"slices", len(b.slices), "parallel", b.cfg.Slices, "docs", b.total, "page", b.cfg.Page)

	stopProgress := b.startProgress()
	defer stopProgress()

	g, gctx := errgroup.WithContext(ctx)
	for range b.cfg.Slices {
		g.Go(func() error {
			for s := range todo {
				if err := b.copySlice(gctx, s); err != nil {
					return err
				}
			}
			return nil
		})
	}
	return g.Wait()
}

// checkpointTimeout bounds a checkpoint's write once begun.
const checkpointTimeout = 30 * time.Second

// checkpoint stores a slice's progress. It refuses if the migration has
// left phase backfilling meanwhile (another operator cancelled it).
//
// A checkpoint once begun is finished even when ctx ends: a write the
// client abandons may still be applied by the server later, after the
// job has returned and another has read the migration, so that two jobs
// would disagree about where the slice stands. Finishing it (within
// checkpointTimeout) means that when the job returns, the stored
// checkpoints are the ones it reports.
func (b *backfill) checkpoint(ctx context.Context, st schema.SliceState) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), checkpointTimeout)
	defer cancel()
	_, err := b.m.store.Update(ctx, func(x *schema.Migration) error {
		if t := rule(StepBackfill); x.Phase != t.running {
			return t.refuse(b.m.cfg.Alias, x.Phase, true)
		}
		if st.Slice >= len(x.Backfill) {
			return fmt.Errorf("migrate: backfill: the migration has %d slices, not %d", len(x.Backfill), st.Slice+1)
		}
		cur := x.Backfill[st.Slice]
		// Two jobs on one slice: keep the one further ahead (both copied
		// everything up to their own checkpoint).
		if cur.Done || (cur.After > st.After && !st.Done) {
			return errUnchanged
		}
		x.Backfill[st.Slice] = st
		return nil
	})
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.slices[st.Slice] = st
	b.mu.Unlock()
	return nil
}

// report summarises the run.
func (b *backfill) report() *BackfillReport {
	b.mu.Lock()
	defer b.mu.Unlock()
	ss := append([]schema.SliceState(nil), b.slices...)
	t := backfillTotals(ss)
	return &BackfillReport{
		Read: b.read.Load(), Copied: b.copied.Load(), Stale: b.stale.Load(),
		Docs: t.Checkpointed, Totals: t, Elapsed: time.Since(b.start), Slices: ss,
	}
}

// progress is a snapshot for cfg.Progress. Its figures are all of
// checkpointed documents, the rate too: the documents this run has
// checkpointed over its time so far, none until it has checkpointed one.
func (b *backfill) progress(done bool) BackfillProgress {
	r := b.report()
	p := BackfillProgress{Docs: r.Docs, Copied: r.Totals.Copied, Stale: r.Totals.Stale, Counted: r.Totals.Counted,
		Total: b.total, Read: r.Read, Slices: r.Slices, Done: done}
	if n, s := r.Docs-b.startDocs, r.Elapsed.Seconds(); n > 0 && s > 0 {
		p.Rate = float64(n) / s
	}
	if p.Rate > 0 && p.Total > p.Docs {
		p.ETA = time.Duration(float64(p.Total-p.Docs) / p.Rate * float64(time.Second))
	}
	return p
}

// startProgress reports progress every interval until the returned
// function is called, which reports once more and waits for the
// reporter.
func (b *backfill) startProgress() func() {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(b.cfg.ProgressInterval)
		defer t.Stop()
		for {
			select {
			case <-stop:
				b.emit(b.progress(true))
				return
			case <-t.C:
				b.emit(b.progress(false))
			}
		}
	}()
	return func() {
		close(stop)
		<-done
	}
}

func (b *backfill) emit(p BackfillProgress) {
	if b.cfg.Progress != nil {
		b.cfg.Progress(p)
		return
	}
	b.m.log.Info("backfill progress", ProgressAttrs(p)...)
}

// ProgressAttrs are the attributes of a "backfill progress" log record:
// the figures over the migration (checkpointed, and when counted copied
// and stale), the source's total and this run's read; the rate and the
// time left only once measured.
func ProgressAttrs(p BackfillProgress) []any {
	done := 0
	for _, s := range p.Slices {
		if s.Done {
			done++
		}
	}
	a := []any{"step", StepBackfill, "checkpointed", p.Docs}
	if p.Counted {
		a = append(a, "copied", p.Copied, "stale", p.Stale)
	}
	a = append(a, "total", p.Total, "read", p.Read)
	if p.Rate > 0 {
		a = append(a, "docs_per_second", int64(p.Rate))
	}
	if p.ETA > 0 {
		a = append(a, "eta", p.ETA.Round(time.Second).String())
	}
	return append(a, "slices_done", done, "slices", len(p.Slices), "done", p.Done)
}

// pageRequest is the search of one page of a slice: the documents after
// the doc_id after, in doc_id order.
func pageRequest(size int, after string) []byte {
	b := make([]byte, 0, 128+len(after))
	b = append(b, `{"size":`...)
	b = strconv.AppendInt(b, int64(size), 10)
	b = append(b, `,"track_total_hits":false,"sort":[{"`+schema.FieldDocID+`":"asc"}]`...)
	if after != "" {
		a, _ := json.Marshal([]string{after})
		b = append(b, `,"search_after":`...)
		b = append(b, a...)
	}
	return append(b, '}')
}
