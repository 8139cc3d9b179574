// Command benchrun runs the real-engine benchmarks of ingest:
//
//	benchrun soak [flags]   one long ingest run: rates, refreshes, RSS, CPU, commit catch-up
//	benchrun peer [flags]   ingest beside Benthos v4.27.0 on the same stream, in rounds
//	benchrun seed [flags]   an index of the seed's shape loaded, changed, searched and resharded, in resumable phases
//
// It runs from the repository's top against a running OpenSearch node and
// Kafka broker — `make bench-soak` and `make bench-peer` start a pair with
// deploy/local/real.sh and point it at them. Each prints a table and then
// one JSON line on stdout, progress on stderr. Exit status: 0 when the run
// was made (whatever the goals say: see the PASS/FAIL lines), 2 for bad
// flags, 1 when the run could not be made.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/geoshard/geoshard/internal/benchrun"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

const usage = `usage: benchrun soak|peer|seed [flags]   (benchrun soak -h for the flags)`

// usageError is a bad command line: exit 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprintln(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "soak":
		var cfg benchrun.SoakConfig
		fs, help := commonFlags("soak", &cfg.Config, benchrun.DefaultSoakEvents, benchrun.DefaultSoakTimeout, getenv, stderr)
		fs.BoolVar(&cfg.HeapProfiles, "heap-profiles", false, "run ingest with --pprof and save its heap at a quarter, half and three quarters of the events and at the end, beside the logs (each forces a collection, which lowers the RSS figures a little)")
		check := fs.Bool("check", false, "check the flags and exit")
		if err = parse(fs, help, args[1:], cfg.Validate); err == nil && !*check {
			_, err = benchrun.Soak(ctx, cfg, stdout, stderr)
		}
	case "peer":
		var cfg benchrun.PeerConfig
		fs, help := commonFlags("peer", &cfg.Config, benchrun.DefaultPeerEvents, benchrun.DefaultPeerTimeout, getenv, stderr)
		fs.IntVar(&cfg.Rounds, "rounds", benchrun.DefaultPeerRounds, "rounds, each ingest then Benthos")
		check := fs.Bool("check", false, "check the flags and exit")
		if err = parse(fs, help, args[1:], cfg.Validate); err == nil && !*check {
			_, err = benchrun.Peer(ctx, cfg, stdout, stderr)
		}
	case "seed":
		var cfg benchrun.SeedConfig
		fs, help := commonFlags("seed", &cfg.Config, benchrun.DefaultSeedDocs, benchrun.DefaultSeedTimeout, getenv, stderr)
		cfg.Partitions = benchrun.DefaultSeedPartitions
		fs.Lookup("partitions").DefValue = strconv.Itoa(benchrun.DefaultSeedPartitions)
		fs.Int64Var(&cfg.Docs, "docs", benchrun.DefaultSeedDocs, "documents of the world (restaurants with about 85 dishes each), 100 to 60,000,000")
		fs.StringVar(&cfg.Dir, "dir", "", "the run's directory: state and reports; a run with the same -dir and -docs continues from its last finished phase (required)")
		fs.Func("phases", "phases to run, comma-separated, of load,live,reshard (default all)", func(s string) error {
			cfg.Phases = splitList(s)
			return nil
		})
		cfg.Phases = benchrun.SeedPhases
		fs.DurationVar(&cfg.LiveFor, "live-for", benchrun.DefaultSeedLiveFor, "how long the live phase produces changes")
		fs.Float64Var(&cfg.ChangeRate, "change-rate", benchrun.DefaultSeedChangeRate, "changes a second in the live and reshard phases (a change is one message, or a restaurant's dishes and itself)")
		fs.IntVar(&cfg.Searches, "searches", benchrun.DefaultSeedSearches, "searches of each kind (routed, every shard) in each quiet measurement of each workload (near, 1-5 mi; wide, 5-50 mi), or as many as 4 minutes take")
		fs.IntVar(&cfg.Sample, "sample", benchrun.DefaultSeedSample, "documents checked against the world after each phase")
		fs.IntVar(&cfg.Shards, "shards", benchrun.DefaultSeedShards, "the reshard's target shard count")
		fs.BoolVar(&cfg.Drop, "drop", false, "once the reshard is done, delete the run's index, topics and group (the reports stay)")
		check := fs.Bool("check", false, "check the flags and exit")
		if err = parse(fs, help, args[1:], cfg.Validate); err == nil && !*check {
			err = benchrun.Seed(ctx, cfg, stdout, stderr)
		}
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "benchrun: unknown command %q\n%s\n", args[0], usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, new(usageError)):
		fmt.Fprintf(stderr, "benchrun %s: %v\n", args[0], strings.ReplaceAll(err.Error(), "\n", "\n  "))
		return 2
	}
	fmt.Fprintf(stderr, "benchrun %s: %v\n", args[0], err)
	return 1
}

// commonFlags registers the flags both benchmarks take. The engines'
// addresses default to the variables real.sh sets.
func commonFlags(name string, c *benchrun.Config, events int, timeout time.Duration, getenv func(string) string, stderr io.Writer) (fs *flag.FlagSet, help func()) {
	fs = flag.NewFlagSet("benchrun "+name, flag.ContinueOnError)
	// A bad flag is reported once, by run; -h prints the flags (parse).
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	help = func() {
		fs.SetOutput(stderr)
		fmt.Fprintf(stderr, "usage: benchrun %s [flags]\n", name)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.Repo, "repo", ".", "the geoshard repository's top")
	fs.StringVar(&c.OpenSearch, "opensearch", or(getenv("GEOSHARD_OPENSEARCH_URL"), "http://127.0.0.1:9200"), "OpenSearch node URL (default from GEOSHARD_OPENSEARCH_URL)")
	fs.Func("brokers", "Kafka brokers, comma-separated (default from GEOSHARD_KAFKA_BROKERS, else 127.0.0.1:9092)", func(s string) error {
		c.Brokers = splitList(s)
		return nil
	})
	c.Brokers = splitList(or(getenv("GEOSHARD_KAFKA_BROKERS"), "127.0.0.1:9092"))
	fs.StringVar(&c.RealDir, "real-dir", or(getenv("GEOSHARD_REAL_DIR"), ".real"), "real.sh's directory, with the engines' PID files (default from GEOSHARD_REAL_DIR)")
	fs.StringVar(&c.Source, "src", benchrun.SourceWorktree, "build the commands under test from the worktree, or from head (git archive HEAD: without uncommitted edits)")
	fs.StringVar(&c.Work, "work", "", "scratch directory for binaries and logs (default a new temporary one)")
	fs.BoolVar(&c.Keep, "keep", false, "keep the run's indexes, topics and consumer groups")
	fs.IntVar(&c.Events, "events", events, "events to ask the producer for")
	fs.IntVar(&c.Partitions, "partitions", benchrun.DefaultPartitions, "partitions of the event topics")
	fs.Uint64Var(&c.Seed, "seed", benchrun.DefaultSeed, "seed of the produced stream")
	fs.DurationVar(&c.Poll, "poll", benchrun.DefaultPoll, "how often offsets and index stats are read")
	fs.DurationVar(&c.Timeout, "timeout", timeout, "give up on one run of a tool after this long")
	fs.DurationVar(&c.Stall, "stall", benchrun.DefaultStall, "give up on a run that made no progress for this long")
	return fs, help
}

// parse parses the flags and validates them; any problem is a
// usageError.
func parse(fs *flag.FlagSet, help func(), args []string, validate func() error) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			help()
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if err := validate(); err != nil {
		return usageError{err}
	}
	return nil
}

func or(s, def string) string {
	if s != "" {
		return s
	}
	return def
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
