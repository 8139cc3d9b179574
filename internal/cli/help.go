package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
)

// Help is what a command's --help says before its flags: what the
// command does, how it is called, and examples to copy.
type Help struct {
	// Usage is the call's shape after the command's name: "[flags]",
	// "--lat N --lng N --radius R [flags]".
	Usage string
	// About says what the command does, in a few lines.
	About string
	// Examples are command lines, each with an optional comment after
	// "  # ".
	Examples []string
	// After is printed after the flags (the values of an enumeration
	// too long for a flag's line, where to read more).
	After string
}

// NewFlags returns a flag set for the command name whose parse errors
// are returned, not printed (Parse makes them one line), and whose
// --help prints h and the flags to stdout.
func NewFlags(name string, h Help, stdout io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fs.SetOutput(stdout)
		defer fs.SetOutput(io.Discard)
		PrintHelp(stdout, fs, h)
	}
	return fs
}

// PrintHelp writes h and fs's flags to w.
func PrintHelp(w io.Writer, fs *flag.FlagSet, h Help) {
	if h.About != "" {
		fmt.Fprintf(w, "%s\n\n", strings.TrimSpace(h.About))
	}
	usage := h.Usage
	if usage == "" {
		usage = "[flags]"
	}
	fmt.Fprintf(w, "usage: %s %s\n", fs.Name(), usage)
	if len(h.Examples) > 0 {
		fmt.Fprintf(w, "\nexamples:\n")
		for _, e := range h.Examples {
			fmt.Fprintf(w, "  %s\n", e)
		}
	}
	fmt.Fprintf(w, "\nflags (one whose line names a GEOSHARD_* variable is also read from it):\n")
	out := fs.Output()
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(out)
	if h.After != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(h.After))
	}
}

// helpHint is what a usage error ends with: where to look.
func helpHint(fs *flag.FlagSet) string {
	return fmt.Sprintf("%s --help lists the flags", fs.Name())
}

// Hinted wraps a usage error of fs's command with where to look.
func Hinted(fs *flag.FlagSet, err error) UsageError {
	return UsageError{Err: fmt.Errorf("%w (%s)", err, helpHint(fs))}
}
