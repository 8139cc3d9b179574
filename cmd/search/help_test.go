package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/datagen"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// TestHelp: --help prints what search does, examples, the flags and the
// filters' values to stdout, nothing to stderr, and exits 0; the text is
// pinned by testdata/help.txt (rewritten with -update).
func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{arg}, envOf(nil), &out, &errb); code != 0 || errb.Len() != 0 {
			t.Fatalf("search %s: exit %d, stderr %q; want 0 and nothing", arg, code, errb.String())
		}
		got := out.String()
		for _, want := range []string{"search asks the menu index", "usage: search", "examples:\n  search --lat 37.7749",
			"--allergen-free peanut --diet vegan", "--after", "-size int", "(GEOSHARD_ALIAS)", "(GEOSHARD_OPENSEARCH)", "(GEOSHARD_SEARCH_SIZE)",
			"--allergen-free  milk, egg,", "--diet           vegetarian, vegan,"} {
			if !strings.Contains(got, want) {
				t.Errorf("search %s lacks %q:\n%s", arg, want, got)
			}
		}
		path := filepath.Join("testdata", "help.txt")
		if *update {
			if err := os.MkdirAll("testdata", 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./cmd/search -run TestHelp -update writes it)", err)
		}
		if got != string(want) {
			t.Errorf("search %s differs from %s (go test ./cmd/search -run TestHelp -update if meant):\n%s", arg, path, got)
		}
	}
}

// TestHelpListsTheGeneratorsValues: the values --help lists are the
// generator's, which the command may not import.
func TestHelpListsTheGeneratorsValues(t *testing.T) {
	for _, tc := range []struct {
		name      string
		got, want []string
	}{
		{"allergens", knownAllergens, datagen.Allergens[:]},
		{"diets", knownDiets, datagen.Diets[:]},
		{"cuisines", knownCuisines, datagen.Cuisines[:]},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("help's %s %v, the generator's %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestMistypedFlagIsOneLine: a flag search does not have is one line on
// stderr that says where to look, exit 2, nothing on stdout.
func TestMistypedFlagIsOneLine(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--lat", "1", "--allergenfree", "milk"}, envOf(nil), &out, &errb)
	if code != 2 || out.Len() != 0 || errb.String() != "search: flag provided but not defined: -allergenfree (search --help lists the flags)\n" {
		t.Errorf("search --allergenfree: exit %d, stdout %q, stderr %q; want 2 and one line", code, out.String(), errb.String())
	}
}
