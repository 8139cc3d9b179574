package migrate

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/schema"
)

// A backfill's progress states a rate only once this run has
// checkpointed documents, and its figures agree: the rate is of the
// checkpointed documents, which copied and stale split.
func TestBackfillProgressFigures(t *testing.T) {
	b := &backfill{
		m:      &Migrator{log: slog.New(slog.DiscardHandler)},
		start:  time.Now().Add(-time.Second),
		total:  1000,
		slices: []schema.SliceState{{Slice: 0, Docs: 100, Copied: 90, Stale: 10}, {Slice: 1}},
	}
	b.startDocs = 100 // checkpointed by an earlier run
	// Pages written, none checkpointed yet by this run.
	b.read.Store(663)
	b.copied.Store(663)
	p := b.progress(false)
	if p.Rate != 0 || p.ETA != 0 {
		t.Errorf("progress before this run's first checkpoint: rate %v, eta %v; want none", p.Rate, p.ETA)
	}
	if p.Docs != 100 || !p.Counted || p.Copied+p.Stale != p.Docs {
		t.Errorf("progress = %+v, want 100 checkpointed, split 90 copied 10 stale", p)
	}
	var log bytes.Buffer
	b.m.log = slog.New(slog.NewTextHandler(&log, nil))
	b.emit(p)
	if s := log.String(); strings.Contains(s, "docs_per_second") || strings.Contains(s, "eta") ||
		!strings.Contains(s, "checkpointed=100 copied=90 stale=10") {
		t.Errorf("progress log %q: want checkpointed, copied and stale, and no rate", s)
	}

	// This run checkpoints a page of slice 1.
	b.slices[1] = schema.SliceState{Slice: 1, Docs: 50, Copied: 48, Stale: 2}
	p = b.progress(false)
	if p.Rate <= 0 || p.ETA <= 0 || p.Docs != 150 || p.Copied != 138 || p.Stale != 12 {
		t.Errorf("progress after a checkpoint = %+v, want a rate, 150 checkpointed: 138 copied, 12 stale", p)
	}
	// The rate is of the 50 documents this run checkpointed, over at
	// least the second it has run: at most 50 a second.
	if p.Rate > 50 {
		t.Errorf("rate %v, want at most 50/s (50 checkpointed this run, over at least 1s)", p.Rate)
	}
}

// Counts that do not add up to a slice's documents (checkpointed by a
// job that did not count) leave the split unknown, not wrong.
func TestBackfillTotalsUncounted(t *testing.T) {
	slices := func(c0, s0, c1, s1 int64) []schema.SliceState {
		return []schema.SliceState{{Docs: 10, Done: true, Copied: c0, Stale: s0}, {Docs: 5, Copied: c1, Stale: s1}}
	}
	cases := []struct {
		name string
		ss   []schema.SliceState
		want BackfillTotals
	}{
		{"counted", slices(8, 2, 5, 0), BackfillTotals{15, 13, 2, true, 1, 2}},
		{"no counts stored", slices(0, 0, 0, 0), BackfillTotals{15, 0, 0, false, 1, 2}},
		{"one slice short", slices(8, 2, 3, 0), BackfillTotals{15, 0, 0, false, 1, 2}},
		{"one slice over", slices(8, 2, 5, 1), BackfillTotals{15, 0, 0, false, 1, 2}},
		{"no slices", nil, BackfillTotals{Counted: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := backfillTotals(tc.ss); got != tc.want {
				t.Errorf("backfillTotals = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// An instance's condition: its state, what it waits for since when, or
// how long it has not been heard from.
func TestDescribeInstance(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	since := now.Add(-2 * time.Minute)
	cases := []struct {
		name string
		hb   schema.Heartbeat
		live bool
		want string
	}{
		{"older instance", schema.Heartbeat{At: now}, true, ""},
		{"consuming", schema.Heartbeat{At: now, State: schema.InstanceConsuming, Since: since}, true, "consuming"},
		{"no broker", schema.Heartbeat{At: now, State: schema.InstanceNoBroker, Since: since, Waiting: "dial tcp 10.0.0.1:9092: connection refused"}, true,
			"waiting for the Kafka brokers since 2026-03-01T11:58:00Z (2m0s): dial tcp 10.0.0.1:9092: connection refused"},
		{"no opensearch", schema.Heartbeat{At: now, State: schema.InstanceNoOpenSearch, Since: since, Waiting: "503"}, true,
			"waiting for OpenSearch since 2026-03-01T11:58:00Z (2m0s): 503"},
		{"starting", schema.Heartbeat{At: now, State: schema.InstanceStarting}, true, "starting"},
		{"silent", schema.Heartbeat{At: now.Add(-312 * time.Second), State: schema.InstanceConsuming}, false,
			"not heard from for 312s (stopped, or cannot reach OpenSearch)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := describe(tc.hb, tc.live, now); got != tc.want {
				t.Errorf("describe(%+v) = %q, want %q", tc.hb, got, tc.want)
			}
		})
	}
}
