package benchrun

import (
	"strings"
	"testing"
	"time"
)

func validSeed() SeedConfig {
	return SeedConfig{
		Config: Config{Repo: ".", OpenSearch: "http://127.0.0.1:9200", Brokers: []string{"127.0.0.1:9092"}, Source: SourceWorktree,
			Partitions: 12, Poll: time.Second, Timeout: time.Hour, Stall: time.Minute},
		Docs: 1_000_000, Dir: "runs/1m", Phases: SeedPhases, LiveFor: time.Minute, ChangeRate: 200,
		Searches: 1000, Sample: 100, Shards: 24,
	}
}

func TestSeedConfigValidate(t *testing.T) {
	c := validSeed()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := validSeed()
	bad.Docs, bad.Dir, bad.Phases, bad.LiveFor, bad.ChangeRate, bad.Searches, bad.Shards = 99, "", []string{"load", "index"}, 0, 0, 10, 40
	err := bad.Validate()
	if err == nil {
		t.Fatal("valid, want errors")
	}
	for _, want := range []string{"-docs 99", "-dir", `"index"`, "-live-for", "-change-rate", "-searches 10", "-shards 40"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
}

// TestSeedStateResumes saves a state and loads it again for the same
// size, and refuses it for another.
func TestSeedStateResumes(t *testing.T) {
	dir := t.TempDir()
	st, err := loadSeedState(dir, 5_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if st.Name != "seed-5m" || st.Index != "seed-5m-v1" || st.alias() != "seed-5m" || st.group() != "seed-5m-ingest" {
		t.Fatalf("new state %+v", st)
	}
	for _, p := range []string{PhaseLive, PhaseReshard} {
		if err := st.ready(p); err == nil || !strings.Contains(err.Error(), "-phases load,"+p) {
			t.Errorf("phase %s before load: %v, want an error saying -phases load,%s", p, err, p)
		}
	}
	if err := st.ready(PhaseLoad); err != nil {
		t.Errorf("phase load: %v", err)
	}
	st.Produced, st.Batches, st.Done = true, 42, []string{PhaseLoad}
	if err := st.ready(PhaseReshard); err != nil {
		t.Errorf("phase reshard after load, without live: %v", err)
	}
	st.LoadEnd = Offsets{}
	st.LoadEnd.Set("seed-5m.dishes", 3, 1234)
	if err := st.save(dir); err != nil {
		t.Fatal(err)
	}
	again, err := loadSeedState(dir, 5_000_000)
	if err != nil {
		t.Fatal(err)
	}
	if off, _ := again.LoadEnd.Get("seed-5m.dishes", 3); !again.Produced || again.Batches != 42 || !again.done(PhaseLoad) || again.done(PhaseLive) || off != 1234 {
		t.Fatalf("loaded %+v", again)
	}
	if _, err := loadSeedState(dir, 1_000_000); err == nil || !strings.Contains(err.Error(), "5000000") {
		t.Fatalf("another size: %v, want an error naming the size the directory holds", err)
	}
}

func TestDocsLabel(t *testing.T) {
	for n, want := range map[int64]string{1_000_000: "1M", 55_000_000: "55M", 250_000: "250k", 1234: "1234"} {
		if got := docsLabel(n); got != want {
			t.Errorf("docsLabel(%d) = %q, want %q", n, got, want)
		}
	}
}
