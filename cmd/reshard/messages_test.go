package main

import (
	"fmt"
	"strings"
	"testing"
)

// Every verb's --help opens with what the verb does, gives an example,
// lists the flags with the GEOSHARD_* variables they read, and exits 0.
func TestEveryVerbHelpOpensWithWhatItDoes(t *testing.T) {
	for name := range verbs {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, name, "--help")
			if code != 0 || stderr != "" {
				t.Fatalf("reshard %s --help: exit %d, stderr %q; want 0 and nothing on stderr", name, code, stderr)
			}
			h := helps[name]
			if h.About == "" || len(h.Examples) == 0 || len(h.Examples) > 3 {
				t.Errorf("reshard %s: %d examples and about %q; want what it does and 1 to 3 examples", name, len(h.Examples), h.About)
			}
			if !strings.HasPrefix(stdout, strings.SplitN(h.About, "\n", 2)[0]) {
				t.Errorf("reshard %s --help does not open with what the verb does:\n%.300s", name, stdout)
			}
			for _, want := range []string{"usage: reshard " + name, "examples:\n  reshard " + name, "GEOSHARD_OPENSEARCH"} {
				if name == "route" || name == "cover" || name == "eval" {
					if want == "GEOSHARD_OPENSEARCH" {
						continue // a map file is all they read
					}
				}
				if !strings.Contains(stdout, want) {
					t.Errorf("reshard %s --help lacks %q:\n%s", name, want, stdout)
				}
			}
		})
	}
	// The values of an enumerated flag are listed.
	_, stdout, _ := runCLI(t, "status", "--help")
	if !strings.Contains(stdout, "debug, info, warn or error (GEOSHARD_LOG_LEVEL)") || !strings.Contains(stdout, "(GEOSHARD_ALIAS)") {
		t.Errorf("status --help does not list --log-level's values or name GEOSHARD_ALIAS:\n%s", stdout)
	}
}

// A flag given wrongly is named with the values it accepts, and a flag
// given rightly (or left at its default) is not named.
func TestBadFlagMessagesGolden(t *testing.T) {
	cases := [][]string{
		{"backfill", "--max-docs-per-second=-5"},
		{"backfill", "--slices", "-1"},
		{"backfill", "--page", "0", "--slices", "-2"},
		{"backfill", "--page", "20000"},
		{"backfill", "--lease", "500ms"},
		{"backfill", "--lease", "2h", "--worker-id", "pod 3"},
		{"run", "--map", "x.json", "--lease", "0s"},
		{"verify", "--attempts", "-1"},
		{"verify", "--pause", "-1s", "--max-ids", "0", "--max-suspects", "0"},
		{"dual-writes", "--ack-timeout", "0s"},
		{"complete", "--live-window", "-1s"},
		{"status", "--live-window", "0s"},
		{"cutover", "--health-timeout", "0s"},
		{"create", "--map", "x.json", "--replicas", "-2"},
		{"run", "--map", "x.json", "--page", "0", "--attempts", "-1"},
		{"backfill", "--pages", "5"},
	}
	var b strings.Builder
	for _, args := range cases {
		code, _, stderr := runCLI(t, args...)
		if code != 2 {
			t.Errorf("reshard %v: exit %d, want 2", args, code)
		}
		fmt.Fprintf(&b, "$ reshard %s\n%s", strings.Join(args, " "), stderr)
	}
	golden(t, "bad-flags.txt", b.String())
	if _, _, stderr := runCLI(t, "backfill", "--max-docs-per-second=-5"); strings.Contains(stderr, "--slices") {
		t.Errorf("backfill --max-docs-per-second=-5 names --slices, which was not given: %s", stderr)
	}
}

// An alias that does not exist, with no migration recorded, is a usage
// error of every verb that takes --alias, from the flag or from
// GEOSHARD_ALIAS.
func TestUnknownAliasExit2(t *testing.T) {
	srvURL := openSearch(t)
	oldMap, _ := smallMap(t, t.TempDir(), "old.json", "000001", "864a23")
	mustRun(t, "init", "--map", oldMap, "--index", "menu-v1", "--opensearch", srvURL)
	for _, args := range [][]string{
		{"status"}, {"status", "--json"}, {"create", "--map", oldMap}, {"dual-writes"}, {"backfill"}, {"verify"}, {"repair"},
		{"cutover"}, {"rollback"}, {"complete"}, {"cancel"}, {"run", "--map", oldMap},
	} {
		args = append(args, "--alias", "nope", "--opensearch", srvURL)
		code, stdout, stderr := runCLI(t, args...)
		if code != 2 || !strings.Contains(stderr, "--alias nope: no such alias in OpenSearch at "+srvURL) || stdout != "" {
			t.Errorf("reshard %v: exit %d, stdout %q, stderr %q; want 2 and the alias said unknown", args, code, stdout, stderr)
		}
	}
	t.Setenv("GEOSHARD_ALIAS", "nope")
	t.Setenv("GEOSHARD_OPENSEARCH", srvURL)
	if code, _, stderr := runCLI(t, "status"); code != 2 || !strings.Contains(stderr, "--alias nope: no such alias") {
		t.Errorf("reshard status with GEOSHARD_ALIAS=nope: exit %d, %q; want 2", code, stderr)
	}
	// The alias that exists, named by the variable, with no migration.
	t.Setenv("GEOSHARD_ALIAS", "menu")
	if code, stdout, stderr := runCLI(t, "status"); code != 0 || !strings.Contains(stdout, "no migration is recorded for alias menu") {
		t.Errorf("reshard status with GEOSHARD_ALIAS=menu: exit %d, %q %q; want 0 and no migration", code, stdout, stderr)
	}
}

// Counts read as words: "1 shard", "2 shards", thousands separated.
func TestPlural(t *testing.T) {
	cases := []struct {
		n    int64
		want string
	}{
		{0, "0 shards"}, {1, "1 shard"}, {2, "2 shards"}, {38844, "38,844 shards"},
	}
	for _, tc := range cases {
		if got := plural(tc.n, "shard", "shards"); got != tc.want {
			t.Errorf("plural(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}
