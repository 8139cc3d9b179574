// Command ingest is the geoshard consumer deployment: it reads restaurant
// and dish change events from Kafka and writes every document to the
// OpenSearch shard of its geoshard, at least once and idempotently.
//
//	ingest --brokers kafka:9092 --opensearch https://search:9200 --alias menu
//	ingest --embedded     # in-process broker and emulator, bundled data, a summary
//
// Every flag has a GEOSHARD_* environment variable (shown in --help),
// parsed as the flag is: a value the flag refuses stops the command with
// exit 2, naming the variable. Secrets come only from the environment or
// files. Exit status: 0 after a
// clean shutdown, 2 for bad flags, 1 for any other failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/cmd/internal/serve"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/pipeline"
	"github.com/geoshard/geoshard/pipeline/placement"
	"github.com/geoshard/geoshard/router"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// options are the parsed flags.
type options struct {
	pipe        pipeline.Config
	client      bulk.ClientConfig
	clientFlags *cli.ClientFlags
	mappingFile string
	mapFile     string
	metricsAddr string
	pprof       bool
	logLevel    string
	// balanceInterval: how often the geoshards' documents are counted.
	balanceInterval time.Duration

	embedded     bool
	embKafka     string
	embOS        string
	demoEvents   int
	serve        bool
	summaryLimit time.Duration
	wide         bool
}

// help is what ingest --help says before the flags.
var help = cli.Help{
	Usage: "[flags]",
	About: `ingest reads restaurant and dish change events from Kafka and writes each
document into the OpenSearch index behind --alias, on the shard of its
geoshard (dishes follow their restaurant): at least once and idempotent,
offsets committed only behind acknowledged writes, bad events dead-lettered
with their reason. It runs until interrupted (SIGTERM drains what is in
flight) and logs a progress line every --progress-interval. --embedded runs
the whole job on this machine instead (an in-process broker and OpenSearch
emulator, bundled data) and prints a summary.`,
	Examples: []string{
		"ingest --embedded                       # the whole job here, then a summary",
		"ingest --brokers 127.0.0.1:9092 --opensearch http://127.0.0.1:9200 --alias menu",
		"export GEOSHARD_BROKERS=kafka:9092 GEOSHARD_OPENSEARCH=https://search:9200; ingest",
		"ingest --format debezium --mapping deploy/debezium/mapping.json   # rows from Debezium",
	},
	After: `On --metrics-addr: /metrics; /healthz (alive: 200 while the process runs,
saying what it does); /readyz (200 when consuming, else 503 saying what it
waits for: the Kafka brokers, OpenSearch, the group, the directory).
Exit status: 0 after a clean stop, 2 for bad flags or input, 1 for a failure.`,
}

func parseFlags(args []string, getenv func(string) string, stdout io.Writer) (*options, error) {
	o := &options{}
	fs := cli.NewFlags("ingest", help, stdout)
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka `brokers`, comma-separated (GEOSHARD_BROKERS)")
	fs.StringVar(&o.pipe.RestaurantTopic, "restaurant-topic", "restaurants", "topic of restaurant events (GEOSHARD_RESTAURANT_TOPIC)")
	fs.StringVar(&o.pipe.DishTopic, "dish-topic", "dishes", "topic of dish events; may equal --restaurant-topic (GEOSHARD_DISH_TOPIC)")
	format := fs.String("format", string(decode.FormatNative), "shape of the events, native or debezium: native is geoshard's own; debezium, Debezium change events of two tables, read through --mapping (GEOSHARD_FORMAT)")
	fs.StringVar(&o.mappingFile, "mapping", "", "with --format debezium: the mapping `file` saying which topic or table holds restaurants and dishes and which columns are the ids, the location, the copied fields and the version (GEOSHARD_MAPPING)")
	dishKey := fs.String("dish-key", "", "how dish events are keyed, restaurant or dish: restaurant, by their restaurant's id; dish, by their own id, as change-data-capture tools key rows (ingest re-keys them by restaurant into --repartition-topic and consumes that); default restaurant, or dish with --format debezium (GEOSHARD_DISH_KEY)")
	fs.StringVar(&o.pipe.RepartitionTopic, "repartition-topic", "", "with --dish-key dish: the topic of dish events re-keyed by restaurant, created with the restaurant topic's partition count if missing; default <group>.dishes-by-restaurant (GEOSHARD_REPARTITION_TOPIC)")
	fs.StringVar(&o.pipe.ParkingTopic, "parking-topic", "", "compacted topic where dishes wait for their restaurant with their offsets committed, created with the restaurant topic's partition count if missing; default <group>.parked (GEOSHARD_PARKING_TOPIC)")
	fs.DurationVar(&o.pipe.RepartitionRetention, "repartition-retention", pipeline.DefaultRepartitionRetention, "with --dish-key dish: retention of the repartition topic when ingest creates it (GEOSHARD_REPARTITION_RETENTION)")
	restaurantPartitioner := fs.String("restaurant-partitioner", string(placement.PartitionerAuto), "with --dish-key dish, auto, murmur2, crc32, fnv1a or sarama: the partitioner the restaurant topic's producer places keys with, by which ingest places each dish with its restaurant: murmur2 (the Java client, Kafka Connect, Debezium), crc32 (librdkafka's default consistent_random: kcat, confluent-kafka-go, confluent-kafka-python, node-rdkafka), fnv1a (librdkafka's fnv1a), sarama (Sarama's default), checked against the topic's last events; or auto, detected from them, dish events waiting until they fit one partitioner alone (GEOSHARD_RESTAURANT_PARTITIONER)")
	fs.StringVar(&o.pipe.Group, "group", "geoshard-ingest", "consumer group (GEOSHARD_GROUP)")
	fs.StringVar(&o.pipe.DLQTopic, "dlq-topic", "geoshard.dlq", "dead-letter topic (GEOSHARD_DLQ_TOPIC)")
	fs.StringVar(&o.pipe.Alias, "alias", "menu", "alias to write through; the map comes from its write index (GEOSHARD_ALIAS)")
	fs.StringVar(&o.mapFile, "map", "", "optional map `file`: refuse to start unless the index was built with this map (GEOSHARD_MAP)")
	fs.StringVar(&o.pipe.Kafka.SASLMechanism, "kafka-sasl-mechanism", "", "plain or scram-sha-512; password from GEOSHARD_KAFKA_SASL_PASSWORD (GEOSHARD_KAFKA_SASL_MECHANISM)")
	fs.StringVar(&o.pipe.Kafka.Username, "kafka-sasl-username", "", "SASL user (GEOSHARD_KAFKA_SASL_USERNAME)")
	fs.BoolVar(&o.pipe.Kafka.TLS, "kafka-tls", false, "connect to Kafka over TLS (GEOSHARD_KAFKA_TLS)")
	fs.BoolVar(&o.pipe.TrustFirstVersions, "trust-first-versions", false, "do not look for other copies of a dish whose first version is created: for a first load into an index that holds none of these dishes (GEOSHARD_TRUST_FIRST_VERSIONS)")
	fs.BoolVar(&o.pipe.SourceDeletesDishes, "source-deletes-dishes", false, "the source deletes every live dish before deleting its restaurant: a restaurant delete leaves the dishes to their own deletes, so that a re-created restaurant's new dishes survive in any order of the topics; without it a restaurant delete deletes its dishes (GEOSHARD_SOURCE_DELETES_DISHES)")
	fs.StringVar(&o.pipe.Kafka.CAFile, "kafka-ca", "", "PEM `file` of CAs for Kafka TLS (GEOSHARD_KAFKA_CA)")
	fs.IntVar(&o.pipe.Bulk.Workers, "workers", bulk.DefaultWorkers, "bulk workers (GEOSHARD_WORKERS)")
	fs.IntVar(&o.pipe.Bulk.FlushItems, "flush-items", bulk.DefaultFlushItems, "items per bulk request (GEOSHARD_FLUSH_ITEMS)")
	fs.IntVar(&o.pipe.Bulk.FlushBytes, "flush-bytes", bulk.DefaultFlushBytes, "bytes per bulk request (GEOSHARD_FLUSH_BYTES)")
	fs.DurationVar(&o.pipe.Bulk.FlushInterval, "flush-interval", bulk.DefaultFlushInterval, "longest wait before a partial batch is sent (GEOSHARD_FLUSH_INTERVAL)")
	fs.DurationVar(&o.pipe.Kafka.SessionTimeout, "kafka-session-timeout", 30*time.Second, "how long the group waits for a member that stopped heartbeating (killed, hung) before it gives its partitions to others: shorter recovers sooner from a lost instance, but a GC pause or a slow network longer than it costs a needless rebalance; within the broker's group.min/max.session.timeout.ms (GEOSHARD_KAFKA_SESSION_TIMEOUT)")
	fs.DurationVar(&o.pipe.Kafka.HeartbeatInterval, "kafka-heartbeat-interval", 3*time.Second, "how often a member tells the group it is alive, and learns of a rebalance; at most a third of the session timeout (GEOSHARD_KAFKA_HEARTBEAT_INTERVAL)")
	fs.DurationVar(&o.pipe.Kafka.RebalanceTimeout, "kafka-rebalance-timeout", 30*time.Second, "how long the group waits for every member to rejoin during a rebalance; consumption stands still for up to this long when a member is slow to rejoin (GEOSHARD_KAFKA_REBALANCE_TIMEOUT)")
	fs.DurationVar(&o.pipe.DrainTimeout, "drain-timeout", 20*time.Second, "on SIGTERM, finish in-flight work within this long (GEOSHARD_DRAIN_TIMEOUT)")
	fs.StringVar(&o.pipe.Instance, "instance", "", "this instance's name in migration heartbeats; default host name and pid (GEOSHARD_INSTANCE)")
	fs.DurationVar(&o.pipe.MigrationPollInterval, "migration-poll-interval", 5*time.Second, "how often to read the reshard migration state (GEOSHARD_MIGRATION_POLL_INTERVAL)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", ":9464", "listen `address` of /metrics, /healthz and /readyz; empty disables (GEOSHARD_METRICS_ADDR)")
	fs.BoolVar(&o.pprof, "pprof", false, "also serve Go's runtime profiles (heap, CPU, goroutines) at /debug/pprof/ on --metrics-addr; keep that address private (GEOSHARD_PPROF)")
	fs.StringVar(&o.logLevel, "log-level", "info", "debug, info, warn or error (GEOSHARD_LOG_LEVEL)")
	fs.DurationVar(&o.balanceInterval, "balance-interval", migrate.DefaultBalanceInterval, "how often to count each geoshard's documents against the map's plan (geoshard_shard_documents, geoshard_map_imbalance: when to reshard); 0 disables (GEOSHARD_BALANCE_INTERVAL)")
	fs.DurationVar(&o.pipe.ProgressInterval, "progress-interval", 30*time.Second, "log a progress line this often (events per second, lag, dishes waiting for their restaurant, dead letters, what the instance waits for), none while idle; 0 disables (GEOSHARD_PROGRESS_INTERVAL)")
	o.clientFlags = cli.RegisterClientFlags(fs, &o.client, getenv)

	fs.BoolVar(&o.embedded, "embedded", false, "run with an in-process Kafka broker and OpenSearch emulator on bundled data, then print a summary")
	fs.StringVar(&o.embKafka, "embedded-kafka", "127.0.0.1:0", "listen `address` of the embedded broker (loopback)")
	fs.StringVar(&o.embOS, "embedded-opensearch", "127.0.0.1:0", "listen `address` of the embedded OpenSearch emulator (loopback)")
	fs.IntVar(&o.demoEvents, "demo-events", 40000, "how many events the embedded mode produces (0: none)")
	fs.BoolVar(&o.serve, "serve", false, "with --embedded: keep running after the summary until interrupted")
	fs.DurationVar(&o.summaryLimit, "embedded-timeout", 5*time.Minute, "with --embedded: give up if the events are not all processed by then")
	fs.BoolVar(&o.wide, "wide", false, "with --embedded: print the summary's tables with every column (wider than 100 columns)")

	if err := cli.Parse(fs, args, getenv); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, cli.UsageError{Err: fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	o.pipe.DishKey = pipeline.DishKey(*dishKey)
	if *dishKey != "" && !o.pipe.DishKey.Valid() {
		return nil, cli.UsageError{Err: fmt.Errorf("--dish-key %q: want restaurant or dish", *dishKey)}
	}
	o.pipe.RestaurantPartitioner = placement.Partitioner(*restaurantPartitioner)
	if !o.pipe.RestaurantPartitioner.Valid() {
		return nil, cli.UsageError{Err: fmt.Errorf("--restaurant-partitioner %q: want auto, murmur2, crc32, fnv1a or sarama", *restaurantPartitioner)}
	}
	if err := o.readFormat(fs, *format); err != nil {
		return nil, cli.UsageError{Err: err}
	}
	for _, b := range strings.Split(*brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			o.pipe.Brokers = append(o.pipe.Brokers, b)
		}
	}
	o.pipe.Kafka.Password = bulk.NewSecret(getenv("GEOSHARD_KAFKA_SASL_PASSWORD"))
	if o.demoEvents < 0 {
		return nil, cli.UsageError{Err: fmt.Errorf("--demo-events %d: must not be negative", o.demoEvents)}
	}
	if _, err := parseLevel(o.logLevel); err != nil {
		return nil, cli.UsageError{Err: err}
	}
	if !o.embedded {
		if err := o.clientFlags.Resolve(); err != nil {
			return nil, cli.UsageError{Err: err}
		}
	}
	return o, nil
}

// readFormat sets the event format and, for debezium, reads the mapping
// file. A topic flag left unset takes the mapping's topic, if it names
// one.
func (o *options) readFormat(fs *flag.FlagSet, format string) error {
	o.pipe.Format = decode.Format(format)
	switch {
	case !o.pipe.Format.Valid():
		return fmt.Errorf("--format %q: want native or debezium", format)
	case o.pipe.Format == decode.FormatNative && o.mappingFile != "":
		return fmt.Errorf("--mapping %s: only read with --format debezium", o.mappingFile)
	case o.pipe.Format == decode.FormatNative:
		return nil
	case o.mappingFile == "":
		return errors.New("--format debezium: needs --mapping, the file saying which topic or table holds restaurants and dishes and which columns say what (deploy/debezium/mapping.json is an example)")
	case o.embedded:
		return errors.New("--format debezium: the embedded mode produces native events; run it without --format")
	}
	m, err := decode.LoadMapping(o.mappingFile)
	if err != nil {
		return fmt.Errorf("--mapping %w", err)
	}
	o.pipe.Mapping = m
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["restaurant-topic"] && m.Restaurants.Topic != "" {
		o.pipe.RestaurantTopic = m.Restaurants.Topic
	}
	if !set["dish-topic"] && m.Dishes.Topic != "" {
		o.pipe.DishTopic = m.Dishes.Topic
	}
	return nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		return 2
	}
	level, _ := parseLevel(o.logLevel)
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if o.embedded {
		err = runEmbedded(ctx, o, logger, stdout)
		if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Interrupted (Ctrl-C, SIGTERM) before the summary was done:
			// a clean stop, not a failure.
			logger.Info("embedded run interrupted")
			err = nil
		}
	} else {
		err = runConsumer(ctx, o, logger)
	}
	var ue cli.UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "ingest: %v\n", err)
		return 2
	}
	fmt.Fprintf(stderr, "ingest: %v\n", err)
	return 1
}

// runConsumer is the deployment: the pipeline plus its HTTP endpoints.
func runConsumer(ctx context.Context, o *options, logger *slog.Logger) error {
	if o.mapFile != "" {
		data, err := os.ReadFile(o.mapFile)
		if err != nil {
			return cli.UsageError{Err: fmt.Errorf("--map: %w", err)}
		}
		m, err := router.Parse(data)
		if err != nil {
			return cli.UsageError{Err: fmt.Errorf("--map %s: %w", o.mapFile, err)}
		}
		o.pipe.MapHash = m.Hash()
	}
	client, err := bulk.NewClient(o.client)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	o.pipe.Logger, o.pipe.Registerer = logger, reg
	p, err := pipeline.New(o.pipe, client)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	var balance *migrate.BalanceWatch
	if o.balanceInterval > 0 {
		balance, err = migrate.NewBalanceWatch(client, migrate.BalanceWatchConfig{
			Alias: o.pipe.Alias, Registerer: reg, Logger: logger, Interval: o.balanceInterval,
		})
		if err != nil {
			return cli.UsageError{Err: fmt.Errorf("--balance-interval: %w", err)}
		}
	}
	stopHTTP, _, err := serveHTTP(o.metricsAddr, o.pprof, reg, p, logger)
	if err != nil {
		return err
	}
	defer stopHTTP()
	logger.Info("ingest starting", "brokers", strings.Join(o.pipe.Brokers, ","), "alias", o.pipe.Alias, "group", o.pipe.Group)
	// The engine before anything is read or written: one geoshard does
	// not run on stops the instance here; nodes that do not answer yet
	// are waited for, as the pipeline waits for them at start, with
	// /healthz served meanwhile.
	if err := o.clientFlags.AwaitEngine(ctx, client, logger); err != nil {
		if ctx.Err() != nil {
			return nil // interrupted while waiting: a stop, not a failure
		}
		return err
	}
	if balance != nil {
		// The geoshards' documents against the map's plan (when to
		// reshard); its failures are logged, never fatal.
		bctx, stopBalance := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() { balance.Run(bctx) })
		defer wg.Wait()
		defer stopBalance()
	}
	return p.Run(ctx)
}

// serveHTTP serves /metrics, /healthz and /readyz (and with withPprof
// /debug/pprof/) on addr until the returned stop function is called; it
// returns the address bound.
func serveHTTP(addr string, withPprof bool, reg *prometheus.Registry, p *pipeline.Pipeline, logger *slog.Logger) (stop func(), bound string, err error) {
	if addr == "" {
		return func() {}, "", nil
	}
	handlers := map[string]http.Handler{
		"/healthz": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			// Alive whatever it waits for: a restart would not bring the
			// brokers or OpenSearch back.
			fmt.Fprintf(w, "ok: %s\n", p.Health())
		}),
		"/readyz": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ready, why := p.Ready()
			if !ready {
				http.Error(w, why, http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ready")
		}),
	}
	if withPprof {
		handlers["/debug/pprof/"] = http.HandlerFunc(pprof.Index)
		handlers["/debug/pprof/cmdline"] = http.HandlerFunc(pprof.Cmdline)
		handlers["/debug/pprof/profile"] = http.HandlerFunc(pprof.Profile)
		handlers["/debug/pprof/symbol"] = http.HandlerFunc(pprof.Symbol)
		handlers["/debug/pprof/trace"] = http.HandlerFunc(pprof.Trace)
	}
	return serve.Start(addr, reg, handlers, logger)
}
