package benchrun

import (
	"strings"
	"testing"
	"time"
)

func goodConfig() Config {
	return Config{
		Repo: ".", OpenSearch: "http://127.0.0.1:9200", Brokers: []string{"127.0.0.1:9092"},
		Source: SourceWorktree, Events: 10, Partitions: 6, Poll: DefaultPoll,
		Timeout: time.Minute, Stall: time.Minute,
	}
}

func TestConfigValidate(t *testing.T) {
	c := goodConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate(good) = %v", err)
	}
	bad := Config{OpenSearch: "127.0.0.1:9200", Brokers: []string{"kafka"}, Source: "tip", Poll: time.Millisecond}
	err := bad.Validate()
	if err == nil {
		t.Fatal("Validate(bad) = nil")
	}
	// Every bad field at once, each naming its flag.
	for _, want := range []string{"-repo", "-opensearch", "-brokers", "-src", "-events", "-partitions", "-poll", "-timeout", "-stall"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate(bad) = %v; want it to name %s", err, want)
		}
	}
	p := PeerConfig{Config: goodConfig()}
	if err := p.Validate(); err == nil || !strings.Contains(err.Error(), "-rounds 0") {
		t.Errorf("PeerConfig.Validate(rounds 0) = %v, want -rounds", err)
	}
	p.Rounds = 3
	if err := p.Validate(); err != nil {
		t.Errorf("PeerConfig.Validate(good) = %v", err)
	}
}
