// Command produce writes the demo's change-event stream (the one
// `ingest --embedded` produces in process) to a Kafka broker, so that an
// ingest run against real engines has realistic events to consume:
// restaurants and dishes with updates, deletes, moves, replays,
// out-of-order versions and a few poison events, keyed by restaurant id.
//
// Usage, from the module root, after `make real-up`:
//
//	go run ./internal/datagen/cmd/produce --events 40000 --partitions 6
//
// Its flags read GEOSHARD_BROKERS, GEOSHARD_RESTAURANT_TOPIC,
// GEOSHARD_DISH_TOPIC and GEOSHARD_DLQ_TOPIC as ingest's do; --help says
// more.
//
// With --partitions N it first creates the restaurant, dish and dead-letter
// topics (N partitions each, a replica on each broker up to three) where
// they are missing; brokers with automatic topic creation off need that. Messages are placed by the
// murmur2 hash of their key, as Kafka's own producers place them, so a
// restaurant's events and its dishes' land on the same partition number.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/internal/datagen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

var produceHelp = cli.Help{
	About: `produce writes the demo's change-event stream — the one ingest --embedded produces in
process — to a Kafka broker: restaurants and dishes with updates, deletes, moves, replays,
out-of-order versions and a few poison events, keyed by restaurant id and placed by the murmur2
hash of the key, as Kafka's own producers place them. With --partitions N it first creates the
restaurant, dish and dead-letter topics where they are missing (N partitions, a replica on
each broker up to three).
It reads the same GEOSHARD_* variables as ingest, so one set of exports points both at a broker.`,
	Examples: []string{
		"produce --events 40000 --partitions 6                    # to 127.0.0.1:9092, creating the topics",
		"GEOSHARD_BROKERS=127.0.0.1:39092 produce --events 1000   # a broker on another port",
		"go run ./internal/datagen/cmd/produce --help             # from the module root",
	},
}

// run is the command; it returns the exit status: 0 done, 2 bad flags, 1
// anything else.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := cli.NewFlags("produce", produceHelp, stdout)
	brokers := fs.String("brokers", "127.0.0.1:9092", "Kafka `brokers`, comma-separated (GEOSHARD_BROKERS)")
	restaurants := fs.String("restaurant-topic", datagen.DefaultRestaurantTopic, "topic of restaurant events (GEOSHARD_RESTAURANT_TOPIC)")
	dishes := fs.String("dish-topic", datagen.DefaultDishTopic, "topic of dish events; may equal --restaurant-topic (GEOSHARD_DISH_TOPIC)")
	dlq := fs.String("dlq-topic", "geoshard.dlq", "dead-letter topic, created with the others (GEOSHARD_DLQ_TOPIC)")
	events := fs.Int("events", 40_000, "about how many events to produce")
	partitions := fs.Int("partitions", 0, "create missing topics with this many partitions (0: create none)")
	seed := fs.Uint64("seed", datagen.SeedStream, "seed of the stream")
	err := cli.Parse(fs, args, getenv)
	switch {
	case errors.Is(err, flag.ErrHelp):
		return 0
	case err == nil && fs.NArg() > 0:
		err = cli.UsageError{Err: fmt.Errorf("unexpected argument %q (produce --help lists the flags)", fs.Arg(0))}
	case err == nil && *events < 1:
		err = cli.UsageError{Err: fmt.Errorf("--events %d: want at least 1", *events)}
	case err == nil && *partitions < 0:
		err = cli.UsageError{Err: fmt.Errorf("--partitions %d: must not be negative", *partitions)}
	}
	if err != nil {
		fmt.Fprintf(stderr, "produce: %v\n", err)
		return 2
	}
	var addrs []string
	for _, b := range strings.Split(*brokers, ",") {
		if b = strings.TrimSpace(b); b != "" {
			addrs = append(addrs, b)
		}
	}
	if len(addrs) == 0 {
		fmt.Fprintln(stderr, "produce: --brokers is empty (produce --help lists the flags)")
		return 2
	}
	if *partitions > 0 {
		if err := createTopics(ctx, addrs, *partitions, *restaurants, *dishes, *dlq); err != nil {
			fmt.Fprintln(stderr, "produce:", err)
			return 1
		}
	}
	n, err := produce(ctx, addrs, *restaurants, *dishes, *events, *seed)
	if err != nil {
		fmt.Fprintln(stderr, "produce:", err)
		return 1
	}
	fmt.Fprintf(stdout, "produced %d events to %s and %s on %s\n", n, *restaurants, *dishes, strings.Join(addrs, ","))
	return 0
}

// createTopics creates the topics that do not exist yet.
func createTopics(ctx context.Context, brokers []string, partitions int, topics ...string) error {
	conn, err := kafka.DialContext(ctx, "tcp", brokers[0])
	if err != nil {
		return fmt.Errorf("dial %s: %w", brokers[0], err)
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		return fmt.Errorf("find the controller: %w", err)
	}
	cc, err := kafka.DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return fmt.Errorf("dial the controller: %w", err)
	}
	defer cc.Close()
	rf, err := replicationFactor(conn)
	if err != nil {
		return err
	}
	seen := map[string]bool{}
	var cfgs []kafka.TopicConfig
	for _, t := range topics {
		if !seen[t] {
			seen[t] = true
			cfgs = append(cfgs, kafka.TopicConfig{Topic: t, NumPartitions: partitions, ReplicationFactor: rf})
		}
	}
	for _, c := range cfgs {
		err := cc.CreateTopics(c)
		if err != nil && !errors.Is(err, kafka.TopicAlreadyExists) {
			return fmt.Errorf("create topic %s: %w", c.Topic, err)
		}
	}
	for _, c := range cfgs {
		if err := awaitLeaders(ctx, conn, c.Topic); err != nil {
			return err
		}
	}
	return nil
}

// awaitLeaders waits until the broker's metadata gives every partition of
// topic a leader. The controller answers a creation before the brokers
// have learnt of it; a write in between is refused as to an unknown topic,
// and a busy broker can take longer to learn than the writer retries.
func awaitLeaders(ctx context.Context, conn *kafka.Conn, topic string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		ps, err := conn.ReadPartitions(topic)
		if err == nil && len(ps) > 0 && !slices.ContainsFunc(ps, func(p kafka.Partition) bool { return p.Leader.Host == "" }) {
			return nil
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = errors.New("a partition has no leader")
			}
			return fmt.Errorf("topic %s: not ready: %w", topic, err)
		case <-tick.C:
		}
	}
}

// replicationFactor is the replication factor of the topics produce
// creates: a replica on each broker the cluster's metadata lists, up to
// three. A single broker takes one; a cluster's brokers that require two
// replicas in sync (min.insync.replicas=2) refuse every acks=all write to
// a topic of one replica (NOT_ENOUGH_REPLICAS).
func replicationFactor(conn *kafka.Conn) (int, error) {
	brokers, err := conn.Brokers()
	if err != nil {
		return 0, fmt.Errorf("list the brokers: %w", err)
	}
	return max(1, min(3, len(brokers))), nil
}

func produce(ctx context.Context, brokers []string, restaurants, dishes string, events int, seed uint64) (int, error) {
	cities, err := datagen.Cities()
	if err != nil {
		return 0, err
	}
	cfg := datagen.DefaultStreamConfig()
	cfg.Seed = seed
	cfg.RestaurantTopic, cfg.DishTopic = restaurants, dishes
	cfg.SizeFor(events)
	msgs, err := datagen.Stream(cities, cfg)
	if err != nil {
		return 0, err
	}
	w := &kafka.Writer{
		Addr:         kafka.TCP(brokers...),
		Balancer:     kafka.Murmur2Balancer{},
		RequiredAcks: kafka.RequireAll,
		BatchSize:    1000,
		BatchTimeout: 10 * time.Millisecond,
		// Order matters per key: one batch in flight per partition.
		MaxAttempts: 10,
	}
	defer w.Close()
	batch := make([]kafka.Message, 0, 1000)
	n := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := w.WriteMessages(ctx, batch...); err != nil {
			return fmt.Errorf("write %d messages: %w", len(batch), err)
		}
		n += len(batch)
		batch = batch[:0]
		return nil
	}
	for _, m := range msgs {
		if m.Kind == datagen.KindPoisonOversized {
			// Over the broker's default 1 MB record limit: refused before
			// any consumer could see it.
			continue
		}
		batch = append(batch, kafka.Message{Topic: m.Topic, Key: m.Key, Value: m.Value})
		if len(batch) == cap(batch) {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	return n, flush()
}
