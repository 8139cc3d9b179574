package pipeline

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/pipeline/placement"
)

// librdkafkaFNV1a ports librdkafka's rd_kafka_msg_partitioner_fnv1a as
// its C reads: rd_fnv1a computes FNV-1a in an int32 h, sets h = -h when
// negative and returns (uint32_t)h, and the partitioner takes that
// modulo partition_cnt, unsigned.
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

// clientPartitioner is a franz-go partitioner that places keys as the
// client p names does: franz-go's own implementations where it has them
// (its default is Kafka's murmur2; SaramaHasher over CRC-32 is
// librdkafka's consistent; SaramaCompatHasher over FNV-1a is Sarama's),
// and the port above for librdkafka's fnv1a. None is the code under test.
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

// producerBy is a producer to the environment's broker that places keys
// as the client p names does.
func producerBy(t testing.TB, e *testEnv, p placement.Partitioner) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.kafka.Addrs()...), kgo.RecordPartitioner(clientPartitioner(p)),
		kgo.ProducerLinger(0), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceBy writes events in order, each to its type's topic, through
// cl, and returns where each was stored.
func produceBy(t testing.TB, e *testEnv, cl *kgo.Client, evs []genEvent) []produced {
	t.Helper()
	out := make([]produced, 0, len(evs))
	for i := 0; i < len(evs); {
		topic := e.topicOf(evs[i])
		var recs []*kgo.Record
		for ; i < len(evs) && e.topicOf(evs[i]) == topic && len(recs) < 500; i++ {
			recs = append(recs, &kgo.Record{Topic: topic, Key: evs[i].key, Value: evs[i].value})
		}
		if err := cl.ProduceSync(context.Background(), recs...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			out = append(out, produced{topic: topic, partition: int(r.Partition), offset: r.Offset})
		}
	}
	return out
}

// produceKeys writes one restaurant-topic record per key.
func produceKeys(t testing.TB, e *testEnv, cl *kgo.Client, keys []string) []produced {
	t.Helper()
	evs := make([]genEvent, len(keys))
	for i, k := range keys {
		evs[i] = genEvent{key: []byte(k), value: []byte("{}")}
	}
	return produceBy(t, e, cl, evs)
}

func keysOf(from, to int, key func(i int) string) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, key(i))
	}
	return out
}

// keyedFormat is the native format with keys read by keyID: a format
// whose keys are not the restaurant id itself.
type keyedFormat struct {
	decode.Decoder
	id func([]byte) (string, bool)
}

func (f keyedFormat) KeyID(key []byte) (string, bool) { return f.id(key) }

// placerOf samples the environment's restaurant topic as a pipeline
// does at start, logging into log.
func placerOf(t testing.TB, e *testEnv, named placement.Partitioner, keyID func([]byte) (string, bool), log *slog.Logger) (*placement.Placer, error) {
	t.Helper()
	cfg := e.config()
	cfg.RestaurantPartitioner = named
	cfg = cfg.withDefaults()
	_, transport, err := cfg.Kafka.KafkaDialer()
	if err != nil {
		t.Fatal(err)
	}
	format := decode.New(decode.FormatNative, nil, "")
	if keyID != nil {
		format = keyedFormat{Decoder: format, id: keyID}
	}
	return newPlacer(context.Background(), cfg, log, transport, format, keyID == nil)
}

// placeOf is the placement placerOf knows at start: nil if none.
func placeOf(t testing.TB, e *testEnv, named placement.Partitioner, keyID func([]byte) (string, bool), log *slog.Logger) (*placement.Placement, error) {
	t.Helper()
	pl, err := placerOf(t, e, named, keyID, log)
	if err != nil {
		return nil, err
	}
	return pl.Current(), nil
}

// envelopeKey is a Debezium JSON key with its schema envelope.
const envelopeKey = `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false,"name":"pg.public.restaurants.Key"},"payload":{"id":%s}}`

func restaurantKey(i int) string { return fmt.Sprintf("r-%05d", i) }

// jsonKeyID reads a restaurant id from a JSON key the way a Debezium
// format does: {"id":42}, or {"schema":...,"payload":{"id":42}}; a number
// is its text, a string its value.
func jsonKeyID(key []byte) (string, bool) {
	s := string(key)
	i := strings.LastIndex(s, `"id":`)
	if i < 0 {
		return "", false
	}
	v := strings.TrimLeft(s[i+len(`"id":`):], " ")
	if strings.HasPrefix(v, `"`) {
		end := strings.IndexByte(v[1:], '"')
		if end < 0 {
			return "", false
		}
		return v[1 : 1+end], true
	}
	end := strings.IndexAny(v, ",}")
	if end <= 0 {
		return "", false
	}
	return strings.TrimSpace(v[:end]), true
}

// TestPlacerLearnsOnceOnePartitionerFits: restaurant keys that murmur2
// and crc32 both put where they are leave the placement unknown, with
// both still fitting; learn then waits until a key only crc32 puts
// where it is arrives, and returns crc32.
func TestPlacerLearnsOnceOnePartitionerFits(t *testing.T) {
	realenv.Parallel(t)
	const n = 6
	e := newEnv(t, envOptions{partitions: n, twoTopics: true, dishKeyDish: true})
	var same, only []string
	for i := 0; len(same) < 3 || len(only) < 1; i++ {
		k := []byte(restaurantKey(i))
		c := placement.PartitionerCRC32.Partition(k, n)
		switch {
		case c == placement.PartitionerMurmur2.Partition(k, n) && c != placement.PartitionerFNV1a.Partition(k, n) && len(same) < 3:
			same = append(same, string(k))
		case c != placement.PartitionerMurmur2.Partition(k, n) && c != placement.PartitionerFNV1a.Partition(k, n) && len(only) < 1:
			only = append(only, string(k))
		}
	}
	cl := producerBy(t, e, placement.PartitionerCRC32)
	produceKeys(t, e, cl, same)
	pl, err := placerOf(t, e, placement.PartitionerAuto, nil, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	if k := pl.Current(); k != nil || len(pl.Fitting()) != 2 || pl.Fitting()[0] != placement.PartitionerMurmur2 || pl.Fitting()[1] != placement.PartitionerCRC32 {
		t.Fatalf("placement of keys both fit = %+v (fitting %v), want none yet, murmur2 and crc32 fitting", k, pl.Fitting())
	}

	learnt := make(chan *placement.Placement, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		k, err := pl.Learn(ctx)
		if err != nil {
			t.Errorf("learn = %v", err)
		}
		learnt <- k
	}()
	produceKeys(t, e, cl, only)
	select {
	case k := <-learnt:
		if k == nil || k.Partitioner() != placement.PartitionerCRC32 || pl.Current() != k {
			t.Errorf("learnt %+v (current %+v), want crc32", k, pl.Current())
		}
	case <-time.After(realenv.Slack(30 * time.Second)):
		t.Fatal("learn did not return in 30s of a key only crc32 fits")
	}
}

// TestDetectRestaurantPartitioner: a restaurant topic produced by each
// client is recognised from the last events of its partitions, with
// native keys and with Debezium's JSON keys in a schema envelope; the
// dish placement then spells a restaurant id as those keys do.
func TestDetectRestaurantPartitioner(t *testing.T) {
	realenv.Parallel(t)
	for _, p := range placement.Partitioners {
		for _, json := range []bool{false, true} {
			name := string(p)
			key, keyID := restaurantKey, (func([]byte) (string, bool))(nil)
			if json {
				name += " json keys"
				key = func(i int) string { return fmt.Sprintf(envelopeKey, fmt.Sprint(1000+i)) }
				keyID = jsonKeyID
			}
			t.Run(name, func(t *testing.T) {
				realenv.Parallel(t)
				e := newEnv(t, envOptions{partitions: 5, twoTopics: true, dishKeyDish: true})
				produceKeys(t, e, producerBy(t, e, p), keysOf(0, 400, key))
				k, err := placeOf(t, e, placement.PartitionerAuto, keyID, testLogger())
				if err != nil || k == nil {
					t.Fatalf("placement = %v, %v; want one detected", k, err)
				}
				if k.Partitioner().SamePlace() != p.SamePlace() || k.Basis() != placement.BasisDetected {
					t.Errorf("detected %s (%s), want %s", k.Partitioner(), k.Basis(), p)
				}
				id, idKey := "77", "77"
				if json {
					idKey = fmt.Sprintf(envelopeKey, id)
				}
				if got, want := k.DishPartition(id), p.Partition([]byte(idKey), 5); got != want {
					t.Errorf("dishPartition(%q) = %d, want %d, the partition %s gives its key %s", id, got, want, p, idKey)
				}
			})
		}
	}
}

// TestDetectionSamplesTheEnd: only the last 200 events of each partition
// are sampled. Keys a crc32 producer wrote first, then over 200 a
// partition from a murmur2 producer: murmur2 is detected.
func TestDetectionSamplesTheEnd(t *testing.T) {
	realenv.Parallel(t)
	const n = 3
	e := newEnv(t, envOptions{partitions: n, twoTopics: true, dishKeyDish: true})
	produceKeys(t, e, producerBy(t, e, placement.PartitionerCRC32), keysOf(0, 50, restaurantKey))
	where := produceKeys(t, e, producerBy(t, e, placement.PartitionerMurmur2), keysOf(50, 50+250*n, restaurantKey))
	per := map[int]int{}
	for _, w := range where {
		per[w.partition]++
	}
	for p := range n {
		if per[p] < placement.SamplePerPartition {
			t.Fatalf("partition %d got %d murmur2 keys, the test needs %d in each", p, per[p], placement.SamplePerPartition)
		}
	}
	k, err := placeOf(t, e, placement.PartitionerAuto, nil, testLogger())
	if err != nil || k == nil || k.Partitioner() != placement.PartitionerMurmur2 || k.Basis() != placement.BasisDetected {
		t.Fatalf("placement = %+v, %v; want murmur2 detected", k, err)
	}
	// That the sample is the last SamplePerPartition events of each
	// partition is placement's TestSampleKeysReadsTheEnd.
}

// TestPlacementRefusals: a restaurant topic written by two clients with
// different partitioners, one whose keys fit no known partitioner, and
// one that contradicts the partitioner named, each stop the pipeline at
// start, before it fetches anything, with an error that names the fix.
func TestPlacementRefusals(t *testing.T) {
	realenv.Parallel(t)
	for _, tc := range []struct {
		name  string
		named placement.Partitioner
		write func(t *testing.T, e *testEnv)
		want  string
	}{
		{"two producers", placement.PartitionerAuto, func(t *testing.T, e *testEnv) {
			produceKeys(t, e, producerBy(t, e, placement.PartitionerMurmur2), keysOf(0, 60, restaurantKey))
			produceKeys(t, e, producerBy(t, e, placement.PartitionerCRC32), keysOf(60, 120, restaurantKey))
		}, "was produced with more than one partitioner"},
		{"named, contradicted", placement.PartitionerSarama, func(t *testing.T, e *testEnv) {
			produceKeys(t, e, producerBy(t, e, placement.PartitionerCRC32), keysOf(0, 60, restaurantKey))
		}, "the restaurant partitioner is set to sarama"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			realenv.Parallel(t)
			e := newEnv(t, envOptions{partitions: 4, twoTopics: true, dishKeyDish: true})
			tc.write(t, e)
			cfg := e.config()
			cfg.RestaurantPartitioner = tc.named
			r := e.start(cfg)
			err := r.Wait(t, 30*time.Second)
			var pe *placement.PlacementError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "produce ") {
				t.Fatalf("Run = %v; want a *placement.PlacementError saying %q and how to fix it", err, tc.want)
			}
			if f := r.p.Stats().Fetched; f != 0 {
				t.Errorf("%d events fetched before the refusal, want none", f)
			}
		})
	}
}

// TestEmptyRestaurantTopicWaitsThenLearns: on an empty restaurant topic
// the pipeline assumes no partitioner: it says that dish events wait and
// how to name the partitioner. A dish produced first waits in the dish
// topic; the first restaurant event, which only crc32 puts where it is,
// teaches the placement, and the dish is forwarded to its restaurant's
// partition and indexed under its routing, the pipeline never stopping.
func TestEmptyRestaurantTopicWaitsThenLearns(t *testing.T) {
	realenv.Parallel(t)
	const n = 4
	e := newEnv(t, envOptions{partitions: n, twoTopics: true, dishKeyDish: true})
	var logs testenv.LogBuffer
	cfg := e.config()
	cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	r := e.start(cfg)
	deadline := time.Now().Add(realenv.Slack(30 * time.Second))
	for !r.p.running.Load() { // past the start checks: the placement is decided
		if err, ok := r.Exited(); ok {
			t.Fatalf("Run = %v before it started consuming", err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the pipeline did not start consuming in 30s")
		}
		time.Sleep(time.Millisecond)
	}
	if l := logs.String(); !strings.Contains(l, "dish events wait") || !strings.Contains(l, "--restaurant-partitioner") || strings.Contains(l, "assum") {
		t.Errorf("log = %s\nwant a warning that dish events wait and how to name the partitioner, and nothing assumed", l)
	}
	if k := r.p.dec.placement.Current(); k != nil {
		t.Fatalf("placement of an empty topic = %+v, want none", k)
	}

	// A restaurant whose key only crc32 puts in its partition.
	id := ""
	for i := 0; id == ""; i++ {
		k := []byte(fmt.Sprintf("r-late-%d", i))
		c := placement.PartitionerCRC32.Partition(k, n)
		if c != placement.PartitionerMurmur2.Partition(k, n) && c != placement.PartitionerFNV1a.Partition(k, n) {
			id = string(k)
		}
	}
	cl := producerBy(t, e, placement.PartitionerCRC32)
	produceBy(t, e, cl, []genEvent{{dish: true, key: []byte("d-early"),
		value: []byte(`{"type":"dish","op":"upsert","id":"d-early","restaurant_id":"` + id + `","version":1,"doc":{"name":"Early"}}`)}})
	produceBy(t, e, cl, []genEvent{{key: []byte(id),
		value: []byte(`{"type":"restaurant","op":"upsert","id":"` + id + `","version":1,"location":{"lat":37.7749,"lon":-122.4194},"doc":{"name":"Late"}}`)}})
	e.waitCaughtUp(t, r, 30*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if k := r.p.dec.placement.Current(); k == nil || k.Partitioner() != placement.PartitionerCRC32 || k.Basis() != placement.BasisDetected {
		t.Errorf("placement = %+v, want crc32 detected", k)
	}
	if st := r.p.Stats(); st.Misplaced != 0 || st.Repartitioned != 1 {
		t.Errorf("misplaced %d, repartitioned %d; want 0 and the dish once", st.Misplaced, st.Repartitioned)
	}
	docs := e.scanIndex(t)
	rest, ok := docs["restaurant:"+id]
	if !ok {
		t.Fatalf("restaurant %s not indexed", id)
	}
	if d, ok := docs["dish:d-early"]; !ok || d.routing != rest.routing {
		t.Errorf("dish d-early = %+v, %v; want it indexed under its restaurant's routing %q", d, ok, rest.routing)
	}
	if dl := e.readDLQ(t); len(dl) != 0 {
		t.Errorf("dead letters %+v, want none", dl)
	}
}

// TestDishesMeetTheirRestaurantWhateverThePartitioner: a restaurant topic
// produced by each client's partitioner and a dish topic keyed by dish
// id, consumed with DishKeyDish by three instances on six partitions, one
// killed mid-stream (its writes in flight abandoned, nothing more
// committed) and a fourth joining later. Each dish is forwarded to the
// partition that holds its restaurant, so it is handled where its
// restaurant is: the index ends equal to the model of the event log,
// every document under its restaurant's routing and on its shard, and
// no restaurant event is reported misplaced.
func TestDishesMeetTheirRestaurantWhateverThePartitioner(t *testing.T) {
	realenv.Parallel(t)
	for _, p := range placement.Partitioners {
		t.Run(string(p), func(t *testing.T) {
			realenv.Parallel(t)
			testDishesMeetTheirRestaurant(t, p)
		})
	}
}

func testDishesMeetTheirRestaurant(t *testing.T, p placement.Partitioner) {
	const seed = 17
	e := newEnv(t, envOptions{partitions: 6, twoTopics: true, dishKeyDish: true})
	g := defaultGen(seed, 2000)
	// As in TestScaleOut: across two topics the order of a restaurant's
	// events and its dishes' is undefined.
	g.wRestDelete, g.wReplay, g.wDishOutOfOrder = 0, 0, 0
	// No dish here may give up on its restaurant (PendingMaxAge, below),
	// so none is made whose restaurant never comes (TestScaleOut and
	// TestDishesKeyedByDish have those).
	g.wOrphan = 0
	evs := keyDishesByDish(generate(t, g))
	t.Logf("seed %d, restaurants placed by %s: %d events: %s", seed, p, len(evs), summarize(evs))
	cl := producerBy(t, e, p)
	third := len(evs) / 3
	where := produceBy(t, e, cl, evs[:third])

	cfg := e.config()
	// A dish waits for its restaurant longer than the kill below holds
	// the killed member's partitions (the group's session timeout) and
	// the rebalance after it: a dish dead-lettered as unknown_restaurant
	// would say that its restaurant was late, not that it was elsewhere.
	cfg.PendingMaxAge = time.Minute
	n := 0
	instance := func(c Config) Config { // its own name and metrics
		n++
		c.Instance, c.Registerer = fmt.Sprintf("ingest-%d", n), prometheus.NewRegistry()
		return c
	}
	killed := cfg
	killed.DrainTimeout = time.Nanosecond
	a, b, c := e.start(instance(cfg)), e.start(instance(killed)), e.start(instance(cfg))
	e.waitCaughtUp(t, a, 40*time.Second)

	where = append(where, produceBy(t, e, cl, evs[third:2*third])...)
	before := b.p.Stats().Finished
	deadline := time.Now().Add(realenv.Slack(20 * time.Second))
	for b.p.Stats().Finished < before+50 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if err := b.Stop(t); err != nil {
		t.Fatalf("killed instance: Run = %v", err)
	}
	d := e.start(instance(cfg))
	where = append(where, produceBy(t, e, cl, evs[2*third:])...)
	e.waitCaughtUp(t, a, 60*time.Second)
	for i, r := range []*running{a, c, d} {
		if err := r.Stop(t); err != nil {
			t.Fatalf("instance %d: Run = %v", i, err)
		}
	}
	var finished []int64
	for _, r := range []*running{a, b, c, d} {
		st := r.p.Stats()
		finished = append(finished, st.Finished)
		if st.Misplaced != 0 {
			t.Errorf("%s: %d restaurant events reported misplaced", r.p.cfg.Instance, st.Misplaced)
		}
		if k := r.p.dec.placement.Current(); k == nil || k.Partitioner().SamePlace() != p.SamePlace() {
			t.Errorf("%s placed dishes by %v, want %s", r.p.cfg.Instance, k, p)
		}
	}
	t.Logf("finished per instance: %v", finished)
	checkFinalOpts(t, e, evs, where, true)
}
