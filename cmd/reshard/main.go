// Command reshard plans geoshard maps and answers questions about them.
//
//	reshard plan  --loads F [--queries F] [--shards N | --min-shards A --max-shards B] [--max-imbalance X] [--strategy optimal|greedy] [--out map.json] [--json]
//	reshard route --map F --lat X --lng Y [--json]
//	reshard cover --map F --lat X --lng Y --radius 25mi [--json]
//	reshard eval  --map F --loads F [--queries F] [--json]
//	reshard init  --map F --index menu-v1 --alias menu [--opensearch URLs]
//
// Exit status: 0 on success, 2 for bad flags or input (the message says what
// and where), 1 for any other failure.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// usageError is bad flags or input: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func badInput(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

type verb struct {
	summary string
	run     func(args []string, stdout io.Writer) error
}

var verbs = map[string]verb{
	"plan":  {"compute a geoshard map from the document load per cell", runPlan},
	"route": {"name the geoshard, cell and routing key of a location", runRoute},
	"cover": {"list the geoshards and routing string of a search circle", runCover},
	"eval":  {"measure a map's balance and search fan-out", runEval},
	"init":  {"create the first index of an alias under a map", runInit},
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(stderr)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	v, ok := verbs[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "reshard: unknown verb %q\n", args[0])
		usage(stderr)
		return 2
	}
	err := v.run(args[1:], stdout)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	}
	fmt.Fprintf(stderr, "reshard %s: %v\n", args[0], err)
	var ue usageError
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
		fmt.Fprintf(w, "  %-6s %s\n", n, verbs[n].summary)
	}
}

// newFlags returns a flag set whose errors are returned, not printed and
// exited on, and whose --help prints to stdout.
func newFlags(name, synopsis string, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("reshard "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(stdout, "usage: reshard %s %s\n\nflags:\n", name, synopsis)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return fs
}

// parse parses flags and rejects positional arguments.
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.Usage()
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return badInput("unexpected argument %q (flags come as --name value)", fs.Arg(0))
	}
	return nil
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
