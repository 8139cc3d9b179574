package placement

import (
	"errors"
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kgo"
)

// partitionCounts used by the vector tests: 65521 and 65536 are coprime
// and their product exceeds 2^32, so agreeing with a 32-bit hash modulo
// both pins the hash itself, not only its residues.
var vectorCounts = []int{1, 3, 7, 17, 50, 65521, 65536}

// TestPartitionerVectors pins each partitioner to its client's own test
// vectors: the hash of a key as the client's tests state it, taken
// modulo each partition count the way the client takes it.
func TestPartitionerVectors(t *testing.T) {
	const long = "this is another string with more length to it perhaps"
	const unaligned = "PreAmbleWillBeRemoved,ThePrePartThatIs"
	// Kafka's toPositive(h) % n, Java's signed murmur2 as given.
	java := func(h int32) func(n int) int { return func(n int) int { return int(uint32(h)&0x7fffffff) % n } }
	// librdkafka's h % n, unsigned (h already non-negative for fnv1a).
	unsigned := func(h uint32) func(n int) int { return func(n int) int { return int(h % uint32(n)) } }
	for _, tc := range []struct {
		name string
		p    Partitioner
		key  string
		want func(n int) int
	}{
		// Apache Kafka, clients/src/test/.../utils/UtilsTest.java, testMurmur2.
		{"kafka UtilsTest 21", PartitionerMurmur2, "21", java(-973932308)},
		{"kafka UtilsTest foobar", PartitionerMurmur2, "foobar", java(-790332482)},
		{"kafka UtilsTest a-little-bit-long-string", PartitionerMurmur2, "a-little-bit-long-string", java(-985981536)},
		{"kafka UtilsTest a-little-bit-longer-string", PartitionerMurmur2, "a-little-bit-longer-string", java(-1486304829)},
		{"kafka UtilsTest lkjh…", PartitionerMurmur2, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", java(-58897971)},
		{"kafka UtilsTest abc", PartitionerMurmur2, "abc", java(479470107)},
		// librdkafka tests/0048-partitioner.c, partitioner "murmur2" (its
		// values are already masked).
		{"librdkafka 0048 murmur2 empty", PartitionerMurmur2, "", unsigned(0x106e08d9)},
		{"librdkafka 0048 murmur2 23456", PartitionerMurmur2, "23456", unsigned(0x058d780f)},
		{"librdkafka 0048 murmur2 long", PartitionerMurmur2, long, unsigned(0x4f7703da)},
		{"librdkafka 0048 murmur2 hejsan", PartitionerMurmur2, "hejsan", unsigned(0x5ec19395)},
		// librdkafka tests/0048-partitioner.c, partitioner "consistent".
		{"librdkafka 0048 consistent empty", PartitionerCRC32, "", unsigned(0)},
		{"librdkafka 0048 consistent 23456", PartitionerCRC32, "23456", unsigned(0xb1b451d7)},
		{"librdkafka 0048 consistent long", PartitionerCRC32, long, unsigned(0xb0150df7)},
		{"librdkafka 0048 consistent hejsan", PartitionerCRC32, "hejsan", unsigned(0xd077037e)},
		// librdkafka tests/0048-partitioner.c, partitioner "fnv1a".
		{"librdkafka 0048 fnv1a empty", PartitionerFNV1a, "", unsigned(0x7ee3623b)},
		{"librdkafka 0048 fnv1a 23456", PartitionerFNV1a, "23456", unsigned(0x27e6f469)},
		{"librdkafka 0048 fnv1a long", PartitionerFNV1a, long, unsigned(0x155e3e5f)},
		{"librdkafka 0048 fnv1a hejsan", PartitionerFNV1a, "hejsan", unsigned(0x17b1e27a)},
		// librdkafka src/rdfnv1a.c, unittest_fnv1a (rd_fnv1a's results,
		// made non-negative).
		{"librdkafka rdfnv1a kafka", PartitionerFNV1a, "kafka", unsigned(0xd33c4e1)},
		{"librdkafka rdfnv1a giberish", PartitionerFNV1a, "giberish123456789", unsigned(0x77a58295)},
		{"librdkafka rdfnv1a 1234", PartitionerFNV1a, "1234", unsigned(0x23bdd03)},
		{"librdkafka rdfnv1a 234", PartitionerFNV1a, "234", unsigned(0x2dea3cd2)},
		{"librdkafka rdfnv1a 34", PartitionerFNV1a, "34", unsigned(0x740fa83e)},
		{"librdkafka rdfnv1a 4", PartitionerFNV1a, "4", unsigned(0x310ca263)},
		{"librdkafka rdfnv1a unaligned", PartitionerFNV1a, unaligned, unsigned(0x65cbd69c)},
		{"librdkafka rdfnv1a unaligned+1", PartitionerFNV1a, unaligned[1:], unsigned(0x6e49c79a)},
		{"librdkafka rdfnv1a unaligned+2", PartitionerFNV1a, unaligned[2:], unsigned(0x69eed356)},
		{"librdkafka rdfnv1a unaligned+3", PartitionerFNV1a, unaligned[3:], unsigned(0x6abcc023)},
		// Sarama partitioner_test.go, TestHashPartitionerWithHasherMinInt32:
		// "1468509572224" hashes to 0x80000000, MinInt32, whose remainder
		// Sarama negates: 2^31 mod n, as librdkafka's unsigned 2^31 mod n.
		{"sarama MinInt32", PartitionerSarama, "1468509572224", unsigned(1 << 31)},
		{"librdkafka fnv1a MinInt32", PartitionerFNV1a, "1468509572224", unsigned(1 << 31)},
		{"sarama hejsan", PartitionerSarama, "hejsan", unsigned(0x17b1e27a)},
		{"sarama kafka", PartitionerSarama, "kafka", unsigned(0xd33c4e1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, n := range vectorCounts {
				if got, want := tc.p.Partition([]byte(tc.key), n), tc.want(n); got != want {
					t.Errorf("%s.Partition(%q, %d) = %d, want %d", tc.p, tc.key, n, got, want)
				}
			}
		})
	}
}

// TestSaramaIsFNV1a: librdkafka's fnv1a and Sarama's hash partitioner
// take the hash's sign differently, and agree on every key (SamePlace):
// checked on random keys, on keys whose hash is negative, and on Sarama's
// MinInt32 key, for partition counts up to 64.
func TestSaramaIsFNV1a(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	negative := 0
	keys := [][]byte{[]byte("1468509572224")}
	for range 20_000 {
		k := make([]byte, 1+rng.IntN(24))
		for i := range k {
			k[i] = byte(rng.UintN(256))
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		h := fnv.New32a()
		h.Write(k)
		if int32(h.Sum32()) < 0 {
			negative++
		}
		for n := 1; n <= 64; n++ {
			if a, b := PartitionerFNV1a.Partition(k, n), PartitionerSarama.Partition(k, n); a != b {
				t.Fatalf("key %x of %d partitions: fnv1a %d, sarama %d", k, n, a, b)
			}
		}
	}
	if negative < len(keys)/3 {
		t.Fatalf("only %d of %d keys hash negative: the sign handling is barely tested", negative, len(keys))
	}
}

// TestPartitionersMatchFranzGo checks each partitioner against another
// implementation of its client's algorithm, franz-go's: its default
// (Kafka's murmur2), SaramaHasher over CRC-32 (which its documentation
// says is librdkafka's consistent partitioner) and SaramaCompatHasher
// over FNV-1a (Sarama's default).
func TestPartitionersMatchFranzGo(t *testing.T) {
	fnv32a := func(b []byte) uint32 {
		h := fnv.New32a()
		h.Write(b)
		return h.Sum32()
	}
	others := map[Partitioner]kgo.Partitioner{
		PartitionerMurmur2: kgo.StickyKeyPartitioner(nil),
		PartitionerCRC32:   kgo.StickyKeyPartitioner(kgo.SaramaHasher(crc32.ChecksumIEEE)),
		PartitionerFNV1a:   kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(fnv32a)),
		PartitionerSarama:  kgo.StickyKeyPartitioner(kgo.SaramaCompatHasher(fnv32a)),
	}
	for _, p := range Partitioners {
		tp := others[p].ForTopic("restaurants")
		for i := range 5000 {
			key := []byte(fmt.Sprintf("r-%d", i*7919))
			for _, n := range []int{1, 2, 3, 6, 12, 50} {
				if got, want := p.Partition(key, n), tp.Partition(&kgo.Record{Key: key}, n); got != want {
					t.Fatalf("%s.Partition(%q, %d) = %d, franz-go says %d", p, key, n, got, want)
				}
			}
		}
	}
}

func TestPartitionerValid(t *testing.T) {
	for _, p := range []Partitioner{"", PartitionerAuto, PartitionerMurmur2, PartitionerCRC32, PartitionerFNV1a, PartitionerSarama} {
		if !p.Valid() {
			t.Errorf("Partitioner(%q).Valid() = false, want true", p)
		}
	}
	for _, p := range []Partitioner{"random", "consistent_random", "Murmur2", "fnv"} {
		if p.Valid() {
			t.Errorf("Partitioner(%q).Valid() = true, want false", p)
		}
	}
	if got := PartitionerAuto.Partition([]byte("k"), 3); got != -1 {
		t.Errorf("auto.Partition = %d, want -1", got)
	}
}

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

const envelopeKey = `{"schema":{"type":"struct","fields":[{"type":"int64","optional":false,"field":"id"}],"optional":false,"name":"pg.public.restaurants.Key"},"payload":{"id":%s}}`

// TestLearnTemplate: a key template is learnt from one key and its id,
// and spells other ids the same way.
func TestLearnTemplate(t *testing.T) {
	for _, tc := range []struct {
		name, key, id string
		other, want   string // another id and the key the template gives it
	}{
		{"native", "r-17", "r-17", "r-9", "r-9"},
		{"json number", `{"id":42}`, "42", "7", `{"id":7}`},
		{"json string", `{"id":"r-17"}`, "r-17", "r-9", `{"id":"r-9"}`},
		{"json string, id repeated in a field name", `{"id":"id"}`, "id", "x", `{"id":"x"}`},
		{"schema envelope: the payload's id, not the schema's int64", fmt.Sprintf(envelopeKey, "4"), "4", "123", fmt.Sprintf(envelopeKey, "123")},
		{"escaped id", `{"id":"a\"b"}`, `a"b`, `c\d`, `{"id":"c\\d"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmpl, ok := learnTemplate([]byte(tc.key), tc.id)
			if !ok {
				t.Fatalf("learnTemplate(%s, %q): none", tc.key, tc.id)
			}
			if got := string(tmpl.key(tc.id)); got != tc.key {
				t.Errorf("template %s spells %q as %s, want the key it was learnt from, %s", tmpl, tc.id, got, tc.key)
			}
			if got := string(tmpl.key(tc.other)); got != tc.want {
				t.Errorf("template %s spells %q as %s, want %s", tmpl, tc.other, got, tc.want)
			}
		})
	}
	if _, ok := learnTemplate([]byte(`{"id":42}`), "43"); ok {
		t.Error(`learnTemplate({"id":42}, "43"): want none`)
	}
}

// placed makes samples of count keys, key(i), each in the partition p
// gives it of n.
func placed(p Partitioner, n, count int, key func(i int) string) []keySample {
	var out []keySample
	for i := range count {
		k := []byte(key(i))
		out = append(out, keySample{partition: p.Partition(k, n), offset: int64(i), key: k})
	}
	return out
}

func restaurantKey(i int) string { return fmt.Sprintf("r-%05d", i) }

// TestDecidePlacement: what the sampled keys say, under auto and with a
// partitioner named; nil where they do not yet say it.
func TestDecidePlacement(t *testing.T) {
	const n = 6
	for _, p := range Partitioners {
		t.Run("detects "+string(p), func(t *testing.T) {
			k, _, err := decidePlacement("restaurants", n, placed(p, n, 60, restaurantKey), nativeKeyID, true, PartitionerAuto)
			if err != nil || k == nil {
				t.Fatalf("decidePlacement = %+v, %v; want %s detected", k, err, p)
			}
			if k.by.SamePlace() != p.SamePlace() || k.basis != BasisDetected {
				t.Errorf("decided %s (%s), want %s detected", k.by, k.basis, p)
			}
		})
		t.Run("named "+string(p)+" agrees", func(t *testing.T) {
			k, _, err := decidePlacement("restaurants", n, placed(p, n, 60, restaurantKey), nativeKeyID, true, p)
			if err != nil || k == nil || k.by != p || k.basis != BasisNamed {
				t.Errorf("decidePlacement(named %s) = %+v, %v; want %s named", p, k, err, p)
			}
		})
	}
	t.Run("json keys", func(t *testing.T) {
		key := func(i int) string { return fmt.Sprintf(envelopeKey, fmt.Sprint(1000+i)) }
		k, _, err := decidePlacement("restaurants", n, placed(PartitionerCRC32, n, 60, key), jsonKeyID, false, PartitionerAuto)
		if err != nil || k == nil {
			t.Fatalf("decidePlacement = %+v, %v; want crc32 detected", k, err)
		}
		if k.by != PartitionerCRC32 {
			t.Errorf("decided %s, want crc32", k.by)
		}
		if got, want := k.DishPartition("77"), PartitionerCRC32.Partition([]byte(fmt.Sprintf(envelopeKey, "77")), n); got != want {
			t.Errorf("DishPartition(77) = %d, want %d, the partition of its envelope key", got, want)
		}
	})
	t.Run("one partition: every partitioner is right", func(t *testing.T) {
		k, _, err := decidePlacement("restaurants", 1, placed(PartitionerCRC32, 1, 5, restaurantKey), nativeKeyID, true, PartitionerAuto)
		if err != nil || k == nil || k.basis != BasisDetected {
			t.Errorf("decidePlacement = %+v, %v; want detected", k, err)
		}
		k, _, err = decidePlacement("restaurants", 1, nil, nativeKeyID, true, PartitionerAuto)
		if err != nil || k == nil {
			t.Errorf("decidePlacement of no keys on one partition = %+v, %v; want it known", k, err)
		}
	})
	t.Run("a small sample fits several", func(t *testing.T) {
		// Both keys where murmur2 and crc32 put them alike.
		var same []keySample
		for i := 0; len(same) < 2; i++ {
			k := []byte(restaurantKey(i))
			if p := PartitionerMurmur2.Partition(k, n); p == PartitionerCRC32.Partition(k, n) {
				same = append(same, keySample{partition: p, key: k})
			}
		}
		k, fitting, err := decidePlacement("restaurants", n, same, nativeKeyID, true, PartitionerAuto)
		if err != nil || k != nil || len(fitting) < 2 || fitting[0] != PartitionerMurmur2 || fitting[1] != PartitionerCRC32 {
			t.Errorf("decidePlacement = %+v, %v, %v; want none yet, murmur2 and crc32 fitting", k, fitting, err)
		}
	})
	t.Run("fnv1a and sarama are one", func(t *testing.T) {
		// Keys only fnv1a (and so sarama) puts where they are.
		var s []keySample
		for i := 0; len(s) < 3; i++ {
			k := []byte(restaurantKey(i))
			p := PartitionerFNV1a.Partition(k, n)
			if p != PartitionerMurmur2.Partition(k, n) && p != PartitionerCRC32.Partition(k, n) {
				s = append(s, keySample{partition: p, key: k})
			}
		}
		k, _, err := decidePlacement("restaurants", n, s, nativeKeyID, true, PartitionerAuto)
		if err != nil || k == nil || k.by != PartitionerFNV1a {
			t.Errorf("decidePlacement = %+v, %v; want fnv1a detected", k, err)
		}
	})
	t.Run("empty topic", func(t *testing.T) {
		k, fitting, err := decidePlacement("restaurants", n, []keySample{{partition: 2}}, nativeKeyID, true, PartitionerAuto)
		if err != nil || k != nil || len(fitting) != len(Partitioners) {
			t.Errorf("decidePlacement of no keys = %+v, %v, %v; want none yet, every partitioner fitting", k, fitting, err)
		}
		k, _, err = decidePlacement("restaurants", n, nil, nativeKeyID, true, PartitionerFNV1a)
		if err != nil || k == nil || k.by != PartitionerFNV1a || k.basis != BasisNamed {
			t.Errorf("decidePlacement of no keys, fnv1a named = %+v, %v; want fnv1a named", k, err)
		}
		k, _, err = decidePlacement("restaurants", n, nil, jsonKeyID, false, PartitionerFNV1a)
		if err != nil || k != nil {
			t.Errorf("decidePlacement of no JSON keys, fnv1a named = %+v, %v; want none until a key shows its spelling", k, err)
		}
	})
	t.Run("two producers", func(t *testing.T) {
		s := append(placed(PartitionerMurmur2, n, 40, restaurantKey), placed(PartitionerCRC32, n, 40, func(i int) string { return restaurantKey(100 + i) })...)
		_, _, err := decidePlacement("restaurants", n, s, nativeKeyID, true, PartitionerAuto)
		var pe *PlacementError
		if !errors.As(err, &pe) || pe.Misfit != nil || !strings.Contains(err.Error(), "more than one partitioner") ||
			!strings.Contains(err.Error(), "produce the restaurant topic keyed by restaurant id with one partitioner") {
			t.Errorf("decidePlacement of two producers' keys = %v; want a *PlacementError that says so and names the fix", err)
		}
	})
	t.Run("no known partitioner", func(t *testing.T) {
		// Sarama's NewReferenceHashPartitioner masks the sign bit: none of
		// ours.
		var s []keySample
		for i := range 60 {
			k := []byte(restaurantKey(i))
			s = append(s, keySample{partition: (&kafka.ReferenceHash{}).Balance(kafka.Message{Key: k}, 0, 1, 2, 3, 4, 5), offset: int64(i), key: k})
		}
		_, _, err := decidePlacement("restaurants", n, s, nativeKeyID, true, PartitionerAuto)
		var pe *PlacementError
		if !errors.As(err, &pe) || pe.Misfit == nil || !strings.Contains(err.Error(), "is where no known partitioner puts its key") ||
			!strings.Contains(err.Error(), "murmur2 (the Java client") {
			t.Errorf("decidePlacement of reference-hash keys = %v; want a *PlacementError naming a key and the fix", err)
		}
	})
	t.Run("named, contradicted", func(t *testing.T) {
		_, _, err := decidePlacement("restaurants", n, placed(PartitionerMurmur2, n, 60, restaurantKey), nativeKeyID, true, PartitionerCRC32)
		var pe *PlacementError
		if !errors.As(err, &pe) || pe.Named != PartitionerCRC32 || !strings.Contains(err.Error(), "its events fit murmur2") {
			t.Errorf("decidePlacement(crc32 named, murmur2 keys) = %v; want a *PlacementError that points at murmur2", err)
		}
	})
	t.Run("two key spellings", func(t *testing.T) {
		s := placed(PartitionerMurmur2, n, 3, func(i int) string { return fmt.Sprintf(`{"id":%d}`, i+1) })
		s = append(s, placed(PartitionerMurmur2, n, 1, func(int) string { return `{"id": 9}` })...)
		_, _, err := decidePlacement("restaurants", n, s, jsonKeyID, false, PartitionerAuto)
		var te *KeyTemplateError
		if !errors.As(err, &te) || te.ID != "9" {
			t.Errorf("decidePlacement of two key spellings = %v; want a *KeyTemplateError for id 9", err)
		}
	})
}

// TestPlacementCheck: a keyed restaurant event elsewhere than the
// placement puts its key, or keyed otherwise than its template spells
// its id, is refused with why; a keyless one is not checked.
func TestPlacementCheck(t *testing.T) {
	k, _, err := decidePlacement("restaurants", 4, placed(PartitionerCRC32, 4, 40, func(i int) string { return fmt.Sprintf(`{"id":%d}`, i) }), jsonKeyID, false, PartitionerAuto)
	if err != nil || k == nil {
		t.Fatalf("decidePlacement = %+v, %v; want crc32 detected", k, err)
	}
	key := []byte(`{"id":500}`)
	right := PartitionerCRC32.Partition(key, 4)
	if err := k.Check(kafka.Message{Topic: "restaurants", Partition: right, Key: key}); err != nil {
		t.Errorf("check of a placed event = %v, want nil", err)
	}
	if err := k.Check(kafka.Message{Topic: "restaurants", Partition: (right + 1) % 4}); err != nil {
		t.Errorf("check of a keyless event = %v, want nil", err)
	}
	err = k.Check(kafka.Message{Topic: "restaurants", Partition: (right + 1) % 4, Offset: 9, Key: key})
	var me *MisplacedRestaurantError
	if !errors.As(err, &me) || me.Want != right || !strings.Contains(err.Error(), "restaurants/"+fmt.Sprint((right+1)%4)+"@9") ||
		!strings.Contains(err.Error(), "produce every restaurant event keyed by restaurant id with crc32") {
		t.Errorf("check of a misplaced event = %v; want a *MisplacedRestaurantError that names it and the fix", err)
	}
	odd := []byte(`{"id": 500}`)
	err = k.Check(kafka.Message{Topic: "restaurants", Partition: PartitionerCRC32.Partition(odd, 4), Key: odd})
	if !errors.As(err, &me) || me.Spelled == "" {
		t.Errorf("check of an event keyed in another spelling = %v; want a *MisplacedRestaurantError about the spelling", err)
	}
}

func BenchmarkDishPartition(b *testing.B) {
	for _, p := range Partitioners {
		b.Run(string(p), func(b *testing.B) {
			k := &Placement{parts: partitionNumbers(12), by: p, keyID: nativeKeyID}
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				k.DishPartition("r-123456")
			}
		})
	}
}
