package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/migrate"
)

// tightDisk is an emulator whose three data nodes each have 100 GiB, 10
// GiB of it available: exactly what the default high watermark, 90%,
// keeps free, so nothing is usable. Emulator only: a real node's disk
// cannot be set.
func tightDisk(t *testing.T) string {
	t.Helper()
	if realenv.Enabled() {
		t.Skip("needs the emulator's disk figures")
	}
	full := osfake.NodeDisk{TotalBytes: 100 << 30, AvailableBytes: 10 << 30}
	srv := osfake.NewTestServer(osfake.Options{Disk: osfake.Disk{Nodes: []osfake.NodeDisk{full, full, full}}})
	t.Cleanup(srv.Close)
	return srv.URL
}

// create and run refuse a new index the data nodes have no room for,
// naming the numbers and the flag that overrides, and leave nothing
// behind; create --skip-disk-check creates it.
func TestCreateRefusesWithoutDisk(t *testing.T) {
	fixClock(t)
	url := tightDisk(t)
	dir := t.TempDir()
	oldMap, src := smallMap(t, dir, "old.json", "000001", "864a23", "89c25d")
	newMap, _ := smallMap(t, dir, "new.json", "000001", "80e823", "875301", "89bfd1")
	mustRun(t, "init", "--map", oldMap, "--index", "menu-v1", "--replicas", "1", "--opensearch", url)
	seedMenu(t, url, "menu-v1", src)

	for _, verb := range []string{"create", "run"} {
		code, stdout, stderr := runCLI(t, verb, "--map", newMap, "--opensearch", url, "--log-level", "warn")
		if code != 1 {
			t.Fatalf("reshard %s on full disks: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", verb, code, stdout, stderr)
		}
		for _, want := range []string{
			"not enough disk for menu-v2: does not fit: the new index needs ",
			"× (1 + 1 replica) × (1 + 20% headroom)",
			"the high watermark 90% keeps free",
			"osfake-0: 0 B usable = 10.0 GiB available - 10.0 GiB kept free, of 100.0 GiB",
			"Free disk on the data nodes, or add data nodes",
			"run again with --skip-disk-check",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("reshard %s on full disks: stderr\n%s\nwant it to contain %q", verb, stderr, want)
			}
		}
	}
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{url}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if ok, err := bulk.NewAdmin(client).IndexExists(ctx, "menu-v2"); ok || err != nil {
		t.Errorf("after the refusals, menu-v2 exists = %v, %v; want false", ok, err)
	}
	m, err := migrate.New(client, migrate.Config{Alias: "menu"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Load(ctx); !errors.Is(err, migrate.ErrNoMigration) {
		t.Errorf("after the refusals, the migration = %v, want none recorded", err)
	}

	code, stdout, stderr := runCLI(t, "create", "--map", newMap, "--skip-disk-check", "--opensearch", url)
	if code != 0 || !strings.Contains(stdout, "target menu-v2") || !strings.Contains(stderr, "disk check skipped") {
		t.Fatalf("reshard create --skip-disk-check: exit %d, want 0, menu-v2 created and the skip logged\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if ok, err := bulk.NewAdmin(client).IndexExists(ctx, "menu-v2"); !ok || err != nil {
		t.Errorf("after create --skip-disk-check, menu-v2 exists = %v, %v; want true", ok, err)
	}
}

// diskPlan is the disk member of plan --from-index --json.
type diskPlan struct {
	Disk struct {
		Index    string                `json:"source_index"`
		Estimate *migrate.DiskEstimate `json:"estimate"`
		Error    string                `json:"error"`
	} `json:"disk"`
}

// planDisk runs plan --from-index menu on url as text and as JSON, and
// returns the disk section of the text (from "disk:" to its verdict line)
// and the JSON's disk member.
func planDisk(t *testing.T, url string) (string, diskPlan) {
	t.Helper()
	base := []string{"plan", "--from-index", "menu", "--shards", "4", "--min-shards", "1", "--opensearch", url}
	text := mustRun(t, base...)
	var rep diskPlan
	if out := mustRun(t, append(base, "--json")...); json.Unmarshal([]byte(out), &rep) != nil || rep.Disk.Estimate == nil {
		t.Fatalf("plan --from-index --json: no disk estimate:\n%s", out)
	}
	_, section, ok := strings.Cut(text, "\ndisk: ")
	if !ok {
		t.Fatalf("plan --from-index: no disk section:\n%s", text)
	}
	section, _, _ = strings.Cut(section, "\n\nverdict: ")
	return "disk: " + section, rep
}

// plan --from-index estimates the disk a migration to the plan needs; a
// small index fits (on the emulator, or with -tags realcluster the real
// node).
func TestPlanFromIndexDiskFits(t *testing.T) {
	url := openSearch(t)
	_, m := smallMap(t, t.TempDir(), "old.json", "000001", "864a23", "89c25d")
	initMenu(t, url, m, []int{3, 3, 3, 3, 3, 3, 3, 3})
	text, rep := planDisk(t, url)
	e := rep.Disk.Estimate
	if !e.Fits || rep.Disk.Index != "menu-v1" || e.SourcePrimaryBytes <= 0 || e.Shards != 4 || len(e.Nodes) == 0 {
		t.Errorf("plan --json disk = %+v, want a copy of menu-v1 with its bytes in 4 shards, fitting", rep.Disk)
	}
	if !strings.HasSuffix(text, "\n"+e.Verdict) || !strings.HasPrefix(e.Verdict, "fits: ") {
		t.Errorf("plan --from-index disk section:\n%s\nwant the verdict line %q", text, e.Verdict)
	}
}

// On full disks, the plan says so; from a loads file it says nothing of
// disk.
func TestPlanFromIndexDiskDoesNotFit(t *testing.T) {
	url := tightDisk(t)
	_, m := smallMap(t, t.TempDir(), "old.json", "000001", "864a23", "89c25d")
	initMenu(t, url, m, []int{3, 3, 3, 3, 3, 3, 3, 3})
	text, rep := planDisk(t, url)
	if e := rep.Disk.Estimate; e.Fits || e.UsableBytes != 0 || !strings.HasSuffix(text, "\n"+e.Verdict) || !strings.HasPrefix(e.Verdict, "does not fit: ") {
		t.Errorf("plan --from-index on full disks:\n%s\nJSON %+v; want \"does not fit: …\"", text, e)
	}
	out := mustRun(t, "plan", "--loads", usLoads, "--shards", "18")
	if strings.Contains(out, "disk") || strings.Contains(out, "fits") {
		t.Errorf("plan --loads speaks of disk:\n%s", out)
	}
}
