package main

import (
	"strings"
	"testing"
)

func TestInitVerb(t *testing.T) {
	srvURL := openSearch(t)
	code, stdout, stderr := runCLI(t, "init", "--map", exampleMap, "--index", "menu-v1", "--alias", "menu", "--opensearch", srvURL)
	if code != 0 || !strings.Contains(stdout, "index menu-v1: 18 shards") {
		t.Fatalf("init exit %d: %s %s", code, stdout, stderr)
	}
	// Again: idempotent.
	if code, _, stderr := runCLI(t, "init", "--map", exampleMap, "--index", "menu-v1", "--opensearch", srvURL); code != 0 {
		t.Errorf("second init exit %d: %s", code, stderr)
	}
	// Another map for the same index: refused, exit 1, both hashes named.
	code, _, stderr = runCLI(t, "init", "--map", "../../testdata/maps/us-18-rns576.json", "--index", "menu-v1", "--opensearch", srvURL)
	if code != 1 || !strings.Contains(stderr, "built with another map") {
		t.Errorf("init with another map: exit %d, %s", code, stderr)
	}
	// Bad flags: exit 2.
	for _, args := range [][]string{
		{"init", "--index", "x"},
		{"init", "--map", exampleMap, "--index", "x", "--opensearch", "ftp://nowhere"},
		{"init", "--map", exampleMap, "--index", "x", "--replicas", "-1"},
		{"init", "--map", exampleMap, "--index", "x", "--replicas", "some"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 {
			t.Errorf("reshard %v: exit %d (%s), want 2", args, code, stderr)
		}
	}
}
