package migrate

import (
	"context"
	"errors"
	"reflect"
	"strings"
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
	if !reflect.DeepEqual(st.Next, []Step{StepCreate}) {
		t.Errorf("status without a migration: next %v, want [create]", st.Next)
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
	if want := []Step{StepDualWrites, StepCancel}; !reflect.DeepEqual(st.Next, want) {
		t.Errorf("status after create: next %v, want %v", st.Next, want)
	}
	for _, in := range st.Instances {
		if in.Acked {
			t.Errorf("%s acked phase %s without having applied it", in.Instance, st.Migration.Phase)
		}
	}
}

// A target OpenSearch would refuse as an index name is refused before
// anything is recorded: nothing to cancel, and create can be run again.
func TestCreateRefusesABadTargetBeforeRecording(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 20)
	ctx := context.Background()
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst, Target: "BAD_NAME"}); err == nil || !strings.Contains(err.Error(), "must be lowercase") {
		t.Fatalf("Create with target BAD_NAME = %v, want the name refused", err)
	}
	if _, err := e.m.Load(ctx); !errors.Is(err, ErrNoMigration) {
		t.Errorf("Load after the refusal = %v, want ErrNoMigration", err)
	}
	if _, err := e.m.Create(ctx, CreateConfig{Map: e.dst, Target: "menu-next"}); err != nil {
		t.Errorf("Create again with a good name = %v", err)
	}
}
