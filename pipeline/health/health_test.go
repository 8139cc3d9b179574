package health

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/schema"
)

// logBuffer is the sink of a logger under test, which the test reads.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// logLines are the log lines of message msg.
func logLines(s *logBuffer, msg string) []string {
	var out []string
	for _, l := range strings.Split(s.String(), "\n") {
		if strings.Contains(l, "msg="+msg) || strings.Contains(l, `msg="`+msg) {
			out = append(out, l)
		}
	}
	return out
}

func TestHealthStates(t *testing.T) {
	var logs logBuffer
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	h := New([]string{"k1:9092", "k2:9092"}, "http://os:9200", slog.New(slog.NewTextHandler(&logs, nil)), func() time.Time { return now })
	if got := h.State(false); got.State != schema.InstanceStarting || got.Waiting != "" {
		t.Errorf("before start: %+v, want starting", got)
	}
	if got := h.State(true); got.State != schema.InstanceConsuming {
		t.Errorf("running: %+v, want consuming", got)
	}
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	h.Failed(Broker, "join the consumer group", refused)
	now = now.Add(35 * time.Second)
	h.Failed(Broker, "join the consumer group", refused) // logged once
	got := h.State(true)
	if got.State != schema.InstanceNoBroker || !got.Since.Equal(now.Add(-35*time.Second)) {
		t.Errorf("broker failing: %+v, want cannot_reach_broker since the first failure", got)
	}
	for _, want := range []string{"cannot reach the Kafka brokers k1:9092,k2:9092", "to join the consumer group", "nothing is read until they answer", "for 35s", "connection refused"} {
		if !strings.Contains(got.Waiting, want) {
			t.Errorf("waiting %q lacks %q", got.Waiting, want)
		}
	}
	// OpenSearch failing too comes first.
	h.Failed(Search, "POST /_bulk", errors.New("503 Service Unavailable"))
	if got := h.State(true); got.State != schema.InstanceNoOpenSearch || !strings.Contains(got.Waiting, "cannot reach OpenSearch http://os:9200 (to POST /_bulk)") {
		t.Errorf("both failing: %+v, want cannot_reach_opensearch first", got)
	}
	h.OK(Search)
	if got := h.State(true); got.State != schema.InstanceNoBroker {
		t.Errorf("OpenSearch back: %+v, want cannot_reach_broker still", got)
	}
	h.OK(Broker)
	if got := h.State(true); got.State != schema.InstanceConsuming || got.Waiting != "" {
		t.Errorf("both back: %+v, want consuming", got)
	}
	if n := len(logLines(&logs, "waiting: cannot reach the Kafka brokers")); n != 1 {
		t.Errorf("%d lines for one wait for the brokers, want 1:\n%s", n, logs.String())
	}
	if n := len(logLines(&logs, "the Kafka brokers answer again")); n != 1 {
		t.Errorf("%d lines for the brokers' return, want 1:\n%s", n, logs.String())
	}
	var nilHealth *Monitor
	nilHealth.Failed(Broker, "x", refused)
	nilHealth.OK(Broker)
	if nilHealth.State(true).State != schema.InstanceConsuming {
		t.Error("a nil Monitor is not consuming")
	}
}

func TestUnreachable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{nil, false},
		{&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true},
		{fmt.Errorf("metadata: %w", syscall.ECONNRESET), true},
		{io.ErrUnexpectedEOF, true},
		{context.DeadlineExceeded, true},
		{kafka.BrokerNotAvailable, true},
		{kafka.GroupCoordinatorNotAvailable, false},
		{kafka.LeaderNotAvailable, false},
		{kafka.UnknownTopicOrPartition, false},
		{kafka.RebalanceInProgress, false},
		{errors.New("pipeline: restaurant topic not found"), false},
	} {
		if got := Unreachable(tc.err); got != tc.want {
			t.Errorf("Unreachable(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
