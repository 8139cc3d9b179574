// Command reshard plans geoshard maps, answers questions about them, and
// migrates an alias's index to a new map.
//
//	reshard plan  --loads F | --from-index menu [--queries F] [--shards N | --min-shards A --max-shards B] [--max-imbalance X] [--strategy optimal|greedy] [--out map.json] [--json]
//	reshard route --map F --lat X --lng Y [--json]
//	reshard cover --map F --lat X --lng Y --radius 25mi [--json]
//	reshard eval  --map F --loads F [--queries F] [--json]
//	reshard init  --map F --index menu-v1 --alias menu [--opensearch URLs]
//
// The migration, one step per verb, each resumable (its state lives in
// OpenSearch) and taking --alias (GEOSHARD_ALIAS, default menu) and
// --opensearch (GEOSHARD_OPENSEARCH):
//
//	reshard create      --map new.json [--target menu-v2] [--gc-deletes 1h] [--skip-disk-check]
//	reshard dual-writes [--ack-timeout 2m] [--live-window 30s]
//	reshard backfill    [--slices N] [--max-docs-per-second R] [--page 1000] [--worker-id NAME] [--lease 30s] [--restart]
//	reshard verify      [--ids] [--attempts 5] [--json]
//	reshard repair      [--dry-run]     (after verify --ids: copies, deletes, superseded copies of duplicates)
//	reshard cutover     [--dry-run]
//	reshard rollback    [--dry-run]
//	reshard complete    [--delete-old]
//	reshard cancel
//	reshard run         --map new.json      (create … cutover, from the recorded phase)
//	reshard status      [--json]
//
// Exit status: 0 on success, 2 for bad flags or input (the message says what
// and where), 1 for any other failure (a verification that finds
// differences, ingest instances that do not acknowledge, a refused step).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"

	"github.com/geoshard/geoshard/internal/cli"
)

func badInput(format string, args ...any) error {
	return cli.UsageError{Err: fmt.Errorf(format, args...)}
}

type verb struct {
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

// quiet adapts a verb that writes only to stdout.
func quiet(f func(args []string, stdout io.Writer) error) func(args []string, stdout, stderr io.Writer) error {
	return func(args []string, stdout, _ io.Writer) error { return f(args, stdout) }
}

var verbs = map[string]verb{
	"plan":  {"compute a geoshard map from the document load per cell (a file, or a live index)", runPlan},
	"route": {"name the geoshard, cell and routing key of a location", quiet(runRoute)},
	"cover": {"list the geoshards and routing string of a search circle", quiet(runCover)},
	"eval":  {"measure a map's balance and search fan-out", quiet(runEval)},
	"init":  {"create the first index of an alias under a map", runInit},

	"create":      {"migration 1: create the new index and record the migration", runCreate},
	"dual-writes": {"migration 2: have ingest write both indexes, and wait until every instance does", runDualWrites},
	"backfill":    {"migration 3: copy the old index into the new one (resumable)", runBackfill},
	"verify":      {"migration 4: compare the indexes range by range", runVerify},
	"repair":      {"copy the missing, delete the extra ids and the superseded copies of duplicates the last verify --ids listed (--dry-run)", runRepair},
	"cutover":     {"migration 5: move the alias to the new index (atomic; --dry-run)", runCutover},
	"rollback":    {"move the alias back to the old index after a cutover (--dry-run)", runRollback},
	"complete":    {"end the migration: stop dual writes (the point of no return)", runComplete},
	"cancel":      {"abandon the migration before cutover; delete the new index", runCancel},
	"run":         {"create, dual writes, backfill, verify and cutover, from the recorded phase", runRun},
	"status":      {"show the migration, its progress, the ingest instances and the verification", runStatus},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	if args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stdout) // asked for: stdout, as a verb's --help
		return 0
	}
	v, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "reshard: unknown verb %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := v.run(args[1:], stdout, stderr)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintf(stderr, "reshard %s: %v\n", args[0], err)
	var ue cli.UsageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: reshard <verb> [flags]   (reshard <verb> --help for the verb's flags)")
	names := make([]string, 0, len(verbs))
	for n := range verbs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-12s %s\n", n, verbs[n].summary)
	}
}

// warnings is the log of a verb that prints its result and logs nothing
// else: its warnings, on stderr.
func warnings(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// parse parses flags, rejects positional arguments and requires the
// flags named in need.
func parse(fs *flag.FlagSet, args []string, need ...string) error {
	if err := cli.Parse(fs, args, os.Getenv); err != nil {
		return err // for -help, the flag package has printed fs.Usage
	}
	if fs.NArg() > 0 {
		return badInput("unexpected argument %q (flags come as --name value)", fs.Arg(0))
	}
	return required(fs, need...)
}

// required names the flags that were not given.
func required(fs *flag.FlagSet, names ...string) error {
	set := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var missing []string
	for _, n := range names {
		if !set[n] {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return badInput("missing %s (see --help)", strings.Join(missing, ", "))
	}
	return nil
}
