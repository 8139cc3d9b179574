package benchrun

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"
)

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// soakRun is a synthetic soak: 100,000 events, start-up 1 s, 20,000
// events/s for the first 20,000, then 10,000/s, 500 stragglers finished
// at 11 s, the last write at 9 s,
// every offset committed at 11 s; RSS 30 MB when warm at 0.5 s, 100 MB
// once the first window is through, 105 MB at its peak.
func soakRun() *SoakObservations {
	o := &SoakObservations{Events: 100_000, WarmAt: sec(0.5), DoneAt: sec(11), OpenSearchCPU: sec(20), KafkaCPU: Unknown}
	o.Finished = series(0, 0, 1000, 0, 2000, 20_000, 3000, 30_000, 9000, 90_000, 10_000, 99_500, 11_000, 100_000)
	o.Committed = series(0, 0, 5000, 40_000, 11_000, 100_000)
	o.Writes = series(0, 0, 2000, 15_000, 9000, 80_000, 10_000, 80_000, 11_000, 80_000)
	o.Docs = series(0, 0, 9500, 70_000, 11_000, 70_000)
	o.BulkItems = series(0, 0, 8900, 80_000, 11_000, 80_000)
	for i, mb := range []int64{20, 30, 100, 103, 105, 104, 101, 100, 100, 100, 100, 99} {
		o.Proc = append(o.Proc, ProcSample{T: time.Duration(i) * time.Second, Mem: Memory{RSS: mb << 20, HWM: 105 << 20}, CPU: time.Duration(i) * 800 * time.Millisecond})
	}
	o.HeapInuse = series(0, 5<<20, 2000, 60<<20, 4000, 70<<20, 8000, 62<<20, 11_000, 40<<20)
	o.Directory = series(0, 0, 11_000, 7_900)
	o.NodeCPU = series(0, 0, 1000, 500, 2000, 2000, 11_000, 11_000)
	o.MachineCPU = series(0, 0, 1000, 1000, 2000, 3000, 11_000, 21_000)
	o.RefreshBefore, o.RefreshAfter = RefreshStats{2, 2}, RefreshStats{52, 40}
	return o
}

func TestSoakResult(t *testing.T) {
	r := soakRun().Result()
	checks := []struct {
		name      string
		got, want float64
	}{
		{"startup", r.StartupSeconds, 1},
		{"warm", r.WarmSeconds, 0.5},
		{"first window", r.FirstRate, 20_000},
		{"whole (to 99%)", r.WholeRate, 99_500.0 / 9},
		{"to the last event", r.LastRate, 100_000.0 / 10},
		{"committed", r.CommittedRate, 100_000.0 / 11},
		{"done", r.DoneSeconds, 11},
		{"last write", r.LastWrite, 9},
		{"docs settled", r.LastDocsChange, 9.5},
		{"bulk items settled", r.LastBulkItem, 8.9},
		{"catch-up", r.CatchUpSeconds, 2},
		{"baseline at the first sample after the window", r.BaselineSeconds, 2},
		{"growth", r.RSSGrowth, 0.05},
		{"ingest CPU", r.IngestCPU, 8.8},
		{"node CPU", r.OpenSearchCPU, 20},
		{"kafka CPU unknown", r.KafkaCPU, Unknown},
	}
	for _, c := range checks {
		if !near(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	if r.WarmRSS != 30<<20 || r.BaselineRSS != 100<<20 || r.PeakAfterBaseline != 105<<20 || r.PeakHWM != 105<<20 || r.EndRSS != 99<<20 {
		t.Errorf("RSS warm %d, baseline %d, peak after %d, peak %d, end %d", r.WarmRSS, r.BaselineRSS, r.PeakAfterBaseline, r.PeakHWM, r.EndRSS)
	}
	// Half the events (50,000) had finished by the sample at 9 s, where RSS
	// was 100 MB, and it grew no more.
	if r.HalfSeconds != 9 || r.HalfRSS != 100<<20 || r.HalfPeak != 100<<20 || r.HalfGrowth != 0 {
		t.Errorf("half: at %v RSS %d, peak %d, growth %v", r.HalfSeconds, r.HalfRSS, r.HalfPeak, r.HalfGrowth)
	}
	if r.HeapBaseline != 60<<20 || r.HeapPeak != 70<<20 || r.HeapEnd != 40<<20 || r.Directory != 7_900 {
		t.Errorf("heap baseline %d, peak %d, end %d, directory %d", r.HeapBaseline, r.HeapPeak, r.HeapEnd, r.Directory)
	}
	// The first window is 1 s to 2 s; the whole run 1 s to 10 s (99%).
	// Ingest's CPU grows 800 ms a second.
	if want := (CoreUse{0.8, 1.5, 2}); r.Cores.First != want {
		t.Errorf("Cores.First = %+v, want %+v", r.Cores.First, want)
	}
	// The node and the machine have no sample at 10 s: their span runs
	// from 1 s to the next one, at 11 s.
	if c := r.Cores.Whole; !near(c.Ingest, 0.8) || !near(c.Node, 1.05) || !near(c.Machine, 2) {
		t.Errorf("Cores.Whole = %+v, want ingest 0.8, node 1.05, machine 2", c)
	}
	if r.Refreshes != (RefreshStats{50, 38}) {
		t.Errorf("Refreshes = %+v, want {50 38}", r.Refreshes)
	}
	if !r.Completed || r.FirstEvents != SoakFirstWindow || len(r.Segments) != 10 {
		t.Errorf("Completed %v, FirstEvents %d, %d segments", r.Completed, r.FirstEvents, len(r.Segments))
	}
}

func TestSoakResultNeverDone(t *testing.T) {
	o := soakRun()
	o.DoneAt, o.WarmAt = Unknown, Unknown
	o.Finished = series(0, 0, 1000, 0, 2000, 5_000)
	r := o.Result()
	if r.Completed || r.CatchUpSeconds != Unknown || r.DoneSeconds != Unknown || r.CommittedRate != 0 {
		t.Errorf("never done: Completed %v, catch-up %v, done %v, rate %v", r.Completed, r.CatchUpSeconds, r.DoneSeconds, r.CommittedRate)
	}
	if r.FirstRate != 0 || r.FirstEvents != 0 {
		t.Errorf("a window never reached: rate %v, events %d", r.FirstRate, r.FirstEvents)
	}
	if r.BaselineRSS != 0 || r.BaselineSeconds != Unknown {
		t.Errorf("no warm: baseline %d at %v", r.BaselineRSS, r.BaselineSeconds)
	}
}

func TestToolRound(t *testing.T) {
	o := &ToolObservations{
		Events: 1_000_000, DoneAt: sec(80), CPU: sec(30), PeakRSS: 200 << 20,
		Committed: series(0, 0, 80_000, 1_000_000),
		Writes:    series(0, 0, 70_000, 990_000, 74_000, 1_000_000, 80_000, 1_000_000),
		Docs:      series(0, 0, 80_000, 900_000),
	}
	got := o.Round()
	if !got.Completed || got.Rate != 12_500 || got.WritesSeconds != 74 || !near(got.WritesRate, 1e6/74) || got.CPUPerEvent != 30 || got.Docs != 900_000 {
		t.Errorf("Round() = %+v", got)
	}
	o.DoneAt = Unknown
	if got := o.Round(); got.Completed || got.Rate != 0 || got.Seconds != Unknown {
		t.Errorf("Round() of an unfinished run = %+v", got)
	}
}

func TestPeerSummarize(t *testing.T) {
	tool := func(name string, rate, cpuPerEvent float64, rss int64, done bool) ToolRound {
		return ToolRound{Tool: name, Completed: done, Rate: rate, WritesRate: rate, CPUPerEvent: cpuPerEvent, CPUSeconds: cpuPerEvent, PeakRSS: rss}
	}
	r := &PeerResult{Rounds: []PeerRound{
		{Ingest: tool("ingest", 20_000, 30, 300, true), Benthos: tool("benthos", 8_000, 110, 220, true)},
		{Ingest: tool("ingest", 16_000, 28, 380, true), Benthos: tool("benthos", 8_000, 112, 224, true)},
		{Ingest: tool("ingest", 30_000, 20, 390, true), Benthos: tool("benthos", 0, 0, 230, false)},
	}}
	r.Summarize()
	if got := float64(r.Rounds[0].RateRatio); got != 2.5 {
		t.Errorf("round 1 rate ratio = %v, want 2.5", got)
	}
	if got := float64(r.Rounds[2].RateRatio); !math.IsNaN(got) {
		t.Errorf("round 3 (Benthos incomplete) rate ratio = %v, want NaN", got)
	}
	m := r.Median
	if m.RateRatio != 2.25 || !near(float64(m.CPURatio), (30.0/110+28.0/112)/2) {
		t.Errorf("median ratios = %v, %v, want 2.25 and the mean of the two", m.RateRatio, m.CPURatio)
	}
	if m.IngestRate != 20_000 || m.BenthosRate != 8_000 || m.IngestRSS != 380 || m.BenthosRSS != 224 {
		t.Errorf("medians = %+v", m)
	}
	cs := PeerChecks(r)
	if len(cs) != 3 || cs[0].Pass || cs[1].Pass || !cs[2].Pass {
		t.Errorf("PeerChecks = %+v, want FAIL (an incomplete run), FAIL (2.25×), PASS (0.26×)", cs)
	}
	// NaN must come out of JSON as null, not as an encoding error.
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("json.Marshal: %v", err)
	}
	if !strings.Contains(string(data), `"rate_ratio":null`) {
		t.Errorf("JSON has no null ratio: %s", data)
	}
}

// The tools take turns at going first, so that neither always meets the
// colder node.
func TestPeerOrderAlternates(t *testing.T) {
	for round, want := range map[int]string{1: "ingest benthos", 2: "benthos ingest", 3: "ingest benthos", 4: "benthos ingest"} {
		if got := strings.Join(peerOrder(round), " "); got != want {
			t.Errorf("round %d: %s, want %s", round, got, want)
		}
	}
}
