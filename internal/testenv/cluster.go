package testenv

import (
	"context"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
)

// RequestTimeout is the client timeout most tests use: long enough for
// the real node's slowest admin call under load.
const RequestTimeout = 30 * time.Second

// Cluster is the OpenSearch cluster a test runs against: an emulator of
// the test's own, or with -tags realcluster the real node or nodes at
// realenv.OpenSearchURLs().
type Cluster struct {
	// URL is one node's address (the first), for what takes one: a
	// command's flag, a request built by hand.
	URL string
	// URLs are every node's addresses, which Client is given: the
	// emulator's one, the single real node, or each node of a cluster.
	URLs []string
	// Server is the emulator, nil on the real node: a test that injects
	// faults or reads the emulator's state says so with
	// realenv.EmulatorOnly before it touches Server.
	Server *osfake.TestServer
	Client *opensearch.Client
	Admin  *bulk.Admin
}

// ClusterOptions shape StartCluster. The zero value is an emulator with
// default options, or the real node cleared of the menu indexes before
// and after the test.
type ClusterOptions struct {
	// Emulator configures the emulator. Setting any of it on the real
	// node fails the test: a test that needs it should call
	// realenv.EmulatorOnly.
	Emulator osfake.Options
	// InProcess uses the emulator even under -tags realcluster, for
	// benchmarks that compare the two.
	InProcess bool
	// RequestTimeout is the client's; 0 is bulk's default.
	RequestTimeout time.Duration
	// Clear are the index patterns deleted on the real node before the
	// test and after it (their aliases go with them). Default
	// realenv.MenuIndexes: the menu indexes and the migration state,
	// whose index has one fixed name (tests against the real node run
	// one at a time).
	Clear []string
	// KeepOnFailure leaves the real node as a failed test left it, for a
	// look; the next test clears it.
	KeepOnFailure bool
}

// StartCluster connects the test to its cluster: it starts an emulator
// (closed by the test's cleanup), or, under -tags realcluster and unless
// o.InProcess, clears the real node of o.Clear.
func StartCluster(t testing.TB, o ClusterOptions) *Cluster {
	t.Helper()
	real := realenv.Enabled() && !o.InProcess
	c := &Cluster{}
	if real {
		if o.Emulator.Clock != nil || o.Emulator.ClusterName != "" {
			t.Fatal("emulator options on the real node: the test should call realenv.EmulatorOnly")
		}
		c.URL, c.URLs = realenv.OpenSearchURL(), realenv.OpenSearchURLs()
	} else {
		c.Server = osfake.NewTestServer(o.Emulator)
		t.Cleanup(c.Server.Close)
		c.URL, c.URLs = c.Server.URL, []string{c.Server.URL}
	}
	var err error
	c.Client, err = bulk.NewClient(bulk.ClientConfig{Addresses: c.URLs, RequestTimeout: o.RequestTimeout})
	if err != nil {
		t.Fatal(err)
	}
	c.Admin = bulk.NewAdmin(c.Client)
	if real {
		patterns := o.Clear
		if len(patterns) == 0 {
			patterns = realenv.MenuIndexes
		}
		ClearRealNode(t, patterns...)
		t.Cleanup(func() {
			if !o.KeepOnFailure || !t.Failed() {
				ClearRealNode(t, patterns...)
			}
		})
	}
	return c
}

// ClearRealNode deletes the indexes matching patterns on the real node,
// failing the test if it cannot.
func ClearRealNode(t testing.TB, patterns ...string) {
	t.Helper()
	if err := realenv.DeleteIndexes(context.Background(), patterns...); err != nil {
		t.Fatalf("clear the real node: %v", err)
	}
}
