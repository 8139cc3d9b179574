package pipeline

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/pipeline/health"
)

// pendingEvent is a dish upsert of dish id of restaurant rid waiting.
func pendingEvent(rid, id string, op string, version int64) *event {
	return &event{change: &decode.Change{Type: decode.TypeDish, Op: op, ID: id, RestaurantID: rid, Version: version}}
}

// The progress line comes every interval while something happens, is
// quiet while nothing does, and a line about the waiting dishes says how
// many, the oldest's wait and when it is dead-lettered.
func TestProgressLines(t *testing.T) {
	var logs testenv.LogBuffer
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{"http://127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Brokers: []string{"127.0.0.1:1"}, RestaurantTopic: "r", DishTopic: "d", Group: "g", DLQTopic: "dlq", Alias: "menu",
		PendingMaxAge: 5 * time.Minute, Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	p, err := New(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	clock := t0
	p.now = func() time.Time { return clock }
	p.running.Store(true)
	l := newProgressLines(p, 10*time.Second)
	l.last.at, l.next = t0, t0.Add(10*time.Second)

	l.tick(t0.Add(5 * time.Second)) // not due
	if n := len(logLines(&logs, "progress")); n != 0 {
		t.Fatalf("%d lines before the interval, want 0", n)
	}
	p.out.finished.Add(2000)
	p.loop.fetched.Add(2000)
	p.out.deadLetters.Add(3)
	l.tick(t0.Add(10 * time.Second))
	lines := logLines(&logs, "progress")
	if len(lines) != 1 {
		t.Fatalf("%d lines at the interval, want 1:\n%s", len(lines), logs.String())
	}
	for _, want := range []string{"events_per_second=200", "finished=2000", "lag=0", "pending_dishes=0", "dead_letters=3", "state=consuming"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("progress line %q lacks %s", lines[0], want)
		}
	}
	l.tick(t0.Add(20 * time.Second)) // nothing happened
	if n := len(logLines(&logs, "progress")); n != 1 {
		t.Errorf("%d lines after an idle interval, want still 1:\n%s", n, logs.String())
	}
	// A dish waits for its restaurant, since 12:00:25.
	p.ix.pend.Add(pendingEvent("r-never", "d1", decode.OpUpsert, 1), t0.Add(25*time.Second))
	clock = t0.Add(85 * time.Second)
	l.tick(t0.Add(30 * time.Second))
	if n := len(logLines(&logs, "progress")); n != 2 {
		t.Errorf("%d lines once a dish waits, want 2:\n%s", n, logs.String())
	}
	waits := logLines(&logs, "dishes wait for their restaurant")
	if len(waits) != 1 {
		t.Fatalf("%d lines about waiting dishes, want 1:\n%s", len(waits), logs.String())
	}
	for _, want := range []string{"pending_dishes=1", "oldest_waited=1m0s", "oldest_dead_lettered_in=4m0s", "pending_age=5m0s", "then=unknown_restaurant"} {
		if !strings.Contains(waits[0], want) {
			t.Errorf("line %q lacks %s", waits[0], want)
		}
	}
	// While the dish waits with nothing else happening, the progress
	// line is left out and the dish's is not.
	clock = t0.Add(95 * time.Second)
	l.tick(t0.Add(40 * time.Second))
	if n, w := len(logLines(&logs, "progress")), len(logLines(&logs, "dishes wait for their restaurant")); n != 2 || w != 2 {
		t.Errorf("%d progress lines and %d about the waiting dish after an idle interval, want 2 and 2:\n%s", n, w, logs.String())
	}
	// Waiting for an engine is worth a line even with nothing else
	// changing.
	p.ix.pend.Take("r-never")
	l.tick(t0.Add(50 * time.Second))
	p.health.Failed(health.Search, "POST /_bulk", osfakeDown)
	l.tick(t0.Add(60 * time.Second))
	lines = logLines(&logs, "progress")
	if last := lines[len(lines)-1]; !strings.Contains(last, "state=cannot_reach_opensearch") || !strings.Contains(last, "waiting=") {
		t.Errorf("progress line while OpenSearch fails = %q, want its state and what it waits for", last)
	}
}

var osfakeDown = errorString("503 Service Unavailable")

type errorString string

func (e errorString) Error() string { return string(e) }
