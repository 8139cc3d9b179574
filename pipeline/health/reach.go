package health

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchtransport"
	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
)

// BrokerProbeInterval is how often the brokers are asked for metadata
// while they are failing (ProbeBrokers).
const BrokerProbeInterval = 5 * time.Second

// Unreachable reports whether err is a failure to reach a server (no
// connection, a connection cut, no answer in time), not an answer.
func Unreachable(err error) bool {
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

// BrokerLogged reads a kafka-go error logger's message for a failure to
// reach a broker (its readers retry inside and say so only there).
func BrokerLogged(msg string) bool {
	for _, s := range []string{"connection refused", "dial tcp", "i/o timeout", "connection reset", "broken pipe", "no such host", "EOF"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// ProbeBrokers asks the brokers for metadata every interval while they
// are failing, until ctx ends, so that their return is seen on an idle
// topic too.
func (h *Monitor) ProbeBrokers(ctx context.Context, client *kafka.Client, topic string, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !h.Waiting(Broker) {
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, every)
		_, err := client.Metadata(pctx, &kafka.MetadataRequest{Topics: []string{topic}})
		cancel()
		if err == nil {
			h.OK(Broker)
		} else if ctx.Err() == nil {
			h.Failed(Broker, "read the topics' metadata", err)
		}
	}
}

// awaitBackoff spaces AwaitBrokers's attempts: it starts as the
// pipeline's fetches do (250ms) and grows to 10s.
var awaitBackoff = bulk.Backoff{Initial: 250 * time.Millisecond, Max: 10 * time.Second}

// AwaitBrokers runs f, the start-up's first request to the brokers,
// until it answers or fails with an answer: while the brokers cannot be
// reached it waits (not ready, and saying so) instead of exiting, as a
// deployment whose brokers start after it, or restart, expects.
func (h *Monitor) AwaitBrokers(ctx context.Context, what string, f func(context.Context) error) error {
	b := awaitBackoff
	for failures := 0; ; failures++ {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err := f(cctx)
		cancel()
		switch {
		case err == nil:
			h.OK(Broker)
			return nil
		case ctx.Err() != nil:
			return ctx.Err()
		case !Unreachable(err):
			return err
		}
		h.Failed(Broker, what, err)
		if !sleepCtx(ctx, b.Delay(failures+1)) {
			return ctx.Err()
		}
	}
}

// sleepCtx waits d, and reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// observed is an OpenSearch transport that tells a Monitor whether each
// request was answered.
type observed struct {
	next opensearchtransport.Interface
	h    *Monitor
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
			o.h.Failed(Search, req.Method+" "+req.URL.Path, err)
		}
	case resp.StatusCode == http.StatusBadGateway, resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		o.h.Failed(Search, req.Method+" "+req.URL.Path, errors.New(resp.Status))
	default:
		o.h.OK(Search)
	}
}

// Observe returns a client like c whose requests report to h.
func (h *Monitor) Observe(c *opensearch.Client) *opensearch.Client {
	if c == nil || c.Transport == nil {
		return c
	}
	oc := *c
	oc.Transport = observed{next: c.Transport, h: h}
	return &oc
}

// SearchNodes names c's nodes for the messages.
func SearchNodes(c *opensearch.Client) string {
	if cfg := c.GetConfig(); cfg != nil && len(cfg.Addresses) > 0 {
		return strings.Join(cfg.Addresses, ",")
	}
	return "(the configured nodes)"
}
