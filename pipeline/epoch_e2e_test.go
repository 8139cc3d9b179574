package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

// A running instance's heartbeat carries its progress epoch and when its
// process started: the epoch rises while the instance finishes events
// and idles (nothing holds it then), and Started stays.
func TestHeartbeatCarriesEpoch(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 2})
	ctx := context.Background()
	cfg := e.config()
	cfg.Instance = "epochs"
	cfg.MigrationPollInterval = 20 * time.Millisecond
	r := e.start(cfg)
	first := e.waitEpoch(t, "epochs", 1, schema.Heartbeat{})
	e.produce(ctx, steadyStream(t, 5, 300))
	e.waitCaughtUp(t, r, 30*time.Second)
	e.waitEpoch(t, "epochs", first.Epoch+3, first)
}

// waitEpoch waits for instance's heartbeat to report at least epoch,
// and checks that it rises without going back and, after was, from the
// same process. A read that fails (the migrations index just created,
// its shard not active yet on a real node) is read again; the deadline
// only turns a hang into a failure.
func (e *testEnv) waitEpoch(t *testing.T, instance string, epoch int64, was schema.Heartbeat) schema.Heartbeat {
	t.Helper()
	deadline := time.Now().Add(realenv.Slack(time.Minute))
	last := was
	for {
		hb, found := e.heartbeatOf(t, instance)
		if found {
			if hb.Started.IsZero() || (!was.Started.IsZero() && !hb.Started.Equal(was.Started)) {
				t.Fatalf("heartbeat of %s started %v, want one start (%v)", instance, hb.Started, was.Started)
			}
			if hb.Epoch < last.Epoch {
				t.Fatalf("heartbeat of %s: epoch %d after %d", instance, hb.Epoch, last.Epoch)
			}
			last = hb
			if hb.Epoch >= epoch {
				return hb
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("heartbeat of %s: epoch %d, want %d", instance, last.Epoch, epoch)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
