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
//	duplicates    with IDs, the ids an index holds on two or more of its
//	              shards (verify_ids.go): their superseded copies are not
//	              counted as documents, so source and target are counts of
//	              distinct ids, and a superseded copy is never also missing
//	              or extra
//
// Duplicates fail the verification: an index that holds a superseded copy
// of a dish answers searches around the dish's former restaurant with a
// dish that is not there, and a cutover would carry the copy over. Repair
// deletes every superseded copy; copies tied at the highest version it
// leaves, since which one is current cannot be told.
//
// Under live writes a count can be caught between a change's two writes,
// so shards that differ are counted again, after a refresh and a pause,
// up to Attempts times; a shard that matched once is done. (With IDs, by
// default once: the next paragraphs.) A shard with a
// copy of a duplicate, current or not, differs: so every shard holding a
// copy of it is checked again together, and the merge sees all of them.
//
// At a high rate of changes a busy shard is caught between two writes of
// some change nearly every time it is read. So with IDs the missing,
// extra and duplicated ids of the shards that still differ after the
// attempts are suspects, reported only once confirmed by real-time reads
// made before and after every live ingest instance has finished the
// changes in flight when they were seen (suspects.go); the others
// resolved in flight, and are counted as such.

// VerifyConfig configures Verify.
type VerifyConfig struct {
	// IDs also compares the document ids of every range.
	IDs bool
	// Attempts is how many times a shard that differs is checked.
	// Default 5, and 1 with IDs: the differences an id comparison lists
	// are confirmed one by one instead (suspects.go), and a pass of the
	// seed's 55 million ids is the best part of an hour.
	Attempts int
	// Pause is the wait between attempts. Default 2s.
	Pause time.Duration
	// MaxIDs caps each list of missing, extra and duplicated ids per shard
	// (the counts stay exact). Default 100.
	MaxIDs int
	// Parallel is the number of shards counted at once, and of the id
	// comparison's page reads in flight. Default 4.
	Parallel int
	// MaxSuspects bounds, with IDs, the differences of one comparison
	// that are read again before they are reported, some 200 bytes and
	// two real-time reads each; those past it are reported unconfirmed
	// (suspects.go). Default 20,000.
	MaxSuspects int
	// Settle bounds the wait, with IDs, for the ingest instances to
	// finish the changes in flight when a difference was seen, before it
	// is reported (suspects.go). Default 2m.
	Settle time.Duration
	// LiveWindow: an ingest instance is waited for while its last
	// heartbeat is at most this old. Default DefaultLiveWindow.
	LiveWindow time.Duration

	idPage int // hits an id stream reads at a time: idPage, fewer in tests
}

// Defaults of VerifyConfig.
const (
	DefaultAttempts = 5
	// DefaultIDAttempts is Attempts's default with IDs.
	DefaultIDAttempts = 1
	DefaultPause      = 2 * time.Second
	DefaultMaxIDs     = 100
	// DefaultMaxSuspects is VerifyConfig.MaxSuspects's default.
	DefaultMaxSuspects = 20000
	DefaultSettle      = 2 * time.Minute
)

// withDefaults fills every zero field with its default; a negative Pause
// is none.
func (c VerifyConfig) withDefaults() VerifyConfig {
	if c.Attempts <= 0 {
		c.Attempts = DefaultAttempts
		if c.IDs {
			c.Attempts = DefaultIDAttempts
		}
	}
	if c.Pause < 0 {
		c.Pause = 0
	} else if c.Pause == 0 {
		c.Pause = DefaultPause
	}
	if c.MaxIDs <= 0 {
		c.MaxIDs = DefaultMaxIDs
	}
	if c.MaxSuspects <= 0 {
		c.MaxSuspects = DefaultMaxSuspects
	}
	if c.Parallel <= 0 {
		c.Parallel = 4
	}
	if c.Settle <= 0 {
		c.Settle = DefaultSettle
	}
	if c.LiveWindow <= 0 {
		c.LiveWindow = DefaultLiveWindow
	}
	if c.idPage <= 0 {
		c.idPage = idPage
	}
	return c
}

// Verify compares the target with the source, stores the report in the
// migration and moves it to phase verified if every shard matched. A
// mismatch returns the report and an error wrapping ErrMismatch (and a
// verified migration goes back to backfilled: cutover needs the last
// verification to have passed). After cutover it only reports.
func (m *Migrator) Verify(ctx context.Context, cfg VerifyConfig) (*schema.Verification, error) {
	ctx = m.withStep(ctx, StepVerify)
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
	v, err := newVerifier(m.searcher(), mig, cfg)
	if err != nil {
		return nil, err
	}
	reports := make([]schema.ShardReport, v.tgtMap.NumShards())
	pending := make([]int, v.tgtMap.NumShards())
	for i := range pending {
		pending[i] = i
	}
	// dups are the duplicates the last pass counted. Every shard with a
	// copy of one differs, so the last pass read every shard that has one.
	var dups dupCounts
	for attempt := 1; len(pending) > 0; attempt++ {
		if err := v.refresh(ctx); err != nil {
			return nil, err
		}
		if dups, err = v.check(ctx, pending, reports); err != nil {
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
	// The differences the last comparison listed are suspects until
	// confirmed: those that were changes in flight leave the report.
	var resolved int64
	if cfg.IDs && len(pending) > 0 {
		if resolved, err = v.settle(ctx, m, reports, &dups); err != nil {
			return nil, err
		}
		var still []int
		for _, i := range pending {
			if r := &reports[i]; r.OutOfRange == 0 && r.Missing == 0 && r.Extra == 0 &&
				r.SourceDuplicates == 0 && r.TargetDuplicates == 0 {
				r.OK = true
			} else {
				still = append(still, i)
			}
		}
		pending = still
	}
	ver := &schema.Verification{At: m.cfg.Now().UTC(), OK: len(pending) == 0, IDs: cfg.IDs, Shards: reports,
		SourceDuplicates: dups[inSource], TargetDuplicates: dups[inTarget], ResolvedInFlight: resolved}
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
	m.log.Info("verification done", "step", StepVerify, "ok", ver.OK, "ids", cfg.IDs, "shards_differing", len(pending),
		"source_duplicates", ver.SourceDuplicates, "target_duplicates", ver.TargetDuplicates,
		"resolved_in_flight", ver.ResolvedInFlight, "phase", rec.Migration.Phase)
	if !ver.OK {
		return ver, mismatch(len(pending), len(reports), dups)
	}
	return ver, nil
}

// mismatch is Verify's error: how many shards differ, and what repair
// does about the duplicates among the differences.
func mismatch(differ, shards int, dups dupCounts) error {
	err := fmt.Errorf("migrate: verify: %w on %d of %d shards", ErrMismatch, differ, shards)
	if dups[inSource]+dups[inTarget] == 0 {
		return err
	}
	return fmt.Errorf("%w; %d ids are stored on two or more shards of the source and %d of the target, "+
		"and an index holding superseded copies fails verification: reshard repair deletes every copy older than its id's newest "+
		"(copies tied at the newest version it leaves for you to delete)", err, dups[inSource], dups[inTarget])
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
	srcMap *router.Map // routes the source copy of an extra id (suspects.go)
	// srcShard names the source's shards by their routing keys, for the
	// copies of duplicates the source holds.
	srcShard map[string]string
	// suspects are the differences the last id comparison counted, and
	// unconfirmed those it counted past MaxSuspects (suspects.go).
	suspects    []*suspect
	unconfirmed int64
}

func newVerifier(s Searcher, mig *schema.Migration, cfg VerifyConfig) (*verifier, error) {
	tgtMap, err := sideMap(mig.Target)
	if err != nil {
		return nil, err
	}
	srcMap, err := sideMap(mig.Source)
	if err != nil {
		return nil, err
	}
	return &verifier{s: s, mig: mig, tgtMap: tgtMap, cfg: cfg, srcMap: srcMap, srcShard: shardsByRouting(srcMap)}, nil
}

// shardsByRouting names a map's shards by their routing keys.
func shardsByRouting(m *router.Map) map[string]string {
	out := make(map[string]string, m.NumShards())
	for _, s := range m.Shards() {
		out[s.Routing] = s.Name
	}
	return out
}

func (v *verifier) refresh(ctx context.Context) error {
	for _, index := range []string{v.mig.Source.Index, v.mig.Target.Index} {
		if err := retryRead(ctx, "refresh "+index, func() error { return v.s.Refresh(ctx, index) }); err != nil {
			return fmt.Errorf("migrate: verify: refresh %s: %w", index, err)
		}
	}
	return nil
}

// check checks the shards rows once: their counts, shards in parallel,
// then, with IDs, their ids in one merged scan. It replaces their reports
// and returns the duplicates the scan counted.
func (v *verifier) check(ctx context.Context, rows []int, reports []schema.ShardReport) (dupCounts, error) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(v.cfg.Parallel)
	for _, i := range rows {
		g.Go(func() error {
			r, err := v.counts(gctx, i)
			reports[i] = r
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return dupCounts{}, err
	}
	var dups dupCounts
	if v.cfg.IDs {
		var err error
		if dups, err = v.compareIDs(ctx, rows, reports); err != nil {
			return dups, fmt.Errorf("migrate: verify: %w", err)
		}
	}
	for _, i := range rows {
		r := &reports[i]
		if !v.cfg.IDs {
			in := r.Target - r.OutOfRange
			r.Missing, r.Extra = max(0, r.Source-in), max(0, in-r.Source)
		}
		r.OK = r.Source == r.Target && r.OutOfRange == 0 && r.Missing == 0 && r.Extra == 0 &&
			r.SourceDuplicates == 0 && r.TargetDuplicates == 0
	}
	return dups, nil
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

// onShard targets target shard i.
func onShard(i int) bulk.SearchParams {
	return bulk.SearchParams{Preference: "_shards:" + strconv.Itoa(i)}
}

// counts counts target shard i's documents out of its range and, without
// IDs, the documents in its range of the source and on it: with IDs the
// id comparison counts those, each id once.
func (v *verifier) counts(ctx context.Context, i int) (schema.ShardReport, error) {
	r := schema.ShardReport{Shard: v.tgtMap.Shard(i).Name}
	inRange := RangeQuery(v.tgtMap, i)
	outOfRange, _ := json.Marshal(map[string]any{"bool": map[string]any{"must_not": []json.RawMessage{inRange}}})
	type count struct {
		index string
		query json.RawMessage
		p     bulk.SearchParams
		out   *int64
	}
	cs := []count{{v.mig.Target.Index, outOfRange, onShard(i), &r.OutOfRange}}
	if !v.cfg.IDs {
		cs = append(cs, count{v.mig.Source.Index, inRange, bulk.SearchParams{}, &r.Source}, count{v.mig.Target.Index, nil, onShard(i), &r.Target})
	}
	for _, c := range cs {
		err := retryRead(ctx, "count "+c.index, func() error {
			n, err := v.s.Count(ctx, c.index, c.query, c.p)
			*c.out = n
			return err
		})
		if err != nil {
			return r, fmt.Errorf("migrate: verify shard %s: count %s: %w", r.Shard, c.index, err)
		}
	}
	return r, nil
}
