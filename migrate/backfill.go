package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
//
// A process copies Slices slices at a time, each copier claiming a slice
// by its lease in the stored state (lease.go), exactly as Slices separate
// processes would: so several processes (the pods of an Indexed Job) can
// share one backfill, each taking over the slices of any that dies. A
// process returns once every slice is done, waiting meanwhile for the
// slices that others hold.

// Searcher reads documents and counts; *bulk.Admin is one.
type Searcher interface {
	Search(ctx context.Context, index string, body []byte, p bulk.SearchParams) (*bulk.Page, error)
	Count(ctx context.Context, index string, query json.RawMessage, p bulk.SearchParams) (int64, error)
	Refresh(ctx context.Context, index string) error
}

var _ Searcher = (*bulk.Admin)(nil)

// BackfillConfig configures Backfill.
type BackfillConfig struct {
	// Slices is how many source shards this process copies at once.
	// Default, and maximum, the number of source shards (one slice per
	// shard). Workers sharing the backfill each copy Slices at once.
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
	// Worker names this process in the slices' leases (and in reshard
	// status). Default DefaultWorker(): the host name and the process id.
	// Two live processes must not share a name.
	Worker string
	// Lease is how long a slice's lease lasts unless renewed: how long
	// the slices of a killed worker wait before another worker takes them
	// over. The holder renews it with every checkpoint, and every Lease/3
	// while a page takes longer. MinLease to MaxLease; default
	// DefaultLease (30s).
	Lease time.Duration
}

// Defaults and bounds of BackfillConfig.
const (
	DefaultPage             = 1000
	MaxPage                 = 10000
	DefaultProgressInterval = 2 * time.Second
	maxWorker               = 253
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
	if c.Worker == "" {
		c.Worker = DefaultWorker()
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
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
	if c.Lease != 0 && (c.Lease < MinLease || c.Lease > MaxLease) {
		p = append(p, fmt.Sprintf("lease %v: want %v to %v", c.Lease, MinLease, MaxLease))
	}
	if len(c.Worker) > maxWorker {
		p = append(p, fmt.Sprintf("worker %.20q…: want at most %d bytes", c.Worker, maxWorker))
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
	// Other workers may be claiming and checkpointing slices meanwhile:
	// their writes of the document are not a second operator's, so a
	// conflict with them is retried as theirs are (UpdateContended).
	rec, err = m.store.UpdateContended(ctx, func(x *schema.Migration) error {
		if !startable(x.Phase) {
			return t.refuse(m.cfg.Alias, x.Phase, true)
		}
		if cfg.Restart {
			// Forgetting the checkpoints under a live worker would have it
			// go on from its own, behind the restart's back.
			now := m.cfg.Now()
			for _, s := range x.Backfill {
				if s.Leased(now) {
					return fmt.Errorf("migrate: backfill: restart: worker %s holds slice %d until %s; stop every other backfill worker first, and wait for its leases to expire",
						s.Owner, s.Slice, s.LeaseUntil.UTC().Format(time.RFC3339))
				}
			}
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

	b := &backfill{m: m, cfg: cfg, mig: mig, tgtMap: tgtMap, searcher: m.searcher(), start: time.Now(),
		leases:  &leaser{store: m.store, alias: m.cfg.Alias, worker: cfg.Worker, ttl: cfg.Lease, now: m.cfg.Now},
		holding: map[int]bool{}}
	b.observe(rec)
	if err := b.prepare(ctx); err != nil {
		return nil, err
	}
	if runErr := b.run(ctx); runErr != nil {
		return b.report(), runErr
	}
	// Every slice is done. The worker that sees it first moves the phase;
	// the others find it moved (on, perhaps, by a verification since),
	// through the checkpoints of those still writing theirs.
	rec, err = m.store.UpdateContended(ctx, func(x *schema.Migration) error {
		switch {
		case x.Phase == t.running:
			x.Phase = t.to
			return nil
		case t.accepts(x.Phase) && !t.starts(x.Phase):
			return errUnchanged
		}
		return t.refuse(m.cfg.Alias, x.Phase, true)
	})
	if err != nil {
		return b.report(), err
	}
	b.observe(rec)
	rep := b.report()
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
	leases   *leaser

	read, copied, stale atomic.Int64

	mu sync.Mutex
	// slices are the checkpoints of every worker, as of the latest
	// migration document this run wrote or read: its primary term and
	// seqNo.
	slices      []schema.SliceState
	term, seqNo int64
	// holding are the slices this process's copiers hold.
	holding map[int]bool
	// startDocs were checkpointed before this run: the rate is of the
	// documents checkpointed since.
	startDocs int64
}

// observe takes the slices of rec, unless the run has seen a later
// version of the document already (copiers write concurrently).
func (b *backfill) observe(rec *record) {
	if rec == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if rec.PrimaryTerm < b.term || rec.PrimaryTerm == b.term && rec.SeqNo < b.seqNo {
		return
	}
	b.term, b.seqNo = rec.PrimaryTerm, rec.SeqNo
	b.slices = append([]schema.SliceState(nil), rec.Migration.Backfill...)
}

// held reports whether a copier of this process holds slice i.
func (b *backfill) held(i int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.holding[i]
}

func (b *backfill) setHeld(i int, on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if on {
		b.holding[i] = true
	} else {
		delete(b.holding, i)
	}
}

// othersHold reports the owners of the unfinished slices of rec that this
// process does not hold: none when it holds all that are left.
func (b *backfill) othersHold(rec *record) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var owners []string
	for i, s := range rec.Migration.Backfill {
		if !s.Done && !b.holding[i] && !slices.Contains(owners, s.Owner) {
			owners = append(owners, s.Owner)
		}
	}
	return owners
}

// prepare counts the source and refreshes it, so that the scan sees every
// document written before dual writes began.
func (b *backfill) prepare(ctx context.Context) error {
	if b.bucket = newTokenBucket(b.cfg.MaxDocsPerSecond, float64(b.cfg.Page)); b.bucket != nil {
		b.bucket.now, b.bucket.sleep = b.m.clock.Now, b.m.clock.Sleep
	}
	b.startDocs = sliceDocs(b.mig.Backfill)
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

// run starts cfg.Slices copiers and returns once every slice is done. The
// first failure stops the others (each at a checkpoint).
func (b *backfill) run(ctx context.Context) error {
	b.m.log.Info("backfill started", "step", StepBackfill, "source", b.mig.Source.Index, "index", b.mig.Target.Index,
		"slices", len(b.mig.Backfill), "parallel", b.cfg.Slices, "docs", b.total, "page", b.cfg.Page,
		"worker", b.cfg.Worker, "lease", b.cfg.Lease)

	stopProgress := b.startProgress()
	defer stopProgress()

	g, gctx := errgroup.WithContext(ctx)
	for range b.cfg.Slices {
		g.Go(func() error { return b.copier(gctx) })
	}
	return g.Wait()
}

// copier claims a slice, copies it, and claims the next, until every
// slice is done. When none can be claimed and other workers hold some, it
// waits for them (re-reading the state every Config.PollInterval), ready
// to take over any whose lease expires; when this process's other
// copiers hold all that are left, it is done; each of them claims again
// when its slice ends.
func (b *backfill) copier(ctx context.Context) error {
	waiting := false
	for {
		c, err := b.leases.claim(ctx, b.held)
		if err != nil {
			return err
		}
		b.observe(c.rec)
		if c.ok {
			waiting = false
			if err := b.copyLeased(ctx, c); err != nil && !isLeaseLost(err) {
				return err
			}
			continue
		}
		if c.done {
			return nil
		}
		owners := b.othersHold(c.rec)
		if len(owners) == 0 {
			return nil
		}
		if !waiting {
			b.m.log.Info("waiting for slices other workers hold", "step", StepBackfill, "worker", b.cfg.Worker, "owners", owners)
			waiting = true
		}
		if err := b.m.clock.Sleep(ctx, b.m.cfg.PollInterval); err != nil {
			return err
		}
	}
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
