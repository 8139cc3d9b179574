package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"
)

// In the embedded mode a metrics address without a host is loopback, as
// the broker and the emulator are; one that names a host is kept.
func TestEmbeddedMetricsAddr(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--embedded"}, "127.0.0.1:9464"},
		{[]string{"--embedded", "--metrics-addr", ":9999"}, "127.0.0.1:9999"},
		{[]string{"--embedded", "--metrics-addr", "0.0.0.0:9464"}, "0.0.0.0:9464"},
		{[]string{"--embedded", "--metrics-addr", "[::1]:0"}, "[::1]:0"},
		{[]string{"--embedded", "--metrics-addr", ""}, ""},
	} {
		o, err := parseFlags(c.args, envOf(nil), io.Discard)
		if err != nil {
			t.Fatalf("parseFlags(%q): %v", c.args, err)
		}
		a, err := resolveEmbeddedAddrs(o)
		if err != nil || a.metrics != c.want {
			t.Errorf("resolveEmbeddedAddrs(%q).metrics = %q, %v; want %q", c.args, a.metrics, err, c.want)
		}
	}
}

// A port another process holds stops the embedded run with exit 2
// before any work, naming the port, the flag that moves it and the fix.
func TestEmbeddedBusyPort(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	for _, c := range []struct {
		name, flag string
		args       []string
	}{
		{"metrics", "--metrics-addr", []string{"--metrics-addr", addr}},
		{"metrics without a host", "--metrics-addr", []string{"--metrics-addr", ":" + port}},
		{"kafka", "--embedded-kafka", []string{"--metrics-addr", "", "--embedded-kafka", addr}},
		{"opensearch", "--embedded-opensearch", []string{"--metrics-addr", "", "--embedded-opensearch", addr}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"--embedded"}, c.args...), envOf(nil), &out, &errb)
			msg := errb.String()
			if code != 2 {
				t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out.String(), msg)
			}
			for _, want := range []string{"port " + port + ":", c.flag + " 127.0.0.1:0", "stop what holds port " + port} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %s", want, msg)
				}
			}
			if out.Len() > 0 || strings.Contains(msg, "embedded stack up") {
				t.Errorf("work started before the port was checked:\nstdout:\n%s\nstderr:\n%s", out.String(), msg)
			}
		})
	}
}

// The progress line stays within 100 columns at a million events, and
// each of its words is in the legend printed above it, also within 100.
func TestProgressLine(t *testing.T) {
	line := progressLine(999_999, 1_000_000, "1234567 ev/s", 1_000_000, 1_000_000, 1_000_000)
	if len(line) > 100 {
		t.Errorf("progress line is %d columns, want at most 100: %q", len(line), line)
	}
	assertWithin100(t, progressLegend)
	if !regexp.MustCompile(`  999999/1000000  `).MatchString(line) || !strings.Contains(progressLegend, "finished/produced") {
		t.Errorf("finished/produced is not both in the line %q and in the legend:\n%s", line, progressLegend)
	}
	for _, word := range []string{"ev/s", "lag", "waiting", "dead"} {
		if !strings.Contains(line, word) || !strings.Contains(progressLegend, word+",") {
			t.Errorf("%q is not both in the line %q and defined in the legend:\n%s", word, line, progressLegend)
		}
	}
	if strings.Contains(line, "uncommitted") {
		t.Errorf("the line still says uncommitted: %q", line)
	}
}

// --wide is a flag of ingest's, off by default.
func TestWideFlag(t *testing.T) {
	o, err := parseFlags([]string{"--embedded", "--wide"}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	other, err := parseFlags([]string{"--embedded"}, envOf(nil), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !o.wide || other.wide {
		t.Errorf("wide = %v with --wide and %v without; want true and false", o.wide, other.wide)
	}
}

// A whole embedded run prints nothing wider than 100 columns, and the
// whole run in the summary is the figure the log line gives.
func TestEmbeddedSummaryOneStory(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole embedded job")
	}
	var out, errb bytes.Buffer
	// No deadline of its own: a busy machine makes the run slower, not
	// wrong; the test binary's -timeout ends a run that hangs.
	code := run(t.Context(), []string{"--embedded", "--demo-events", "2000", "--metrics-addr", "127.0.0.1:0"}, envOf(nil), &out, &errb)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	assertWithin100(t, out.String())
	m := regexp.MustCompile(`(?m)^  the whole run, to this summary\s+(\d+\.\d{3})s$`).FindStringSubmatch(out.String())
	l := regexp.MustCompile(`msg="embedded run summarized" took=(\S+)`).FindStringSubmatch(errb.String())
	if m == nil || l == nil {
		t.Fatalf("no whole run in the summary (%v) or the log (%v):\n%s\n%s", m, l, out.String(), errb.String())
	}
	d, err := time.ParseDuration(l[1])
	if err != nil {
		t.Fatal(err)
	}
	if got := seconds(d); got != m[1]+"s" {
		t.Errorf("the log says %s (%s), the summary %ss", l[1], got, m[1])
	}
	if !regexp.MustCompile(`100\.0%  (\d+)/(\d+)  done  lag 0  waiting 0  dead \d+`).MatchString(out.String()) {
		t.Errorf("no final progress line at 100%% with lag 0:\n%s", out.String())
	}
}
