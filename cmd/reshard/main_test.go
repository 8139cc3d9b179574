package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

const (
	usLoads    = "../../testdata/loads/us.csv"
	usHeld     = "../../testdata/loads/us-heldout.csv"
	usQueries  = "../../testdata/queries/us-heldout.csv"
	exampleMap = "../../testdata/maps/us-18.json"
)

func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func TestPlanReportGolden(t *testing.T) {
	out := filepath.Join(t.TempDir(), "map.json")
	code, stdout, stderr := runCLI(t, "plan", "--loads", usLoads, "--shards", "18", "--out", out)
	if code != 0 {
		t.Fatalf("plan exit %d: %s", code, stderr)
	}
	golden(t, "plan-us-18.txt", strings.ReplaceAll(stdout, out, "MAP.json"))

	// The map written is the committed example map, byte for byte.
	got, _ := os.ReadFile(out)
	want, _ := os.ReadFile(exampleMap)
	if !bytes.Equal(got, want) {
		t.Errorf("plan --out wrote a map that differs from %s", exampleMap)
	}

	code, stdout, stderr = runCLI(t, "plan", "--loads", usLoads, "--shards", "18", "--json")
	if code != 0 {
		t.Fatalf("plan --json exit %d: %s", code, stderr)
	}
	golden(t, "plan-us-18.json", stdout)
	var rep struct {
		Plan     metricsJSON
		Shards   []shardJSON
		Compared []metricsJSON
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Plan.Shards != 18 || len(rep.Shards) != 18 || len(rep.Compared) != 1 || rep.Compared[0].Strategy != "greedy" {
		t.Errorf("plan --json = %+v, want 18 shards and a greedy comparison", rep)
	}
}

func TestRouteAndCover(t *testing.T) {
	code, stdout, stderr := runCLI(t, "route", "--map", exampleMap, "--lat", "37.7749", "--lng", "-122.4194", "--json")
	if code != 0 {
		t.Fatalf("route exit %d: %s", code, stderr)
	}
	var r struct{ Shard, Cell, Routing string }
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.Cell != "808581" || r.Shard == "" || !strings.HasPrefix(r.Routing, r.Shard) {
		t.Errorf("route(San Francisco) = %+v, want cell 808581 and a routing key derived from the shard name", r)
	}

	cases := []struct {
		lat, lng, radius string
		cells            int
	}{
		{"37.7749", "-122.4194", "25mi", 98},
		{"37.7749", "-122.4194", "15mi", 40},
		{"40.7128", "-74.0060", "15mi", 38},
		{"37.3382", "-121.8863", "24.14016km", 38},
	}
	for _, tc := range cases {
		code, stdout, stderr := runCLI(t, "cover", "--map", exampleMap, "--lat", tc.lat, "--lng", tc.lng, "--radius", tc.radius, "--json")
		if code != 0 {
			t.Fatalf("cover exit %d: %s", code, stderr)
		}
		var c struct {
			Cells   int
			Shards  []string
			Routing string
		}
		if err := json.Unmarshal([]byte(stdout), &c); err != nil {
			t.Fatal(err)
		}
		if c.Cells != tc.cells || len(c.Shards) == 0 || len(strings.Split(c.Routing, ",")) != len(c.Shards) {
			t.Errorf("cover(%s, %s, %s) = %+v, want %d cells and one routing key per shard", tc.lat, tc.lng, tc.radius, c, tc.cells)
		}
	}
	// San Francisco's 15-mile circle is one shard under the example map:
	// the plan put no boundary through the Bay Area.
	_, stdout, _ = runCLI(t, "cover", "--map", exampleMap, "--lat", "37.7749", "--lng", "-122.4194", "--radius", "15mi")
	golden(t, "cover-sf-15mi.txt", stdout)
}

func TestEval(t *testing.T) {
	code, stdout, stderr := runCLI(t, "eval", "--map", exampleMap, "--loads", usHeld, "--queries", usQueries, "--json")
	if code != 0 {
		t.Fatalf("eval exit %d: %s", code, stderr)
	}
	var e struct {
		Shards                  int
		CV, Fanout, MaxOverMean float64
		Queries                 int
	}
	if err := json.Unmarshal([]byte(stdout), &e); err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	json.Unmarshal([]byte(stdout), &raw)
	if e.Shards != 18 || e.Queries != 20000 || e.Fanout < 1 || e.Fanout > 3 || raw["max_over_mean"] == nil || raw["cv"] == nil {
		t.Errorf("eval = %s, want 18 shards, 20000 queries, fan-out in [1, 3], cv and max_over_mean", stdout)
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	badRow := write("bad-row.csv", "cell,docs\n808581,10\n808583,ten\n")
	badToken := write("bad-token.csv", "cell,docs\n808581,10\nzz,3\n")
	badLevel := write("bad-level.csv", "cell,docs\n808584,10\n")
	badHeader := write("bad-header.csv", "token,count\n808581,10\n")
	badQuery := write("bad-query.csv", "lat,lng,radius_m\n37.7,-122.4,1000\nNaN,1,1000\n")
	badMap := write("bad-map.json", `{"version":1,"level":10,"number_of_shards":1,"shards":[{"name":"ares","start":"000003","routing":"ares"}]}`)

	cases := []struct {
		name string
		args []string
		want string
	}{
		{"no verb", nil, "usage"},
		{"unknown verb", []string{"frobnicate"}, `unknown verb "frobnicate"`},
		{"missing loads flag", []string{"plan"}, "missing --loads"},
		{"both loads and index", []string{"plan", "--loads", "x.csv", "--from-index", "menu"}, "--loads and --from-index both given"},
		{"missing file", []string{"plan", "--loads", filepath.Join(dir, "nope.csv")}, "no such file"},
		{"malformed row", []string{"plan", "--loads", badRow}, "line 3: docs \"ten\""},
		{"invalid token", []string{"plan", "--loads", badToken}, `line 3: cell "zz"`},
		{"wrong level", []string{"plan", "--loads", badLevel}, "level 9, want level 10"},
		{"bad header", []string{"plan", "--loads", badHeader}, `line 1: header "token,count"`},
		{"NaN in queries", []string{"plan", "--loads", usLoads, "--queries", badQuery}, "line 3"},
		{"bad strategy", []string{"plan", "--loads", usLoads, "--strategy", "best"}, `strategy "best"`},
		{"bad imbalance", []string{"plan", "--loads", usLoads, "--max-imbalance", "1.5"}, "max-imbalance 1.5"},
		{"bad rns", []string{"plan", "--loads", usLoads, "--shards", "18", "--routing-num-shards", "20"}, "want a multiple of the shard count"},
		{"bad flag value", []string{"plan", "--loads", usLoads, "--shards", "many"}, `invalid value "many"`},
		{"stray argument", []string{"route", "--map", exampleMap, "extra"}, `unexpected argument "extra"`},
		{"bad map", []string{"route", "--map", badMap, "--lat", "1", "--lng", "1"}, "first shard must start"},
		{"NaN latitude", []string{"route", "--map", exampleMap, "--lat", "NaN", "--lng", "1"}, "coordinate out of range"},
		{"latitude out of range", []string{"route", "--map", exampleMap, "--lat", "91", "--lng", "1"}, "coordinate out of range"},
		{"bad unit", []string{"cover", "--map", exampleMap, "--lat", "1", "--lng", "1", "--radius", "25 furlongs"}, "want a number and a unit"},
		{"bare radius", []string{"cover", "--map", exampleMap, "--lat", "1", "--lng", "1", "--radius", "25"}, "want a number and a unit"},
		{"missing cover flags", []string{"cover", "--map", exampleMap}, "missing --lat, --lng, --radius"},
		{"eval level mismatch", []string{"eval", "--map", exampleMap, "--loads", badLevel}, "level 9, want level 10"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args...)
			if code != 2 {
				t.Errorf("reshard %v exit %d, want 2 (stderr %q)", tc.args, code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("reshard %v stderr = %q, want it to contain %q", tc.args, stderr, tc.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, v := range []string{"plan", "route", "cover", "eval"} {
		code, stdout, _ := runCLI(t, v, "--help")
		if code != 0 || !strings.Contains(stdout, "usage: reshard "+v) || !strings.Contains(stdout, "-json") {
			t.Errorf("reshard %s --help: exit %d, output %q", v, code, stdout)
		}
	}
	// Asked for, the usage goes to stdout, once; with no verb, to stderr
	// with exit 2.
	code, stdout, stderr := runCLI(t, "--help")
	if code != 0 || !strings.Contains(stdout, "plan") || !strings.Contains(stdout, "cover") || stderr != "" {
		t.Errorf("reshard --help: exit %d, stdout %q, stderr %q; want 0 and the verbs on stdout", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI(t, "plan", "--help"); code != 0 || strings.Count(stdout, "usage: reshard plan") != 1 {
		t.Errorf("reshard plan --help: exit %d, the usage %d times, want once", code, strings.Count(stdout, "usage: reshard plan"))
	}
	if code, _, stderr := runCLI(t); code != 2 || !strings.Contains(stderr, "usage: reshard") {
		t.Errorf("reshard: exit %d, stderr %q; want 2 and the usage", code, stderr)
	}
}

// A GEOSHARD_* variable its flag refuses stops the verb at start with
// exit 2, naming the variable, rather than falling back to the default.
func TestBadEnvironmentExit2(t *testing.T) {
	t.Setenv("GEOSHARD_OPENSEARCH_INSECURE", "yes")
	code, _, stderr := runCLI(t, "status")
	if code != 2 || !strings.Contains(stderr, `GEOSHARD_OPENSEARCH_INSECURE="yes": not a valid value for --opensearch-insecure`) {
		t.Errorf("reshard status with GEOSHARD_OPENSEARCH_INSECURE=yes: exit %d, stderr %q; want 2 naming the variable", code, stderr)
	}
}

// A shard count held to a bound says so, rather than clamping silently.
func TestPlanSaysWhenTheShardCountIsHeld(t *testing.T) {
	code, stdout, stderr := runCLI(t, "plan", "--loads", "../../testdata/loads/world.csv", "--strategy", "greedy")
	if code != 0 {
		t.Fatalf("plan world: exit %d, %s", code, stderr)
	}
	if !strings.Contains(stdout, "shards: 429,907,088 docs would take 135 shards at the target of 3,200,000 per shard; held to --max-shards 36") {
		t.Errorf("plan of the world fixture does not say its count is held:\n%.600s", stdout)
	}
}
