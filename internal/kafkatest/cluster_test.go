package kafkatest

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/twmb/franz-go/pkg/kfake"
)

func TestNewRejectsBadConfig(t *testing.T) {
	realenv.Parallel(t)
	tests := []struct {
		name string
		opts []Option
		want []string // substrings the error must contain, all of them
	}{
		{"negative brokers", []Option{WithBrokers(-1)}, []string{"brokers -1 out of range [1, 16]"}},
		{"too many brokers", []Option{WithBrokers(17)}, []string{"brokers 17 out of range [1, 16]"}},
		{"ports do not match brokers", []Option{WithBrokers(2), WithPorts(0)}, []string{"1 ports for 2 brokers"}},
		{"port out of range", []Option{WithPorts(70000)}, []string{"port 70000 out of range [0, 65535]"}},
		{"port twice", []Option{WithPorts(40000, 40000)}, []string{"port 40000 given twice"}},
		{"no partitions", []Option{WithTopic("restaurants", 0)}, []string{`topic "restaurants": partitions 0 out of range [1, 1000]`}},
		{"empty topic name", []Option{WithTopic("", 1)}, []string{"empty topic name"}},
		{"topic twice", []Option{WithTopic("dishes", 1), WithTopic("dishes", 2)}, []string{`topic "dishes" declared twice`}},
		{
			"every problem at once",
			[]Option{WithBrokers(0), WithPorts(1, 2, -3), WithTopic("t", -1)},
			[]string{"port -3 out of range", `topic "t": partitions -1`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.opts...)
			if err == nil {
				c.Close()
				t.Fatalf("New(%s) = nil error, want %q", tt.name, tt.want)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New(%s) = %q, want it to contain %q", tt.name, err, w)
				}
			}
		})
	}
}

// TestBackend checks that New picks the backend realenv selects, and that
// WithInProcess always gets the in-process broker.
func TestBackend(t *testing.T) {
	realenv.Parallel(t)
	c := Start(t)
	if c.Real() != realenv.Enabled() || (c.Fake() == nil) != realenv.Enabled() {
		t.Errorf("Start() with realenv.Enabled() = %v: Real() = %v, Fake() = %v", realenv.Enabled(), c.Real(), c.Fake())
	}
	if realenv.Enabled() && !slices.Equal(c.Addrs(), realenv.KafkaBrokers()) {
		t.Errorf("Addrs() = %v on the real backend, want %v", c.Addrs(), realenv.KafkaBrokers())
	}

	in := Start(t, WithInProcess(), WithBrokers(2))
	if in.Real() || in.Fake() == nil || len(in.Addrs()) != 2 {
		t.Errorf("Start(WithInProcess(), WithBrokers(2)): Real() = %v, Fake() = %v, Addrs() = %v, want two in-process brokers",
			in.Real(), in.Fake(), in.Addrs())
	}
}

// TestRealRejectsBrokersAndPorts checks the settings that cannot apply to
// brokers New does not start.
func TestRealRejectsBrokersAndPorts(t *testing.T) {
	realenv.Parallel(t)
	tests := []struct {
		name  string
		opts  []Option
		wrong bool
	}{
		{"defaults", nil, false},
		{"one broker", []Option{WithBrokers(1)}, false},
		{"logger", []Option{WithLogger(slog.New(slog.DiscardHandler))}, false},
		{"three brokers", []Option{WithBrokers(3)}, true},
		{"a port", []Option{WithPorts(0)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg config
			for _, o := range tt.opts {
				o(&cfg)
			}
			cfg.resolve()
			err := cfg.validate(true)
			if got := err != nil; got != tt.wrong {
				t.Fatalf("validate on the real backend = %v, want an error: %v", err, tt.wrong)
			}
			if err != nil && !strings.Contains(err.Error(), "WithInProcess") {
				t.Errorf("validate on the real backend = %q, want it to point at WithInProcess", err)
			}
			if err := cfg.validate(false); err != nil {
				t.Errorf("validate in-process = %v, want nil", err)
			}
		})
	}
}

// TestCloseDeletesCreatedTopics checks that a Cluster on the real broker
// removes what it created: the broker outlives it.
func TestCloseDeletesCreatedTopics(t *testing.T) {
	realenv.RealOnly(t)
	ctx := testContext(t)
	declared, added := realenv.Unique("restaurants"), realenv.Unique("dishes")
	c, err := New(WithTopic(declared, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateTopic(ctx, added, 1); err != nil {
		c.Close()
		t.Fatal(err)
	}
	c.Close()

	// Deletion completes on the broker after DeleteTopics answers, so the
	// topics may show for a moment longer.
	other := Start(t)
	for _, topic := range []string{declared, added} {
		for {
			_, err := other.HighWatermarks(ctx, topic)
			if errors.Is(err, ErrUnknownTopic) {
				break
			}
			if ctx.Err() != nil {
				t.Fatalf("HighWatermarks(%s) after Close = %v, want %v", topic, err, ErrUnknownTopic)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestClustersDoNotCollide runs clusters side by side, as parallel tests
// do: each gets its own loopback ports and its own data.
func TestClustersDoNotCollide(t *testing.T) {
	realenv.EmulatorOnly(t, "two clusters side by side are two in-process brokers, each on ports of its own")
	realenv.Parallel(t)
	tests := []struct {
		name    string
		opts    []Option
		brokers int
	}{
		{"one broker each", nil, 1},
		{"three brokers each", []Option{WithBrokers(3)}, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testContext(t)
			opts := append(slices.Clone(tt.opts), WithTopic("restaurants", 4))
			a, b := Start(t, opts...), Start(t, opts...)

			seen := make(map[string]bool)
			for _, c := range []*Cluster{a, b} {
				addrs := c.Addrs()
				if len(addrs) != tt.brokers {
					t.Errorf("Addrs() = %v, want %d addresses", addrs, tt.brokers)
				}
				for _, addr := range addrs {
					host, _, err := net.SplitHostPort(addr)
					if err != nil || host != "127.0.0.1" {
						t.Errorf("address %q: host %q (%v), want 127.0.0.1", addr, host, err)
					}
					if seen[addr] {
						t.Errorf("address %q used twice", addr)
					}
					seen[addr] = true
				}
			}

			// Each cluster sees only its own messages, and a kafka-go
			// reader reads them from whichever broker leads each partition.
			for i, c := range []*Cluster{a, b} {
				n := 3 + 2*i
				for j := range n {
					if _, _, err := c.Produce(ctx, "restaurants", fmt.Appendf(nil, "k%d", j), []byte("v")); err != nil {
						t.Fatal(err)
					}
				}
				r := c.NewReader("g", "restaurants")
				got, err := fetchN(ctx, r, n)
				if err == nil {
					err = r.CommitMessages(ctx, got...)
				}
				r.Close()
				if err != nil {
					t.Fatalf("cluster %d: %v", i, err)
				}
				if lag, err := c.Lag(ctx, "g", "restaurants"); err != nil || lag != 0 {
					t.Errorf("cluster %d: Lag = %d, %v, want 0", i, lag, err)
				}
				hw, err := c.HighWatermarks(ctx, "restaurants")
				if err != nil {
					t.Fatal(err)
				}
				var total int64
				for _, h := range hw {
					total += h
				}
				if total != int64(n) {
					t.Errorf("cluster %d holds %d messages (%v), want %d", i, total, hw, n)
				}
			}
		})
	}
}

func TestFixedPort(t *testing.T) {
	realenv.EmulatorOnly(t, "the cluster listens on a port the test picks")
	realenv.Parallel(t)
	// Ask the kernel for a free port, release it, and have the cluster
	// take it. Another process could grab it in between; on a test
	// machine that is rare enough to accept.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}

	c := Start(t, WithPorts(port))
	want := []string{fmt.Sprintf("127.0.0.1:%d", port)}
	if got := c.Addrs(); !slices.Equal(got, want) {
		t.Errorf("Addrs() = %v, want %v", got, want)
	}

	// The port is taken now, so a second cluster on it must fail.
	if c2, err := New(WithPorts(port)); err == nil {
		c2.Close()
		t.Errorf("New(WithPorts(%d)) while the port is in use = nil error, want one", port)
	}
}

func TestCreateTopicAfterStart(t *testing.T) {
	realenv.Parallel(t)
	ctx := testContext(t)
	restaurants, dishes, missing := realenv.Unique("restaurants"), realenv.Unique("dishes"), realenv.Unique("missing")
	c := Start(t, WithTopic(restaurants, 2))
	if err := c.CreateTopic(ctx, dishes, 3); err != nil {
		t.Fatalf("CreateTopic(%s, 3) = %v", dishes, err)
	}
	hw, err := c.HighWatermarks(ctx, dishes)
	if err != nil || len(hw) != 3 {
		t.Errorf("HighWatermarks(%s) = %v, %v, want 3 partitions", dishes, hw, err)
	}
	if err := c.CreateTopic(ctx, restaurants, 2); err == nil {
		t.Errorf("CreateTopic(%s) for an existing topic = nil error, want one", restaurants)
	}
	if err := c.CreateTopic(ctx, "bad", 0); err == nil {
		t.Error("CreateTopic(bad, 0) = nil error, want one")
	}
	if _, err := c.HighWatermarks(ctx, missing); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("HighWatermarks(%s) = %v, want %v", missing, err, ErrUnknownTopic)
	}
	if _, err := c.Lag(ctx, "g", missing); !errors.Is(err, ErrUnknownTopic) {
		t.Errorf("Lag(g, %s) = %v, want %v", missing, err, ErrUnknownTopic)
	}
}

// The topics a Cluster creates have a replica on each broker up to three,
// so that a cluster requiring two in sync takes an acks=all write on every
// partition; in-process, one copy.
func TestTopicReplicas(t *testing.T) {
	realenv.Parallel(t)
	ctx := testContext(t)
	topic := realenv.Unique("replicated")
	c := Start(t, WithTopic(topic, 3))
	if !c.Real() {
		if c.Brokers() != 1 || c.Replicas() != 1 {
			t.Errorf("in-process Brokers(), Replicas() = %d, %d; want 1, 1", c.Brokers(), c.Replicas())
		}
		return
	}
	if c.Brokers() < realenv.Brokers() {
		t.Errorf("Brokers() = %d, fewer than the %d addresses given (%v)", c.Brokers(), realenv.Brokers(), realenv.KafkaBrokers())
	}
	if want := realenv.TopicReplicas(c.Brokers()); c.Replicas() != want {
		t.Errorf("Replicas() = %d with %d brokers, want %d", c.Replicas(), c.Brokers(), want)
	}
	adm, err := newAdmin(c.Addrs())
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics[topic]
	if len(td.Partitions) != 3 {
		t.Fatalf("metadata of %s: %d partitions, want 3", topic, len(td.Partitions))
	}
	for _, p := range td.Partitions {
		if len(p.Replicas) != c.Replicas() {
			t.Errorf("%s/%d has replicas %v, want %d", topic, p.Partition, p.Replicas, c.Replicas())
		}
	}
	for p := range 3 {
		if _, err := c.ProduceTo(ctx, topic, p, []byte("k"), []byte("v")); err != nil {
			t.Errorf("ProduceTo(%s, %d) with acks=all = %v", topic, p, err)
		}
	}
}

func TestUnknownGroup(t *testing.T) {
	realenv.Parallel(t)
	ctx := testContext(t)
	topic, group := realenv.Unique("restaurants"), realenv.Unique("nobody")
	c := Start(t, WithTopic(topic, 2))
	g, err := c.DescribeGroup(ctx, group)
	if err != nil || g.State != "Dead" || len(g.Members) != 0 {
		t.Errorf("DescribeGroup(%s) = %+v, %v, want state Dead and no members", group, g, err)
	}
	offsets, err := c.CommittedOffsets(ctx, group, topic)
	if err != nil || len(offsets) != 0 {
		t.Errorf("CommittedOffsets(%s) = %v, %v, want none", group, offsets, err)
	}
}

func TestClosedCluster(t *testing.T) {
	realenv.Parallel(t)
	ctx := testContext(t)
	topic := realenv.Unique("restaurants")
	c, err := New(WithTopic(topic, 2))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close() // idempotent

	calls := []struct {
		name string
		call func() error
	}{
		{"Produce", func() error { _, _, err := c.Produce(ctx, topic, nil, nil); return err }},
		{"CreateTopic", func() error { return c.CreateTopic(ctx, realenv.Unique("dishes"), 1) }},
		{"HighWatermarks", func() error { _, err := c.HighWatermarks(ctx, topic); return err }},
		{"CommittedOffsets", func() error { _, err := c.CommittedOffsets(ctx, "g", topic); return err }},
		{"Lag", func() error { _, err := c.Lag(ctx, "g", topic); return err }},
		{"DescribeGroup", func() error { _, err := c.DescribeGroup(ctx, "g"); return err }},
		{"WaitGroupStable", func() error { _, err := c.WaitGroupStable(ctx, "g", 1); return err }},
	}
	for _, tt := range calls {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, ErrClosed) {
				t.Errorf("%s after Close = %v, want %v", tt.name, err, ErrClosed)
			}
		})
	}
}

// TestWithLogger checks how kfake's lines reach slog. kfake logs only
// trouble (unparseable requests, failed handlers), so the adapter is
// driven directly rather than by provoking the broker.
func TestWithLogger(t *testing.T) {
	realenv.Parallel(t)
	tests := []struct {
		level kfake.LogLevel
		want  string // the slog record, "" for none
	}{
		{kfake.LogLevelError, `level=ERROR msg="kafkatest: broker" line="request 7 failed"`},
		{kfake.LogLevelWarn, `level=WARN msg="kafkatest: broker" line="request 7 failed"`},
		{kfake.LogLevelInfo, `level=INFO msg="kafkatest: broker" line="request 7 failed"`},
		{kfake.LogLevelDebug, ""}, // below the handler's Info
		{kfake.LogLevelNone, ""},
	}
	for _, tt := range tests {
		t.Run(tt.level.String(), func(t *testing.T) {
			var buf syncBuffer
			h := slog.NewTextHandler(&buf, &slog.HandlerOptions{
				Level: slog.LevelInfo,
				ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
					if a.Key == slog.TimeKey {
						return slog.Attr{}
					}
					return a
				},
			})
			slogAdapter{slog.New(h)}.Logf(tt.level, "request %d failed", 7)
			if got := strings.TrimSpace(buf.String()); got != tt.want {
				t.Errorf("Logf(%v) logged %q, want %q", tt.level, got, tt.want)
			}
		})
	}

	// And the option reaches the broker: a cluster with a logger starts
	// (on the real backend, which ignores it, too).
	l := slog.New(slog.NewTextHandler(&syncBuffer{}, nil))
	Start(t, WithLogger(l))
}

// syncBuffer is a bytes.Buffer the broker's goroutines can write to while
// the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
