package health

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/geoshard/geoshard/schema"
)

// Monitor is what this instance waits for, if anything: the Kafka
// brokers or OpenSearch. Each engine is failing from the first failure
// seen reaching it until something it answers shows that it is back:
//
//   - OpenSearch: every request goes through the client Observe returns
//     (its transport); a request that gets no answer, or a 502, 503 or
//     504, marks it failing, and any other answer clears it. The
//     pipeline's migration poll and heartbeat ask it every
//     MigrationPollInterval, so it is cleared within that of its return
//     even when nothing is written.
//   - Kafka: a join of the group, a fetch or a start-up request that
//     fails to reach a broker marks it failing (kafka-go retries inside
//     its readers, and tells of it only through their error loggers, which
//     report here too); a joined generation or a fetched message clears
//     it, and while it is failing a probe (ProbeBrokers) asks the brokers
//     for metadata every few seconds, so that it is cleared on an idle
//     topic too.
//
// The state it gives (State) is what /readyz, the heartbeat, the
// progress line and reshard status show: consuming, or what is awaited,
// since when and why.
//
// A nil *Monitor tells nothing: its Failed and OK do nothing, and its
// State is starting or consuming.
type Monitor struct {
	brokers string // as configured, for the messages
	search  string // the OpenSearch nodes, for the messages

	// failing has bit 1<<engine set while that engine is failing, so that
	// clearing on every fetched message costs one atomic load.
	failing atomic.Uint32
	mu      sync.Mutex
	waits   [2]wait
	log     *slog.Logger
	now     func() time.Time
}

// Engine is what the instance can wait for.
type Engine int

const (
	// Broker is the Kafka brokers.
	Broker Engine = iota
	// Search is OpenSearch.
	Search
)

// wait is one engine's failure: since when, doing what, and the last
// error.
type wait struct {
	since time.Time
	what  string
	err   error
}

// New returns a Monitor of the brokers and of the OpenSearch nodes search
// (as SearchNodes names them), both answering. It logs the start and the
// end of a wait to log, and reads the time from now.
func New(brokers []string, search string, log *slog.Logger, now func() time.Time) *Monitor {
	return &Monitor{brokers: strings.Join(brokers, ","), search: search, log: log, now: now}
}

// Failed records that reaching e failed while doing what. The first
// failure after a success is logged, with what is awaited.
func (h *Monitor) Failed(e Engine, what string, err error) {
	if h == nil {
		return
	}
	h.mu.Lock()
	w := &h.waits[e]
	first := w.since.IsZero()
	if first {
		w.since = h.now()
	}
	w.what, w.err = what, err
	h.failing.Or(1 << e)
	h.mu.Unlock()
	if first {
		state, waiting := h.describe(e, what, err)
		h.log.Warn("waiting: "+waiting, "state", state, "error", err)
	}
}

// OK records that e answered. It logs the end of a wait.
func (h *Monitor) OK(e Engine) {
	if h == nil || h.failing.Load()&(1<<e) == 0 {
		return
	}
	h.mu.Lock()
	w := h.waits[e]
	h.waits[e] = wait{}
	h.failing.And(^uint32(1 << e))
	h.mu.Unlock()
	if !w.since.IsZero() {
		name := "the Kafka brokers"
		if e == Search {
			name = "OpenSearch"
		}
		h.log.Info(name+" answer again", "waited", h.now().Sub(w.since).Round(time.Millisecond))
	}
}

// Waiting reports whether e is failing.
func (h *Monitor) Waiting(e Engine) bool {
	return h != nil && h.failing.Load()&(1<<e) != 0
}

// describe says what the instance waits for while e fails doing what.
func (h *Monitor) describe(e Engine, what string, err error) (schema.InstanceState, string) {
	if e == Broker {
		return schema.InstanceNoBroker, fmt.Sprintf("cannot reach the Kafka brokers %s (to %s); nothing is read until they answer", h.brokers, what)
	}
	return schema.InstanceNoOpenSearch, fmt.Sprintf("cannot reach OpenSearch %s (to %s); writes are retried, and reading is held until it answers", h.search, what)
}

// Health is what an instance is doing, as /readyz, its heartbeat and
// reshard status show it.
type Health struct {
	// State is consuming, starting, or what the instance waits for.
	State schema.InstanceState
	// Waiting says what is awaited and why (the last error); Since is
	// when the wait began. Both are empty unless State is a wait.
	Waiting string
	Since   time.Time
}

// String is the state as one line: "consuming", or the wait with its
// duration.
func (s Health) String() string {
	if s.Waiting == "" {
		return string(s.State)
	}
	return s.Waiting
}

// State is the current Health. OpenSearch comes first when both fail:
// nothing is written without it, and it is where the heartbeat goes.
// running says whether the instance has passed its start-up checks.
func (h *Monitor) State(running bool) Health {
	if h != nil && h.failing.Load() != 0 {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, e := range []Engine{Search, Broker} {
			if w := h.waits[e]; !w.since.IsZero() {
				state, waiting := h.describe(e, w.what, w.err)
				waiting = fmt.Sprintf("%s; for %s, since %s: %v", waiting,
					h.now().Sub(w.since).Round(time.Second), w.since.UTC().Format(time.RFC3339), w.err)
				return Health{State: state, Waiting: waiting, Since: w.since}
			}
		}
	}
	if !running {
		return Health{State: schema.InstanceStarting}
	}
	return Health{State: schema.InstanceConsuming}
}
