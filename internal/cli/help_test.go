package cli

import (
	"bytes"
	"errors"
	"flag"
	"strings"
	"testing"
)

func TestHelpPrintsAboutExamplesAndFlags(t *testing.T) {
	var out bytes.Buffer
	fs := NewFlags("demo", Help{
		Usage:    "--n N [flags]",
		About:    "Demo counts to N.",
		Examples: []string{"demo --n 3   # counts to three"},
		After:    "values of --mode: a, b",
	}, &out)
	fs.Int("n", 1, "how far to count (GEOSHARD_N)")
	err := Parse(fs, []string{"--help"}, func(string) string { return "" })
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("Parse(--help) = %v, want flag.ErrHelp", err)
	}
	got := out.String()
	for _, want := range []string{"Demo counts to N.\n", "usage: demo --n N [flags]\n", "examples:\n  demo --n 3   # counts to three\n", "-n int", "how far to count", "values of --mode: a, b\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("help lacks %q:\n%s", want, got)
		}
	}
	if i, j := strings.Index(got, "Demo counts"), strings.Index(got, "-n int"); i < 0 || j < i {
		t.Errorf("help does not open with what the command does:\n%s", got)
	}
}

func TestMistypedFlagIsOneLine(t *testing.T) {
	var out bytes.Buffer
	fs := NewFlags("demo", Help{About: "Demo."}, &out)
	fs.Int("n", 1, "a number")
	err := Parse(fs, []string{"--nn", "3"}, func(string) string { return "" })
	var ue UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("Parse(--nn) = %v, want a UsageError", err)
	}
	if msg := err.Error(); strings.Contains(msg, "\n") || !strings.Contains(msg, "-nn") || !strings.Contains(msg, "demo --help lists the flags") {
		t.Errorf("error %q: want one line naming the flag and where to look", msg)
	}
	if out.Len() != 0 {
		t.Errorf("a mistyped flag printed:\n%s", out.String())
	}
}
