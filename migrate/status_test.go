package migrate

import (
	"context"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/realenv"
)

// Status with no migration recorded lists the instances (acked: writing
// with none) and leaves out, counting them, heartbeats older than
// StaleAfter; with a migration, acked means its current phase.
func TestStatusWithoutMigrationAndStaleHeartbeats(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 50)
	ctx := context.Background()
	e.heartbeat("ingest-live", "", "", time.Now())
	e.heartbeat("ingest-quiet", "", "", time.Now().Add(-5*time.Minute))
	e.heartbeat("ingest-gone", "", "", time.Now().Add(-2*StaleAfter))
	st, err := e.m.Status(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Migration != nil || st.Alias != e.alias || st.Stale != 1 || len(st.Instances) != 2 {
		t.Fatalf("status %+v: want no migration, alias %s, 2 instances and 1 stale", st, e.alias)
	}
	for _, in := range st.Instances {
		if !in.Acked || in.Live != (in.Instance == "ingest-live") {
			t.Errorf("%s: live %v acked %v; want acked, live only for ingest-live", in.Instance, in.Live, in.Acked)
		}
	}
	mig, err := e.m.Create(ctx, CreateConfig{Map: e.dst})
	if err != nil {
		t.Fatal(err)
	}
	st, err = e.m.Status(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Migration == nil || st.Migration.ID != mig.ID {
		t.Fatalf("status after create: migration %+v, want %s", st.Migration, mig.ID)
	}
	for _, in := range st.Instances {
		if in.Acked {
			t.Errorf("%s acked phase %s without having applied it", in.Instance, st.Migration.Phase)
		}
	}
}
