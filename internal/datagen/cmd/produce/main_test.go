package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/kafkatest"
)

// The stream lands whole on topics that produce created, and a second
// createTopics finds them there and is content.
func TestCreateTopicsAndProduce(t *testing.T) {
	c, err := kafkatest.New(kafkatest.WithInProcess())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	for range 2 {
		if err := createTopics(ctx, c.Addrs(), 3, "restaurants", "dishes", "geoshard.dlq", "dishes"); err != nil {
			t.Fatalf("createTopics: %v", err)
		}
	}
	n, err := produce(ctx, c.Addrs(), "restaurants", "dishes", 600, 5)
	if err != nil || n == 0 {
		t.Fatalf("produce = %d, %v", n, err)
	}
	total := int64(0)
	for _, topic := range []string{"restaurants", "dishes", "geoshard.dlq"} {
		hw, err := c.HighWatermarks(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(hw) != 3 {
			t.Errorf("%s has %d partitions, want 3", topic, len(hw))
		}
		for _, h := range hw {
			total += h
		}
	}
	if total != int64(n) {
		t.Errorf("the topics hold %d messages, produce reported %d", total, n)
	}
}

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// --help opens with what produce does and examples, on stdout, exit 0; a
// mistyped flag or a bad variable is one line on stderr, exit 2.
func TestFlags(t *testing.T) {
	for _, c := range []struct {
		name     string
		args     []string
		env      map[string]string
		code     int
		out, err string
	}{
		{"help", []string{"--help"}, nil, 0, "produce writes the demo's change-event stream", ""},
		{"help examples", []string{"-h"}, nil, 0, "examples:\n  produce --events 40000 --partitions 6", ""},
		{"help names the variables", []string{"--help"}, nil, 0, "(GEOSHARD_BROKERS)", ""},
		{"mistyped flag", []string{"--event", "5"}, nil, 2, "", "produce: flag provided but not defined: -event (produce --help lists the flags)\n"},
		{"bad events", []string{"--events", "0"}, nil, 2, "", "produce: --events 0: want at least 1\n"},
		{"argument", []string{"now"}, nil, 2, "", "produce: unexpected argument \"now\" (produce --help lists the flags)\n"},
		{"empty brokers", []string{"--brokers", " , "}, nil, 2, "", "produce: --brokers is empty (produce --help lists the flags)\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), c.args, envOf(c.env), &out, &errb)
			if code != c.code || !strings.Contains(out.String(), c.out) || (c.err != "" && errb.String() != c.err) {
				t.Errorf("run(%q) = %d\nstdout: %s\nstderr: %q\nwant %d, stdout with %q, stderr %q", c.args, code, out.String(), errb.String(), c.code, c.out, c.err)
			}
			if c.code == 0 && !strings.HasPrefix(out.String(), "produce writes") {
				t.Errorf("help does not open with what produce does:\n%s", out.String())
			}
		})
	}
}

// The variables point produce at a broker and topics; a flag on the
// command line wins over its variable.
func TestVariables(t *testing.T) {
	c, err := kafkatest.New(kafkatest.WithInProcess())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	env := map[string]string{"GEOSHARD_BROKERS": c.Addrs()[0], "GEOSHARD_RESTAURANT_TOPIC": "r",
		"GEOSHARD_DISH_TOPIC": "d", "GEOSHARD_DLQ_TOPIC": "dlq"}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--events", "300", "--partitions", "2", "--dish-topic", "d2"}, envOf(env), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "to r and d2 on " + c.Addrs()[0]; !strings.Contains(out.String(), want) {
		t.Errorf("stdout %q, want it to say %q", out.String(), want)
	}
	for _, topic := range []string{"r", "d2", "dlq"} {
		if hw, err := c.HighWatermarks(context.Background(), topic); err != nil || len(hw) != 2 {
			t.Errorf("topic %s: %v partitions, %v; want 2", topic, hw, err)
		}
	}
}
