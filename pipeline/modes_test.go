package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang/geo/s2"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/pipeline/deadletter"
	"github.com/geoshard/geoshard/pipeline/directory"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

const testIndex2 = "menu-v2"

var (
	map24Once sync.Once
	map24     *router.Map
	map24Err  error
)

// plannedMap24 is a 24-shard map planned from the US loads: it places
// cells differently from the 18-shard test map, so a restaurant may change
// geoshard under one and not under the other.
func plannedMap24(t testing.TB) *router.Map {
	t.Helper()
	loads := testenv.Path(t, testenv.LoadsUS)
	map24Once.Do(func() {
		f, err := os.Open(loads)
		if err != nil {
			map24Err = err
			return
		}
		defer f.Close()
		loads, err := router.ReadLoads(f, router.DefaultLevel)
		if err != nil {
			map24Err = err
			return
		}
		map24, map24Err = router.Plan(loads, nil, router.PlanConfig{Shards: 24, Strategy: router.Greedy})
	})
	if map24Err != nil {
		t.Fatal(map24Err)
	}
	return map24
}

// createIndex creates an index built with m, as a migration's target is.
func (e *testEnv) createIndex(t testing.TB, name string, m *router.Map) {
	t.Helper()
	zero := 0
	body, err := schema.IndexBody(m, schema.IndexOptions{Replicas: &zero, GCDeletes: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.admin.CreateIndex(context.Background(), name, body); err != nil {
		t.Fatal(err)
	}
}

func sideOf(t testing.TB, index string, m *router.Map) schema.Side {
	t.Helper()
	data, err := m.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return schema.Side{Index: index, MapHash: m.Hash(), Map: data}
}

// newMigration is a migration of the test alias from the test index to
// testIndex2, built with m2.
func (e *testEnv) newMigration(t testing.TB, m2 *router.Map, phase schema.Phase) schema.Migration {
	now := time.Now().UTC()
	return schema.Migration{
		Alias: testAlias, ID: testIndex2, Phase: phase,
		Source: sideOf(t, testIndex, e.m), Target: sideOf(t, testIndex2, m2),
		Created: now, Updated: now,
	}
}

// setMigration writes the migration document, as the job does.
func (e *testEnv) setMigration(t testing.TB, mig schema.Migration) {
	t.Helper()
	ctx := context.Background()
	err := e.admin.CreateIndex(ctx, schema.MigrationsIndex, schema.MigrationsIndexBody())
	var ae *bulk.APIError
	if err != nil && !(errors.As(err, &ae) && ae.Type == "resource_already_exists_exception") {
		t.Fatal(err)
	}
	mig.Updated = time.Now().UTC()
	body, err := json.Marshal(mig)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.admin.Index(ctx, schema.MigrationsIndex, schema.MigrationDocID(testAlias), body); err != nil {
		t.Fatal(err)
	}
}

// moveAlias points the alias (and its writes) at index, as the job does
// at cutover and rollback.
func (e *testEnv) moveAlias(t testing.TB, from, to string) {
	t.Helper()
	yes := true
	if err := e.admin.UpdateAliases(context.Background(), []bulk.AliasAction{
		{Remove: &bulk.AliasSpec{Index: from, Alias: testAlias}},
		{Add: &bulk.AliasSpec{Index: to, Alias: testAlias, IsWriteIndex: &yes}},
	}); err != nil {
		t.Fatal(err)
	}
}

// heartbeat reads an instance's heartbeat.
func (e *testEnv) heartbeat(t testing.TB, instance string) (schema.Heartbeat, bool) {
	t.Helper()
	var hb schema.Heartbeat
	found, err := testenv.ReadDoc(context.Background(), e.admin, schema.MigrationsIndex, schema.HeartbeatDocID(testAlias, instance), &hb)
	if err != nil {
		t.Fatal(err)
	}
	return hb, found
}

// waitApplied waits for an instance's heartbeat to report phase of
// migration id, and checks that the pipeline's stats agree.
func (e *testEnv) waitApplied(t testing.TB, r *running, instance, id string, phase schema.Phase) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var hb schema.Heartbeat
	for time.Now().Before(deadline) {
		hb, _ = e.heartbeat(t, instance)
		if hb.Applied == phase && hb.MigrationID == id {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if hb.Applied != phase || hb.MigrationID != id || hb.Alias != testAlias || hb.Instance != instance || time.Since(hb.At) > time.Minute {
		t.Fatalf("heartbeat of %s = %+v, want migration %q phase %q", instance, hb, id, phase)
	}
	if st := r.p.Stats().Migration; st.Phase != phase || st.ID != id {
		t.Fatalf("Stats().Migration = %+v after the heartbeat reported %s", st, phase)
	}
}

// wantTargets checks the indexes written to, the primary first.
func wantTargets(t testing.TB, r *running, indexes ...string) {
	t.Helper()
	st := r.p.Stats()
	var got []string
	for _, ti := range st.Targets {
		got = append(got, ti.Index)
	}
	if strings.Join(got, ",") != strings.Join(indexes, ",") {
		t.Fatalf("targets = %+v, want %v", st.Targets, indexes)
	}
}

// steadyStream is a generated stream in which no dish ever waits for its
// restaurant, so that the model holds at any prefix that is caught up.
func steadyStream(t testing.TB, seed uint64, steps int) []genEvent {
	g := defaultGen(seed, steps)
	g.wEarly, g.wOrphan, g.wReplay, g.poison = 0, 0, 0, false
	return generate(t, g)
}

// movesInOneMapOnly counts restaurant location changes that change the
// shard under one map and not under the other.
func movesInOneMapOnly(evs []genEvent, a, b *router.Map) int {
	last := map[string]s2.CellID{}
	n := 0
	for _, ev := range evs {
		if ev.dish || ev.op != decode.OpUpsert || ev.typ != decode.TypeRestaurant {
			continue
		}
		cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(ev.lat, ev.lon))
		if old, ok := last[ev.id]; ok {
			if (a.LocateCell(old) != a.LocateCell(cell)) != (b.LocateCell(old) != b.LocateCell(cell)) {
				n++
			}
		}
		last[ev.id] = cell
	}
	return n
}

// TestMigrationPhases runs one instance through a migration: dual writes
// from the start (both indexes get every change, each under its own map),
// cutover (the target becomes primary, both still written), rollback
// (both still written), cutover again, and completion (only the target).
func TestMigrationPhases(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 2})
	ctx := context.Background()
	m24 := plannedMap24(t)
	e.createIndex(t, testIndex2, m24)
	mig := e.newMigration(t, m24, schema.PhaseDualWrites)
	e.setMigration(t, mig)

	evs := steadyStream(t, 21, 800)
	if n := movesInOneMapOnly(evs, e.m, m24); n == 0 {
		t.Fatal("no restaurant changes geoshard under one map only: the test tests less than it should")
	} else {
		t.Logf("%d events: %s; %d location changes move a restaurant under one map only", len(evs), summarize(evs), n)
	}
	cut := []int{len(evs) / 4, len(evs) / 2, 3 * len(evs) / 4, len(evs)}
	cfg := e.config()
	cfg.Instance = "phases"
	cfg.MigrationPollInterval = 50 * time.Millisecond
	reg := prometheus.NewRegistry()
	cfg.Registerer = reg
	r := e.start(cfg)
	e.waitApplied(t, r, "phases", mig.ID, schema.PhaseDualWrites)
	wantTargets(t, r, testIndex, testIndex2)

	both := func(upTo int) {
		t.Helper()
		model := runModel(evs[:upTo])
		checkIndexDocs(t, e, testIndex, e.m, model.expectedDocs(e.m))
		checkIndexDocs(t, e, testIndex2, m24, model.expectedDocs(m24))
	}
	e.produce(ctx, evs[:cut[0]])
	e.waitCaughtUp(t, r, 30*time.Second)
	both(cut[0])

	// Cutover: the job moves the alias, then records the phase.
	e.moveAlias(t, testIndex, testIndex2)
	mig.Phase = schema.PhaseCutOver
	e.setMigration(t, mig)
	e.waitApplied(t, r, "phases", mig.ID, schema.PhaseCutOver)
	wantTargets(t, r, testIndex2, testIndex)
	e.produce(ctx, evs[cut[0]:cut[1]])
	e.waitCaughtUp(t, r, 30*time.Second)
	both(cut[1])

	// Rollback: the alias goes back; dual writes go on.
	e.moveAlias(t, testIndex2, testIndex)
	mig.Phase = schema.PhaseRolledBack
	e.setMigration(t, mig)
	e.waitApplied(t, r, "phases", mig.ID, schema.PhaseRolledBack)
	wantTargets(t, r, testIndex, testIndex2)
	e.produce(ctx, evs[cut[1]:cut[2]])
	e.waitCaughtUp(t, r, 30*time.Second)
	both(cut[2])

	// Cutover again, then completion: only the target is written.
	e.moveAlias(t, testIndex, testIndex2)
	mig.Phase = schema.PhaseCutOver
	e.setMigration(t, mig)
	e.waitApplied(t, r, "phases", mig.ID, schema.PhaseCutOver)
	mig.Phase = schema.PhaseCompleted
	e.setMigration(t, mig)
	e.waitApplied(t, r, "phases", mig.ID, schema.PhaseCompleted)
	wantTargets(t, r, testIndex2)
	e.produce(ctx, evs[cut[2]:])
	e.waitCaughtUp(t, r, 30*time.Second)
	st := r.p.Stats()
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if got := phaseGauge(t, reg); got != string(schema.PhaseCompleted) {
		t.Errorf("geoshard_ingest_migration_phase is 1 for %q, want completed alone", got)
	}
	checkIndexDocs(t, e, testIndex2, m24, runModel(evs).expectedDocs(m24))
	checkIndexDocs(t, e, testIndex, e.m, runModel(evs[:cut[2]]).expectedDocs(e.m))
	if dl := e.readDLQ(t); len(dl) > 0 || sumReasons(st.DeadLetters) > 0 {
		t.Errorf("dead letters %v (%d in the topic), want none", st.DeadLetters, len(dl))
	}
	t.Logf("moves %d, events %v", st.Moves, st.Events)
}

// phaseGauge returns the phase label whose migration phase gauge is 1,
// failing if there is not exactly one.
func phaseGauge(t testing.TB, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var on []string
	for _, mf := range mfs {
		if mf.GetName() != "geoshard_ingest_migration_phase" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetGauge().GetValue() == 1 {
				for _, l := range m.GetLabel() {
					on = append(on, l.GetValue())
				}
			}
		}
	}
	if len(on) != 1 {
		t.Fatalf("migration phase gauge is 1 for %v, want exactly one phase", on)
	}
	return on[0]
}

func sumReasons(m map[decode.Reason]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}

// TestMigrationRestartAndCancel: an instance that starts mid-migration
// writes both indexes from its very first event (the state is read before
// anything is consumed); after the migration is cancelled a new instance
// writes only the source.
func TestMigrationRestartAndCancel(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 1})
	ctx := context.Background()
	m2 := testenv.LoadMap(t, testenv.MapUS18RNS576)
	e.createIndex(t, testIndex2, m2)
	mig := e.newMigration(t, m2, schema.PhaseBackfilling)
	e.setMigration(t, mig)

	first := encodeAll(restaurantWithDishes(10))
	e.produce(ctx, first)
	cfg := e.config()
	cfg.Instance = "restarted"
	cfg.MigrationPollInterval = time.Hour // only the poll before consuming
	r := e.start(cfg)
	e.waitCaughtUp(t, r, 20*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if hb, _ := e.heartbeat(t, "restarted"); hb.Applied != schema.PhaseBackfilling || hb.MigrationID != mig.ID {
		t.Errorf("heartbeat = %+v, want phase backfilling", hb)
	}
	model := runModel(first)
	checkIndexDocs(t, e, testIndex, e.m, model.expectedDocs(e.m))
	checkIndexDocs(t, e, testIndex2, m2, model.expectedDocs(m2))

	mig.Phase = schema.PhaseCancelled
	e.setMigration(t, mig)
	second := encodeAll([]genEvent{
		{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 2, lat: 40.73, lon: -73.99, doc: map[string]any{"name": "moved"}},
		{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: "late", rid: "r2", version: 1, doc: map[string]any{"name": "pretzel"}},
	})
	all := append(append([]genEvent(nil), first...), second...)
	e.produce(ctx, second)
	cfg.Instance = "after-cancel"
	cfg.Registerer = prometheus.NewRegistry()
	cfg.MigrationPollInterval = 50 * time.Millisecond
	r = e.start(cfg)
	e.waitCaughtUp(t, r, 20*time.Second)
	e.waitApplied(t, r, "after-cancel", mig.ID, schema.PhaseCancelled)
	wantTargets(t, r, testIndex)
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	checkIndexDocs(t, e, testIndex, e.m, runModel(all).expectedDocs(e.m))
	checkIndexDocs(t, e, testIndex2, m2, model.expectedDocs(m2))
}

// TestMigrationOffsetsWaitForBothIndexes: an event's offset is committed
// only when both of its writes are acknowledged. A slow target holds it
// back while the source already has the document; a write-blocked target
// stops the pipeline without dead-lettering or committing anything past
// the refused event, and a new start after the block is lifted writes it.
func TestMigrationOffsetsWaitForBothIndexes(t *testing.T) {
	realenv.EmulatorOnly(t, "injects latency and a write block on the target")
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 1})
	ctx := context.Background()
	m2 := testenv.LoadMap(t, testenv.MapUS18RNS576)
	e.createIndex(t, testIndex2, m2)
	mig := e.newMigration(t, m2, schema.PhaseDualWrites)
	e.setMigration(t, mig)
	var slow []osfake.ShardLatency
	for i := range m2.NumShards() {
		slow = append(slow, osfake.ShardLatency{Index: testIndex2, Shard: i, Delay: osfake.Duration(time.Second)})
	}
	if err := e.os.SetFaults(osfake.Faults{ShardLatency: slow}); err != nil {
		t.Fatal(err)
	}
	cfg := e.config()
	cfg.Instance = "offsets"
	r := e.start(cfg)
	evs := encodeAll(restaurantWithDishes(6))
	where := e.produce(ctx, evs[:1])
	committed := func() int64 {
		t.Helper()
		co, err := e.kafka.CommittedOffsets(ctx, e.group, e.restaurantTopic)
		if err != nil {
			t.Fatal(err)
		}
		return co[0]
	}
	cell, _ := e.m.Cell(evs[0].lat, evs[0].lon)
	routing := e.m.Shard(e.m.LocateCell(cell)).Routing
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, _, found, err := e.admin.Get(ctx, testIndex, "restaurant:r1", routing); err != nil {
			t.Fatal(err)
		} else if found {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the source never got restaurant:r1")
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The commit of the event comes after the target's write landed: when
	// the offset is first seen committed, the target already has the
	// document (a commit made while the slow write was in flight would be
	// seen with the target still lacking it).
	cell2, _ := m2.Cell(evs[0].lat, evs[0].lon)
	routing2 := m2.Shard(m2.LocateCell(cell2)).Routing
	deadline = time.Now().Add(20 * time.Second)
	for committed() <= where[0].offset {
		if time.Now().After(deadline) {
			t.Fatalf("offset %d never committed", where[0].offset)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, _, found, err := e.admin.Get(ctx, testIndex2, "restaurant:r1", routing2); err != nil {
		t.Fatal(err)
	} else if !found {
		t.Fatalf("offset %d committed while the target's write of it was still in flight", where[0].offset)
	}
	e.waitCaughtUp(t, r, 20*time.Second)
	e.os.ClearFaults()

	// A write block on the target.
	if err := e.os.SetFaults(osfake.Faults{WriteBlock: []string{testIndex2}}); err != nil {
		t.Fatal(err)
	}
	where = append(where, e.produce(ctx, evs[1:])...)
	err := r.Wait(t, 20*time.Second)
	if !errors.Is(err, ErrIndexUnwritable) || !strings.Contains(err.Error(), "cluster_block_exception") {
		t.Fatalf("Run = %v, want ErrIndexUnwritable naming the block", err)
	}
	if c := committed(); c > where[1].offset {
		t.Errorf("committed %d, past offset %d that the target refused", c, where[1].offset)
	}
	if st := r.p.Stats(); sumReasons(st.DeadLetters) > 0 {
		t.Errorf("dead letters %v, want none", st.DeadLetters)
	}
	if dl := e.readDLQ(t); len(dl) > 0 {
		t.Errorf("%d dead letters in the topic, want none", len(dl))
	}
	e.os.ClearFaults()
	cfg.Registerer = prometheus.NewRegistry()
	r = e.start(cfg)
	e.waitCaughtUp(t, r, 20*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	model := runModel(evs)
	checkIndexDocs(t, e, testIndex, e.m, model.expectedDocs(e.m))
	checkIndexDocs(t, e, testIndex2, m2, model.expectedDocs(m2))
	if dl := e.readDLQ(t); len(dl) > 0 {
		t.Errorf("%d dead letters in the topic, want none", len(dl))
	}
}

// TestMigrationPinStopsAtCutover: a pipeline pinned to the source's map
// writes through dual writes, where the pin applies to the source, and
// stops at cutover, where it applies to the target; it never reports the
// phase it refused.
func TestMigrationPinStopsAtCutover(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 1})
	m2 := testenv.LoadMap(t, testenv.MapUS18RNS576)
	e.createIndex(t, testIndex2, m2)
	mig := e.newMigration(t, m2, schema.PhaseDualWrites)
	e.setMigration(t, mig)
	cfg := e.config()
	cfg.Instance = "pinned"
	cfg.MapHash = e.m.Hash()
	cfg.MigrationPollInterval = 50 * time.Millisecond
	r := e.start(cfg)
	e.waitApplied(t, r, "pinned", mig.ID, schema.PhaseDualWrites)
	e.moveAlias(t, testIndex, testIndex2)
	mig.Phase = schema.PhaseCutOver
	e.setMigration(t, mig)
	err := r.Wait(t, 20*time.Second)
	var mm *MapMismatchError
	if !errors.As(err, &mm) || mm.Index != testIndex2 || mm.Expected != e.m.Hash() || mm.Actual != m2.Hash() {
		t.Fatalf("Run = %v, want a *MapMismatchError on %s", err, testIndex2)
	}
	if hb, _ := e.heartbeat(t, "pinned"); hb.Applied != schema.PhaseDualWrites {
		t.Errorf("heartbeat = %+v, want dual_writes still", hb)
	}
}

// newOSEnv is the OpenSearch half of a test environment: the test index
// behind its alias, and no Kafka.
func newOSEnv(t testing.TB) *testEnv {
	t.Helper()
	e := &testEnv{t: t, m: testenv.LoadMap(t, testenv.MapUS18)}
	e.openSearch(t, realenv.Enabled())
	return e
}

// TestMigrationModeRules checks, phase by phase, which indexes are
// written and in which order, and where the map pin applies: to the
// primary, the source before cutover and after a rollback, the target
// from cutover on.
func TestMigrationModeRules(t *testing.T) {
	realenv.Parallel(t)
	e := newOSEnv(t)
	ctx := context.Background()
	m2 := testenv.LoadMap(t, testenv.MapUS18RNS576)
	e.createIndex(t, testIndex2, m2)
	src, dst := e.m.Hash(), m2.Hash()
	pipelineWith := func(pin string) *Pipeline {
		p, err := New(Config{Brokers: []string{"127.0.0.1:9"}, Alias: testAlias, MapHash: pin}, e.client)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	aliasOn := testIndex
	for _, tc := range []struct {
		phase   schema.Phase // "" for no migration
		aliasOn string
		want    []string // indexes, the primary first
		pinned  string   // the pin that applies
	}{
		{"", testIndex, []string{testIndex}, src},
		{schema.PhaseCreated, testIndex, []string{testIndex}, src},
		{schema.PhaseDualWrites, testIndex, []string{testIndex, testIndex2}, src},
		{schema.PhaseBackfilling, testIndex, []string{testIndex, testIndex2}, src},
		{schema.PhaseBackfilled, testIndex, []string{testIndex, testIndex2}, src},
		{schema.PhaseVerified, testIndex, []string{testIndex, testIndex2}, src},
		{schema.PhaseCutOver, testIndex2, []string{testIndex2, testIndex}, dst},
		{schema.PhaseRolledBack, testIndex, []string{testIndex, testIndex2}, src},
		{schema.PhaseCompleted, testIndex2, []string{testIndex2}, dst},
		{schema.PhaseCancelled, testIndex, []string{testIndex}, src},
	} {
		name := string(tc.phase)
		if name == "" {
			name = "none"
		}
		t.Run(name, func(t *testing.T) {
			if aliasOn != tc.aliasOn {
				e.moveAlias(t, aliasOn, tc.aliasOn)
				aliasOn = tc.aliasOn
			}
			if tc.phase == "" {
				_ = e.admin.DeleteIndex(ctx, schema.MigrationsIndex)
			} else {
				e.setMigration(t, e.newMigration(t, m2, tc.phase))
			}
			for _, pin := range []string{"", src, dst} {
				p := pipelineWith(pin)
				mig, err := p.modes.read(ctx)
				if err != nil {
					t.Fatal(err)
				}
				m, err := p.modes.resolve(ctx, mig)
				if pin != "" && pin != tc.pinned {
					var mm *MapMismatchError
					if !errors.As(err, &mm) || mm.Index != tc.want[0] {
						t.Errorf("pin %.12s: resolveMode = %v, want a *MapMismatchError on %s", pin, err, tc.want[0])
					}
					continue
				}
				if err != nil {
					t.Fatalf("pin %.12s: resolveMode = %v", pin, err)
				}
				if got := m.indexes(); strings.Join(got, ",") != strings.Join(tc.want, ",") || m.phase != tc.phase {
					t.Errorf("pin %.12s: mode %s %v, want %v", pin, m.phaseLabel(), got, tc.want)
				}
				for _, tg := range m.targets {
					wantHash := src
					if tg.index == testIndex2 {
						wantHash = dst
					}
					if tg.m.Hash() != wantHash {
						t.Errorf("%s written with map %s, want %s", tg.index, tg.m.ShortHash(), wantHash[:12])
					}
				}
			}
		})
	}

	// States that cannot be applied are refused, not guessed at.
	p := pipelineWith("")
	resolve := func(mig schema.Migration) error {
		e.setMigration(t, mig)
		got, err := p.modes.read(ctx)
		if err != nil {
			return err
		}
		_, err = p.modes.resolve(ctx, got)
		return err
	}
	mig := e.newMigration(t, m2, "resharding")
	if err := resolve(mig); !errors.Is(err, errBadMigration) {
		t.Errorf("unknown phase: %v, want errBadMigration", err)
	}
	mig = e.newMigration(t, m2, schema.PhaseDualWrites)
	mig.Target.MapHash = src
	if err := resolve(mig); !errors.Is(err, errBadMigration) {
		t.Errorf("map that does not hash to map_hash: %v, want errBadMigration", err)
	}
	mig = e.newMigration(t, m2, schema.PhaseDualWrites)
	mig.Target = sideOf(t, testIndex2, e.m) // the index was built with m2
	if err := resolve(mig); !errors.Is(err, errBadMigration) {
		t.Errorf("map that is not the index's: %v, want errBadMigration", err)
	}
	mig = e.newMigration(t, m2, schema.PhaseDualWrites)
	mig.Target.Index = "menu-missing"
	if err := resolve(mig); err == nil {
		t.Error("a missing target index was accepted")
	}
	mig = e.newMigration(t, m2, schema.PhaseDualWrites)
	mig.Alias = "other"
	if err := resolve(mig); !errors.Is(err, errBadMigration) {
		t.Errorf("document of another alias: %v, want errBadMigration", err)
	}
}

// TestEventFinishesWithEveryTarget: an event written to two indexes is
// finished (its offset may be committed) only when both writes are
// answered, and a write refused by the index itself (a block) leaves it
// unfinished, undead-lettered, and stops the pipeline.
func TestEventFinishesWithEveryTarget(t *testing.T) {
	p := offlinePipeline(t)
	k := partKey{"t", 0}
	newEvent := func(offset int64) *event {
		entry, _ := p.track.track(k, offset, 10)
		ev := &event{part: k, offset: offset, entry: entry, change: &decode.Change{Type: decode.TypeRestaurant, Op: decode.OpUpsert}}
		ev.expect(2)
		return ev
	}
	result := func(ev *event, index string, o bulk.Outcome, err error) {
		p.ix.onResult(bulk.Result{Item: &bulk.Item{Index: index, ID: "restaurant:r", Ref: ev}, Outcome: o, Err: err})
	}
	ev := newEvent(0)
	result(ev, "source", bulk.OK, nil)
	if due := p.track.due(); len(due) != 0 {
		t.Fatalf("due after one of two writes = %v, want nothing", due)
	}
	result(ev, "target", bulk.Stale, nil)
	if due := p.track.due(); len(due) != 1 || due[0].offset != 1 {
		t.Fatalf("due after both writes = %v, want offset 1", due)
	}

	blocked := newEvent(1)
	result(blocked, "source", bulk.OK, nil)
	result(blocked, "target", bulk.Permanent, &bulk.ItemError{Index: "target", ID: "restaurant:r", Status: 403, Type: "cluster_block_exception", Reason: "index [target] blocked by: [FORBIDDEN/8/index write (api)];"})
	if due := p.track.due(); len(due) != 1 || due[0].offset != 1 {
		t.Fatalf("due after a blocked write = %v, want offset 1 still", due)
	}
	if p.fatalErr == nil || !errors.Is(p.fatalErr, ErrIndexUnwritable) {
		t.Fatalf("fatal error = %v, want ErrIndexUnwritable", p.fatalErr)
	}
	if blocked.rejected != nil || !blocked.failed {
		t.Errorf("blocked event: rejected %v, failed %v; want failed, not rejected", blocked.rejected, blocked.failed)
	}
}

// TestMigrationCutShort interrupts a restaurant change whose last write
// the primary acknowledged and the other index refused (a write block set
// right before it): the pipeline stops, and the change delivered again
// after the block is lifted completes on the other index too, although
// the directory, read from the primary, already shows the change done.
func TestMigrationCutShort(t *testing.T) {
	realenv.EmulatorOnly(t, "blocks writes to one index")
	realenv.Parallel(t)
	moveToNY := genEvent{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 2, lat: 40.73, lon: -73.99, doc: map[string]any{"name": "moved"}}
	remove := genEvent{typ: decode.TypeRestaurant, op: decode.OpDelete, id: "r1", rid: "r1", version: 2}
	for _, tc := range []struct {
		name   string
		phase  schema.Phase
		change genEvent
		step   moveStep // the step after which the other index is blocked
	}{
		{"move", schema.PhaseDualWrites, moveToNY, stepDeleteOldCopy},
		{"move/old copy/target primary", schema.PhaseCutOver, moveToNY, stepDeleteOldDishes},
		{"delete", schema.PhaseDualWrites, remove, stepDeleteDishes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			realenv.Parallel(t)
			e := newEnv(t, envOptions{partitions: 1})
			ctx := context.Background()
			m24 := plannedMap24(t)
			e.createIndex(t, testIndex2, m24)
			other := testIndex2
			if tc.phase.TargetIsPrimary() {
				e.moveAlias(t, testIndex, testIndex2)
				other = testIndex
			}
			e.setMigration(t, e.newMigration(t, m24, tc.phase))
			evs := encodeAll(restaurantWithDishes(20))
			e.produce(ctx, evs)
			r := e.start(e.config())
			e.waitCaughtUp(t, r, 20*time.Second)
			if err := r.Stop(t); err != nil {
				t.Fatal(err)
			}

			change := encodeAll([]genEvent{tc.change})
			evs = append(evs, change...)
			e.produce(ctx, change)
			blocked := false
			r = e.startWith(e.config(), func(p *Pipeline) {
				p.ix.stepHook = func(step moveStep) error {
					if step == tc.step && !blocked {
						blocked = true
						return e.os.SetFaults(osfake.Faults{WriteBlock: []string{other}})
					}
					return nil
				}
			})
			if err := r.Wait(t, 20*time.Second); !errors.Is(err, ErrIndexUnwritable) {
				t.Fatalf("Run = %v, want ErrIndexUnwritable", err)
			}
			e.os.ClearFaults()
			r = e.start(e.config())
			e.waitCaughtUp(t, r, 20*time.Second)
			if err := r.Stop(t); err != nil {
				t.Fatal(err)
			}
			model := runModel(evs)
			checkIndexDocs(t, e, testIndex, e.m, model.expectedDocs(e.m))
			checkIndexDocs(t, e, testIndex2, m24, model.expectedDocs(m24))
		})
	}
}

// offlinePipeline is a pipeline that is never run, for unit tests.
func offlinePipeline(t testing.TB) *Pipeline {
	t.Helper()
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{"http://127.0.0.1:9"}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{Brokers: []string{"127.0.0.1:9"}}, client)
	if err != nil {
		t.Fatal(err)
	}
	drivenByHand(t, p)
	return p
}

// drivenByHand makes p a member driven by hand, with no broker at its
// address, as a Pipeline that has not run was: its dead-letter record
// reads nothing back (it knows only its own dead letters), and it parks
// nothing and reads no parked dish back.
func drivenByHand(t testing.TB, p *Pipeline) {
	t.Helper()
	p.parking.out, p.parking.client = nil, nil
	once, err := deadletter.New[*event](deadletter.Config{Logger: p.log})
	if err != nil {
		t.Fatal(err)
	}
	p.out.once = once
}

// TestWarmHitTakesTheLocation: a restaurant read from an index enters the
// directory with the leaf cell of its location, as from an event, so that
// its routing under a map of a finer level than the index's is exact; a
// location that disagrees with geo_cell (or none) leaves geo_cell's cell.
func TestWarmHitTakesTheLocation(t *testing.T) {
	p := offlinePipeline(t)
	m := testenv.LoadMap(t, testenv.MapUS18)
	tg := newTarget(testIndex, m, true)
	sf := s2.CellIDFromLatLng(s2.LatLngFromDegrees(37.7749, -122.4194))
	d := directory.New()
	for _, h := range []bulk.Hit{
		{ID: "restaurant:r1", Source: restaurantBody(nil, "r1", 3, sf, 37.7749, -122.4194, m.Level())},
		{ID: "restaurant:r2", Source: restaurantBody(nil, "r2", 3, sf, 40.7, -74, m.Level())},
		{ID: "restaurant:r3", Source: []byte(`{"geo_cell":"` + sf.Parent(m.Level()).ToToken() + `","version":3}`)},
	} {
		if err := p.ix.warmHit(&tg, h, d); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string]s2.CellID{"r1": sf, "r2": sf.Parent(m.Level()), "r3": sf.Parent(m.Level())} {
		if got, ok := d.Lookup(id); !ok || got != want {
			t.Errorf("%s: cell %v (level %d), want %v (level %d)", id, got, got.Level(), want, want.Level())
		}
	}
}

// A migration document that disappears while the alias cannot be
// resolved (its index deleted) is logged as a state that cannot be
// applied, and writes go on as they are: the poll does not stop the
// pipeline, nor crash on the missing document.
func TestMigrationGoneAndAliasUnresolvable(t *testing.T) {
	realenv.EmulatorOnly(t, "reads an alias that no index has")
	e := newEnv(t, envOptions{partitions: 1})
	p := offlinePipeline(t)
	p.admin = e.admin
	p.cfg.Alias = "no-such-alias"
	w := &watcher{key: migKey{id: "m1", phase: schema.PhaseDualWrites}}
	if !p.modes.poll(context.Background(), w) {
		t.Fatal("pollMigration reported a fatal error")
	}
	if w.key.id != "m1" {
		t.Errorf("watcher = %+v, want the old key kept: the state was not applied", w)
	}
}
