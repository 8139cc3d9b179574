package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

// TestUnknownFilterValuesRefused: an allergen, diet or cuisine that no
// document holds is exit 2 with the nearest known value suggested; one
// that some document holds is searched.
func TestUnknownFilterValuesRefused(t *testing.T) {
	url, _ := seed(t)
	circle := []string{"--opensearch", url, "--lat", "37.7749", "--lng", "-122.4194", "--radius", "15mi"}
	for _, tc := range []struct {
		args []string
		want string // "" accepted
	}{
		{[]string{"--allergen-free", "peanutt"}, "search: --allergen-free peanutt: no dish lists that allergen; did you mean peanut? known: milk, peanut\n"},
		{[]string{"--allergen-free", "milk,peanut"}, ""},
		{[]string{"--diet", "keto"}, "search: --diet keto: no dish suits that diet; the index holds no diets at all\n"},
		{[]string{"--cuisine", "cb"}, ""},
		{[]string{"--cuisine", "cz"}, "search: --cuisine cz: no restaurant serves that cuisine; did you mean ca? known: ca, cb\n"},
		{[]string{"--restaurants", "--cuisine", "cz"}, "search: --cuisine cz: no restaurant serves that cuisine; did you mean ca? known: ca, cb\n"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), append(circle, tc.args...), envOf(nil), &out, &errb)
		switch {
		case tc.want == "" && code != 0:
			t.Errorf("search %v: exit %d, %s; want 0", tc.args, code, errb.String())
		case tc.want != "" && (code != 2 || errb.String() != tc.want || out.Len() != 0):
			t.Errorf("search %v: exit %d, stderr %q, stdout %q; want 2 and %q", tc.args, code, errb.String(), out.String(), tc.want)
		}
	}
}

// TestPaging: --size 1 lists the two dishes on two pages; the first
// carries the token (JSON "next", and the next page's command line in
// text), the last none; a token given to another search is exit 2.
func TestPaging(t *testing.T) {
	url, _ := seed(t)
	circle := []string{"--opensearch", url, "--lat", "37.7749", "--lng", "-122.4194", "--radius", "15mi", "--size", "1"}
	type page struct {
		Next   *string `json:"next"`
		Total  int64   `json:"total"`
		Dishes []struct {
			Name string `json:"name"`
		} `json:"dishes"`
	}
	get := func(args ...string) page {
		t.Helper()
		var out, errb bytes.Buffer
		if code := run(context.Background(), append(append([]string{}, circle...), args...), envOf(nil), &out, &errb); code != 0 {
			t.Fatalf("search %v: exit %d: %s", args, code, errb.String())
		}
		var p page
		if err := json.Unmarshal(out.Bytes(), &p); err != nil {
			t.Fatalf("%v:\n%s", err, out.String())
		}
		return p
	}
	first := get("--json")
	if first.Next == nil || len(first.Dishes) != 1 || first.Dishes[0].Name != "pad thai" || first.Total != 2 {
		t.Fatalf("first page %+v: want pad thai, total 2 and a next token", first)
	}
	second := get("--json", "--after", *first.Next)
	if second.Next != nil || len(second.Dishes) != 1 || second.Dishes[0].Name != "margherita" {
		t.Errorf("second page %+v: want margherita and no next token", second)
	}

	var out, errb bytes.Buffer
	if code := run(context.Background(), circle, envOf(nil), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	hint := "next page: search " + strings.Join(circle, " ") + " --after " + *first.Next + "\n"
	if !strings.HasSuffix(out.String(), hint) {
		t.Errorf("text page does not end with %q:\n%s", hint, out.String())
	}
	out.Reset()
	if code := run(context.Background(), append(append([]string{}, circle...), "--after", *first.Next), envOf(nil), &out, &errb); code != 0 ||
		strings.Contains(out.String(), "next page") || !strings.Contains(out.String(), "margherita") {
		t.Errorf("last text page: exit %d, want margherita and no next page:\n%s%s", code, out.String(), errb.String())
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--after", *first.Next, "--query", "pizza"}, "search: --after: the token continues another search of dishes (its area, text or filters differ)"},
		{[]string{"--after", *first.Next, "--restaurants"}, "search: --after: the token continues a search of dishes, not of restaurants"},
		{[]string{"--after", "nonsense"}, "search: --after: not a token this search wrote"},
	} {
		out.Reset()
		errb.Reset()
		code := run(context.Background(), append(append([]string{}, circle...), tc.args...), envOf(nil), &out, &errb)
		if code != 2 || !strings.HasPrefix(errb.String(), tc.want) || strings.Count(errb.String(), "\n") != 1 {
			t.Errorf("search %v: exit %d, %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestMessages: an alias that does not exist says so, with "search: "
// once; counts of one are singular.
func TestMessages(t *testing.T) {
	url, _ := seed(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--opensearch", url, "--alias", "nope"}, envOf(nil), &out, &errb)
	if want := "search: alias nope does not exist: no alias or index of that name\n"; code != 1 || errb.String() != want {
		t.Errorf("search --alias nope: exit %d, %q; want 1 and %q", code, errb.String(), want)
	}
	errb.Reset()
	code = run(context.Background(), []string{"--opensearch", url, "--lat", "37.76", "--lng", "-122.42", "--radius", "100m"}, envOf(nil), &out, &errb)
	if first, _, _ := strings.Cut(out.String(), "\n"); code != 0 || !strings.Contains(first, ": 1 dish in ") || !strings.Contains(first, "; asked 1 shard [") {
		t.Errorf("search --radius 100m: exit %d, first line %q; want 1 dish and 1 shard\n%s", code, first, errb.String())
	}
}

// TestEnvironment: GEOSHARD_OPENSEARCH, GEOSHARD_ALIAS and
// GEOSHARD_SEARCH_SIZE set their flags; the command line wins.
func TestEnvironment(t *testing.T) {
	url, _ := seed(t)
	env := envOf(map[string]string{"GEOSHARD_OPENSEARCH": url, "GEOSHARD_ALIAS": "menu", "GEOSHARD_SEARCH_SIZE": "1"})
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--rect", "37.7,-122.5,37.85,-122.3", "--json"}, env, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var p struct {
		Dishes []any   `json:"dishes"`
		Next   *string `json:"next"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil || len(p.Dishes) != 1 || p.Next == nil {
		t.Errorf("GEOSHARD_SEARCH_SIZE=1: %v %s; want one dish and a next page", err, out.String())
	}
	errb.Reset()
	env = envOf(map[string]string{"GEOSHARD_OPENSEARCH": url, "GEOSHARD_ALIAS": "nope"})
	if code := run(context.Background(), []string{"--alias", "menu", "--query", "pizza"}, env, &out, &errb); code != 0 {
		t.Errorf("--alias menu over GEOSHARD_ALIAS=nope: exit %d, %s", code, errb.String())
	}
}
