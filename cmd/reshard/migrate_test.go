package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// smallMap writes a level-10 map of the shards starting at starts (the
// first must be 000001) and returns its path.
func smallMap(t *testing.T, dir, name string, starts ...string) (string, *router.Map) {
	t.Helper()
	shards := make([]router.Shard, len(starts))
	for i, s := range starts {
		n := router.ShardName(i)
		shards[i] = router.Shard{Name: n, Start: s, Routing: router.RoutingKey(n, i, len(starts), len(starts))}
	}
	m, err := router.New(10, 0, shards)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := m.MarshalJSON()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, m
}

// places are restaurants across the US: each with two dishes.
var places = []struct {
	id       string
	lat, lng float64
}{
	{"r1", 37.7749, -122.4194}, {"r2", 40.7128, -74.0060}, {"r3", 29.7604, -95.3698},
	{"r4", 41.8781, -87.6298}, {"r5", 47.6062, -122.3321}, {"r6", 25.7617, -80.1918},
	{"r7", 39.7392, -104.9903}, {"r8", 33.4484, -112.0740},
}

// seedMenu writes the places' restaurants and dishes into index under m.
func seedMenu(t *testing.T, url, index string, m *router.Map) int {
	t.Helper()
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	w, _ := bulk.New(client, bulk.Config{OnResult: func(r bulk.Result) {
		if r.Outcome != bulk.OK {
			failed++
		}
	}})
	ctx := context.Background()
	n := 0
	for _, p := range places {
		cell, _ := m.Cell(p.lat, p.lng)
		s := m.Shard(m.LocateCell(cell))
		tok := cell.ToToken()
		add := func(id string, body string) {
			w.Add(ctx, bulk.Item{Action: bulk.Index, Index: index, ID: id, Routing: s.Routing, Version: 3, VersionType: bulk.External, Body: []byte(body)})
			n++
		}
		add(schema.RestaurantID(p.id), fmt.Sprintf(`{"relation":"restaurant","geo_cell":%q,"version":3,"doc_id":%q,"location":{"lat":%g,"lon":%g}}`,
			tok, schema.RestaurantID(p.id), p.lat, p.lng))
		for k := range 2 {
			id := schema.DishID(fmt.Sprintf("%s-%d", p.id, k))
			add(id, fmt.Sprintf(`{"relation":{"name":"dish","parent":%q},"geo_cell":%q,"version":3,"doc_id":%q,"restaurant_id":%q}`,
				schema.RestaurantID(p.id), tok, id, p.id))
		}
	}
	w.Close(ctx)
	if failed > 0 {
		t.Fatalf("%d seed writes failed", failed)
	}
	return n
}

// fixClock makes the migration verbs' clock read a fixed time.
func fixClock(t *testing.T) {
	t.Helper()
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	now = func() time.Time { return at }
	t.Cleanup(func() { now = time.Now })
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("reshard %s: exit %d\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout
}

// The whole migration through the verbs, with the dry runs of cutover
// and rollback golden-tested.
func TestMigrationVerbs(t *testing.T) {
	fixClock(t)
	srvURL := openSearch(t)
	dir := t.TempDir()
	oldMap, src := smallMap(t, dir, "old.json", "000001", "864a23", "89c25d")
	newMap, dst := smallMap(t, dir, "new.json", "000001", "80e823", "875301", "89bfd1")
	conn := []string{"--opensearch", srvURL, "--log-level", "warn"}
	with := func(args ...string) []string { return append(args, conn...) }

	// Replicas 0, not auto: the golden dry runs must not depend on how
	// many nodes the cluster has (auto picks 0 on the one-node real node).
	mustRun(t, "init", "--map", oldMap, "--index", "menu-v1", "--replicas", "0", "--opensearch", srvURL)
	docs := seedMenu(t, srvURL, "menu-v1", src)

	out := mustRun(t, with("create", "--map", newMap)...)
	if !strings.Contains(out, "migration menu-v2@20260301T120000Z of alias menu: phase created") {
		t.Errorf("create:\n%s", out)
	}
	out = mustRun(t, with("dual-writes", "--ack-timeout", "1s")...)
	if !strings.Contains(out, "no live ingest instance") {
		t.Errorf("dual-writes:\n%s", out)
	}
	out = mustRun(t, with("backfill", "--page", "5", "--json")...)
	var bf struct{ Read, Docs int64 }
	if err := json.Unmarshal([]byte(out), &bf); err != nil || bf.Read != int64(docs) || bf.Docs != int64(docs) {
		t.Errorf("backfill --json = %s (%v), want %d documents read", out, err, docs)
	}
	out = mustRun(t, with("verify", "--json", "--ids")...)
	var rows []map[string]any
	if err := json.Unmarshal([]byte(out), &rows); err != nil || len(rows) != dst.NumShards() {
		t.Fatalf("verify --json = %s (%v)", out, err)
	}
	var total float64
	for i, r := range rows {
		keys := make([]string, 0, len(r))
		for k := range r {
			keys = append(keys, k)
		}
		if len(keys) != 9 || r["shard"] != dst.Shard(i).Name || r["ok"] != true || r["source"] != r["target"] || r["source_duplicates"] != 0.0 {
			t.Errorf("verify --json row %d = %v, want exactly shard, source, target, out_of_range, missing, extra, source_duplicates, target_duplicates, ok", i, r)
		}
		total += r["source"].(float64)
	}
	if int(total) != docs {
		t.Errorf("verify: %v source documents over the ranges, want %d", total, docs)
	}

	if out := mustRun(t, with("repair")...); !strings.Contains(out, "repair: copied 0 documents") {
		t.Errorf("repair after a passing verification:\n%s", out)
	}
	golden(t, "cutover-dry-run.txt", mustRun(t, with("cutover", "--dry-run")...))
	if out := mustRun(t, with("cutover", "--dry-run", "--verbose")...); !strings.Contains(out, `"phase": "cut_over"`) || !strings.Contains(out, `"backfill"`) {
		t.Errorf("cutover --dry-run --verbose does not print the state document:\n%.400s", out)
	}
	out = mustRun(t, with("cutover")...)
	if !strings.Contains(out, "alias menu is on menu-v2; phase cut_over") {
		t.Errorf("cutover:\n%s", out)
	}
	golden(t, "rollback-dry-run.txt", mustRun(t, with("rollback", "--dry-run")...))
	mustRun(t, with("rollback")...)

	out = mustRun(t, with("status", "--json")...)
	var st struct {
		Migration schema.Migration
		Instances []any
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Migration.Phase != schema.PhaseRolledBack || st.Migration.Verification == nil {
		t.Errorf("status --json = %s (%v)", out, err)
	}
	out = mustRun(t, with("status")...)
	for _, want := range []string{"phase rolled_back", "3 of 3 slices done", "verification (counts and ids)", "ingest instances: no heartbeat",
		"next: reshard verify (or cancel) --alias menu"} {
		if !strings.Contains(out, want) {
			t.Errorf("status does not say %q:\n%s", want, out)
		}
	}
	// Cutover again needs a new verification: run does it.
	out = mustRun(t, with("run", "--map", newMap, "--pause", "10ms")...)
	if !strings.Contains(out, "== verify (from phase rolled_back)") || !strings.Contains(out, "== cutover (from phase verified)") || !strings.Contains(out, "phase cut_over") {
		t.Errorf("run after rollback:\n%s", out)
	}
	out = mustRun(t, with("complete", "--delete-old")...)
	if !strings.Contains(out, "completed: alias menu on menu-v2; old index menu-v1 deleted") {
		t.Errorf("complete:\n%s", out)
	}
	// A cancel now is refused, exit 1.
	if code, _, stderr := runCLI(t, with("cancel")...); code != 1 || !strings.Contains(stderr, "phase completed") {
		t.Errorf("cancel after complete: exit %d, %s", code, stderr)
	}
}

func TestDualWritesNamesLaggards(t *testing.T) {
	fixClock(t)
	srvURL := openSearch(t)
	dir := t.TempDir()
	oldMap, _ := smallMap(t, dir, "old.json", "000001", "864a23")
	newMap, _ := smallMap(t, dir, "new.json", "000001", "80e823", "89bfd1")
	mustRun(t, "init", "--map", oldMap, "--index", "menu-v1", "--opensearch", srvURL)
	mustRun(t, "create", "--map", newMap, "--opensearch", srvURL)
	client, _ := bulk.NewClient(bulk.ClientConfig{Addresses: []string{srvURL}})
	admin := bulk.NewAdmin(client)
	for _, name := range []string{"ingest-0", "ingest-1"} {
		// Live (the verbs' clock reads the heartbeat's time) and on no
		// migration.
		body, _ := json.Marshal(schema.Heartbeat{Alias: "menu", Instance: name, At: now()})
		if _, err := admin.IndexDoc(context.Background(), schema.MigrationsIndex, schema.HeartbeatDocID("menu", name), body, bulk.DocOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	code, stdout, stderr := runCLI(t, "dual-writes", "--ack-timeout", "200ms", "--opensearch", srvURL, "--log-level", "error")
	if code != 1 || !strings.Contains(stderr, "did not apply dual writes in time: ingest-0, ingest-1") || !strings.Contains(stdout, "not acknowledged by: ingest-0, ingest-1") {
		t.Errorf("dual-writes with laggards: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}

func TestPlanFromIndex(t *testing.T) {
	srvURL := openSearch(t)
	dir := t.TempDir()
	oldMap, src := smallMap(t, dir, "old.json", "000001", "864a23", "89c25d")
	mustRun(t, "init", "--map", oldMap, "--index", "menu-v1", "--opensearch", srvURL)
	docs := seedMenu(t, srvURL, "menu-v1", src)
	client, _ := bulk.NewClient(bulk.ClientConfig{Addresses: []string{srvURL}})
	bulk.NewAdmin(client).Refresh(context.Background(), "menu")

	out := filepath.Join(dir, "planned.json")
	stdout := mustRun(t, "plan", "--from-index", "menu", "--shards", "4", "--min-shards", "1", "--max-imbalance", "0.9", "--opensearch", srvURL, "--json", "--out", out)
	var rep struct {
		Docs int64
		Diff struct {
			OldShards int      `json:"old_shards"`
			NewShards int      `json:"new_shards"`
			Added     []string `json:"added"`
			Removed   []string `json:"removed"`
			Docs      int64    `json:"docs"`
			Moved     int64    `json:"moved"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Docs != int64(docs) || rep.Diff.OldShards != 3 || rep.Diff.NewShards != 4 || rep.Diff.Docs != int64(docs) ||
		!reflect.DeepEqual(rep.Diff.Added, []string{"delta"}) || len(rep.Diff.Removed) != 0 || rep.Diff.Moved <= 0 {
		t.Errorf("plan --from-index --json = %s", stdout)
	}
	text := mustRun(t, "plan", "--from-index", "menu", "--shards", "4", "--min-shards", "1", "--max-imbalance", "0.9", "--opensearch", srvURL)
	for _, want := range []string{"loads: index menu (menu-v1, map " + src.ShortHash(), "diff against the live map", "added (1): delta", "documents that change shard"} {
		if !strings.Contains(text, want) {
			t.Errorf("plan --from-index does not say %q:\n%s", want, text)
		}
	}
	for _, args := range [][]string{
		{"plan", "--from-index", "menu", "--loads", usLoads},
		{"plan", "--from-index", "menu", "--level", "12", "--opensearch", srvURL},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 {
			t.Errorf("reshard %v: exit %d (%s), want 2", args, code, stderr)
		}
	}
}

func TestMigrationVerbsBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"create"},
		{"create", "--map", exampleMap, "--replicas", "-2"},
		{"backfill", "--page", "0"},
		{"backfill", "--page", "20000"},
		{"backfill", "--slices", "-1"},
		{"backfill", "--lease", "100ms"},
		{"verify", "--attempts", "-1"},
		{"cutover", "--health-timeout", "0s"},
		{"dual-writes", "--ack-timeout", "0s"},
		{"run"},
		{"status", "--opensearch", "ftp://x"},
		{"create", "--map", "x.json", "--target", "BAD_NAME"},
		{"run", "--map", "x.json", "--target", "menu v2"},
		{"cancel", "extra"},
	} {
		if code, _, stderr := runCLI(t, args...); code != 2 {
			t.Errorf("reshard %v: exit %d (%s), want 2", args, code, stderr)
		}
	}
	if code, _, stderr := runCLI(t, "create", "--map", "x.json", "--target", "BAD_NAME"); code != 2 || !strings.Contains(stderr, `--target: index name "BAD_NAME": must be lowercase`) {
		t.Errorf("create --target BAD_NAME: exit %d, %s; want 2 and the rule", code, stderr)
	}
	// An alias that exists with no migration recorded: status says so and
	// exits 0 (with the metrics served meanwhile, and stopped).
	srvURL := openSearch(t)
	oldMap, _ := smallMap(t, t.TempDir(), "old.json", "000001", "864a23")
	mustRun(t, "init", "--map", oldMap, "--index", "menu-v1", "--opensearch", srvURL)
	if code, stdout, stderr := runCLI(t, "status", "--opensearch", srvURL, "--metrics-addr", "127.0.0.1:0"); code != 0 || !strings.Contains(stdout, "no migration is recorded for alias menu") {
		t.Errorf("status without a migration: exit %d, stdout %q, stderr %q; want 0 and the alias named", code, stdout, stderr)
	}
	if code, stdout, _ := runCLI(t, "status", "--opensearch", srvURL, "--json"); code != 0 || !strings.Contains(stdout, `"migration": null`) {
		t.Errorf("status --json without a migration: exit %d, %s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "status", "--opensearch", srvURL, "--metrics-addr", "no-such-host:x"); code != 2 {
		t.Errorf("status --metrics-addr no-such-host:x: exit %d (%s), want 2", code, stderr)
	}
	for _, v := range []string{"create", "dual-writes", "backfill", "verify", "repair", "cutover", "rollback", "complete", "cancel", "run", "status"} {
		code, stdout, _ := runCLI(t, v, "--help")
		if code != 0 || !strings.Contains(stdout, "usage: reshard "+v) || !strings.Contains(stdout, "-alias") || !strings.Contains(stdout, "-opensearch") {
			t.Errorf("reshard %s --help: exit %d, output %q", v, code, stdout)
		}
	}
}
