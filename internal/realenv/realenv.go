package realenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// The environment variables that point the real-engine suites at the
// engines.
const (
	OpenSearchURLVar = "GEOSHARD_OPENSEARCH_URL"
	KafkaBrokersVar  = "GEOSHARD_KAFKA_BROKERS"

	// The change-data-capture source beside them (see CDC), which
	// deploy/local/real.sh starts only where the machine has PostgreSQL:
	// a libpq URL of a superuser that may replicate, and the REST address
	// of a Kafka Connect worker with Debezium's Postgres connector,
	// writing to the broker of KafkaBrokersVar.
	PostgresDSNVar = "GEOSHARD_POSTGRES_DSN"
	ConnectURLVar  = "GEOSHARD_CONNECT_URL"

	// RequireVar set to 1 (as CI sets it) turns every skip for a missing
	// real engine into a failure.
	RequireVar = "GEOSHARD_REQUIRE_REAL"

	// OpenSearchVersionVar is the OpenSearch version real.sh started
	// (OPENSEARCH_VERSION), which TestNodesRunTheNamedVersion holds the
	// nodes to, so that a run meant for one line cannot pass on another.
	OpenSearchVersionVar = "GEOSHARD_OPENSEARCH_VERSION"
)

// tagged is set by realcluster.go, which only the realcluster build tag
// compiles in.
var tagged bool

var (
	openSearchURLs []string
	kafkaBrokers   []string
	postgresDSN    string
	connectURL     string
	required       bool
	openSearchVer  string
)

// load reads the variables under the tag; it panics on a missing one, so
// that a real-engine run cannot quietly fall back to the emulators. Both
// engine variables are comma-separated lists: one node and one broker, or
// every node and every broker of a cluster (real.sh's cluster profile).
func load(getenv func(string) string) {
	var missing []string
	openSearchURLs = nil
	for _, u := range splitList(getenv(OpenSearchURLVar)) {
		openSearchURLs = append(openSearchURLs, strings.TrimRight(u, "/"))
	}
	if len(openSearchURLs) == 0 {
		missing = append(missing, OpenSearchURLVar)
	}
	kafkaBrokers = splitList(getenv(KafkaBrokersVar))
	if len(kafkaBrokers) == 0 {
		missing = append(missing, KafkaBrokersVar)
	}
	// The CDC source is optional: only the suites that need it ask for
	// it, through CDC.
	postgresDSN = strings.TrimSpace(getenv(PostgresDSNVar))
	connectURL = strings.TrimRight(strings.TrimSpace(getenv(ConnectURLVar)), "/")
	required = strings.TrimSpace(getenv(RequireVar)) == "1"
	openSearchVer = strings.TrimSpace(getenv(OpenSearchVersionVar))
	if len(missing) > 0 {
		panic(fmt.Sprintf("realenv: built with -tags realcluster but %s not set; run `make real-up` and export the addresses it prints",
			strings.Join(missing, " and ")))
	}
}

// splitList splits a comma-separated list, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// Enabled reports whether the tests run against the real engines.
func Enabled() bool { return tagged }

// OpenSearchURL is the first real node's URL, or "" when the tests use the
// emulator. A client should be given every node (OpenSearchURLs); this one
// is for what needs one address (a proxy in front of the cluster).
func OpenSearchURL() string {
	if len(openSearchURLs) == 0 {
		return ""
	}
	return openSearchURLs[0]
}

// OpenSearchURLs are the real nodes' URLs, every node of a cluster, or nil
// when the tests use the emulator. The slice is a copy.
func OpenSearchURLs() []string { return append([]string(nil), openSearchURLs...) }

// OpenSearchVersion is the version the real nodes were started at, as
// OpenSearchVersionVar names it, or "" where it is not named.
func OpenSearchVersion() string { return openSearchVer }

// Required reports whether RequireVar is 1: a real engine or a fact
// about it that is missing fails a test rather than skip it.
func Required() bool { return required }

// KafkaBrokers are the real broker addresses, or nil when the tests use the
// in-process broker. The slice is a copy.
func KafkaBrokers() []string { return append([]string(nil), kafkaBrokers...) }

// Nodes is how many OpenSearch nodes the real engines name (1 on the
// single node, 3 on real.sh's cluster profile), or 0 with the emulator.
// Tests that depend on the cluster's shape (a replica assigned or not,
// green or yellow) adapt to it; what the cluster itself reports
// (_cluster/health's number_of_data_nodes) is the authority where a test
// can ask.
func Nodes() int { return len(openSearchURLs) }

// Brokers is how many Kafka brokers the real engines name, or 0 with the
// in-process broker.
func Brokers() int { return len(kafkaBrokers) }

// TopicReplicas is the replication factor for a topic on brokers Kafka
// brokers: one copy per broker up to three. A cluster's brokers require
// two replicas in sync for a write with acks=all (min.insync.replicas=2),
// which a topic of one replica can never have.
func TopicReplicas(brokers int) int { return max(1, min(3, brokers)) }

// IndexReplicas is the number_of_replicas an index a test creates should
// have to be green on the real nodes: 0 on a single node (or the
// emulator), 1 on a cluster, as in production.
func IndexReplicas() int { return max(0, min(1, Nodes()-1)) }

// TB is the part of testing.TB this package needs; it takes an interface
// so it does not import "testing".
type TB interface {
	Helper()
	Skip(args ...any)
}

// EmulatorOnly skips t against the real engines, saying why the test needs
// the in-process ones (injected faults, the emulator's clock, its internal
// state).
func EmulatorOnly(t TB, why string) {
	t.Helper()
	if tagged {
		t.Skip("emulator only: " + why)
	}
}

// RealOnly skips t unless it runs against the real engines.
func RealOnly(t TB) {
	t.Helper()
	if !tagged {
		t.Skip("real engines only: needs -tags realcluster and " + OpenSearchURLVar + ", " + KafkaBrokersVar)
	}
}

// FatalTB is the part of testing.TB that CDC needs.
type FatalTB interface {
	TB
	Fatal(args ...any)
}

// CDC returns the change-data-capture source's addresses: the PostgreSQL
// DSN and the Kafka Connect worker's REST URL. It skips t without the real
// engines, and where either variable is unset (real.sh found no
// PostgreSQL) — unless RequireVar is 1, when a missing source fails t.
// Against a cluster (more than one node or broker) a missing source skips
// t even then: real.sh's cluster profile starts none.
func CDC(t FatalTB) (dsn, connect string) {
	t.Helper()
	RealOnly(t)
	var missing []string
	if postgresDSN == "" {
		missing = append(missing, PostgresDSNVar)
	}
	if connectURL == "" {
		missing = append(missing, ConnectURLVar)
	}
	if len(missing) > 0 {
		why := "change-data-capture source missing: " + strings.Join(missing, " and ") +
			" not set (deploy/local/real.sh starts PostgreSQL and Kafka Connect where the machine has PostgreSQL)"
		if Nodes() > 1 || Brokers() > 1 {
			t.Skip(why + "; the cluster profile of real.sh starts none")
		}
		if required {
			t.Fatal(why + ", and " + RequireVar + "=1")
		}
		t.Skip(why)
	}
	return postgresDSN, connectURL
}

// parallelT is the part of testing.T that Parallel needs.
type parallelT interface{ Parallel() }

// Parallel marks t parallel with the in-process engines, each test having
// engines of its own; against the shared real engines tests run one at a
// time, so it does nothing.
func Parallel(t parallelT) {
	if !tagged {
		t.Parallel()
	}
}

var seq atomic.Int64

// runID tells apart the runs that share one real broker: topics and groups
// outlive a test, and the next run of the same test must not find them.
var runID = fmt.Sprintf("%x", time.Now().UnixNano()&0xffffffffff)

// Unique returns base made unique to this test binary's run and call
// against the real engines ("menu-events" → "menu-events.1a2b3c4d5e-7"),
// and base itself with the in-process engines, whose state dies with the
// test.
func Unique(base string) string {
	if !tagged {
		return base
	}
	return fmt.Sprintf("%s.%s-%d", base, runID, seq.Add(1))
}

// slack is how much longer the real engines may take than the in-process
// ones: a refresh of an 18-shard index under load takes the real node
// hundreds of milliseconds where the emulator takes none, and a consumer
// group forms over the network.
const slack = 5

// Slack stretches a test's deadline for the real engines. Deadlines only
// bound how long a test waits for an outcome before it fails; they are
// never what a test asserts.
func Slack(d time.Duration) time.Duration {
	if tagged {
		return d * slack
	}
	return d
}

// MenuIndexes are the names the suites create on the real node that can
// collide between tests: every menu index (menu-v1, menu.<run>-3-v2, …;
// their aliases go with them) and the migration state index, whose name
// is fixed (schema.MigrationsIndex).
var MenuIndexes = []string{"menu*", ".geoshard-migrations"}

// DeleteIndexes deletes the indexes that match patterns on the real node,
// the way the tests that share it clear what an earlier test left (they
// run one at a time). Patterns that match nothing are fine.
func DeleteIndexes(ctx context.Context, patterns ...string) error {
	if !tagged {
		return errors.New("realenv: DeleteIndexes needs the real engines")
	}
	path := "/" + url.PathEscape(strings.Join(patterns, ",")) + "?ignore_unavailable=true&allow_no_indices=true&expand_wildcards=all"
	// Any node of a cluster deletes for all of them: the first that
	// answers does, so that a node a fault test stopped is no obstacle.
	var errs []error
	for _, base := range openSearchURLs {
		err := deleteAt(ctx, base+path)
		if err == nil {
			return nil
		}
		errs = append(errs, err)
		var refused *statusError
		if errors.As(err, &refused) || ctx.Err() != nil {
			break
		}
	}
	return fmt.Errorf("realenv: delete %v: %w", patterns, errors.Join(errs...))
}

// statusError is a node's answer other than success: the cluster's, which
// another node would give as well.
type statusError struct {
	status string
	body   []byte
}

func (e *statusError) Error() string { return e.status + ": " + string(e.body) }

func deleteAt(ctx context.Context, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return &statusError{status: resp.Status, body: body}
	}
	return nil
}
