package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// --help opens with what ingest does and examples, lists the values of
// its enumerated flags, prints to stdout and exits 0.
func TestHelpTeaches(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--help"}, envOf(nil), &out, &errb); code != 0 {
		t.Fatalf("ingest --help exit %d, want 0; stderr:\n%s", code, errb.String())
	}
	s := out.String()
	if !strings.HasPrefix(s, "ingest reads restaurant and dish change events from Kafka") {
		t.Errorf("help does not open with what ingest does:\n%s", s)
	}
	for _, want := range []string{"examples:\n  ingest --embedded", "GEOSHARD_BROKERS=", "native or debezium", "restaurant or dish",
		"murmur2", "crc32", "fnv1a", "sarama", "debug, info, warn or error", "/readyz", "Exit status"} {
		if !strings.Contains(s, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if errb.Len() != 0 {
		t.Errorf("--help wrote to stderr:\n%s", errb.String())
	}
}

// A mistyped flag is one line that says where to look, exit 2.
func TestMistypedFlagIsOneLine(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--brokerz", "k:9092"}, envOf(nil), &out, &errb)
	if code != 2 {
		t.Fatalf("exit %d, want 2", code)
	}
	got := errb.String()
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, "-brokerz") || !strings.Contains(got, "ingest --help lists the flags") {
		t.Errorf("stderr %q: want one line naming the flag and where to look", got)
	}
	if out.Len() != 0 {
		t.Errorf("a mistyped flag printed to stdout:\n%s", out.String())
	}
}

func TestProgressIntervalFlag(t *testing.T) {
	o, err := parseFlags(nil, envOf(map[string]string{"GEOSHARD_PROGRESS_INTERVAL": "1m"}), &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if o.pipe.ProgressInterval != time.Minute {
		t.Errorf("progress interval %v from GEOSHARD_PROGRESS_INTERVAL=1m, want 1m", o.pipe.ProgressInterval)
	}
	o, err = parseFlags([]string{"--progress-interval", "0"}, envOf(nil), &bytes.Buffer{})
	if err != nil || o.pipe.ProgressInterval != 0 {
		t.Errorf("--progress-interval 0: %v, %v; want no lines", o, err)
	}
}
