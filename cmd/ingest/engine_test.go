package main

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/migrate"
)

// The brokers of these tests: nothing listens there, and the tests end
// before ingest would wait for them, or while it does.
const noBrokers = "127.0.0.1:1"

// Ingest refuses Elasticsearch at start with one line and exit 1, before
// it asks OpenSearch anything else or reaches for the brokers.
func TestRefusesElasticsearch(t *testing.T) {
	node := testenv.EngineServer(t, 200, testenv.Elasticsearch9, nil)
	var out, errb testenv.LogBuffer
	code := run(context.Background(), []string{"--opensearch", node, "--brokers", noBrokers, "--metrics-addr", ""}, envOf(nil), &out, &errb)
	want := "\ningest: --opensearch " + node + ": Elasticsearch 9.4.0 is not supported: geoshard runs on OpenSearch only " +
		"(2.19.x and 3.0 to 3.9.x); what running on Elasticsearch would take is in docs/engines.md#elasticsearch\n"
	if code != 1 || !strings.HasSuffix(errb.String(), want) || strings.Contains(errb.String(), "Kafka") {
		t.Errorf("ingest against Elasticsearch 9: exit %d, stderr:\n%s\nwant 1, nothing of Kafka, and last %q", code, errb.String(), want)
	}
}

// Against the emulator ingest logs the engine and goes on, to wait for
// the brokers; interrupted, it stops cleanly.
func TestEngineOfTheEmulator(t *testing.T) {
	srv := osfake.NewTestServer(osfake.Options{})
	t.Cleanup(srv.Close)
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	err = migrate.Init(context.Background(), bulk.NewAdmin(client),
		migrate.InitConfig{Map: testenv.LoadMap(t, "testdata/maps/us-18.json"), Index: "menu-v1", Alias: "menu"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logged := regexp.MustCompile(`msg="talking to OpenSearch" version=\S+ nodes=` + regexp.QuoteMeta(srv.URL) + `\n`)
	var out, errb testenv.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--opensearch", srv.URL, "--brokers", noBrokers, "--metrics-addr", ""}, envOf(nil), &out, &errb)
	}()
	awaitRun(t, done, &out, &errb, "the engine logged, then the wait for the brokers", func() (bool, string) {
		s := errb.String()
		engine := logged.FindStringIndex(s)
		brokers := strings.Index(s, `msg="waiting: cannot reach the Kafka brokers`)
		return engine != nil && brokers > engine[0], "not yet"
	})
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after the interrupt:\n%s", code, errb.String())
	}
	if n := len(logged.FindAllString(errb.String(), -1)); n != 1 {
		t.Errorf("the engine was logged %d times, want once:\n%s", n, errb.String())
	}
}

// Nodes that do not answer at start are waited for, as ingest waits for
// the brokers, each failure logged; interrupted, ingest stops cleanly.
func TestWaitsForTheEngine(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errb testenv.LogBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--opensearch", "http://127.0.0.1:1", "--brokers", noBrokers, "--metrics-addr", ""}, envOf(nil), &out, &errb)
	}()
	awaitRun(t, done, &out, &errb, "two failed reads of the engine, logged", func() (bool, string) {
		n := strings.Count(errb.String(), `msg="request failed; retrying" step="read the engine's version"`)
		return n >= 2, "fewer"
	})
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after the interrupt:\n%s", code, errb.String())
	}
}
