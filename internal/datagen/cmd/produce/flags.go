package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// The commands under cmd/ share their flag handling in cmd/internal/cli,
// which Go's internal rule keeps from this command (it lives under
// internal/datagen). What follows is the same behaviour, small: a flag
// names its GEOSHARD_* variable at the end of its usage in parentheses,
// the variable is applied with the flag's own parsing before the command
// line (which wins), a bad value of either is one line that says where to
// look, and --help prints what the command does, examples and the flags
// to stdout.

var varName = regexp.MustCompile(`\((GEOSHARD_[A-Z0-9_]+)\)`)

// usageError is bad flags or input: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// help is what --help prints before the flags.
type help struct {
	about    string
	examples []string
}

// newFlags returns a flag set whose errors are returned, not printed.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// parseFlags applies the variables the usages name, then args. --help
// prints h and the flags to stdout and returns flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, h help, args []string, getenv func(string) string, stdout io.Writer) error {
	hint := fmt.Sprintf("%s --help lists the flags", fs.Name())
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	for _, f := range flags {
		m := varName.FindStringSubmatch(f.Usage)
		if m == nil || getenv(m[1]) == "" {
			continue
		}
		if err := fs.Set(f.Name, getenv(m[1])); err != nil {
			return usageError{fmt.Errorf("%s=%q: not a valid value for --%s: %v (%s)", m[1], getenv(m[1]), f.Name, err, hint)}
		}
	}
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		printHelp(stdout, fs, h)
		return err
	}
	if err != nil {
		return usageError{fmt.Errorf("%w (%s)", err, hint)}
	}
	return nil
}

func printHelp(w io.Writer, fs *flag.FlagSet, h help) {
	fmt.Fprintf(w, "%s\n\nusage: %s [flags]\n\nexamples:\n", strings.TrimSpace(h.about), fs.Name())
	for _, e := range h.examples {
		fmt.Fprintf(w, "  %s\n", e)
	}
	fmt.Fprintf(w, "\nflags (one whose line names a GEOSHARD_* variable is also read from it):\n")
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
