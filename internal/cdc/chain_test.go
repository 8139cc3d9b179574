//go:build realcluster

package cdc

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// chain is the whole chain a test runs: the CDC source, the index behind
// its alias, and cmd/ingest as a process between them.
type chain struct {
	env      *cdcEnv
	admin    *bulk.Admin
	versions *versions
	bin      string
	args     []string
	ingest   *ingestProc
	starts   int
}

// startIngest starts (or, after a kill, restarts) ingest, under the same
// instance name: the reshard's wait for every live instance then finds
// one heartbeat, the live one's.
func (c *chain) startIngest(t *testing.T) {
	t.Helper()
	c.ingest = startIngestProc(t, c.bin, c.starts, c.args...)
	c.starts++
}

// phases logs how long each phase of a test took: figures, not checks.
type phases struct {
	t     *testing.T
	name  string
	start time.Time
	took  []string
}

func (p *phases) begin(name string) {
	p.end()
	p.name, p.start = name, time.Now()
}

func (p *phases) end() {
	if p.name == "" {
		return
	}
	d := time.Since(p.start).Round(10 * time.Millisecond)
	p.t.Logf("phase %s: %v", p.name, d)
	p.took = append(p.took, p.name+" "+d.String())
	p.name = ""
}

// TestChain runs Postgres → Debezium → Kafka → ingest → OpenSearch as
// deployed, ingest being cmd/ingest built from this checkout and run as
// a process (--format debezium --mapping FILE --dish-key dish):
//
//  1. snapshot: 40 restaurants with 4 dishes each are in the tables
//     before the connector starts; its snapshot reaches the index.
//  2. live: a writer inserts, edits and deletes rows, moves restaurants
//     to cities on other geoshards and dishes to restaurants on other
//     geoshards, and deletes restaurants with their dishes.
//  3. kill: ingest is SIGKILLed while the writer goes on, and started
//     again.
//  4. reshard: the index is resharded from the 18-shard map to the
//     24-shard map (package migrate, to cutover) while the writer goes
//     on.
//  5. settle: the writer stops; the index behind the alias (the target)
//     and the old one (kept current by dual writes) must each equal the
//     database shard by shard: every row once, on the shard its
//     restaurant's location routes to, at the LSN of its last change,
//     with its columns' values; no document without its row.
func TestChain(t *testing.T) {
	e := newCDCEnv(t, identifier(realenv.Unique("chain")))
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	p := &phases{t: t}
	defer func() {
		p.end()
		t.Logf("phases: %s", strings.Join(p.took, ", "))
	}()

	p.begin("setup")
	m18, m24 := testenv.LoadMap(t, testenv.MapUS18), testenv.LoadMap(t, testenv.MapUS24)
	// Its indexes are named apart from the menu* indexes other suites
	// delete before and after they run (realenv.MenuIndexes), and it
	// deletes only its own.
	cl := testenv.StartCluster(t, testenv.ClusterOptions{RequestTimeout: 30 * time.Second, Clear: []string{"cdc-menu*"}})
	alias := realenv.Unique("cdc-menu")
	source, target := alias+"-v1", alias+"-v2"
	if err := migrate.Init(ctx, cl.Admin, migrate.InitConfig{Map: m18, Index: source, Alias: alias}); err != nil {
		t.Fatal(err)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("writer seed %d", seed)
	w := newWriter(e.db, e.schema, m18, seed)
	if err := w.seed(ctx, 40, 4); err != nil {
		t.Fatal(err)
	}

	src := Source{Slot: e.schema, Publication: e.schema, TopicPrefix: e.schema, Partitions: 4}
	e.startSource(ctx, e.schema, src)
	restaurants, dishes := e.topics(src)
	e.waitTopics(ctx, restaurants, dishes)
	c := &chain{env: e, admin: cl.Admin, versions: followVersions(t, restaurants, dishes), bin: ingestBinary(t)}

	group := identifier(realenv.Unique("cdc_ingest"))
	dlq := group + ".dlq"
	e.createTopic(ctx, dlq, 1)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		// The topics ingest created, and the dead letters.
		e.deleteTopics(ctx, dlq, group+".dishes-by-restaurant", group+".parked")
	})
	mapping := writeMapping(t, e.schema, restaurants, dishes)
	c.args = []string{
		"--brokers", strings.Join(realenv.KafkaBrokers(), ","),
		"--opensearch", realenv.OpenSearchURL(),
		"--alias", alias,
		"--group", group,
		"--dlq-topic", dlq,
		"--format", "debezium",
		"--mapping", mapping,
		"--dish-key", "dish",
		"--instance", "cdc-chain",
		"--migration-poll-interval", "100ms",
		"--flush-interval", "50ms",
		"--kafka-session-timeout", "3s",
		"--kafka-heartbeat-interval", "300ms",
		"--kafka-rebalance-timeout", "5s",
		"--drain-timeout", "5s",
		"--metrics-addr", "",
	}
	c.startIngest(t)

	p.begin("snapshot")
	wait, done := context.WithTimeout(ctx, 90*time.Second)
	n, ok := c.waitEqual(t, wait, source, m18)
	done()
	if !ok {
		t.FailNow()
	}
	t.Logf("snapshot: %s equals the database: %d documents", source, n)

	p.begin("live")
	every := writeInterval(t)
	t.Logf("writer: a change every %v", every)
	w.start(every)
	defer w.stop()
	w.waitOps(ctx, t, 300)

	p.begin("kill")
	c.ingest.kill(t)
	t.Logf("ingest killed after %d changes", w.ops.Load())
	c.startIngest(t)
	w.waitOps(ctx, t, 300)

	p.begin("reshard")
	m, err := migrate.New(cl.Client, migrate.Config{Alias: alias, Logger: testenv.Logger("CDC_TEST_LOG").With("component", "reshard"), PollInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	stepStart := time.Now()
	atStart := w.ops.Load()
	mig, err := m.Run(ctx, migrate.RunConfig{
		Create:   migrate.CreateConfig{Map: m24, Target: target},
		Ack:      migrate.AckConfig{Timeout: 30 * time.Second},
		Backfill: migrate.BackfillConfig{Page: 200},
		Verify:   migrate.VerifyConfig{IDs: true, Attempts: 10, Pause: 100 * time.Millisecond, Settle: 30 * time.Second},
		Switch:   migrate.SwitchConfig{HealthTimeout: 30 * time.Second},
		OnStep: func(step migrate.Step, _ schema.Phase) {
			if len(steps) > 0 {
				steps[len(steps)-1] += " " + time.Since(stepStart).Round(10*time.Millisecond).String()
			}
			steps, stepStart = append(steps, string(step)), time.Now()
		},
	})
	if err != nil {
		hint := ""
		if strings.Contains(err.Error(), schema.MigrationsIndex) || strings.Contains(err.Error(), "no migration is recorded") {
			// Every real suite clears the migration state index
			// (realenv.MenuIndexes): run them one at a time.
			hint = " (was another real-engine suite running against the same node? it deletes " + schema.MigrationsIndex + ")"
		}
		t.Errorf("reshard (steps %v): %v%s", steps, err, hint)
		c.diagnoseReshard(t, ctx, m, w, map[string]*router.Map{source: m18, target: m24})
		t.FailNow()
	}
	if mig.Phase != schema.PhaseCutOver {
		t.Fatalf("reshard ended in phase %s after steps %v, want cut_over", mig.Phase, steps)
	}
	steps[len(steps)-1] += " " + time.Since(stepStart).Round(10*time.Millisecond).String()
	t.Logf("reshard %v ran under %d changes", steps, w.ops.Load()-atStart)
	if v := mig.Verification; v != nil {
		t.Logf("verification: %d differences were changes in flight, resolved", v.ResolvedInFlight)
	}
	if atStart == w.ops.Load() {
		t.Error("no change was made during the reshard: it ran under no live writes")
	}
	w.waitOps(ctx, t, 100)

	p.begin("settle")
	if err := w.stop(); err != nil {
		t.Fatalf("writer: %v", err)
	}
	t.Logf("writer: %d changes: %s", w.ops.Load(), w.summary())
	// Both, each given its time, even if the first differs: where a
	// difference is tells ingest's part from the reshard's.
	for _, ix := range []struct {
		index, what string
		mp          *router.Map
	}{
		{target, "behind " + alias + ", 24 shards", m24},
		{source, "dual-written, 18 shards", m18},
	} {
		wait, done := context.WithTimeout(ctx, 60*time.Second)
		if n, ok := c.waitEqual(t, wait, ix.index, ix.mp); ok {
			t.Logf("%s (%s) equals the database: %d documents", ix.index, ix.what, n)
		}
		done()
	}
	if idx, err := cl.Admin.WriteIndex(ctx, alias); err != nil || idx != target {
		t.Errorf("alias %s writes to %q (%v), want %s", alias, idx, err, target)
	}
	t.Logf("dead letters: %d; change events read: %d", e.topicSize(ctx, dlq), c.versions.count())
}

// diagnoseReshard logs, after the reshard failed, the duplicates its last
// verification found with their change events; then it stops the writer
// and says whether each index comes to equal the database under its map
// once the changes stop, telling differences that outlast the traffic
// from those that were only in flight.
func (c *chain) diagnoseReshard(t *testing.T, ctx context.Context, m *migrate.Migrator, w *writer, indexes map[string]*router.Map) {
	t.Helper()
	if mig, err := m.Load(ctx); err == nil && mig.Verification != nil {
		seen := map[string]bool{}
		for _, sh := range mig.Verification.Shards {
			for _, d := range sh.Duplicates {
				if key := d.Index + " " + d.ID; !seen[key] {
					seen[key] = true
					t.Logf("verification: %s; events %v", d, c.versions.of(d.ID))
				}
			}
		}
	}
	if err := w.stop(); err != nil {
		t.Logf("writer: %v", err)
	}
	for _, index := range testenv.SortedKeys(indexes) {
		wait, done := context.WithTimeout(ctx, 30*time.Second)
		if n, ok := c.waitEqual(t, wait, index, indexes[index]); ok {
			t.Logf("once the changes stopped, %s equalled the database (%d documents)", index, n)
		}
		done()
	}
}

// writeInterval is the writer's pace: a change every 5ms, or every
// CDC_WRITE_INTERVAL (a Go duration) to run the chain under more or fewer
// changes. At that pace a verification pass nearly always catches some
// change between its two writes (a move's copies and its deletes, a
// delete that reached one index): the reshard's verification reads such
// a difference again once ingest has finished the changes in flight when
// it was seen (its heartbeat's progress epoch), and reports only what
// outlives them.
func writeInterval(t *testing.T) time.Duration {
	t.Helper()
	v := os.Getenv("CDC_WRITE_INTERVAL")
	if v == "" {
		return 5 * time.Millisecond
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		t.Fatalf("CDC_WRITE_INTERVAL=%q: want a positive duration such as 8ms", v)
	}
	return d
}

// writeMapping writes the ingest mapping of the chain's two tables: ids,
// location and restaurant id columns, the columns copied, and versions
// from source.lsn.
func writeMapping(t *testing.T, schemaName, restaurants, dishes string) string {
	t.Helper()
	m := map[string]any{
		"version": "source.lsn",
		"restaurants": map[string]any{
			"topic": restaurants, "table": "restaurants", "schema": schemaName,
			"id": "id", "lat": "lat", "lon": "lon",
			"columns": []string{"name", "cuisines"},
		},
		"dishes": map[string]any{
			"topic": dishes, "table": "dishes", "schema": schemaName,
			"id": "id", "restaurant_id": "restaurant_id",
			"columns": []string{"name", "price_cents", "allergens", "diets"},
		},
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "mapping.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// createTopic creates a topic with one replica.
func (e *cdcEnv) createTopic(ctx context.Context, topic string, partitions int32) {
	e.t.Helper()
	resp, err := e.admin.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		e.t.Fatalf("create topic %s: %v", topic, err)
	}
}

// deleteTopics deletes topics, logging what fails: a topic that does not
// exist is fine.
func (e *cdcEnv) deleteTopics(ctx context.Context, topics ...string) {
	resp, err := e.admin.DeleteTopics(ctx, topics...)
	if err != nil {
		e.t.Logf("delete topics %v: %v", topics, err)
		return
	}
	for _, r := range resp {
		if r.Err != nil && !errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
			e.t.Logf("delete topic %s: %v", r.Topic, r.Err)
		}
	}
}

// topicSize is the number of records a topic holds, -1 if unknown.
func (e *cdcEnv) topicSize(ctx context.Context, topic string) int64 {
	ends, err := e.admin.ListEndOffsets(ctx, topic)
	if err != nil {
		return -1
	}
	var n int64
	ends.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

// count is how many change events were read.
func (v *versions) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.events
}
