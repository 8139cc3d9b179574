package migrate

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/schema"
)

func TestCreate(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 0)
	ctx := context.Background()
	if err := e.admin.PutSettings(ctx, e.v1, map[string]any{"number_of_replicas": 2}); err != nil {
		t.Fatal(err)
	}
	mig, err := e.m.Create(ctx, CreateConfig{Map: e.dst})
	if err != nil {
		t.Fatal(err)
	}
	if mig.Phase != schema.PhaseCreated || mig.Source.Index != e.v1 || mig.Target.Index != e.v2 ||
		mig.Target.MapHash != e.dst.Hash() || mig.Source.MapHash != e.src.Hash() || !strings.HasPrefix(mig.ID, e.v2+"@") {
		t.Errorf("Create = %+v, want phase created from %s to %s under the new map", mig, e.v1, e.v2)
	}
	want := schema.RestoreSettings{TargetReplicas: 2, TargetRefreshInterval: "1s", SourceGCDeletes: "60s", TargetGCDeletes: "60s"}
	if mig.Restore != want {
		t.Errorf("Restore = %+v, want %+v", mig.Restore, want)
	}
	tgt, err := e.admin.Settings(ctx, e.v2)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"index.number_of_shards": "24", "index.number_of_replicas": "0", "index.refresh_interval": "-1", "index.gc_deletes": "1h"} {
		if tgt[k] != v {
			t.Errorf("target %s = %q, want %q", k, tgt[k], v)
		}
	}
	if src, _ := e.admin.Settings(ctx, e.v1); src["index.gc_deletes"] != "1h" {
		t.Errorf("source gc_deletes = %q, want 1h", src["index.gc_deletes"])
	}
	if err := e.m.checkIndexMap(ctx, e.v2, e.dst.Hash()); err != nil {
		t.Errorf("target _meta: %v", err)
	}

	// Again: the same migration, nothing new.
	again, err := e.m.Create(ctx, CreateConfig{Map: e.dst})
	if err != nil || again.ID != mig.ID {
		t.Errorf("second Create = %v, %v; want the same migration", again, err)
	}
	// Another map while this one runs: refused.
	if _, err := e.m.Create(ctx, CreateConfig{Map: testenv.LoadMap(t, testenv.MapUS18RNS576)}); !errors.Is(err, ErrBusy) {
		t.Errorf("Create(other map) = %v, want ErrBusy", err)
	}
	// The source's own map: refused once the first is cancelled.
	if err := e.m.Cancel(ctx, AckConfig{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.src}); err == nil || !strings.Contains(err.Error(), "already uses map") {
		t.Errorf("Create(source map) = %v, want a refusal", err)
	}
	// A new migration never reuses the cancelled one's name.
	next, err := e.m.Create(ctx, CreateConfig{Map: e.dst})
	if err != nil || next.Target.Index != e.ix(3) {
		t.Errorf("Create after cancel = %+v, %v; want target %s", next, err, e.ix(3))
	}
}

func TestCreateKilledHalfWay(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 0)
	ctx := context.Background()
	// A job recorded the migration and died before creating the index.
	prev, _ := e.m.store.Load(ctx)
	if prev != nil {
		t.Fatal("unexpected migration")
	}
	if err := e.m.store.ensureIndex(ctx); err != nil {
		t.Fatal(err)
	}
	mig, err := e.m.newMigration(ctx, nil, CreateConfig{Map: e.dst})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.store.Insert(ctx, nil, mig); err != nil {
		t.Fatal(err)
	}
	// dual-writes refuses: ingest must not write a target that is not there.
	if _, err := e.m.DualWrites(ctx, AckConfig{}); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("DualWrites before the target exists = %v, want a refusal", err)
	}
	// create again finishes the job.
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst}); err != nil {
		t.Fatal(err)
	}
	if err := e.m.checkIndexMap(ctx, mig.Target.Index, e.dst.Hash()); err != nil {
		t.Errorf("after a second create: %v", err)
	}
}

// Two processes that find the migration state index missing both create
// it; the one that loses the race may find it before its primary has
// started (the real node answers reads with 503 then, though its health
// is already yellow). ensureIndex waits for the primary, so the read
// after it never fails.
func TestEnsureIndexRace(t *testing.T) {
	realenv.Parallel(t)
	client, _ := testCluster(t, osfake.Options{})
	admin := bulk.NewAdmin(client)
	ctx := context.Background()
	alias := realenv.Unique("menu")
	for round := range 10 {
		if err := admin.DeleteIndex(ctx, schema.MigrationsIndex); err != nil && !bulk.IsNotFound(err) {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 2 {
			s := newStore(admin, alias, time.Now)
			wg.Go(func() {
				if err := s.ensureIndex(ctx); err != nil {
					t.Errorf("round %d: ensureIndex: %v", round, err)
					return
				}
				if _, err := s.Load(ctx); !errors.Is(err, ErrNoMigration) {
					t.Errorf("round %d: Load after ensureIndex = %v, want ErrNoMigration", round, err)
				}
			})
		}
		wg.Wait()
	}
}
