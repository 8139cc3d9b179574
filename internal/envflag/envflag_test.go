package envflag

import (
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
	"time"
)

func newSet() (*flag.FlagSet, *int, *time.Duration, *bool, *string) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("workers", 8, "bulk workers (GEOSHARD_WORKERS)")
	d := fs.Duration("flush-interval", 50*time.Millisecond, "longest wait (GEOSHARD_FLUSH_INTERVAL)")
	b := fs.Bool("kafka-tls", false, "TLS; see GEOSHARD_KAFKA_CA too (GEOSHARD_KAFKA_TLS)")
	s := fs.String("alias", "menu", "alias (GEOSHARD_ALIAS)")
	fs.String("plain", "", "no variable")
	return fs, n, d, b, s
}

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestApplySetsFlagsAndTheCommandLineWins(t *testing.T) {
	fs, n, d, b, s := newSet()
	err := Apply(fs, env(map[string]string{"GEOSHARD_WORKERS": "3", "GEOSHARD_FLUSH_INTERVAL": "2s", "GEOSHARD_KAFKA_TLS": "true", "GEOSHARD_ALIAS": "food"}))
	if err != nil {
		t.Fatal(err)
	}
	if err := fs.Parse([]string{"--alias", "menu2"}); err != nil {
		t.Fatal(err)
	}
	if *n != 3 || *d != 2*time.Second || !*b || *s != "menu2" {
		t.Errorf("workers %d, flush %v, tls %v, alias %q; want 3, 2s, true and the command line's menu2", *n, *d, *b, *s)
	}
}

func TestApplyRefusesBadValuesNamingTheVariable(t *testing.T) {
	for _, tc := range []struct{ name, value, want string }{
		{"GEOSHARD_WORKERS", "abc", `GEOSHARD_WORKERS="abc": not a valid value for --workers`},
		{"GEOSHARD_FLUSH_INTERVAL", "100", `GEOSHARD_FLUSH_INTERVAL="100": not a valid value for --flush-interval`},
		{"GEOSHARD_KAFKA_TLS", "yes", `GEOSHARD_KAFKA_TLS="yes": not a valid value for --kafka-tls`},
	} {
		fs, _, _, _, _ := newSet()
		err := Apply(fs, env(map[string]string{tc.name: tc.value}))
		var e *Error
		if !errors.As(err, &e) || e.Var != tc.name || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: Apply = %v, want an error containing %q", tc.name, tc.value, err, tc.want)
		}
	}
}

func TestVar(t *testing.T) {
	fs, _, _, _, _ := newSet()
	if got := Var(fs.Lookup("kafka-tls")); got != "GEOSHARD_KAFKA_TLS" {
		t.Errorf("Var(kafka-tls) = %q, want the parenthesised name", got)
	}
	if got := Var(fs.Lookup("plain")); got != "" {
		t.Errorf("Var(plain) = %q, want none", got)
	}
}
