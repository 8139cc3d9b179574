package cli

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"testing"
)

func TestCommas(t *testing.T) {
	for v, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 55912345: "55,912,345", -1234567: "-1,234,567"} {
		if got := Commas(v); got != want {
			t.Errorf("Commas(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
}

func TestBar(t *testing.T) {
	cases := []struct {
		name  string
		frac  float64
		width int
		want  string
	}{
		{"empty", 0, 10, "[..........]"},
		{"rounds down", 0.123, 10, "[#.........]"},
		{"half", 0.5, 10, "[#####.....]"},
		{"full", 1, 10, "[##########]"},
		{"over full is full", 1.5, 4, "[####]"},
		{"below empty is empty", -0.5, 4, "[....]"},
		{"progress width", 0.999, 30, "[#############################.]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Bar(tc.frac, tc.width); got != tc.want {
				t.Errorf("Bar(%v, %d) = %q, want %q", tc.frac, tc.width, got, tc.want)
			}
		})
	}
}

func TestParse(t *testing.T) {
	cases := []struct {
		name    string
		args    []string
		env     map[string]string
		want    int    // n after a successful parse
		wantErr string // "" no error, "usage" a UsageError, "help" flag.ErrHelp
	}{
		{"default", nil, nil, 1, ""},
		{"from the environment", nil, map[string]string{"GEOSHARD_N": "2"}, 2, ""},
		{"the flag wins", []string{"--n", "3"}, map[string]string{"GEOSHARD_N": "2"}, 3, ""},
		{"bad environment value", nil, map[string]string{"GEOSHARD_N": "two"}, 0, "usage"},
		{"bad flag value", []string{"--n", "two"}, nil, 0, "usage"},
		{"unknown flag", []string{"--m", "1"}, nil, 0, "usage"},
		{"help", []string{"-help"}, nil, 0, "help"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			n := fs.Int("n", 1, "a number (GEOSHARD_N)")
			err := Parse(fs, tc.args, func(k string) string { return tc.env[k] })
			var ue UsageError
			switch tc.wantErr {
			case "":
				if err != nil {
					t.Fatalf("Parse(%v) = %v, want nil", tc.args, err)
				}
				if *n != tc.want {
					t.Errorf("Parse(%v): n = %d, want %d", tc.args, *n, tc.want)
				}
			case "usage":
				if !errors.As(err, &ue) {
					t.Fatalf("Parse(%v) = %v, want a UsageError", tc.args, err)
				}
			case "help":
				if err != flag.ErrHelp {
					t.Fatalf("Parse(%v) = %v, want flag.ErrHelp", tc.args, err)
				}
			}
		})
	}
}
