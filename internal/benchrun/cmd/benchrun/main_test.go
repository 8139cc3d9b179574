package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRunFlags(t *testing.T) {
	env := map[string]string{"GEOSHARD_OPENSEARCH_URL": "http://127.0.0.1:29200", "GEOSHARD_KAFKA_BROKERS": "127.0.0.1:29092"}
	tests := []struct {
		name string
		args []string
		code int
		want string // in stderr
	}{
		{"no command", nil, 2, "usage: benchrun soak|peer"},
		{"unknown command", []string{"bench"}, 2, `unknown command "bench"`},
		{"soak, good flags, checked only", []string{"soak", "-check", "-events", "300000"}, 0, ""},
		{"peer, good flags, checked only", []string{"peer", "-check", "-rounds", "1", "-src", "head"}, 0, ""},
		{"a number that is not", []string{"soak", "-check", "-events", "5M"}, 2, `invalid value "5M" for flag -events`},
		{"every bad value at once", []string{"peer", "-check", "-events", "0", "-rounds", "0", "-src", "tip"}, 2, "-src \"tip\": want worktree or head\n  -events 0: want at least 1\n  -rounds 0: want at least 1"},
		{"a bad URL", []string{"soak", "-check", "-opensearch", "localhost:9200"}, 2, `-opensearch "localhost:9200"`},
		{"an argument left over", []string{"soak", "-check", "extra"}, 2, `unexpected argument "extra"`},
		{"help", []string{"peer", "-h"}, 0, "-rounds int"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, func(k string) string { return env[k] }, &stdout, &stderr)
			if code != tt.code || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("run(%q) = %d, stderr %q; want %d and %q", tt.args, code, stderr.String(), tt.code, tt.want)
			}
		})
	}
}
