package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/kafkatest"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/router"
)

const (
	testIndex = "menu-v1"
	testAlias = "menu"
	testGroup = "ingest-test"
	testDLQ   = "geoshard.dlq"
)

// testEnv is a Kafka broker and an OpenSearch cluster with the menu
// index created under the us-18 map, behind its alias: the in-process
// broker and the emulator, or with -tags realcluster the real engines
// (see internal/realenv). Topic and group names are unique to the test
// there, since the broker outlives it.
type testEnv struct {
	t     testing.TB
	kafka *kafkatest.Cluster
	// os is the emulator, nil against the real node: a test that injects
	// faults or reads the emulator's state says so with
	// realenv.EmulatorOnly before it touches os.
	os     *osfake.TestServer
	url    string // the cluster's URL
	client *opensearch.Client
	admin  *bulk.Admin
	m      *router.Map
	// restaurantTopic and dishTopic may be the same topic.
	restaurantTopic, dishTopic string
	group, dlq                 string
	// repartition, if set, is the repartition topic of a pipeline run
	// with DishKeyDish: caughtUp then follows the dish topic through it.
	repartition string
}

type envOptions struct {
	partitions int
	twoTopics  bool
	// dishPartitions, with twoTopics, gives the dish topic another
	// partition count than the restaurant topic's.
	dishPartitions int
	// dishKeyDish runs the pipeline with DishKeyDish (config sets it) on
	// a repartition topic of the test's own; needs twoTopics.
	dishKeyDish bool
	// inProcess uses the in-process broker and the emulator even under
	// -tags realcluster, for benchmarks that compare the two.
	inProcess bool
}

func newEnv(t testing.TB, o envOptions) *testEnv {
	t.Helper()
	if o.partitions == 0 {
		o.partitions = 4
	}
	e := &testEnv{t: t, m: testenv.LoadMap(t, testenv.MapUS18), group: realenv.Unique(testGroup), dlq: realenv.Unique(testDLQ)}
	e.restaurantTopic = realenv.Unique("menu-events")
	e.dishTopic = e.restaurantTopic
	opts := []kafkatest.Option{kafkatest.WithTopic(e.dlq, 2)}
	if o.inProcess {
		opts = append(opts, kafkatest.WithInProcess())
	}
	if o.twoTopics {
		e.restaurantTopic, e.dishTopic = realenv.Unique("restaurants"), realenv.Unique("dishes")
		dp := o.partitions
		if o.dishPartitions > 0 {
			dp = o.dishPartitions
		}
		opts = append(opts, kafkatest.WithTopic(e.restaurantTopic, o.partitions), kafkatest.WithTopic(e.dishTopic, dp))
	} else {
		opts = append(opts, kafkatest.WithTopic(e.restaurantTopic, o.partitions))
	}
	if o.dishKeyDish {
		e.repartition = realenv.Unique("dishes-by-restaurant")
	}
	e.kafka = kafkatest.Start(t, opts...)
	e.openSearch(t, realenv.Enabled() && !o.inProcess)
	return e
}

// openSearch connects the environment to its cluster and creates the
// test index behind its alias (with one replica on a real cluster of
// several nodes, none elsewhere). The real node is first cleared of what an
// earlier test left: the menu indexes, and the migration state, whose
// index has one fixed name (tests against it run one at a time).
func (e *testEnv) openSearch(t testing.TB, real bool) {
	t.Helper()
	c := testenv.StartCluster(t, testenv.ClusterOptions{InProcess: !real, RequestTimeout: testenv.RequestTimeout})
	e.os, e.url, e.client, e.admin = c.Server, c.URL, c.Client, c.Admin
	replicas := 0
	if real {
		replicas = realenv.IndexReplicas() // one on a cluster, as in production
	}
	if err := migrate.Init(context.Background(), e.admin, migrate.InitConfig{Map: e.m, Index: testIndex, Alias: testAlias, Replicas: &replicas}); err != nil {
		t.Fatal(err)
	}
}

// config is a pipeline configuration for the environment, with timings
// short enough for tests.
func (e *testEnv) config() Config {
	dk := DishKeyRestaurant
	if e.repartition != "" {
		dk = DishKeyDish
	}
	return Config{
		DishKey:          dk,
		RepartitionTopic: e.repartition,
		Brokers:          e.kafka.Addrs(),
		RestaurantTopic:  e.restaurantTopic,
		DishTopic:        e.dishTopic,
		Group:            e.group,
		DLQTopic:         e.dlq,
		Alias:            testAlias,
		CommitInterval:   50 * time.Millisecond,
		PendingMaxAge:    realenv.Slack(2 * time.Second),
		MapCheckInterval: time.Second,
		DrainTimeout:     10 * time.Second,
		MaxEventBytes:    64 << 10,
		Kafka: KafkaConfig{
			SessionTimeout:    3 * time.Second,
			HeartbeatInterval: 200 * time.Millisecond,
			RebalanceTimeout:  5 * time.Second,
			JoinGroupBackoff:  200 * time.Millisecond,
			MaxWait:           200 * time.Millisecond,
			DialTimeout:       5 * time.Second,
		},
		Bulk:       testenv.BulkConfig(),
		Logger:     testLogger(),
		Registerer: prometheus.NewRegistry(),
	}
}

func testLogger() *slog.Logger { return testenv.Logger("PIPELINE_TEST_LOG") }

// running is a pipeline started in the background.
// running is a pipeline running on a goroutine of its own.
type running struct {
	p *Pipeline
	*testenv.Running
}

func (e *testEnv) start(cfg Config) *running {
	e.t.Helper()
	return e.startWith(cfg, nil)
}

// startWith starts a pipeline after letting setup adjust it.
func (e *testEnv) startWith(cfg Config, setup func(*Pipeline)) *running {
	e.t.Helper()
	p, err := New(cfg, e.client)
	if err != nil {
		e.t.Fatal(err)
	}
	if setup != nil {
		setup(p)
	}
	return &running{p: p, Running: testenv.Go(e.t, p.Run)}
}

// produced is one event as stored in Kafka.
type produced struct {
	topic     string
	partition int
	offset    int64
}

// produce writes events in order, each to its type's topic, keyed as given.
func (e *testEnv) produce(ctx context.Context, evs []genEvent) []produced {
	e.t.Helper()
	out := make([]produced, len(evs))
	// ProduceBatch keeps the order of messages with the same key; batch by
	// topic in runs so the global order is kept too.
	for i := 0; i < len(evs); {
		topic := e.topicOf(evs[i])
		j := i
		var msgs []kafkatest.Message
		for j < len(evs) && e.topicOf(evs[j]) == topic && j-i < 500 {
			msgs = append(msgs, kafkatest.Message{Key: evs[j].key, Value: evs[j].value})
			j++
		}
		res, err := e.kafka.ProduceBatch(ctx, topic, msgs)
		if err != nil {
			e.t.Fatal(err)
		}
		for k, r := range res {
			out[i+k] = produced{topic: topic, partition: r.Partition, offset: r.Offset}
		}
		i = j
	}
	return out
}

func (e *testEnv) topicOf(ev genEvent) string {
	if ev.dish {
		return e.dishTopic
	}
	return e.restaurantTopic
}

// caughtUp reports whether the group has committed every event topic up
// to its high watermarks and no dish is parked: a parked dish's offset
// is committed while it waits (parking.go), so only an empty parking
// topic says that every event is decided.
func (e *testEnv) caughtUp(ctx context.Context) (bool, string) {
	if ok, why := e.committedAll(ctx); !ok {
		return false, why
	}
	if n := e.parkedLive(); n > 0 {
		return false, strconv.Itoa(n) + " dishes parked"
	}
	return true, ""
}

// parkedLive counts the parking records without a tombstone after them.
func (e *testEnv) parkedLive() int {
	if _, err := e.kafka.HighWatermarks(context.Background(), e.parkingTopic()); err != nil {
		return 0 // not created: no pipeline started
	}
	live := map[string]bool{}
	for _, m := range testenv.ReadTopic(e.t, e.kafka, e.parkingTopic()) {
		live[string(m.Key)] = m.Value != nil
	}
	n := 0
	for _, l := range live {
		if l {
			n++
		}
	}
	return n
}

// parkedSources is where the dishes of the live parking records were
// read.
func (e *testEnv) parkedSources() []produced {
	if _, err := e.kafka.HighWatermarks(context.Background(), e.parkingTopic()); err != nil {
		return nil // not created: no pipeline started
	}
	live := map[string]*produced{}
	for _, m := range testenv.ReadTopic(e.t, e.kafka, e.parkingTopic()) {
		if m.Value == nil {
			live[string(m.Key)] = nil
			continue
		}
		var src produced
		for _, h := range m.Headers {
			switch h.Key {
			case HeaderSourceTopic:
				src.topic = string(h.Value)
			case HeaderSourcePartition:
				src.partition, _ = strconv.Atoi(string(h.Value))
			case HeaderSourceOffset:
				src.offset, _ = strconv.ParseInt(string(h.Value), 10, 64)
			}
		}
		live[string(m.Key)] = &src
	}
	var out []produced
	for _, k := range testenv.SortedKeys(live) {
		if src := live[k]; src != nil {
			out = append(out, *src)
		}
	}
	return out
}

// parkingTopic is the pipeline's parking topic at its default name.
func (e *testEnv) parkingTopic() string { return e.group + ".parked" }

// committedAll reports whether the group has committed every event
// topic up to its high watermarks.
func (e *testEnv) committedAll(ctx context.Context) (bool, string) {
	type consumed struct{ group, topic string }
	topics := []consumed{{e.group, e.restaurantTopic}}
	switch {
	case e.repartition != "":
		// The dish topic is forwarded first, so its commit is read first:
		// then the repartition topic's high watermark includes it all.
		topics = []consumed{{e.group + ".repartition", e.dishTopic}, {e.group, e.repartition}, {e.group, e.restaurantTopic}}
	case e.dishTopic != e.restaurantTopic:
		topics = append(topics, consumed{e.group, e.dishTopic})
	}
	for _, c := range topics {
		if ok, why := testenv.CaughtUp(ctx, e.kafka, c.group, c.topic); !ok {
			return false, why
		}
	}
	return true, ""
}

// waitCaughtUp waits until every event is committed and no dish is
// parked.
func (e *testEnv) waitCaughtUp(t testing.TB, r *running, timeout time.Duration) {
	t.Helper()
	e.waitUntil(t, r, timeout, e.caughtUp)
}

// waitCommitted waits until every event is committed; dishes may still
// be parked, waiting for a restaurant (with waitForever, those whose
// restaurant never comes: see expireOrphans).
func (e *testEnv) waitCommitted(t testing.TB, r *running, timeout time.Duration) {
	t.Helper()
	e.waitUntil(t, r, timeout, e.committedAll)
}

// waitUntil waits until done holds, and fails the test if it does not
// while the member makes no progress for timeout: on a starved machine
// catching up takes any time, and only a stall is a failure.
func (e *testEnv) waitUntil(t testing.TB, r *running, timeout time.Duration, done func(context.Context) (bool, string)) {
	t.Helper()
	timeout = realenv.Slack(timeout)
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	why, last := "", ""
	for time.Now().Before(deadline) {
		var ok bool
		if ok, why = done(ctx); ok {
			return
		}
		if err, ok := r.Exited(); ok {
			t.Fatalf("Run returned %v before catching up (%s)", err, why)
		}
		st := r.p.Stats()
		if now := fmt.Sprint(why, st.Fetched, st.Finished, st.Pending, st.Bulk.Added, st.Bulk.Finished()); now != last {
			last, deadline = now, time.Now().Add(timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
	st := r.p.Stats()
	t.Fatalf("not caught up, and no progress for %v: %s; pending %d, fetched %d, finished %d, events %v; bulk added %d, finished %d, retries %d, requests %d",
		timeout, why, st.Pending, st.Fetched, st.Finished, st.Events, st.Bulk.Added, st.Bulk.Finished(), st.Bulk.Retries, st.Bulk.Requests)
}

// waitNoLag waits until the member's own figures show no lag: its
// tracker learns of a commit when the broker's answer reaches it, which
// on a busy machine can be well after the broker shows the commit to
// another client (committedAll).
func (e *testEnv) waitNoLag(t testing.TB, r *running) {
	t.Helper()
	e.waitUntil(t, r, 30*time.Second, func(context.Context) (bool, string) {
		lag := r.p.Stats().Lag
		return lag == 0, fmt.Sprintf("the member's lag is %d", lag)
	})
}

// waitForever is a pending max age beyond any test run. A dish waits for
// its restaurant until it comes however busy the machine is: with two
// topics read by separate readers the restaurant's event may be decided
// seconds after the dish, and a dish parked by an instance that is then
// killed or loses its partition keeps its first parking time, so its
// next owner counts the restart, the session timeout and the rebalance
// against its wait. A test that is not about the expiry, and whose model
// says such a dish is indexed, sets it and lets the dishes whose
// restaurant never comes go with expireOrphans.
const waitForever = time.Hour

// expireOrphans dead-letters the dishes still parked once the group has
// committed every event and its instances have stopped. Every restaurant
// event of the log is then finished, so a dish still parked waits for a
// restaurant that is not in the log, or was deleted: what the model
// dead-letters as unknown_restaurant. An instance with no patience reads
// the parked dishes back, writes any whose restaurant the index has (its
// warmed directory, or the lookup before an expiry, finds it), and
// dead-letters the rest at its first expiry tick. Nothing here depends on
// how long anything took.
//
// With the log (evs, produced at where), it first checks that every dish
// still parked is one the model dead-letters: a dish whose restaurant
// the log brings, stranded where it never sees it, is a defect that the
// lookup before an expiry would otherwise hide.
func (e *testEnv) expireOrphans(t testing.TB, evs []genEvent, where []produced) {
	t.Helper()
	if ok, why := e.committedAll(context.Background()); !ok {
		t.Fatalf("expiring the waiting dishes before every event is committed: %s", why)
	}
	if evs != nil {
		dead := runModel(evs).deadLetters
		index := map[produced]int{}
		for i, w := range where {
			index[w] = i
		}
		for _, src := range e.parkedSources() {
			i, ok := index[src]
			switch {
			case !ok:
				t.Errorf("parked dish from %s/%d@%d, which the test did not produce", src.topic, src.partition, src.offset)
			case dead[i] != decode.ReasonUnknownRestaurant:
				t.Errorf("dish still parked once every event is committed: event %d (%s/%d@%d) %.120s; the model writes it", i, src.topic, src.partition, src.offset, evs[i].value)
			}
		}
	}
	cfg := e.config()
	cfg.PendingMaxAge = time.Nanosecond
	cfg.Instance = "ingest-expiry"
	r := e.start(cfg)
	e.waitCaughtUp(t, r, 30*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatalf("expiring the waiting dishes: Run = %v", err)
	}
}

// dlqRecord is a dead letter read back.
type dlqRecord struct {
	reason, detail string
	src            produced
	key, value     string
}

// readDLQ reads every dead letter written so far.
func (e *testEnv) readDLQ(t testing.TB) []dlqRecord {
	t.Helper()
	var out []dlqRecord
	for _, m := range testenv.ReadTopic(t, e.kafka, e.dlq) {
		rec := dlqRecord{key: string(m.Key), value: string(m.Value)}
		for _, h := range m.Headers {
			switch h.Key {
			case HeaderReason:
				rec.reason = string(h.Value)
			case HeaderError:
				rec.detail = string(h.Value)
			case HeaderSourceTopic:
				rec.src.topic = string(h.Value)
			case HeaderSourcePartition:
				rec.src.partition, _ = strconv.Atoi(string(h.Value))
			case HeaderSourceOffset:
				rec.src.offset, _ = strconv.ParseInt(string(h.Value), 10, 64)
			}
		}
		out = append(out, rec)
	}
	return out
}

// storedDoc is a document read back from the index.
type storedDoc struct {
	routing string
	source  map[string]any
}

// scanIndex reads every document of the index, failing on an _id stored
// twice (on two shards).
func (e *testEnv) scanIndex(t testing.TB) map[string]storedDoc {
	t.Helper()
	return e.scanIndexOf(t, testIndex)
}

// scanIndexOf is scanIndex of another index.
func (e *testEnv) scanIndexOf(t testing.TB, index string) map[string]storedDoc {
	t.Helper()
	if err := e.admin.Refresh(context.Background(), index); err != nil {
		t.Fatal(err)
	}
	out := make(map[string]storedDoc)
	testenv.ScanDocs(t, e.admin, index, bulk.SearchParams{}, 5000, func(h bulk.Hit) {
		var src map[string]any
		if err := json.Unmarshal(h.Source, &src); err != nil {
			t.Fatal(err)
		}
		if prev, dup := out[h.ID]; dup {
			t.Errorf("%s is stored twice: routing %q (version %v, restaurant %v) and %q (version %v, restaurant %v)", h.ID,
				prev.routing, prev.source["version"], prev.source["restaurant_id"], h.Routing, src["version"], src["restaurant_id"])
		}
		out[h.ID] = storedDoc{routing: h.Routing, source: src}
	})
	return out
}

// shardCountsOf counts the documents of each of index's n physical
// shards.
func (e *testEnv) shardCountsOf(t testing.TB, index string, n int) []int64 {
	t.Helper()
	return testenv.ShardCounts(t, e.admin, index, n)
}
