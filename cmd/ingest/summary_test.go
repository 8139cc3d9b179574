package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/geoshard/geoshard/decode"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// fixedSummary is a summary with the figures of a real run, on a clock
// that starts at a fixed instant.
func fixedSummary() *summary {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms)*time.Millisecond + 400*time.Microsecond) }
	return &summary{
		produced: 39484,
		kinds: map[string]int{"dish_delete": 1101, "dish_update": 7776, "dish_upsert": 25755, "early_dish": 33,
			"orphan_dish": 16, "out_of_order": 91, "poison_json": 6, "poison_location": 5, "poison_missing_id": 6,
			"poison_missing_version": 5, "poison_op": 6, "poison_type": 6, "replay": 410, "restaurant_delete": 74,
			"restaurant_move": 34, "restaurant_update": 950, "restaurant_upsert": 3210},
		tl: timeline{start: t0, stackUp: at(408), consuming: at(590), first: at(620), settled: at(1993),
			done: at(4520), summarized: at(6540), waiting: 18},
		latency: true, p50: 473 * time.Millisecond, p99: 2417 * time.Millisecond,
		shards: []shardDocs{{"ares", "ares-1", 1503}, {"bravo", "bravo-3", 1711}, {"cosmo", "cosmo-7", 1625}},
		dead:   map[decode.Reason]int64{"invalid_json": 6, "unknown_restaurant": 18},
		restaurants: []searchRow{
			{name: "San Francisco 15 mi", routed: []string{"bravo"}, allShards: 18, routedN: 37, allN: 37, same: true},
			{name: "New York 50 mi", routed: []string{"orion", "pluto", "quill", "rhea"}, allShards: 18, routedN: 417, allN: 417, same: true},
		},
		dishes: []searchRow{
			{name: "San Francisco 15 mi, vegan", routed: []string{"bravo"}, allShards: 18, routedN: 101, allN: 101,
				nearest: "Cauliflower Wings, The Red Basil (1.3 km)", same: true},
			{name: "New York 15 mi, peanut-free", routed: []string{"orion", "pluto", "quill"}, allShards: 18, routedN: 2556, allN: 2555,
				nearest: "Carnitas Tacos, Saffron Taqueria (0.5 km)", same: false},
		},
	}
}

// The summary with fixed figures, narrow and --wide, is the golden file;
// narrow, no line is wider than 100 columns.
func TestSummaryGolden(t *testing.T) {
	for _, c := range []struct {
		name   string
		wide   bool
		golden string
	}{
		{"narrow", false, "summary.golden"},
		{"wide", true, "summary-wide.golden"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := fixedSummary().write(&b, c.wide); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", c.golden)
			if *update {
				if err := os.MkdirAll("testdata", 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (go test ./cmd/ingest -run TestSummaryGolden -update writes it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("summary differs from %s (-update rewrites it):\n%s", path, b.String())
			}
			if !c.wide {
				assertWithin100(t, b.String())
			}
		})
	}
}

// assertWithin100 fails for every line of s wider than 100 columns.
func assertWithin100(t *testing.T, s string) {
	t.Helper()
	for i, line := range strings.Split(s, "\n") {
		if n := utf8.RuneCountInString(line); n > 100 {
			t.Errorf("line %d is %d columns, want at most 100: %q", i+1, n, line)
		}
	}
}

// The timings are consecutive stretches of one clock: they add up to the
// whole run exactly as printed, the whole run is from the command's start
// to the summary, and the rate is the events over their stretch.
func TestSummaryTimingsAgree(t *testing.T) {
	sum := fixedSummary()
	ps := sum.phases()
	if got, want := ps.whole(), sum.tl.summarized.Sub(sum.tl.start).Round(time.Millisecond); got != want {
		t.Errorf("whole run %v, want %v (start to summary)", got, want)
	}
	var b bytes.Buffer
	if err := sum.write(&b, false); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	sec := regexp.MustCompile(`(?m)^  (.*?)\s+(\d+\.\d{3})s$`)
	var total, whole float64
	n := 0
	for _, m := range sec.FindAllStringSubmatch(out[strings.Index(out, "timings,"):], -1) {
		var v float64
		if _, err := fmt.Sscan(m[2], &v); err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(m[1], "the whole run") {
			whole = v
			continue
		}
		total += v
		n++
	}
	if n != len(ps) || whole != 6.540 || int(total*1000+0.5) != int(whole*1000+0.5) {
		t.Errorf("%d stretches summing to %.3fs, whole run %.3fs; want %d summing to the whole run, 6.540s:\n%s", n, total, whole, len(ps), out)
	}
	if !strings.Contains(out, "39466 events indexed or dead-lettered (28744 events/s)") {
		t.Errorf("no rate of 39466 events over 1.373s:\n%s", out)
	}
}
