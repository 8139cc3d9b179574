package chaos

import (
	"context"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/kafkatest"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/pipeline"
	"github.com/geoshard/geoshard/pipeline/placement"
	"github.com/geoshard/geoshard/router"
)

// Names of every world: each schedule has a broker and an emulator of its
// own, so the names need not be unique.
const (
	testIndex   = "menu-v1"
	testAlias   = "menu"
	group       = "chaos-ingest"
	dlqTopic    = "geoshard.dlq"
	oneTopic    = "menu-events"
	restTopic   = "restaurants"
	dishTopic   = "dishes"
	repartTopic = "dishes-by-restaurant"
	// pendingMaxAge is how long a dish waits for its restaurant: short, so
	// that orphans are dead-lettered within a schedule.
	pendingMaxAge = 3 * time.Second
)

// world is one schedule's stack: the in-process broker, the emulator with
// menu-v1 behind the alias menu under the 18-shard map, the producer, and
// the members that have been started.
type world struct {
	t      testing.TB
	s      *schedule
	kafka  *kafkatest.Cluster
	ctl    *groupControl
	url    string
	admin  *bulk.Admin
	os     *osfake.TestServer
	client *opensearch.Client // the tests' own, without a gate
	// reshard is the reshard job, if the schedule started one, and m24
	// its target's map.
	reshard *reshard
	m24     *router.Map
	m       *router.Map
	prod    *kgo.Client
	parts   [][]genEvent // the stream, cut in the schedule's parts
	events  []genEvent   // the whole stream: the log once every part is produced

	restTopic, dishTopic, repartition string

	members map[int]*member
	// exits are the members that returned from Run with an error.
	mu    sync.Mutex
	exits map[int]error
}

// member is one ingest instance.
type member struct {
	n    int
	cid  string
	gate *gate
	p    *pipeline.Pipeline
	run  *testenv.Running
	// kill cancels Run without waiting for it.
	kill context.CancelFunc
	// state: "running", "frozen", "stopped", "killed".
	state string
}

func newWorld(t testing.TB, s *schedule) *world {
	t.Helper()
	w := &world{t: t, s: s, m: testenv.LoadMap(t, testenv.MapUS18), members: map[int]*member{}, exits: map[int]error{}}
	opts := []kafkatest.Option{kafkatest.WithInProcess(), kafkatest.WithTopic(dlqTopic, 2)}
	switch s.topo.topics {
	case 1:
		w.restTopic, w.dishTopic = oneTopic, oneTopic
		opts = append(opts, kafkatest.WithTopic(oneTopic, s.topo.partitions))
	default:
		w.restTopic, w.dishTopic = restTopic, dishTopic
		opts = append(opts, kafkatest.WithTopic(restTopic, s.topo.partitions), kafkatest.WithTopic(dishTopic, s.topo.partitions))
		if s.topo.dishKeyDish {
			w.repartition = repartTopic
		}
	}
	w.kafka = kafkatest.Start(t, opts...)
	w.ctl = newGroupControl(w.kafka.Fake())
	// The broker closes in the test's cleanup, after the members stop
	// (cleanups run last-registered first): nothing must sleep in it then.
	t.Cleanup(w.ctl.thawAll)

	c := testenv.StartCluster(t, testenv.ClusterOptions{InProcess: true, RequestTimeout: testenv.RequestTimeout})
	w.url, w.admin, w.os, w.client = c.URL, c.Admin, c.Server, c.Client
	replicas := 0
	if err := migrate.Init(context.Background(), w.admin, migrate.InitConfig{Map: w.m, Index: testIndex, Alias: testAlias, Replicas: &replicas}); err != nil {
		t.Fatal(err)
	}
	var err error
	w.prod, err = kgo.NewClient(kgo.SeedBrokers(w.kafka.Addrs()...), kgo.RecordPartitioner(clientPartitioner(s.topo.producer)),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.prod.Close)

	w.events = generate(t, s.gen)
	w.parts = cutParts(w.events, s.parts)
	return w
}

// cutParts cuts the stream into n parts of about equal size.
func cutParts(evs []genEvent, n int) [][]genEvent {
	var out [][]genEvent
	from := 0
	for i := 1; i <= n; i++ {
		to := len(evs) * i / n
		out = append(out, evs[from:to])
		from = to
	}
	return out
}

// clientPartitioner is a franz-go partitioner that places keys as the
// client p names does (ported from pipeline/placement_e2e_test.go).
func clientPartitioner(p placement.Partitioner) kgo.Partitioner {
	fnv32a := func(b []byte) uint32 {
		h := fnv.New32a()
		h.Write(b)
		return h.Sum32()
	}
	switch p {
	case placement.PartitionerCRC32:
		return kgo.StickyKeyPartitioner(kgo.SaramaHasher(crc32.ChecksumIEEE))
	case placement.PartitionerFNV1a:
		return kgo.BasicConsistentPartitioner(func(string) func(*kgo.Record, int) int {
			return func(r *kgo.Record, n int) int { return librdkafkaFNV1a(r.Key, n) }
		})
	case placement.PartitionerSarama:
		return kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(fnv32a))
	}
	return kgo.StickyKeyPartitioner(nil)
}

// librdkafkaFNV1a is librdkafka's fnv1a partitioner, as its C reads.
func librdkafkaFNV1a(key []byte, partitionCnt int) int {
	h := int32(-2128831035) // 0x811C9DC5 as an int32
	for _, b := range key {
		h ^= int32(b)
		h *= 16777619
	}
	if h < 0 {
		h = -h
	}
	return int(uint32(h) % uint32(partitionCnt))
}

// produce writes part i of the stream, in the topology's order.
func (w *world) produce(i int) {
	w.t.Helper()
	evs := w.parts[i]
	var recs []*kgo.Record
	add := func(keep func(genEvent) bool) {
		for _, ev := range evs {
			if keep(ev) {
				recs = append(recs, &kgo.Record{Topic: w.topicOf(ev), Key: ev.key, Value: ev.value})
			}
		}
	}
	switch w.s.topo.order {
	case "dishes-first":
		add(func(ev genEvent) bool { return ev.dish })
		add(func(ev genEvent) bool { return !ev.dish })
	case "restaurants-first":
		add(func(ev genEvent) bool { return !ev.dish })
		add(func(ev genEvent) bool { return ev.dish })
	default:
		add(func(genEvent) bool { return true })
	}
	// One record at a time in flight per partition keeps the order of
	// every key; ProduceSync of the whole part would too, but this way a
	// failure names its record.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		w.t.Fatalf("produce part %d: %v", i, err)
	}
}

func (w *world) topicOf(ev genEvent) string {
	if ev.dish {
		return w.dishTopic
	}
	return w.restTopic
}

// config is member n's configuration: timings short enough for a
// schedule of seconds, as pipeline's tests use.
func (w *world) config(n int) pipeline.Config {
	cfg := pipeline.Config{
		Brokers:         w.kafka.Addrs(),
		RestaurantTopic: w.restTopic,
		DishTopic:       w.dishTopic,
		Group:           group,
		DLQTopic:        dlqTopic,
		Alias:           testAlias,
		Instance:        fmt.Sprintf("m%d", n),
		CommitInterval:  50 * time.Millisecond,
		// The migration state is read (and the heartbeat written) often,
		// for the reshard step.
		MigrationPollInterval: 100 * time.Millisecond,
		PendingMaxAge:         pendingMaxAge,
		MapCheckInterval:      time.Second,
		DrainTimeout:          10 * time.Second,
		MaxEventBytes:         64 << 10,
		Kafka: pipeline.KafkaConfig{
			ClientID:          fmt.Sprintf("chaos-m%d", n),
			SessionTimeout:    sessionTimeout,
			HeartbeatInterval: 200 * time.Millisecond,
			RebalanceTimeout:  rebalanceTimeout + time.Duration(n)*time.Millisecond,
			JoinGroupBackoff:  200 * time.Millisecond,
			MaxWait:           200 * time.Millisecond,
			DialTimeout:       5 * time.Second,
		},
		Bulk:       testenv.BulkConfig(),
		Logger:     testenv.Logger("CHAOS_TEST_LOG").With("member", n),
		Registerer: prometheus.NewRegistry(),
	}
	if w.s.topo.dishKeyDish {
		cfg.DishKey = pipeline.DishKeyDish
		cfg.RepartitionTopic = w.repartition
		cfg.RestaurantPartitioner = w.s.topo.told
	}
	if w.s.killable[n] {
		cfg.DrainTimeout = time.Nanosecond
	}
	return cfg
}

// start starts member n.
func (w *world) start(n int) {
	w.t.Helper()
	g := newGate()
	client, err := opensearch.NewClient(opensearch.Config{Addresses: []string{w.url}, Transport: g, DisableRetry: true,
		RequestTimeout: testenv.RequestTimeout, HealthCheckMaxRetries: -1})
	if err != nil {
		w.t.Fatal(err)
	}
	cfg := w.config(n)
	w.ctl.register(cfg.Kafka.ClientID, cfg.Kafka.RebalanceTimeout)
	p, err := pipeline.New(cfg, client)
	if err != nil {
		w.t.Fatal(err)
	}
	killed, kill := context.WithCancel(context.Background())
	m := &member{n: n, cid: cfg.Kafka.ClientID, gate: g, p: p, state: "running", kill: kill}
	m.run = testenv.Go(w.t, func(ctx context.Context) error {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		context.AfterFunc(killed, cancel)
		err := p.Run(ctx)
		if err != nil {
			w.mu.Lock()
			w.exits[n] = err
			w.mu.Unlock()
		}
		return err
	})
	w.members[n] = m
}

// stop stops member n with its drain, and waits for it.
func (w *world) stop(n int) {
	w.t.Helper()
	m := w.members[n]
	_ = m.run.Stop(w.t)
	m.state = "stopped"
}

// kill ends member n's life as the rest of the world sees it: its
// requests fail and the group hears no more of it. The step returns once
// its Run has: the broker cannot refuse the member's producers (their
// requests carry no member id), so nothing may run in it — no dead
// letter, no parked dish written — after the kill step, as nothing runs
// in a killed process.
func (w *world) kill(n int) {
	w.t.Helper()
	m := w.members[n]
	w.ctl.kill(m.cid)
	m.gate.kill()
	m.kill()
	m.state = "killed"
	_ = m.run.Wait(w.t, 30*time.Second)
}

func (w *world) freeze(n int) {
	m := w.members[n]
	w.ctl.freeze(m.cid)
	m.gate.freeze()
	m.state = "frozen"
}

func (w *world) thaw(n int) {
	m := w.members[n]
	w.ctl.thaw(m.cid)
	m.gate.thaw()
	m.state = "running"
}

// running lists the members that run (frozen ones too).
func (w *world) running() []*member {
	var out []*member
	for _, n := range testenv.SortedKeys(w.members) {
		if m := w.members[n]; m.state == "running" || m.state == "frozen" {
			out = append(out, m)
		}
	}
	return out
}

// caughtUp reports whether the group has committed every event topic up
// to its high watermarks and no dish is parked: a parked dish's offset
// is committed while it waits (parking.go), so only an empty parking
// topic says that every event is decided. Ported from pipeline's
// env_test.go.
func (w *world) caughtUp(ctx context.Context) (bool, string) {
	type consumed struct{ group, topic string }
	topics := []consumed{{group, w.restTopic}}
	switch {
	case w.repartition != "":
		// The dish topic is forwarded first, so its commit is read first:
		// then the repartition topic's high watermark includes it all.
		topics = []consumed{{group + ".repartition", w.dishTopic}, {group, w.repartition}, {group, w.restTopic}}
	case w.dishTopic != w.restTopic:
		topics = append(topics, consumed{group, w.dishTopic})
	}
	for _, c := range topics {
		if ok, why := testenv.CaughtUp(ctx, w.kafka, c.group, c.topic); !ok {
			return false, why
		}
	}
	if live := w.parkedLive(); len(live) > 0 {
		return false, fmt.Sprintf("%d dishes parked: %s", len(live), strings.Join(live, "; "))
	}
	return true, ""
}

// parkedLive lists the parking records without a tombstone after them:
// where each is (partition@offset) and its value, clipped.
func (w *world) parkedLive() []string {
	parking := group + ".parked"
	if _, err := w.kafka.HighWatermarks(context.Background(), parking); err != nil {
		return nil // not created: no member started
	}
	live := map[string]string{}
	for _, m := range testenv.ReadTopic(w.t, w.kafka, parking) {
		if m.Value == nil {
			delete(live, string(m.Key))
			continue
		}
		live[string(m.Key)] = fmt.Sprintf("key %s at %s/%d@%d: %s", m.Key, parking, m.Partition, m.Offset, shortValue(string(m.Value)))
	}
	var out []string
	for _, k := range testenv.SortedKeys(live) {
		out = append(out, live[k])
	}
	return out
}

// early lists the dish upserts that may be read before their
// restaurant's creation although the stream has them after it: with two
// topics the order between them is the order they are read in, which no
// log fixes — a dish produced in the same part as its restaurant's
// creation (before it, with dishes-first order, or read sooner), or in
// an earlier part. A dish whose restaurant was created in an earlier
// part is not among them: its restaurant was produced, and read, first.
func (w *world) early() map[int]bool {
	if w.s.topo.topics == 1 {
		return nil
	}
	part := make([]int, len(w.events))
	i := 0
	for p, evs := range w.parts {
		for range evs {
			part[i] = p
			i++
		}
	}
	created := map[string]int{} // restaurant id → the part of its first upsert
	for i, ev := range w.events {
		if !ev.dish && ev.poison == "" && ev.op == decode.OpUpsert {
			if _, ok := created[ev.id]; !ok {
				created[ev.id] = part[i]
			}
		}
	}
	out := map[int]bool{}
	for i, ev := range w.events {
		if p, ok := created[ev.rid]; ok && ev.dish && ev.poison == "" && p >= part[i] {
			out[i] = true
		}
	}
	return out
}
