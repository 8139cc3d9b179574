package benchrun

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Defaults of Config, SoakConfig and PeerConfig.
const (
	DefaultPartitions  = 6
	DefaultSeed        = 17
	DefaultPoll        = 500 * time.Millisecond
	DefaultSoakEvents  = 5_000_000
	DefaultSoakTimeout = 2 * time.Hour
	DefaultPeerEvents  = 1_000_000
	DefaultPeerRounds  = 3
	DefaultPeerTimeout = 30 * time.Minute
	// DefaultStall is longer than ingest's longest wait for a dish's
	// restaurant (5 minutes), after which the dish is dead-lettered and
	// its offset can be committed.
	DefaultStall = 10 * time.Minute
)

// Source values: what the commands under test are built from.
const (
	SourceWorktree = "worktree" // the working tree, as it is
	SourceHead     = "head"     // `git archive HEAD`: the commit, without uncommitted edits
)

// Config is what both benchmarks share.
type Config struct {
	// Repo is the geoshard module's root. Default ".".
	Repo string
	// OpenSearch is the node's URL, Brokers the Kafka bootstrap brokers.
	OpenSearch string
	Brokers    []string
	// RealDir is real.sh's directory, where the engines' PID files are
	// (their CPU is read from /proc); "" or a missing file: not measured.
	RealDir string
	// Source is SourceWorktree (default) or SourceHead.
	Source string
	// Work is the scratch directory for binaries and logs; "" a new
	// temporary one.
	Work string
	// Keep leaves the indexes, topics and groups of the run in place.
	Keep bool
	// Events is how many events to ask the producer for; Partitions the
	// topics' partition count (default 6); Seed the stream's (default 17).
	Events     int
	Partitions int
	Seed       uint64
	// Poll is how often offsets and index stats are read (default 500 ms).
	Poll time.Duration
	// Timeout bounds one run of a tool; Stall gives up on one that has
	// made no progress for that long.
	Timeout, Stall time.Duration
}

// SoakConfig configures Soak.
type SoakConfig struct {
	Config
	// HeapProfiles starts ingest with --pprof and saves its heap (after a
	// collection) when a quarter, half and three quarters of the events
	// have finished, and once every offset is committed, in Work.
	HeapProfiles bool
}

// PeerConfig configures Peer.
type PeerConfig struct {
	Config
	// Rounds is the number of rounds (default 3), each ingest then
	// Benthos.
	Rounds int
}

// Validate returns every bad field at once.
func (c *Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Repo == "" {
		bad("-repo: empty")
	}
	if u, err := url.Parse(c.OpenSearch); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("-opensearch %q: want a URL such as http://127.0.0.1:9200", c.OpenSearch)
	}
	if len(c.Brokers) == 0 {
		bad("-brokers: empty")
	}
	for _, b := range c.Brokers {
		if !strings.Contains(b, ":") {
			bad("-brokers: %q: want host:port", b)
		}
	}
	if c.Source != SourceWorktree && c.Source != SourceHead {
		bad("-src %q: want %s or %s", c.Source, SourceWorktree, SourceHead)
	}
	if c.Events < 1 {
		bad("-events %d: want at least 1", c.Events)
	}
	if c.Partitions < 1 {
		bad("-partitions %d: want at least 1", c.Partitions)
	}
	if c.Poll < 10*time.Millisecond || c.Poll > time.Minute {
		bad("-poll %s: want 10ms to 1m", c.Poll)
	}
	if c.Timeout <= 0 {
		bad("-timeout %s: want a positive duration", c.Timeout)
	}
	if c.Stall <= 0 {
		bad("-stall %s: want a positive duration", c.Stall)
	}
	return errors.Join(errs...)
}

// Validate returns every bad field at once.
func (c *PeerConfig) Validate() error {
	err := c.Config.Validate()
	if c.Rounds < 1 {
		err = errors.Join(err, fmt.Errorf("-rounds %d: want at least 1", c.Rounds))
	}
	return err
}
