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
)

// tagged is set by realcluster.go, which only the realcluster build tag
// compiles in.
var tagged bool

var (
	openSearchURL string
	kafkaBrokers  []string
	postgresDSN   string
	connectURL    string
	required      bool
)

// load reads the variables under the tag; it panics on a missing one, so
// that a real-engine run cannot quietly fall back to the emulators.
func load(getenv func(string) string) {
	var missing []string
	openSearchURL = strings.TrimRight(strings.TrimSpace(getenv(OpenSearchURLVar)), "/")
	if openSearchURL == "" {
		missing = append(missing, OpenSearchURLVar)
	}
	for _, b := range strings.Split(getenv(KafkaBrokersVar), ",") {
		if b = strings.TrimSpace(b); b != "" {
			kafkaBrokers = append(kafkaBrokers, b)
		}
	}
	if len(kafkaBrokers) == 0 {
		missing = append(missing, KafkaBrokersVar)
	}
	// The CDC source is optional: only the suites that need it ask for
	// it, through CDC.
	postgresDSN = strings.TrimSpace(getenv(PostgresDSNVar))
	connectURL = strings.TrimRight(strings.TrimSpace(getenv(ConnectURLVar)), "/")
	required = strings.TrimSpace(getenv(RequireVar)) == "1"
	if len(missing) > 0 {
		panic(fmt.Sprintf("realenv: built with -tags realcluster but %s not set; run `make real-up` and export the addresses it prints",
			strings.Join(missing, " and ")))
	}
}

// Enabled reports whether the tests run against the real engines.
func Enabled() bool { return tagged }

// OpenSearchURL is the real node's URL, or "" when the tests use the
// emulator.
func OpenSearchURL() string { return openSearchURL }

// KafkaBrokers are the real broker addresses, or nil when the tests use the
// in-process broker. The slice is a copy.
func KafkaBrokers() []string { return append([]string(nil), kafkaBrokers...) }

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
	u := openSearchURL + "/" + url.PathEscape(strings.Join(patterns, ",")) + "?ignore_unavailable=true&allow_no_indices=true&expand_wildcards=all"
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, u, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("realenv: delete %v: %w", patterns, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return fmt.Errorf("realenv: delete %v: %s: %s", patterns, resp.Status, body)
	}
	return nil
}
