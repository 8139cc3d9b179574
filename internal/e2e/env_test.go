package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/kafkatest"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/pipeline"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// Names of the stack every test builds. Against the real broker the
// topics and the group get a suffix unique to the test (env.topic, dlq,
// group), since the broker outlives it; the streams' messages name
// eventTopic, and the feed sends them to env.topic.
const (
	alias      = "menu"
	sourceIdx  = "menu-v1"
	targetIdx  = "menu-v2"
	eventTopic = "menu-events"
	dlqTopic   = "geoshard.dlq"
	group      = "geoshard-ingest-e2e"
	partitions = 4
)

// env is a Kafka broker and an OpenSearch cluster with menu-v1 created
// under the 18-shard US map behind the alias menu (migrate.Init), and the
// 24-shard map a reshard moves it to: the in-process broker and the
// emulator, or with -tags realcluster the real engines (internal/realenv).
type env struct {
	t      testing.TB
	kafka  *kafkatest.Cluster
	os     *osfake.TestServer // nil against the real node
	url    string             // the cluster's address
	topic  string             // the event topic
	dlq    string
	group  string
	client *opensearch.Client
	admin  *bulk.Admin
	m18    *router.Map
	m24    *router.Map
}

func newEnv(t testing.TB) *env {
	t.Helper()
	e := &env{
		t:   t,
		m18: testenv.LoadMap(t, testenv.MapUS18),
		m24: testenv.LoadMap(t, testenv.MapUS24),
	}
	// One topic for restaurants and dishes, keyed by restaurant id: a
	// restaurant and its dishes share a partition, so their order is the
	// order produced, which the model relies on.
	e.topic, e.dlq, e.group = realenv.Unique(eventTopic), realenv.Unique(dlqTopic), realenv.Unique(group)
	e.kafka = kafkatest.Start(t, kafkatest.WithTopic(e.topic, partitions), kafkatest.WithTopic(e.dlq, 2))
	// The real node outlives the test: StartCluster clears what an
	// earlier one left (tests against it run one at a time), and what
	// this one leaves.
	c := testenv.StartCluster(t, testenv.ClusterOptions{RequestTimeout: testenv.RequestTimeout})
	e.os, e.url, e.client, e.admin = c.Server, c.URL, c.Client, c.Admin
	if err := migrate.Init(context.Background(), e.admin, migrate.InitConfig{Map: e.m18, Index: sourceIdx, Alias: alias}); err != nil {
		t.Fatal(err)
	}
	return e
}

// testLogger logs at debug level when E2E_TEST_LOG is set, else nothing.
func testLogger(component string) *slog.Logger {
	return testenv.Logger("E2E_TEST_LOG").With("component", component)
}

// pipelineConfig is an ingest instance's configuration with timings short
// enough for tests: the migration state is polled (and the heartbeat
// written) every 100ms, finished offsets committed every 50ms, and a dish
// whose restaurant never comes is dead-lettered after 1.5s.
func (e *env) pipelineConfig(instance string) pipeline.Config {
	return pipeline.Config{
		Brokers:               e.kafka.Addrs(),
		RestaurantTopic:       e.topic,
		DishTopic:             e.topic,
		Group:                 e.group,
		DLQTopic:              e.dlq,
		Alias:                 alias,
		Instance:              instance,
		MigrationPollInterval: 100 * time.Millisecond,
		CommitInterval:        50 * time.Millisecond,
		PendingMaxAge:         realenv.Slack(1500 * time.Millisecond),
		MapCheckInterval:      time.Second,
		DrainTimeout:          10 * time.Second,
		Kafka: pipeline.KafkaConfig{
			SessionTimeout:    3 * time.Second,
			HeartbeatInterval: 200 * time.Millisecond,
			RebalanceTimeout:  5 * time.Second,
			JoinGroupBackoff:  200 * time.Millisecond,
			MaxWait:           200 * time.Millisecond,
			DialTimeout:       5 * time.Second,
		},
		Bulk:       testenv.BulkConfig(),
		Logger:     testLogger("ingest"),
		Registerer: prometheus.NewRegistry(),
	}
}

// ingest is a pipeline running in the background.
type ingest struct {
	p        *pipeline.Pipeline
	instance string
	*testenv.Running
}

// startIngest starts a pipeline; the test's cleanup stops it.
func (e *env) startIngest(cfg pipeline.Config) *ingest {
	e.t.Helper()
	p, err := pipeline.New(cfg, e.client)
	if err != nil {
		e.t.Fatal(err)
	}
	return &ingest{p: p, instance: cfg.Instance, Running: testenv.Go(e.t, p.Run)}
}

// caughtUp reports whether the group has committed the event topic up to
// its high watermarks: every produced event is finished (written to every
// index it goes to, or dead-lettered) and committed.
func (e *env) caughtUp(ctx context.Context) (bool, string) {
	return testenv.CaughtUp(ctx, e.kafka, e.group, e.topic)
}

// waitDrained waits until the pipeline has finished and committed every
// produced event: committed offsets at the high watermarks, no lag and no
// dish waiting for its restaurant.
func (e *env) waitDrained(t testing.TB, in *ingest, timeout time.Duration) {
	t.Helper()
	timeout = realenv.Slack(timeout)
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	why := ""
	for time.Now().Before(deadline) {
		ok, w := e.caughtUp(ctx)
		st := in.p.Stats()
		switch {
		case !ok:
			why = w
		case st.Pending > 0:
			why = fmt.Sprintf("%d dishes pending", st.Pending)
		case st.Lag > 0:
			why = fmt.Sprintf("lag %d", st.Lag)
		default:
			return
		}
		if err, done := in.Exited(); done {
			t.Fatalf("pipeline %s stopped before draining (%s): %v", in.instance, why, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := in.p.Stats()
	t.Fatalf("pipeline %s not drained after %v: %s; fetched %d, finished %d, pending %d, lag %d", in.instance, timeout, why, st.Fetched, st.Finished, st.Pending, st.Lag)
}

// deadLetter is a message read back from the dead-letter topic.
type deadLetter struct {
	reason, detail string
	value          string
}

// readDLQ reads every dead letter written so far.
func (e *env) readDLQ(t testing.TB) []deadLetter {
	t.Helper()
	var out []deadLetter
	for _, m := range testenv.ReadTopic(t, e.kafka, e.dlq) {
		d := deadLetter{value: string(m.Value)}
		for _, hd := range m.Headers {
			switch hd.Key {
			case pipeline.HeaderReason:
				d.reason = string(hd.Value)
			case pipeline.HeaderError:
				d.detail = string(hd.Value)
			}
		}
		out = append(out, d)
	}
	return out
}

// heartbeat reads an ingest instance's heartbeat document.
func (e *env) heartbeat(t testing.TB, instance string) (schema.Heartbeat, bool) {
	t.Helper()
	var hb schema.Heartbeat
	found, err := testenv.ReadDoc(context.Background(), e.admin, schema.MigrationsIndex, schema.HeartbeatDocID(alias, instance), &hb)
	var ae *bulk.APIError
	if errors.As(err, &ae) && ae.Status == http.StatusServiceUnavailable {
		// The instance has just created the index, and the real node has
		// not started its primary yet: no heartbeat to read yet.
		return schema.Heartbeat{}, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return hb, found
}

// waitApplied waits until the instance's heartbeat reports phase of
// migration id, and checks that the pipeline's own stats agree.
func (e *env) waitApplied(t testing.TB, in *ingest, id string, phase schema.Phase) schema.Heartbeat {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var hb schema.Heartbeat
	for time.Now().Before(deadline) {
		// A missing heartbeat decodes as "no migration": found matters.
		hb, found := e.heartbeat(t, in.instance)
		if found && hb.MigrationID == id && hb.Applied == phase {
			if st := in.p.Stats(); len(st.Targets) == 0 || st.Migration.ID != id || st.Migration.Phase != phase {
				t.Fatalf("heartbeat of %s reports %q, but its Stats() = targets %v, migration %+v", in.instance, phase, st.Targets, st.Migration)
			}
			return hb
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("heartbeat of %s = %+v after 10s, want migration %q phase %s", in.instance, hb, id, phase)
	return hb
}

// writesTo checks the indexes the pipeline writes, the primary first.
func writesTo(t testing.TB, in *ingest, want ...string) {
	t.Helper()
	var got []string
	for _, ti := range in.p.Stats().Targets {
		got = append(got, ti.Index)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("pipeline %s writes %v, want %v (primary first)", in.instance, got, want)
	}
}

// migrator returns a reshard job for the alias. The logger may be nil.
func (e *env) migrator(reg prometheus.Registerer, log *slog.Logger) *migrate.Migrator {
	e.t.Helper()
	return e.migratorAt(reg, log, nil)
}

// migratorThrough is migrator with a client of its own that sends every
// request through tr, to hold or inspect the job's requests. The client
// sets no per-request timeout: tr may hold a request for as long as the
// test needs.
func (e *env) migratorThrough(tr http.RoundTripper) *migrate.Migrator {
	e.t.Helper()
	client, err := opensearch.NewClient(opensearch.Config{Addresses: []string{e.url}, Transport: tr, DisableRetry: true, HealthCheckMaxRetries: -1})
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := migrate.New(client, migrate.Config{Alias: alias, Logger: testLogger("reshard"), PollInterval: 20 * time.Millisecond})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// migratorAt is migrator with now for its clock (time.Now if nil): the
// clock that timestamps the migration and tells a live heartbeat from an
// old one.
func (e *env) migratorAt(reg prometheus.Registerer, log *slog.Logger, now func() time.Time) *migrate.Migrator {
	e.t.Helper()
	if log == nil {
		log = testLogger("reshard")
	}
	m, err := migrate.New(e.client, migrate.Config{Alias: alias, Logger: log, Registerer: reg, PollInterval: 20 * time.Millisecond, Now: now})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// aliasOn returns the alias's only index, failing unless it is the
// alias's write index and a search through the alias reads it.
func (e *env) aliasOn(t testing.TB) string {
	t.Helper()
	ctx := context.Background()
	ts, err := e.admin.Alias(ctx, alias)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != 1 {
		t.Fatalf("alias %s points to %v, want one index", alias, ts)
	}
	w, err := e.admin.WriteIndex(ctx, alias)
	if err != nil {
		t.Fatal(err)
	}
	if w != ts[0].Index {
		t.Fatalf("alias %s is on %s, its write index is %s", alias, ts[0].Index, w)
	}
	pg, err := e.admin.Search(ctx, alias, []byte(`{"size":20}`), bulk.SearchParams{})
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range pg.Hits {
		if h.Index != w {
			t.Fatalf("a search through alias %s read %s, its index is %s", alias, h.Index, w)
		}
	}
	return w
}

// logBuffer collects a logger's output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	tee io.Writer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.tee != nil {
		b.tee.Write(p)
	}
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// capturingLogger logs at info level into a buffer (and to stderr with
// E2E_TEST_LOG).
func capturingLogger() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	if os.Getenv("E2E_TEST_LOG") != "" {
		b.tee = os.Stderr
	}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelInfo})), b
}

// counterValue reads a counter's value from a registry (0 if absent).
func counterValue(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		var v float64
		for _, m := range mf.GetMetric() {
			v += m.GetCounter().GetValue()
		}
		return v
	}
	return 0
}
