package migrate

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/geoshard/geoshard/internal/realenv"
)

// The job's metrics, under the names the dashboard in deploy/ reads.
func TestMetrics(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 100)
	reg := prometheus.NewRegistry()
	e.m = e.migrator(reg)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	want := `
# HELP geoshard_backfill_docs_total Documents the reshard backfill copied to the target index (writes acknowledged, stale included).
# TYPE geoshard_backfill_docs_total counter
geoshard_backfill_docs_total ` + strconv.Itoa(e.docs.live()) + `
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "geoshard_backfill_docs_total"); err != nil {
		t.Error(err)
	}
	for _, p := range Phases {
		v := testutil.ToFloat64(e.m.met.phase.WithLabelValues(string(p)))
		if (v == 1) != (p == "verified") || (v != 0 && v != 1) {
			t.Errorf("geoshard_migration_phase{phase=%q} = %v in phase verified", p, v)
		}
	}
	// A second Migrator on the same registry shares the metrics.
	if other := e.migrator(reg); other.met.docs != e.m.met.docs {
		t.Errorf("a second Migrator registered its own counter")
	}
}
