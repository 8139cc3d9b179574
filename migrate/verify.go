package migrate

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// Verification compares the source and the target range by range. Target
// shard i owns the cells from its start token up to the next shard's
// start. All cell tokens of one level have the same length (a level-L
// cell id ends in the bit 2·(30−L) and its token is the id in hex without
// trailing zeros), and lower-case hex digits sort as their values, so the
// string order of tokens is the numeric order of cells: a keyword range
// on geo_cell with gte start_i and lt start_{i+1} holds exactly the
// documents of shard i's cells (TestTokenRangesAreExact checks it).
//
// For every target shard:
//
//	source        documents in the source whose geo_cell is in the range
//	target        documents on target shard i (preference=_shards:i)
//	out_of_range  documents on target shard i whose geo_cell is not (misrouted)
//	missing/extra with IDs, the exact ids in the source range and not on
//	              the shard, and on the shard and not in the source range;
//	              without, the difference of the counts (a lower bound)
//
// Under live writes a count can be caught between a change's two writes,
// so shards that differ are counted again, after a refresh and a pause,
// up to Attempts times; a shard that matched once is done.

// VerifyConfig configures Verify.
type VerifyConfig struct {
	// IDs also compares the document ids of every range.
	IDs bool
	// Attempts is how many times a shard that differs is checked again.
	// Default 5.
	Attempts int
	// Pause is the wait between attempts. Default 2s.
	Pause time.Duration
	// MaxIDs caps each list of missing and extra ids per shard (the counts
	// stay exact). Default 100.
	MaxIDs int
	// Parallel is the number of shards checked at once. Default 4.
	Parallel int
}

// Defaults of VerifyConfig.
const (
	DefaultAttempts = 5
	DefaultPause    = 2 * time.Second
	DefaultMaxIDs   = 100
)

// withDefaults fills every zero field with its default; a negative Pause
// is none.
func (c VerifyConfig) withDefaults() VerifyConfig {
	if c.Attempts <= 0 {
		c.Attempts = DefaultAttempts
	}
	if c.Pause < 0 {
		c.Pause = 0
	} else if c.Pause == 0 {
		c.Pause = DefaultPause
	}
	if c.MaxIDs <= 0 {
		c.MaxIDs = DefaultMaxIDs
	}
	if c.Parallel <= 0 {
		c.Parallel = 4
	}
	return c
}

// Verify compares the target with the source, stores the report in the
// migration and moves it to phase verified if every shard matched. A
// mismatch returns the report and an error wrapping ErrMismatch (and a
// verified migration goes back to backfilled: cutover needs the last
// verification to have passed). After cutover it only reports.
func (m *Migrator) Verify(ctx context.Context, cfg VerifyConfig) (*schema.Verification, error) {
	cfg = cfg.withDefaults()
	rec, err := m.store.Load(ctx)
	if err != nil {
		return nil, err
	}
	mig := &rec.Migration
	t := rule(StepVerify)
	if !t.accepts(mig.Phase) {
		return nil, t.refuse(m.cfg.Alias, mig.Phase, false)
	}
	tgtMap, err := sideMap(mig.Target)
	if err != nil {
		return nil, err
	}
	v := &verifier{s: m.searcher(), mig: mig, tgtMap: tgtMap, cfg: cfg}
	reports := make([]schema.ShardReport, tgtMap.NumShards())
	pending := make([]int, tgtMap.NumShards())
	for i := range pending {
		pending[i] = i
	}
	for attempt := 1; len(pending) > 0; attempt++ {
		if err := v.refresh(ctx); err != nil {
			return nil, err
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(cfg.Parallel)
		for _, i := range pending {
			g.Go(func() error {
				r, err := v.shard(gctx, i)
				reports[i] = r
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return nil, err
		}
		var still []int
		for _, i := range pending {
			if !reports[i].OK {
				still = append(still, i)
			}
		}
		pending = still
		if len(pending) == 0 || attempt == cfg.Attempts {
			break
		}
		m.log.Info("shards differ; checking again", "step", StepVerify, "shards", len(pending), "attempt", attempt)
		if err := sleep(ctx, cfg.Pause); err != nil {
			return nil, err
		}
	}
	ver := &schema.Verification{At: m.cfg.Now().UTC(), OK: len(pending) == 0, IDs: cfg.IDs, Shards: reports}
	rec, err = m.store.Update(ctx, func(x *schema.Migration) error {
		if !t.accepts(x.Phase) {
			return t.refuse(m.cfg.Alias, x.Phase, true)
		}
		x.Verification = ver
		switch {
		case ver.OK && t.starts(x.Phase):
			x.Phase = t.to
		case !ver.OK && x.Phase == t.to:
			// Cutover needs the last verification to have passed: back
			// to where the backfill left the migration.
			x.Phase = rule(StepBackfill).to
		}
		return nil
	})
	if err != nil {
		return ver, err
	}
	m.met.setPhase(rec.Migration.Phase)
	m.log.Info("verification done", "step", StepVerify, "ok", ver.OK, "ids", cfg.IDs, "shards_differing", len(pending), "phase", rec.Migration.Phase)
	if !ver.OK {
		return ver, fmt.Errorf("migrate: verify: %w on %d of %d shards", ErrMismatch, len(pending), len(reports))
	}
	return ver, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// verifier checks target shards against source ranges.
type verifier struct {
	s      Searcher
	mig    *schema.Migration
	tgtMap *router.Map
	cfg    VerifyConfig
}

func (v *verifier) refresh(ctx context.Context) error {
	for _, index := range []string{v.mig.Source.Index, v.mig.Target.Index} {
		if err := retryRead(ctx, func() error { return v.s.Refresh(ctx, index) }); err != nil {
			return fmt.Errorf("migrate: verify: refresh %s: %w", index, err)
		}
	}
	return nil
}

// RangeQuery is the query for the documents whose geo_cell falls in
// target shard i's range of m: from its start token (none for the first
// shard) to the next shard's start (none for the last).
func RangeQuery(m *router.Map, i int) json.RawMessage {
	bounds := map[string]string{}
	if i > 0 {
		bounds["gte"] = m.Shard(i).Start
	}
	if i+1 < m.NumShards() {
		bounds["lt"] = m.Shard(i + 1).Start
	}
	var q any = map[string]any{"range": map[string]any{schema.FieldGeoCell: bounds}}
	if len(bounds) == 0 {
		q = map[string]any{"exists": map[string]any{"field": schema.FieldGeoCell}}
	}
	b, _ := json.Marshal(q)
	return b
}

// shard checks target shard i.
func (v *verifier) shard(ctx context.Context, i int) (schema.ShardReport, error) {
	r := schema.ShardReport{Shard: v.tgtMap.Shard(i).Name}
	inRange := RangeQuery(v.tgtMap, i)
	outOfRange, _ := json.Marshal(map[string]any{"bool": map[string]any{"must_not": []json.RawMessage{inRange}}})
	onShard := bulk.SearchParams{Preference: "_shards:" + strconv.Itoa(i)}
	for _, c := range []struct {
		index string
		query json.RawMessage
		p     bulk.SearchParams
		out   *int64
	}{
		{v.mig.Source.Index, inRange, bulk.SearchParams{}, &r.Source},
		{v.mig.Target.Index, nil, onShard, &r.Target},
		{v.mig.Target.Index, outOfRange, onShard, &r.OutOfRange},
	} {
		err := retryRead(ctx, func() error {
			n, err := v.s.Count(ctx, c.index, c.query, c.p)
			*c.out = n
			return err
		})
		if err != nil {
			return r, fmt.Errorf("migrate: verify shard %s: count %s: %w", r.Shard, c.index, err)
		}
	}
	if v.cfg.IDs {
		src := &idStream{s: v.s, index: v.mig.Source.Index, query: inRange}
		tgt := &idStream{s: v.s, index: v.mig.Target.Index, p: onShard}
		if err := v.compareIDs(ctx, &r, src, tgt); err != nil {
			return r, fmt.Errorf("migrate: verify shard %s: %w", r.Shard, err)
		}
	} else {
		in := r.Target - r.OutOfRange
		r.Missing, r.Extra = max(0, r.Source-in), max(0, in-r.Source)
	}
	r.OK = r.Source == r.Target && r.OutOfRange == 0 && r.Missing == 0 && r.Extra == 0
	return r, nil
}

// compareIDs merges the two sorted id streams: an id only in the source
// range is missing from the shard, an id only on the shard is extra.
func (v *verifier) compareIDs(ctx context.Context, r *schema.ShardReport, src, tgt *idStream) error {
	a, aok := src.next(ctx)
	b, bok := tgt.next(ctx)
	for aok || bok {
		switch {
		case aok && (!bok || a < b):
			r.Missing++
			if len(r.MissingIDs) < v.cfg.MaxIDs {
				r.MissingIDs = append(r.MissingIDs, a)
			}
			a, aok = src.next(ctx)
		case bok && (!aok || b < a):
			r.Extra++
			if len(r.ExtraIDs) < v.cfg.MaxIDs {
				r.ExtraIDs = append(r.ExtraIDs, b)
			}
			b, bok = tgt.next(ctx)
		default:
			a, aok = src.next(ctx)
			b, bok = tgt.next(ctx)
		}
	}
	if src.err != nil {
		return src.err
	}
	return tgt.err
}

// idStream reads the doc_ids of a query in order, a page at a time.
type idStream struct {
	s     Searcher
	index string
	query json.RawMessage
	p     bulk.SearchParams

	buf   []string
	after string
	done  bool
	err   error
}

const idPage = 5000

// next returns the next id, or false at the end or on an error (in err).
func (st *idStream) next(ctx context.Context) (string, bool) {
	if len(st.buf) == 0 && !st.done {
		st.fill(ctx)
	}
	if len(st.buf) == 0 {
		return "", false
	}
	id := st.buf[0]
	st.buf = st.buf[1:]
	return id, true
}

func (st *idStream) fill(ctx context.Context) {
	body := map[string]any{
		"size": idPage, "_source": false, "track_total_hits": false,
		"sort": []any{map[string]string{schema.FieldDocID: "asc"}},
	}
	if st.query != nil {
		body["query"] = st.query
	}
	if st.after != "" {
		body["search_after"] = []string{st.after}
	}
	req, _ := json.Marshal(body)
	var pg *bulk.Page
	st.err = retryRead(ctx, func() error {
		var err error
		pg, err = st.s.Search(ctx, st.index, req, st.p)
		return err
	})
	if st.err != nil {
		st.done = true
		return
	}
	for _, h := range pg.Hits {
		id, err := sortAfter(h)
		if err != nil {
			st.err, st.done = err, true
			return
		}
		st.buf = append(st.buf, id)
	}
	if len(st.buf) > 0 {
		st.after = st.buf[len(st.buf)-1]
	}
	st.done = len(pg.Hits) < idPage
}
