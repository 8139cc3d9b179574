package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/testenv"
)

// Every verb that talks to OpenSearch reads the engine first, and refuses
// Elasticsearch with one line and exit 1 before it asks anything else:
// nothing is created or recorded.
func TestRefusesElasticsearch(t *testing.T) {
	node := testenv.EngineServer(t, 200, testenv.Elasticsearch9, nil)
	for _, args := range [][]string{
		{"init", "--map", exampleMap, "--index", "menu-v1"},
		{"plan", "--from-index", "menu"},
		{"create", "--map", exampleMap},
		{"status"},
		{"run", "--map", exampleMap},
	} {
		code, stdout, stderr := runCLI(t, append(args, "--opensearch", node)...)
		want := "reshard " + args[0] + ": --opensearch " + node + ": Elasticsearch 9.4.0 is not supported: geoshard runs on OpenSearch only " +
			"(2.19.x and 3.0 to 3.9.x); what running on Elasticsearch would take is in docs/engines.md#elasticsearch\n"
		if code != 1 || stdout != "" || !strings.HasSuffix(stderr, want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("reshard %v: exit %d, stdout %q, stderr %q; want 1 and only %q", args, code, stdout, stderr, want)
		}
	}
}

// Against the emulator (or the real node) the verbs go on, and a
// migration verb logs the engine once, at Info.
func TestEngineOfTheTestEngine(t *testing.T) {
	node := openSearch(t)
	if code, stdout, stderr := runCLI(t, "init", "--map", exampleMap, "--index", "menu-v1", "--alias", "menu", "--opensearch", node); code != 0 || stderr != "" {
		t.Fatalf("init: exit %d, stdout %q, stderr %q; want 0 and nothing on stderr", code, stdout, stderr)
	}
	code, _, stderr := runCLI(t, "status", "--opensearch", node)
	logged := regexp.MustCompile(`level=INFO msg="talking to OpenSearch" version=\S+ nodes=` + regexp.QuoteMeta(node) + `\n`)
	if code != 0 || len(logged.FindAllString(stderr, -1)) != 1 {
		t.Errorf("status: exit %d, stderr %q; want 0 and one line matching %s", code, stderr, logged)
	}
}

// A node that does not answer fails the verb as its first request would
// (exit 1), naming the request.
func TestEngineUnreachable(t *testing.T) {
	code, _, stderr := runCLI(t, "status", "--opensearch", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(stderr, "reshard status: read the engine's version at http://127.0.0.1:1: bulk: GET /: ") {
		t.Errorf("status against a closed port: exit %d, stderr %q; want 1 and the failed GET /", code, stderr)
	}
}
