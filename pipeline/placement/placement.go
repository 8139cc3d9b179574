package placement

// Where the restaurant topic's keys sit.
//
// Under DishKeyDish the repartitioner puts a dish event in partition N of
// the repartition topic so that the member reading partition N of the
// restaurant topic sees both the dish and its restaurant. That holds only
// if N is computed as the restaurant topic's producer computed it: from
// the same key bytes, with the same partitioner. Producers differ:
//
//   - murmur2: the Java client, Kafka Connect, Debezium, Kafka Streams,
//     franz-go, and librdkafka's partitioner=murmur2 or murmur2_random;
//   - crc32: librdkafka's default, consistent_random (and consistent):
//     kcat, confluent-kafka-go, confluent-kafka-python, node-rdkafka;
//   - fnv1a: librdkafka's fnv1a or fnv1a_random;
//   - sarama: Sarama's default hash partitioner (and kafka-go's Hash).
//
// and a restaurant's key may be its id (native events) or a JSON document
// that names it (Debezium: {"id":42}, or {"schema":...,"payload":{"id":42}}).
//
// A Placement is both answers: the partitioner, and the key template
// that spells a restaurant id as its key. They are learnt from the
// restaurant topic's last events, or the partitioner is named and checked
// there (detect.go); until both are known the repartitioner
// forwards nothing (learn.go). It then places a dish at
// partitioner(template(restaurant id)), and the decoder checks every
// keyed restaurant event against partitioner(key) as it arrives.

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/segmentio/kafka-go"
)

// Partitioner names the partitioner that placed the restaurant topic's
// keys (Config.Partitioner).
type Partitioner string

// Partitioners.
const (
	// PartitionerAuto: detect it from where the restaurant topic's keys
	// sit (detect.go).
	PartitionerAuto Partitioner = "auto"
	// PartitionerMurmur2 is Kafka's default: toPositive(murmur2(key)) % n,
	// toPositive masking the sign bit (Utils.toPositive).
	PartitionerMurmur2 Partitioner = "murmur2"
	// PartitionerCRC32 is librdkafka's consistent and consistent_random:
	// rd_crc32(key) % n, CRC-32 (IEEE) taken unsigned.
	PartitionerCRC32 Partitioner = "crc32"
	// PartitionerFNV1a is librdkafka's fnv1a and fnv1a_random:
	// rd_fnv1a(key) % n, where rd_fnv1a is FNV-1a 32 made non-negative as
	// an int32 the way Sarama does it, and the modulo is unsigned.
	PartitionerFNV1a Partitioner = "fnv1a"
	// PartitionerSarama is Sarama's default hash partitioner (and
	// kafka-go's Hash): int32(FNV-1a 32(key)) % n, negated if negative.
	// It places every key where PartitionerFNV1a does (see SamePlace).
	PartitionerSarama Partitioner = "sarama"
)

// Partitioners lists the partitioners that can be named, in the order
// detection prefers them when a sample fits more than one: the most
// common producers first.
var Partitioners = []Partitioner{PartitionerMurmur2, PartitionerCRC32, PartitionerFNV1a, PartitionerSarama}

// Valid reports whether p is a known partitioner or auto ("" is auto).
func (p Partitioner) Valid() bool {
	return p == "" || p == PartitionerAuto || p.known()
}

// known reports whether p is a partitioner that places keys (not auto).
func (p Partitioner) known() bool {
	switch p {
	case PartitionerMurmur2, PartitionerCRC32, PartitionerFNV1a, PartitionerSarama:
		return true
	}
	return false
}

// Clients names the producers that place keys the way p does, for
// messages that tell an operator which one to use.
func (p Partitioner) Clients() string {
	switch p {
	case PartitionerMurmur2:
		return "the Java client, Kafka Connect, Debezium, Kafka Streams, franz-go, librdkafka with partitioner=murmur2_random"
	case PartitionerCRC32:
		return "librdkafka's default consistent_random: kcat, confluent-kafka-go, confluent-kafka-python, node-rdkafka"
	case PartitionerFNV1a:
		return "librdkafka with partitioner=fnv1a_random, or Sarama's default"
	case PartitionerSarama:
		return "Sarama's default hash partitioner, or librdkafka with partitioner=fnv1a_random"
	}
	return ""
}

// SamePlace is the partitioner that places every key where p does: fnv1a
// for sarama. The two take the sign of the 32-bit FNV-1a hash h in
// different ways, librdkafka's as |h| mod n unsigned, Sarama's as
// -(h rem n) for a negative h, and these agree for every h and every
// n >= 1: Go's and C's remainder takes the dividend's sign, so
// (-h) rem n = -(h rem n); and for h = MinInt32, whose negation is itself
// (Go wraps; librdkafka's C does in practice), librdkafka's unsigned
// 2^31 mod n equals Sarama's -(MinInt32 rem n). TestSaramaIsFNV1a checks
// it, with Sarama's own MinInt32 key.
func (p Partitioner) SamePlace() Partitioner {
	if p == PartitionerSarama {
		return PartitionerFNV1a
	}
	return p
}

// Partition is the partition, of n, that p gives key; -1 for auto or an
// unknown partitioner, or n < 1.
func (p Partitioner) Partition(key []byte, n int) int {
	if n < 1 {
		return -1
	}
	return p.partition(key, partitionNumbers(n))
}

// partition is Partition over parts, the numbers 0..n-1.
//
// kafka-go's balancers are the clients' algorithms where they match
// exactly: Murmur2Balancer (Consistent: a nil key hashes as an empty one,
// never random; keys here are never nil) is Java's toPositive(murmur2) %
// n, CRC32Balancer librdkafka's rd_crc32 % n, and Hash Sarama's. None is
// librdkafka's fnv1a (ReferenceHash masks the sign bit, which is Sarama's
// NewReferenceHashPartitioner, not rd_fnv1a's absolute value), so that
// one is written out in rdFNV1a.
func (p Partitioner) partition(key []byte, parts []int) int {
	m := kafka.Message{Key: key}
	switch p {
	case PartitionerMurmur2:
		return kafka.Murmur2Balancer{Consistent: true}.Balance(m, parts...)
	case PartitionerCRC32:
		return kafka.CRC32Balancer{Consistent: true}.Balance(m, parts...)
	case PartitionerFNV1a:
		return rdFNV1a(key, len(parts))
	case PartitionerSarama:
		return saramaHash.Balance(m, parts...)
	}
	return -1
}

// saramaHash is kafka-go's copy of Sarama's hash partitioner. With no
// Hasher of its own it takes one from a pool per call, so one value
// serves every goroutine.
var saramaHash = &kafka.Hash{}

// rdFNV1a is librdkafka's rd_kafka_msg_partitioner_fnv1a: rd_fnv1a(key)
// % partition_cnt, where rd_fnv1a computes FNV-1a 32 in an int32, makes
// it non-negative (h = -h), and returns it as a uint32, so the modulo is
// unsigned. For MinInt32, -h is h again: the uint32 is 2^31.
func rdFNV1a(key []byte, n int) int {
	const (
		offset = 2166136261
		prime  = 16777619
	)
	h := uint32(offset)
	for _, b := range key {
		h ^= uint32(b)
		h *= prime
	}
	s := int32(h)
	if s < 0 {
		s = -s
	}
	return int(uint32(s) % uint32(n))
}

func partitionNumbers(n int) []int {
	parts := make([]int, n)
	for i := range parts {
		parts[i] = i
	}
	return parts
}

// keyTemplate spells a restaurant id as the key its producer gives the
// restaurant's events: prefix, the id (as it is, or as a JSON string),
// suffix. The zero template is the id itself, as native events key it.
type keyTemplate struct {
	prefix, suffix string
	// quoted spells the id as a JSON string; otherwise as it is (a native
	// key, or a JSON number).
	quoted bool
}

// key is the key of the restaurant id.
func (t keyTemplate) key(id string) []byte {
	b := make([]byte, 0, len(t.prefix)+len(id)+len(t.suffix)+2)
	b = append(b, t.prefix...)
	if t.quoted {
		b = appendJSONString(b, id)
	} else {
		b = append(b, id...)
	}
	return append(b, t.suffix...)
}

// String describes the template for logs: "id" or the key with the id's
// place marked, {"id":<id>}.
func (t keyTemplate) String() string {
	if t == (keyTemplate{}) {
		return "the restaurant id"
	}
	id := "<id>"
	if t.quoted {
		id = `"<id>"`
	}
	return clip([]byte(t.prefix + id + t.suffix))
}

// learnTemplate finds how key spells the restaurant id: as the whole key,
// else at the id's last occurrence in the key (a JSON key with a schema
// envelope names its field in the schema and puts the payload after it),
// quoted if that occurrence is a JSON string, else (an id that JSON
// escapes) at the last occurrence of its JSON string.
func learnTemplate(key []byte, id string) (keyTemplate, bool) {
	if string(key) == id {
		return keyTemplate{}, true
	}
	if id == "" {
		return keyTemplate{}, false
	}
	if j := bytes.LastIndex(key, []byte(id)); j >= 0 {
		end := j + len(id)
		if j > 0 && end < len(key) && key[j-1] == '"' && key[end] == '"' {
			return keyTemplate{prefix: string(key[:j-1]), suffix: string(key[end+1:]), quoted: true}, true
		}
		return keyTemplate{prefix: string(key[:j]), suffix: string(key[end:])}, true
	}
	q := appendJSONString(nil, id)
	if j := bytes.LastIndex(key, q); j >= 0 {
		return keyTemplate{prefix: string(key[:j]), suffix: string(key[j+len(q):]), quoted: true}, true
	}
	return keyTemplate{}, false
}

// appendJSONString appends s as a JSON string, escaping only what JSON
// requires (the quote, the backslash, control characters), as Jackson,
// which Kafka Connect's JSON converter uses, writes it.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		case '\b':
			b = append(b, '\\', 'b')
		case '\f':
			b = append(b, '\\', 'f')
		default:
			if c < 0x20 {
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			} else {
				b = append(b, c)
			}
		}
	}
	return append(b, '"')
}

// nativeKeyID reads the restaurant id of a native event's key: the key
// itself.
func nativeKeyID(key []byte) (string, bool) { return string(key), len(key) > 0 }

// Basis says how a placement's partitioner was chosen.
type Basis int

const (
	// BasisDetected: the only partitioner (up to SamePlace) that put
	// every sampled key where it is; or, with one partition, any.
	BasisDetected Basis = iota
	// BasisNamed: named by Config.Partitioner, and the sample
	// agreed (or there was none).
	BasisNamed
)

func (b Basis) String() string {
	return [...]string{"detected", "named"}[b]
}

// Placement is where the restaurant topic's producer puts a
// restaurant's events: partition by(template(id)) of the n there are. It
// is only made once both are known (decidePlacement), and never changes.
type Placement struct {
	topic string
	parts []int // 0..n-1
	by    Partitioner
	tmpl  keyTemplate
	keyID func(key []byte) (string, bool)
	basis Basis
}

// Partitioner is the partitioner the restaurant topic's producer places
// keys with.
func (k *Placement) Partitioner() Partitioner { return k.by }

// Basis says how the partitioner was chosen.
func (k *Placement) Basis() Basis { return k.basis }

// partition is the partition the producer gives key.
func (k *Placement) partition(key []byte) int { return k.by.partition(key, k.parts) }

// DishPartition is the partition of the restaurant topic that holds the
// restaurant rid's events: the partition the repartitioner gives its
// dishes.
func (k *Placement) DishPartition(rid string) int { return k.partition(k.tmpl.key(rid)) }

// check returns a *MisplacedRestaurantError for a keyed restaurant-topic
// message that is not where the placement puts its key, or whose key
// spells its restaurant id otherwise than the template does (its dishes
// would be placed by the template's spelling); nil for any other.
//
// Such a message stops the pipeline before it is decided rather than
// being dead-lettered: the event itself is valid (its restaurant is
// indexed wherever its partition's member is), the damage is to its
// dishes, which the repartitioner sends to another partition, where a
// member that may never see the restaurant waits for it. And it is not
// one bad event: the placement was named, or was the only one that fit
// every sampled event, so a producer has changed its partitioner, or a
// second client writes the topic, and every restaurant it writes from
// now on is misplaced. Dead-lettering them would drop valid restaurants
// at that producer's rate while ingest looked healthy; stopping with the
// event uncommitted loses nothing, says what to fix, and reads it again
// after the fix. (No placement is assumed: one that is not yet known
// holds the dishes back instead, learn.go.)
func (k *Placement) Check(m kafka.Message) error {
	if len(m.Key) == 0 {
		return nil // no key, no partitioner: nothing to check
	}
	want := k.partition(m.Key)
	if want != m.Partition {
		return &MisplacedRestaurantError{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: clip(m.Key),
			Partitioner: k.by, Want: want, Basis: k.basis}
	}
	if id, ok := k.keyID(m.Key); ok && !bytes.Equal(k.tmpl.key(id), m.Key) {
		return &MisplacedRestaurantError{Topic: m.Topic, Partition: m.Partition, Offset: m.Offset, Key: clip(m.Key),
			Partitioner: k.by, Want: want, Basis: k.basis, Spelled: k.tmpl.String()}
	}
	return nil
}

// MisplacedRestaurantError stops the pipeline at a restaurant event that
// contradicts the placement its dishes are forwarded by (Placement.Check
// says why it stops).
type MisplacedRestaurantError struct {
	Topic     string
	Partition int
	Offset    int64
	Key       string // clipped
	// Partitioner is the placement's; Want the partition it gives Key.
	Partitioner Partitioner
	Want        int
	// Spelled, if set, is the template the key does not follow (the
	// partition was right).
	Spelled string
	Basis   Basis
}

func (e *MisplacedRestaurantError) Error() string {
	at := fmt.Sprintf("restaurant event %s/%d@%d (key %s)", e.Topic, e.Partition, e.Offset, e.Key)
	var what string
	if e.Spelled != "" {
		what = fmt.Sprintf("%s does not spell its restaurant id as the keys sampled do (%s), so its dishes are not placed by its key", at, e.Spelled)
	} else {
		what = fmt.Sprintf("%s is not where %s puts its key (partition %d), so its dishes go to a partition whose member may never see it", at, e.Partitioner, e.Want)
	}
	var why, fix string
	switch e.Basis {
	case BasisNamed:
		why = fmt.Sprintf("the restaurant partitioner is set to %s", e.Partitioner)
		fix = fmt.Sprintf("produce every restaurant event keyed by restaurant id with %s (%s), or correct --restaurant-partitioner", e.Partitioner, e.Partitioner.Clients())
	default:
		why = fmt.Sprintf("every event sampled was where %s puts it, and no other partitioner puts them all there, so a producer has changed its partitioner or another client writes the topic", e.Partitioner)
		fix = fmt.Sprintf("produce every restaurant event keyed by restaurant id with %s (%s)", e.Partitioner, e.Partitioner.Clients())
	}
	return fmt.Sprintf("pipeline: %s: %s; %s; ingest stopped before deciding it, so it is read again after the fix", what, why, fix)
}

func joinPartitioners(ps []Partitioner) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// clip is b for a message: "(absent)" if empty, cut after 64 bytes.
func clip(b []byte) string {
	if len(b) == 0 {
		return "(absent)"
	}
	const max = 64
	if len(b) > max {
		return string(b[:max]) + "…"
	}
	return string(b)
}
