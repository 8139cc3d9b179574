package pipeline

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/pipeline/placement"
	"github.com/geoshard/geoshard/pipeline/topics"
	"github.com/geoshard/geoshard/schema"
)

// Config configures a Pipeline. Every zero field takes the default named
// in its comment (see withDefaults, the one place defaults are applied).
type Config struct {
	// Brokers are the Kafka bootstrap addresses, host:port. Required.
	Brokers []string
	// Format is the shape of the events: decode.FormatNative or
	// decode.FormatDebezium. Default decode.FormatNative.
	Format decode.Format
	// Mapping says, under decode.FormatDebezium, which table is which and
	// which columns say what (decode/mapping.go). Required with
	// decode.FormatDebezium, not allowed with any other format.
	Mapping *decode.Mapping
	// RestaurantTopic and DishTopic are the topics of restaurant and dish
	// events; they may name the same topic. Defaults: the Mapping's
	// topics, else "restaurants" and "dishes".
	RestaurantTopic, DishTopic string
	// DishKey says how the dish topic is keyed: DishKeyRestaurant, each
	// dish event by its restaurant's id, or DishKeyDish, by anything (its
	// own id, as change-data-capture tools key rows), in which case the
	// pipeline re-keys dish events by restaurant into RepartitionTopic
	// and consumes that (placement/repartition.go). DishKeyDish needs a DishTopic of
	// its own. Default DishKeyRestaurant, or DishKeyDish under
	// FormatDebezium (which allows no other: Debezium keys rows by their
	// own primary key).
	DishKey DishKey
	// RepartitionTopic receives the dish events re-keyed by restaurant
	// under DishKeyDish; the pipeline creates it if it is missing, with
	// the restaurant topic's partition count. Default Group +
	// ".dishes-by-restaurant".
	RepartitionTopic string
	// RepartitionRetention is the repartition topic's retention.ms when
	// the pipeline creates it. Default 7 days.
	RepartitionRetention time.Duration
	// RestaurantPartitioner, under DishKeyDish, is the partitioner the
	// restaurant topic's producer placed keys with, which the
	// repartitioner places dishes by: PartitionerMurmur2, PartitionerCRC32,
	// PartitionerFNV1a or PartitionerSarama, checked against the topic's
	// last events; or PartitionerAuto, detected from them, dish events
	// waiting until they fit one partitioner alone (placement/detect.go,
	// placement/learn.go); all of package placement. Default
	// PartitionerAuto.
	RestaurantPartitioner placement.Partitioner
	// TrustFirstVersions skips the look for other copies of a dish whose
	// first version is created (reparent.go): for a load into an index
	// that holds none of the stream's dishes, where each look would find
	// nothing. A first version replayed once its later versions'
	// tombstones are gone, or an id two sources both use, may then stay
	// beside the newer copy, as verify reports.
	TrustFirstVersions bool
	// SourceDeletesDishes says the source sends a delete of every live
	// dish before it deletes their restaurant (as the project's
	// generators do, and CDC from a database that logs the rows a
	// foreign-key cascade removes): a restaurant delete then leaves the
	// restaurant's dishes to their own deletes, and a dish that ingest
	// writes before it processes the delete (the dish topic read ahead
	// of the restaurant topic) survives the restaurant's re-creation.
	// Default false: a restaurant delete deletes its dishes, for sources
	// that rely on that; it also deletes a re-created restaurant's new
	// dish read ahead of the delete (indexer_decide.go, restaurantDelete,
	// says why no setting serves both kinds of source).
	SourceDeletesDishes bool
	// Group is the Kafka consumer group. Default "geoshard-ingest".
	Group string
	// ParkingTopic holds the dishes that wait for their restaurant, so
	// that their offsets can be committed while they wait (parking.go): a
	// compacted topic with the restaurant topic's partition count, created
	// if missing. Default Group + ".parked".
	ParkingTopic string
	// DLQTopic receives dead letters. Default "geoshard.dlq".
	DLQTopic string
	// Alias is the OpenSearch alias written through; its write index and
	// that index's map are resolved at start. Default "menu".
	Alias string
	// MapHash, if set, is the hash of the map the operator expects (from a
	// --map file): the pipeline refuses to write to an index built with
	// another map. Default: accept the index's map.
	MapHash string
	// MapCheckInterval is how often the alias's write index and its map
	// are checked for a change. Default 30s.
	MapCheckInterval time.Duration
	// MigrationPollInterval is how often the alias's reshard migration
	// state is read (and this instance's heartbeat written). Default 5s.
	MigrationPollInterval time.Duration
	// Instance names this instance in its migration heartbeat; it must be
	// unique among the instances writing the alias. Default: the host
	// name and the process id, "host-1234".
	Instance string
	// CommitInterval is how often finished offsets are committed. Default
	// 1s.
	CommitInterval time.Duration
	// PendingMaxAge is how long a dish waits for its restaurant before it
	// is dead-lettered with reason unknown_restaurant. Default 5m.
	PendingMaxAge time.Duration
	// StallTimeout: Ready reports not ready when no event has finished for
	// this long while there is lag. Default 2m.
	StallTimeout time.Duration
	// DrainTimeout bounds the shutdown: writes in flight and dead letters
	// are given this long to finish before the last commit. Default 20s.
	DrainTimeout time.Duration
	// PendingMax bounds the dishes waiting for their restaurant, in events;
	// past it the oldest is dead-lettered. Default 100,000.
	PendingMax int
	// MaxEventBytes is the largest event value accepted, in bytes; larger
	// ones are dead-lettered as oversized. Default 1 MiB.
	MaxEventBytes int
	// Kafka holds the connection security and consumer-group timing.
	Kafka KafkaConfig
	// Bulk configures the bulk writer (workers, batches, buffers, retries).
	// Its OnResult, Registerer and Logger are set by the pipeline; a zero
	// RetryMaxElapsed becomes bulk.NoRetryLimit (a write that fails
	// transiently is retried until it lands), and a zero MaxBufferedItems
	// DefaultMaxBufferedItems.
	Bulk bulk.Config
	// Logger receives the pipeline's logs. Default: discard.
	Logger *slog.Logger
	// Registerer registers the pipeline's and the bulk writer's metrics.
	// Default: none (metrics are kept but not exported).
	Registerer prometheus.Registerer
	// OnProgress, if set, is called with a progress summary at most every
	// 200ms, from one goroutine. Optional.
	OnProgress func(Progress)
	// ProgressInterval, if positive, logs a progress line this often
	// (events per second, lag, dishes waiting for their restaurant, dead
	// letters, and what the instance waits for), and a line about the
	// dishes that wait while some do. Nothing is logged while nothing
	// happens. Default 0: no line.
	ProgressInterval time.Duration
}

// KafkaConfig says how to connect to Kafka and how the consumer behaves
// in its group.
type KafkaConfig struct {
	// SASLMechanism is "" (no SASL), "plain" or "scram-sha-512". Default "".
	SASLMechanism string
	// Username and Password authenticate with SASL; both required when
	// SASLMechanism is set.
	Username string
	Password bulk.Secret
	// TLS enables TLS to the brokers. Default off.
	TLS bool
	// CAFile is a PEM file of CA certificates to trust for TLS (implies
	// TLS). Default: the system pool.
	CAFile string
	// ClientID identifies the consumer and DLQ producer to the brokers.
	// Default "geoshard-ingest".
	ClientID string
	// DialTimeout bounds one connection attempt. Default 10s.
	DialTimeout time.Duration
	// SessionTimeout, HeartbeatInterval, RebalanceTimeout and
	// JoinGroupBackoff are the consumer-group timings. Defaults 30s, 3s,
	// 30s and 5s (kafka-go's).
	SessionTimeout    time.Duration
	HeartbeatInterval time.Duration
	RebalanceTimeout  time.Duration
	JoinGroupBackoff  time.Duration
	// MaxWait bounds a fetch's long poll. Default 1s.
	MaxWait time.Duration
}

// Defaults.
const (
	DefaultRestaurantTopic       = "restaurants"
	DefaultDishTopic             = "dishes"
	DefaultGroup                 = "geoshard-ingest"
	DefaultDLQTopic              = "geoshard.dlq"
	DefaultAlias                 = "menu"
	DefaultMapCheckInterval      = 30 * time.Second
	DefaultMigrationPollInterval = 5 * time.Second
	DefaultCommitInterval        = time.Second
	DefaultPendingMaxAge         = 5 * time.Minute
	DefaultStallTimeout          = 2 * time.Minute
	DefaultDrainTimeout          = 20 * time.Second
	DefaultPendingMax            = 100_000
	DefaultMaxEventBytes         = 1 << 20
	DefaultClientID              = "geoshard-ingest"

	// DefaultMaxBufferedItems bounds the writes in the bulk writer, queued
	// or in flight. Each holds its event (the message, its decoded doc,
	// the document body: about 1.7 KB for the generator's events), so the
	// writer's own default of 100,000 held about 170 MB live, twice that
	// in heap, on a backlog; 25,000 is over a second of a node's indexing.
	DefaultMaxBufferedItems = 25_000
)

// withDefaults fills every zero field with its default.
func (c Config) withDefaults() Config {
	str := func(v *string, d string) {
		if *v == "" {
			*v = d
		}
	}
	dur := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	num := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	if c.Format == "" {
		c.Format = decode.FormatNative
	}
	if c.Format == decode.FormatDebezium && c.Mapping != nil {
		str(&c.RestaurantTopic, c.Mapping.Restaurants.Topic)
		str(&c.DishTopic, c.Mapping.Dishes.Topic)
	}
	str(&c.RestaurantTopic, DefaultRestaurantTopic)
	str(&c.DishTopic, DefaultDishTopic)
	str(&c.Group, DefaultGroup)
	if c.DishKey == "" {
		c.DishKey = DishKeyRestaurant
		if c.Format == decode.FormatDebezium {
			c.DishKey = DishKeyDish
		}
	}
	str(&c.RepartitionTopic, c.Group+".dishes-by-restaurant")
	dur(&c.RepartitionRetention, DefaultRepartitionRetention)
	if c.RestaurantPartitioner == "" {
		c.RestaurantPartitioner = placement.PartitionerAuto
	}
	str(&c.DLQTopic, DefaultDLQTopic)
	str(&c.ParkingTopic, c.Group+".parked")
	str(&c.Alias, DefaultAlias)
	dur(&c.MapCheckInterval, DefaultMapCheckInterval)
	dur(&c.MigrationPollInterval, DefaultMigrationPollInterval)
	str(&c.Instance, defaultInstance())
	dur(&c.CommitInterval, DefaultCommitInterval)
	dur(&c.PendingMaxAge, DefaultPendingMaxAge)
	dur(&c.StallTimeout, DefaultStallTimeout)
	dur(&c.DrainTimeout, DefaultDrainTimeout)
	num(&c.PendingMax, DefaultPendingMax)
	num(&c.MaxEventBytes, DefaultMaxEventBytes)
	k := &c.Kafka
	str(&k.ClientID, DefaultClientID)
	dur(&k.DialTimeout, 10*time.Second)
	dur(&k.SessionTimeout, 30*time.Second)
	dur(&k.HeartbeatInterval, 3*time.Second)
	dur(&k.RebalanceTimeout, 30*time.Second)
	dur(&k.JoinGroupBackoff, 5*time.Second)
	dur(&k.MaxWait, time.Second)
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every bad field at once.
func (c Config) Validate() error {
	var p []string
	bad := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if len(c.Brokers) == 0 {
		bad("brokers: none given; want at least one host:port")
	}
	for _, b := range c.Brokers {
		if i := strings.LastIndexByte(b, ':'); i <= 0 || i == len(b)-1 {
			bad("broker %q: want host:port", b)
		}
	}
	d := c.withDefaults()
	switch {
	case !d.Format.Valid():
		bad("format %q: want %q or %q", c.Format, decode.FormatNative, decode.FormatDebezium)
	case d.Format == decode.FormatDebezium && c.Mapping == nil:
		bad("format %q: needs a mapping (which table is which, and which columns say what)", d.Format)
	case d.Format != decode.FormatDebezium && c.Mapping != nil:
		bad("mapping: only read with format %q, not %q", decode.FormatDebezium, d.Format)
	case d.Format == decode.FormatDebezium:
		if err := c.Mapping.Validate(); err != nil {
			bad("%v", err)
		}
		if t := c.Mapping.Restaurants.Topic; t != "" && t != d.RestaurantTopic {
			bad("restaurant topic %q: the mapping's restaurants.topic is %q; give one or make them agree", d.RestaurantTopic, t)
		}
		if t := c.Mapping.Dishes.Topic; t != "" && t != d.DishTopic {
			bad("dish topic %q: the mapping's dishes.topic is %q; give one or make them agree", d.DishTopic, t)
		}
		if d.DishKey == DishKeyRestaurant {
			bad("dish key %q: Debezium keys the dish topic by the dish's own id; use %q (the default with format %q)", d.DishKey, DishKeyDish, decode.FormatDebezium)
		}
	}
	if d.DLQTopic == d.RestaurantTopic || d.DLQTopic == d.DishTopic {
		bad("dlq topic %q: must differ from the event topics", d.DLQTopic)
	}
	if d.ParkingTopic == d.RestaurantTopic || d.ParkingTopic == d.DishTopic || d.ParkingTopic == d.DLQTopic ||
		d.DishKey == DishKeyDish && d.ParkingTopic == d.RepartitionTopic {
		bad("parking topic %q: must differ from the event, repartition and dead-letter topics", d.ParkingTopic)
	}
	switch {
	case !d.DishKey.Valid():
		bad("dish key %q: want %q or %q", c.DishKey, DishKeyRestaurant, DishKeyDish)
	case d.DishKey == DishKeyDish && d.DishTopic == d.RestaurantTopic:
		bad("dish key %q: needs a dish topic of its own, not the restaurant topic %q", d.DishKey, d.RestaurantTopic)
	case d.DishKey == DishKeyDish && (d.RepartitionTopic == d.RestaurantTopic || d.RepartitionTopic == d.DishTopic || d.RepartitionTopic == d.DLQTopic):
		bad("repartition topic %q: must differ from the event and dead-letter topics", d.RepartitionTopic)
	}
	if c.RepartitionRetention < 0 {
		bad("repartition retention %v: must not be negative", c.RepartitionRetention)
	}
	switch {
	case !c.RestaurantPartitioner.Valid():
		bad("restaurant partitioner %q: want auto, murmur2, crc32, fnv1a or sarama", c.RestaurantPartitioner)
	case d.RestaurantPartitioner != placement.PartitionerAuto && d.DishKey != DishKeyDish:
		bad("restaurant partitioner %q: only used with dish key %q, where dishes are placed by it", c.RestaurantPartitioner, DishKeyDish)
	}
	if c.MapHash != "" && (len(c.MapHash) != 64 || strings.Trim(c.MapHash, "0123456789abcdef") != "") {
		bad("map hash %q: want 64 lowercase hex digits (router.Map.Hash)", c.MapHash)
	}
	for _, f := range []struct {
		name string
		v    time.Duration
	}{
		{"map check interval", c.MapCheckInterval}, {"migration poll interval", c.MigrationPollInterval},
		{"commit interval", c.CommitInterval},
		{"pending max age", c.PendingMaxAge}, {"stall timeout", c.StallTimeout},
		{"drain timeout", c.DrainTimeout}, {"kafka dial timeout", c.Kafka.DialTimeout},
		{"kafka session timeout", c.Kafka.SessionTimeout}, {"kafka heartbeat interval", c.Kafka.HeartbeatInterval},
		{"kafka rebalance timeout", c.Kafka.RebalanceTimeout}, {"kafka join group backoff", c.Kafka.JoinGroupBackoff},
		{"kafka max wait", c.Kafka.MaxWait},
	} {
		if f.v < 0 {
			bad("%s %v: must not be negative", f.name, f.v)
		}
	}
	if id := schema.HeartbeatDocID(d.Alias, d.Instance); len(id) > decode.MaxIDBytes {
		bad("instance %q: too long: its heartbeat id would be %d bytes, over %d", d.Instance, len(id), decode.MaxIDBytes)
	}
	if c.PendingMax < 0 {
		bad("pending max %d: must not be negative", c.PendingMax)
	}
	if c.MaxEventBytes < 0 {
		bad("max event bytes %d: must not be negative", c.MaxEventBytes)
	}
	if d.Kafka.HeartbeatInterval >= d.Kafka.SessionTimeout {
		bad("kafka heartbeat interval %v: must be shorter than the session timeout %v", d.Kafka.HeartbeatInterval, d.Kafka.SessionTimeout)
	}
	switch c.Kafka.SASLMechanism {
	case "":
		if c.Kafka.Username != "" || !c.Kafka.Password.IsZero() {
			bad("kafka username or password given without a SASL mechanism")
		}
	case "plain", "scram-sha-512":
		if c.Kafka.Username == "" || c.Kafka.Password.IsZero() {
			bad("kafka SASL %s: needs a username and a password", c.Kafka.SASLMechanism)
		}
	default:
		bad("kafka SASL mechanism %q: want plain or scram-sha-512", c.Kafka.SASLMechanism)
	}
	if c.Bulk.OnResult != nil {
		bad("bulk OnResult: set by the pipeline; leave it nil")
	}
	if err := c.Bulk.Validate(); err != nil {
		bad("%v", err)
	}
	if len(p) > 0 {
		return errors.New("pipeline: config: " + strings.Join(p, "; "))
	}
	return nil
}

// defaultInstance is the host name and the process id.
func defaultInstance() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "ingest"
	}
	return fmt.Sprintf("%s-%d", h, os.Getpid())
}

// topics returns the distinct topics the pipeline's group consumes: the
// event topics, or under DishKeyDish the restaurant and repartition
// topics.
func (c Config) topics() []string {
	if c.DishKey == DishKeyDish {
		return []string{c.RestaurantTopic, c.RepartitionTopic}
	}
	if c.RestaurantTopic == c.DishTopic {
		return []string{c.RestaurantTopic}
	}
	return []string{c.RestaurantTopic, c.DishTopic}
}

// ownTopics are the topics ingest keeps itself, each with the restaurant
// topic's partition count: the parking topic, and under DishKeyDish the
// repartition topic.
func (c Config) ownTopics() []topics.Own {
	own := func(what, topic string, configs ...kafka.ConfigEntry) topics.Own {
		return topics.Own{What: what, Topic: topic, RestaurantTopic: c.RestaurantTopic, Configs: configs, Brokers: c.Brokers, Group: c.Group}
	}
	var ts []topics.Own
	if c.DishKey == DishKeyDish {
		ts = append(ts, own("repartition", c.RepartitionTopic,
			kafka.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "delete"},
			kafka.ConfigEntry{ConfigName: "retention.ms", ConfigValue: strconv.FormatInt(c.RepartitionRetention.Milliseconds(), 10)},
			kafka.ConfigEntry{ConfigName: "max.message.bytes", ConfigValue: strconv.Itoa(max(c.maxRepartitionMessage(), 1<<20+12))},
		))
	}
	return append(ts, own("parking", c.ParkingTopic, kafka.ConfigEntry{ConfigName: "cleanup.policy", ConfigValue: "compact"}))
}

// KafkaDialer returns the kafka-go Dialer and Transport for the
// connection settings: SASL and TLS. cmd/ingest can use them for its own
// checks (e.g. that the topics exist).
func (k KafkaConfig) KafkaDialer() (*kafka.Dialer, *kafka.Transport, error) {
	mech, err := k.mechanism()
	if err != nil {
		return nil, nil, err
	}
	tlsConf, err := k.tlsConfig()
	if err != nil {
		return nil, nil, err
	}
	d := &kafka.Dialer{
		ClientID:      k.ClientID,
		Timeout:       k.DialTimeout,
		DualStack:     true,
		TLS:           tlsConf,
		SASLMechanism: mech,
	}
	t := &kafka.Transport{
		ClientID:    k.ClientID,
		DialTimeout: k.DialTimeout,
		TLS:         tlsConf,
		SASL:        mech,
	}
	return d, t, nil
}

func (k KafkaConfig) mechanism() (sasl.Mechanism, error) {
	switch k.SASLMechanism {
	case "":
		return nil, nil
	case "plain":
		return plain.Mechanism{Username: k.Username, Password: k.Password.Reveal()}, nil
	case "scram-sha-512":
		m, err := scram.Mechanism(scram.SHA512, k.Username, k.Password.Reveal())
		if err != nil {
			return nil, fmt.Errorf("pipeline: kafka SASL scram-sha-512: %w", err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("pipeline: kafka SASL mechanism %q: want plain or scram-sha-512", k.SASLMechanism)
}

func (k KafkaConfig) tlsConfig() (*tls.Config, error) {
	if !k.TLS && k.CAFile == "" {
		return nil, nil
	}
	conf := &tls.Config{MinVersion: tls.VersionTLS12}
	if k.CAFile != "" {
		pool, err := bulk.CertPool(k.CAFile)
		if err != nil {
			return nil, fmt.Errorf("pipeline: kafka %w", err)
		}
		conf.RootCAs = pool
	}
	return conf, nil
}
