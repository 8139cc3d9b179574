package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchtransport"
	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/schema"
)

// health is what this instance waits for, if anything: the Kafka
// brokers or OpenSearch. Each engine is failing from the first failure
// seen reaching it until something it answers shows that it is back:
//
//   - OpenSearch: every request goes through observed (the client's
//     transport); a request that gets no answer, or a 502, 503 or 504,
//     marks it failing, and any other answer clears it. The migration
//     poll and the heartbeat ask it every MigrationPollInterval, so it is
//     cleared within that of its return even when nothing is written.
//   - Kafka: a join of the group, a fetch or a start-up request that
//     fails to reach a broker marks it failing (kafka-go retries inside
//     its readers, and tells of it only through their error loggers, which
//     report here too); a joined generation or a fetched message clears
//     it, and while it is failing a probe asks the brokers for metadata
//     every few seconds, so that it is cleared on an idle topic too.
//
// The state it gives (State) is what /readyz, the heartbeat, the
// progress line and reshard status show: consuming, or what is awaited,
// since when and why.
type health struct {
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

// brokerProbeInterval is how often the brokers are asked for metadata
// while they are failing.
const brokerProbeInterval = 5 * time.Second

// engine is what the instance can wait for.
type engine int

const (
	engineBroker engine = iota
	engineSearch
)

// wait is one engine's failure: since when, doing what, and the last
// error.
type wait struct {
	since time.Time
	what  string
	err   error
}

func newHealth(brokers []string, search string, log *slog.Logger, now func() time.Time) *health {
	return &health{brokers: strings.Join(brokers, ","), search: search, log: log, now: now}
}

// failed records that reaching e failed while doing what. The first
// failure after a success is logged, with what is awaited.
func (h *health) failed(e engine, what string, err error) {
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

// ok records that e answered. It logs the end of a wait.
func (h *health) ok(e engine) {
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
		if e == engineSearch {
			name = "OpenSearch"
		}
		h.log.Info(name+" answer again", "waited", h.now().Sub(w.since).Round(time.Millisecond))
	}
}

// waiting reports whether e is failing.
func (h *health) waiting(e engine) bool {
	return h != nil && h.failing.Load()&(1<<e) != 0
}

// describe says what the instance waits for while e fails doing what.
func (h *health) describe(e engine, what string, err error) (schema.InstanceState, string) {
	if e == engineBroker {
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

// state is the current Health. OpenSearch comes first when both fail:
// nothing is written without it, and it is where the heartbeat goes.
// running says whether the instance has passed its start-up checks.
func (h *health) state(running bool) Health {
	if h != nil && h.failing.Load() != 0 {
		h.mu.Lock()
		defer h.mu.Unlock()
		for _, e := range []engine{engineSearch, engineBroker} {
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

// unreachable reports whether err is a failure to reach a server (no
// connection, a connection cut, no answer in time), not an answer.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	// kafka.Error is a net.Error too (Timeout, Temporary), but it is an
	// answer: the broker was reached. A coordinator or leader not yet
	// available is a broker starting or electing, not a broker gone.
	var ke kafka.Error
	if errors.As(err, &ke) {
		return ke == kafka.BrokerNotAvailable || ke == kafka.NetworkException
	}
	var ne net.Error
	var oe *net.OpError
	return errors.As(err, &oe) || errors.As(err, &ne) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, context.DeadlineExceeded)
}

// brokerLogged reads a kafka-go error logger's message for a failure to
// reach a broker (its readers retry inside and say so only there).
func brokerLogged(msg string) bool {
	for _, s := range []string{"connection refused", "dial tcp", "i/o timeout", "connection reset", "broken pipe", "no such host", "EOF"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// probeBrokers asks the brokers for metadata every interval while they
// are failing, until ctx ends, so that their return is seen on an idle
// topic too.
func (h *health) probeBrokers(ctx context.Context, client *kafka.Client, topic string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !h.waiting(engineBroker) {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		_, err := client.Metadata(pctx, &kafka.MetadataRequest{Topics: []string{topic}})
		cancel()
		if err == nil {
			h.ok(engineBroker)
		} else if ctx.Err() == nil {
			h.failed(engineBroker, "read the topics' metadata", err)
		}
	}
}

// awaitBrokers runs f, the start-up's first request to the brokers,
// until it answers or fails with an answer: while the brokers cannot be
// reached it waits (not ready, and saying so) instead of exiting, as a
// deployment whose brokers start after it, or restart, expects.
func (h *health) awaitBrokers(ctx context.Context, what string, f func(context.Context) error) error {
	b := fetchBackoff
	b.Max = 10 * time.Second
	for failures := 0; ; failures++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := f(cctx)
		cancel()
		switch {
		case err == nil:
			h.ok(engineBroker)
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !unreachable(err):
			return err
		}
		h.failed(engineBroker, what, err)
		if !sleepCtx(ctx, b.Delay(failures+1)) {
			return ctx.Err()
		}
	}
}

// observed is an OpenSearch transport that tells health whether each
// request was answered.
type observed struct {
	next opensearchtransport.Interface
	h    *health
}

func (o observed) Perform(req *http.Request) (*http.Response, error) {
	resp, err := o.next.Perform(req)
	o.note(req, resp, err)
	return resp, err
}

// Stream is Perform's unbuffered twin, which the bulk package uses.
func (o observed) Stream(req *http.Request) (*http.Response, error) {
	st, ok := o.next.(opensearch.Streamer)
	if !ok {
		return nil, opensearch.ErrTransportMissingMethodStream
	}
	resp, err := st.Stream(req)
	o.note(req, resp, err)
	return resp, err
}

func (o observed) note(req *http.Request, resp *http.Response, err error) {
	switch {
	case err != nil:
		if req.Context().Err() == nil {
			o.h.failed(engineSearch, req.Method+" "+req.URL.Path, err)
		}
	case resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		o.h.failed(engineSearch, req.Method+" "+req.URL.Path, errors.New(resp.Status))
	default:
		o.h.ok(engineSearch)
	}
}

// observe returns a client like c whose requests report to h.
func observe(c *opensearch.Client, h *health) *opensearch.Client {
	if c == nil || c.Transport == nil {
		return c
	}
	oc := *c
	oc.Transport = observed{next: c.Transport, h: h}
	return &oc
}

// searchNodes names c's nodes for the messages.
func searchNodes(c *opensearch.Client) string {
	if cfg := c.GetConfig(); cfg != nil && len(cfg.Addresses) > 0 {
		return strings.Join(cfg.Addresses, ",")
	}
	return "(the configured nodes)"
}
