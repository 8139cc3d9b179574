package benchrun

import (
	"bytes"
	"strings"
	"testing"
)

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := Commas(n); got != want {
			t.Errorf("Commas(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWriteSoak(t *testing.T) {
	r := soakRun().Result()
	r.Commit, r.Source, r.Requested, r.ProduceSeconds = "9f2b892102f7de6b", SourceHead, 5_000_000, 35
	r.Checks = SoakChecks(r)
	var b bytes.Buffer
	WriteSoak(&b, r, "/tmp/x")
	out := b.String()
	for _, want := range []string{"9f2b892102f7 (git archive of HEAD)", "100,000 events (5,000,000 asked for", "first 20,000 events", "20,000 events/s", "PASS", "commit catch-up", "2.0 s"} {
		if !strings.Contains(out, want) {
			t.Errorf("WriteSoak output has no %q:\n%s", want, out)
		}
	}
}

func TestWritePeer(t *testing.T) {
	r := &PeerResult{Commit: "abc", Source: SourceWorktree, Events: 1000, Requested: 1000, Deletes: Deletes, Rounds: []PeerRound{{
		Ingest:  ToolRound{Tool: "ingest", Round: 1, Completed: true, Rate: 20_000, CPUPerEvent: 30, PeakRSS: 300 << 20},
		Benthos: ToolRound{Tool: "benthos", Round: 1, Completed: false, Note: "timed out after 30m0s"},
	}}}
	r.Summarize()
	r.Checks = PeerChecks(r)
	var b bytes.Buffer
	WritePeer(&b, r, "/tmp/x")
	out := b.String()
	for _, want := range []string{"abc (working tree, clean)", "deleted\": true", "20,000", "median", "–", "round 1 benthos: timed out", "FAIL"} {
		if !strings.Contains(out, want) {
			t.Errorf("WritePeer output has no %q:\n%s", want, out)
		}
	}
}
