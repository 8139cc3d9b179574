package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/pipeline/health"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// A reshard migration moves the alias from a source index to a target
// index built with another map. Its state is a document in
// schema.MigrationsIndex that the migration job writes; the pipeline reads
// it every Config.MigrationPollInterval (a real-time GET; a missing index
// or document means no migration) and writes what it applied in its own
// heartbeat document. That is the whole contract (schema/migration.go).
//
// # What is written where
//
//   - No migration, or a phase without dual writes (created, completed,
//     cancelled): one target, the alias's write index and the map in its
//     _meta, re-read every MapCheckInterval, exactly as without
//     migrations. After completed the alias points at the new index,
//     after cancelled at the old one.
//   - A phase with dual writes (dual_writes to cut_over, and
//     rolled_back): two targets, the source and the target, each with
//     the map the migration document holds for it. A map is used only if
//     it parses, hashes to the document's map_hash, and is the map the
//     index itself recorded in its _meta; otherwise the phase is not
//     applied (the writes go on as they were, and the heartbeat says so).
//     Nor is a phase this pipeline does not know: guessing could leave an
//     index without the changes it needs.
//     The primary, first in the list, is the target when the phase's
//     TargetIsPrimary (cut_over), else the source. The directory is read
//     from the primary; the alias is only compared with it (the job moves
//     the alias and the phase in two steps, and the document decides).
//
// Every change goes to every target, routed from the restaurant's cell
// under that target's map, so a dish shares its restaurant's shard in
// both. Which index an event's write goes to first, what the other
// mirrors, and the exceptions that let a redelivery repair an event cut
// short between the two are the dual-write rules (doc.go). An event is finished, and its offset may be
// committed, only when both sides are settled: its writes to every
// target acknowledged, or mirrored from the source's outcome. A restaurant move or
// delete runs its steps per target: a location change can change the
// geoshard under one map and not under the other. The directory of
// restaurant cells serves both: cells do not depend on a map (a warmed
// restaurant enters it with its location's leaf cell). How an event cut
// short between the two indexes is repaired by its redelivery is told in
// indexer_moves.go (Dual writes).
//
// An index that refuses writes (a write block, or a missing index) stops
// the pipeline with ErrIndexUnwritable instead of dead-lettering the
// events: a blocked target would otherwise lose, for good, every change
// the other index got. The events are not finished, their offsets not
// committed; the next start (after the block is lifted, or with the state
// that says the index is gone) writes them again.
//
// # Switching
//
// When the state asks for another mode (a new phase, or another write
// index of the alias), the processing goroutine waits until nothing is in
// flight (indexer.go), so every write made under the old targets is
// acknowledged, then writes
// under the new targets, and logs it. Only then does the heartbeat report
// the new phase: the job, which waits for every live instance to report a
// phase before it goes on, never sees a phase reported that is not
// applied. The heartbeat is written every poll, also while a switch is
// pending or the state cannot be read (it then reports the phase still
// applied), and right after each switch. A restart comes up in the right
// mode: Run reads the state, retrying, before it consumes anything.
//
// # The map pin
//
// Config.MapHash pins the map of the primary target: the source's before
// cutover (and after a rollback), the target's from cutover on, and after
// the migration the map of the alias's write index, as always. The other
// side of dual writes is not pinned: its map differs by design. A state
// that would make the primary's map differ from the pin stops the
// pipeline with a *MapMismatchError, at start or at the switch; an
// operator who pins the map re-pins it to the new map at cutover.

// mode is how the pipeline writes: its targets, the primary first, and
// the migration phase they come from.
type mode struct {
	migID   string
	phase   schema.Phase // "" without a migration
	targets []target
}

// phaseLabel is the phase's metric label: "none" without a migration.
func (m mode) phaseLabel() string {
	if m.phase == "" {
		return phaseNone
	}
	return string(m.phase)
}

func (m mode) indexes() []string {
	out := make([]string, len(m.targets))
	for i, t := range m.targets {
		out[i] = t.index
	}
	return out
}

// same reports whether two modes write alike: same migration and phase,
// same indexes and maps in the same order.
func (m mode) same(o mode) bool {
	if m.migID != o.migID || m.phase != o.phase || len(m.targets) != len(o.targets) {
		return false
	}
	for i := range m.targets {
		if m.targets[i].index != o.targets[i].index || m.targets[i].m.Hash() != o.targets[i].m.Hash() {
			return false
		}
	}
	return true
}

func (m mode) info() []TargetInfo {
	out := make([]TargetInfo, len(m.targets))
	for i, t := range m.targets {
		out[i] = TargetInfo{Index: t.index, MapHash: t.m.Hash(), Role: t.role.String()}
	}
	return out
}

const phaseNone = "none"

// modes follows the migration state and the alias, hands the write mode
// they ask for to the processing loop, which applies it between events
// (apply), and writes the heartbeat that says which phase this instance
// applies (modes_heartbeat.go).
type modes struct {
	cfg   Config
	log   *slog.Logger
	admin *bulk.Admin
	met   *metrics
	fail  func(error)
	// health says what the instance is doing, for the heartbeat (nil:
	// nothing is said).
	health func() health.Health
	// progress is the heartbeat's progress epoch (nil: none is said).
	progress *progress
	// wake tells the loop that a new mode is wanted; it applies it between
	// events, then signals applied, which makes the watcher write the
	// heartbeat.
	wake, applied chan struct{}

	mu     sync.Mutex // guards cur and wanted
	cur    mode       // the mode writes use (the indexer's targets are cur.targets)
	wanted *mode      // a mode requested and not applied yet

	polled, lastBeat atomic.Int64 // unix nanoseconds
	hbIndexReady     atomic.Bool
}

func newModes(cfg Config, log *slog.Logger, admin *bulk.Admin, met *metrics, fail func(error)) *modes {
	return &modes{cfg: cfg, log: log, admin: admin, met: met, fail: fail,
		wake: make(chan struct{}, 1), applied: make(chan struct{}, 1)}
}

// current is the mode writes use.
func (ms *modes) current() mode {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	return ms.cur
}

// errBadMigration marks a migration document that cannot be applied as
// it is; reading it again does not help until the job rewrites it.
var errBadMigration = errors.New("migration state cannot be applied")

// readMigration reads the alias's migration document with a real-time
// GET. It returns nil when there is none (no index or no document).
func (ms *modes) read(ctx context.Context) (*schema.Migration, error) {
	src, _, found, err := ms.admin.Get(ctx, schema.MigrationsIndex, schema.MigrationDocID(ms.cfg.Alias), "")
	if err != nil {
		return nil, fmt.Errorf("pipeline: read the migration state of %q: %w", ms.cfg.Alias, err)
	}
	if !found {
		return nil, nil
	}
	var mig schema.Migration
	if err := json.Unmarshal(src, &mig); err != nil {
		return nil, fmt.Errorf("pipeline: %w: %s/%s: %w", errBadMigration, schema.MigrationsIndex, schema.MigrationDocID(ms.cfg.Alias), err)
	}
	switch {
	case mig.Alias != "" && mig.Alias != ms.cfg.Alias:
		return nil, fmt.Errorf("pipeline: %w: the document of alias %q names alias %q", errBadMigration, ms.cfg.Alias, mig.Alias)
	case !mig.Phase.Valid():
		return nil, fmt.Errorf("pipeline: %w: migration %q: unknown phase %q", errBadMigration, mig.ID, mig.Phase)
	}
	return &mig, nil
}

// migKey identifies what of a migration decides the writes: its id, phase
// and sides. Backfill progress and verifications change nothing. The zero
// migKey is no migration.
type migKey struct {
	id                   string
	phase                schema.Phase
	source, target       string // indexes
	sourceMap, targetMap string // map hashes
}

func migrationKey(mig *schema.Migration) migKey {
	if mig == nil {
		return migKey{}
	}
	return migKey{mig.ID, mig.Phase, mig.Source.Index, mig.Target.Index, mig.Source.MapHash, mig.Target.MapHash}
}

// resolveMode computes the mode a migration state asks for (nil: no
// migration). A *MapMismatchError means the pin refuses the primary's
// map; any other error, that the state cannot be applied now.
func (ms *modes) resolve(ctx context.Context, mig *schema.Migration) (mode, error) {
	if mig == nil || !mig.Phase.DualWrites() {
		t, err := loadTarget(ctx, ms.admin, ms.cfg.Alias, ms.cfg.MapHash)
		if err != nil {
			return mode{}, err
		}
		m := mode{targets: []target{t}}
		if mig != nil {
			m.migID, m.phase = mig.ID, mig.Phase
			want := mig.Source.Index
			if mig.Phase.TargetIsPrimary() {
				want = mig.Target.Index
			}
			if want != "" && want != t.index {
				ms.log.Warn("the alias's write index is not the one the migration phase implies; writing the alias's",
					"alias", ms.cfg.Alias, "index", t.index, "migration", mig.ID, "phase", mig.Phase, "expected_index", want)
			}
		}
		return m, nil
	}
	if mig.Source.Index == mig.Target.Index {
		return mode{}, fmt.Errorf("pipeline: %w: migration %q: source and target are both %q", errBadMigration, mig.ID, mig.Source.Index)
	}
	src, err := ms.sideMap(ctx, roleSource, mig.Source)
	if err != nil {
		return mode{}, err
	}
	dst, err := ms.sideMap(ctx, roleTarget, mig.Target)
	if err != nil {
		return mode{}, err
	}
	primary, other := target{index: mig.Source.Index, m: src, role: roleSource}, target{index: mig.Target.Index, m: dst, role: roleTarget}
	if mig.Phase.TargetIsPrimary() {
		primary, other = other, primary
	}
	if ms.cfg.MapHash != "" && primary.m.Hash() != ms.cfg.MapHash {
		return mode{}, &MapMismatchError{Index: primary.index, Expected: ms.cfg.MapHash, Actual: primary.m.Hash()}
	}
	t0, t1 := newTarget(primary.index, primary.m, true), newTarget(other.index, other.m, false)
	t0.role, t1.role = primary.role, other.role
	return mode{migID: mig.ID, phase: mig.Phase, targets: []target{t0, t1}}, nil
}

// sideMap returns the map of one side of a migration: the map file the
// document holds, checked against the document's hash and against the
// map the index recorded in its _meta.
func (ms *modes) sideMap(ctx context.Context, role role, s schema.Side) (*router.Map, error) {
	m, err := s.ParseMap()
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w: the %s: %w", errBadMigration, role, err)
	}
	meta, err := ms.admin.Meta(ctx, s.Index)
	if err != nil {
		return nil, fmt.Errorf("pipeline: the %s index %q: %w", role, s.Index, err)
	}
	im, err := schema.MapFromMeta(meta)
	if err != nil {
		return nil, fmt.Errorf("pipeline: the %s index %q: %w", role, s.Index, err)
	}
	if im.Hash() != m.Hash() {
		return nil, fmt.Errorf("pipeline: %w: the %s index %q was built with map %s, the migration says %s", errBadMigration, role, s.Index, im.ShortHash(), m.ShortHash())
	}
	return m, nil
}

// initialMode reads the migration state, retrying what fails for a
// while, and resolves the mode to start in. It returns the state's key
// too.
func (ms *modes) initial(ctx context.Context) (mode, migKey, error) {
	var mig *schema.Migration
	err := retry(ctx, ms.log, "read the migration state", func() error {
		var err error
		mig, err = ms.read(ctx)
		if errors.Is(err, errBadMigration) {
			return backoff.Permanent(err)
		}
		return err
	})
	if err != nil {
		return mode{}, migKey{}, err
	}
	m, err := ms.resolve(ctx, mig)
	if err != nil {
		return mode{}, migKey{}, err
	}
	return m, migrationKey(mig), nil
}

// watcher is the state of the goroutine that follows the migration and
// the alias.
type watcher struct {
	// key is the migrationKey of the state last resolved; req the mode
	// last asked of the processing goroutine (or started in).
	key migKey
	req mode
	// bad is the key of a state that could not be applied, logged once
	// (zero: none; a state that exists is never the zero key).
	bad migKey
}

// watch reads the migration state every MigrationPollInterval and the
// alias every MapCheckInterval, hands a new mode to the processing
// goroutine, and writes the heartbeat after each poll and each switch.
// It returns when ctx ends or after a fatal error.
func (ms *modes) watch(ctx context.Context, w *watcher) {
	poll := time.NewTicker(ms.cfg.MigrationPollInterval)
	defer poll.Stop()
	check := time.NewTicker(ms.cfg.MapCheckInterval)
	defer check.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ms.applied:
		case <-poll.C:
			if !ms.poll(ctx, w) {
				return
			}
		case <-check.C:
			if !ms.checkAlias(ctx, w) {
				return
			}
			continue
		}
		ms.beat(ctx)
	}
}

// pollMigration reads the migration state and asks for the mode it
// implies if that changed. It reports false after a fatal error.
func (ms *modes) poll(ctx context.Context, w *watcher) bool {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	mig, err := ms.read(cctx)
	if err != nil {
		if ctx.Err() == nil {
			ms.log.Warn("reading the migration state failed; writes go on as they are", "error", err)
		}
		return true
	}
	ms.polled.Store(time.Now().UnixNano())
	key := migrationKey(mig)
	if key == w.key {
		return true
	}
	m, err := ms.resolve(cctx, mig)
	var mm *MapMismatchError
	switch {
	case errors.As(err, &mm):
		ms.fail(err)
		return false
	case err != nil:
		if ctx.Err() != nil {
			return true
		}
		lvl := ms.log.Error
		if key == w.bad {
			lvl = ms.log.Debug
		}
		w.bad = key
		id, phase := "", schema.Phase(phaseNone)
		if mig != nil { // nil: no migration, and the alias could not be resolved
			id, phase = mig.ID, mig.Phase
		}
		lvl("cannot apply the migration state; writes go on as they are", "migration", id, "phase", phase, "error", err)
		return true
	}
	w.key, w.req, w.bad = key, m, migKey{}
	ms.request(m)
	return true
}

// checkAlias re-reads the alias's write index and its map. Without dual
// writes a change is a new mode (a moved alias, as before migrations
// existed); during dual writes the migration decides, and a disagreement
// is only logged. It reports false after a fatal error.
func (ms *modes) checkAlias(ctx context.Context, w *watcher) bool {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if len(w.req.targets) > 1 {
		index, err := ms.admin.WriteIndex(cctx, ms.cfg.Alias)
		if err == nil && index != w.req.targets[0].index {
			ms.log.Warn("the alias's write index is not the migration's primary; writes follow the migration",
				"alias", ms.cfg.Alias, "index", index, "migration", w.req.migID, "phase", w.req.phase, "primary", w.req.targets[0].index)
		}
		return true
	}
	t, err := loadTarget(cctx, ms.admin, ms.cfg.Alias, ms.cfg.MapHash)
	var mm *MapMismatchError
	switch {
	case errors.As(err, &mm):
		ms.fail(err)
		return false
	case err != nil:
		if ctx.Err() == nil {
			ms.log.Warn("map check failed", "error", err)
		}
		return true
	}
	cur := w.req.targets[0]
	if t.index == cur.index && t.m.Hash() == cur.m.Hash() {
		return true
	}
	w.req = mode{migID: w.req.migID, phase: w.req.phase, targets: []target{t}}
	ms.request(w.req)
	return true
}

// request hands a mode to the processing goroutine, replacing one it has
// not applied yet. It never blocks, so heartbeats go on meanwhile.
func (ms *modes) request(m mode) {
	ms.mu.Lock()
	ms.wanted = &m
	ms.mu.Unlock()
	select {
	case ms.wake <- struct{}{}:
	default:
	}
}

// applyWanted applies the mode last requested, if any. It runs on the
// processing goroutine, between events.
func (ms *modes) apply(ctx context.Context, ix *indexer) error {
	ms.mu.Lock()
	m := ms.wanted
	ms.wanted = nil
	cur := ms.cur
	ms.mu.Unlock()
	if m == nil || m.same(cur) {
		return nil
	}
	// Every write made under the old targets is acknowledged, and every
	// task under them has ended, before any write is made under the new
	// ones, and before the heartbeat can report the new phase.
	if err := ix.quiesce(ctx); err != nil {
		return err
	}
	ms.set(*m, ix)
	ms.logMode("write mode changed", *m, "previous_phase", cur.phaseLabel(), "previous_indexes", cur.indexes())
	select {
	case ms.applied <- struct{}{}:
	default:
	}
	return nil
}

// setMode makes m the mode writes use. Only the processing goroutine
// calls it once it runs.
func (ms *modes) set(m mode, ix *indexer) {
	ix.setTargets(m.targets)
	ms.mu.Lock()
	ms.cur = m
	ms.mu.Unlock()
	ms.met.setPhase(m.phaseLabel())
}

func (ms *modes) logMode(msg string, m mode, extra ...any) {
	t := m.targets[0]
	args := []any{"phase", m.phaseLabel(), "migration", m.migID, "index", t.index, "map_hash", t.m.Hash(), "shards", t.m.NumShards()}
	if len(m.targets) > 1 {
		o := m.targets[1]
		args = append(args, "primary", t.role.String(), "other_index", o.index, "other_map_hash", o.m.Hash(), "other_shards", o.m.NumShards())
	}
	ms.log.Info(msg, append(args, extra...)...)
}

// enterMode reads the migration state, takes the write mode it asks for
// and writes the first heartbeat; the watcher it returns follows the
// state from there.
func (ms *modes) enter(ctx context.Context, ix *indexer) (*watcher, error) {
	m, key, err := ms.initial(ctx)
	if err != nil {
		return nil, err
	}
	ms.set(m, ix)
	ms.polled.Store(time.Now().UnixNano())
	ms.logMode("write mode", m)
	ms.beat(ctx)
	return &watcher{key: key, req: m}, nil
}
