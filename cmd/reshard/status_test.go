package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/schema"
)

// putHeartbeat writes an ingest instance's heartbeat as ingest would.
func putHeartbeat(t *testing.T, admin *bulk.Admin, hb schema.Heartbeat) {
	t.Helper()
	body, _ := json.Marshal(hb)
	if _, err := admin.IndexDoc(context.Background(), schema.MigrationsIndex, schema.HeartbeatDocID(hb.Alias, hb.Instance), body, bulk.DocOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Status says what each ingest instance is doing or waits for, since
// when, and how long a silent one has not been heard from (an older
// instance, with no state, still shows); and the backfill's figures in
// the words of its report, which it defines.
func TestStatusInstancesAndBackfillGolden(t *testing.T) {
	fixClock(t)
	srvURL := openSearch(t)
	dir := t.TempDir()
	oldMap, src := smallMap(t, dir, "old.json", "000001", "864a23", "89c25d")
	newMap, _ := smallMap(t, dir, "new.json", "000001", "80e823", "875301", "89bfd1")
	conn := []string{"--opensearch", srvURL, "--log-level", "warn"}
	with := func(args ...string) []string { return append(args, conn...) }
	mustRun(t, "init", "--map", oldMap, "--index", "menu-v1", "--replicas", "0", "--opensearch", srvURL)
	docs := seedMenu(t, srvURL, "menu-v1", src)
	mustRun(t, with("create", "--map", newMap)...)
	mustRun(t, with("dual-writes", "--ack-timeout", "1s")...)
	out := mustRun(t, with("backfill", "--page", "5")...)
	if want := fmt.Sprintf("backfill done: %d documents checkpointed: %d copied, 0 already newer in the target (stale)", docs, docs); !strings.Contains(out, want) {
		t.Errorf("backfill:\n%s\nwant %q", out, want)
	}

	client, _ := bulk.NewClient(bulk.ClientConfig{Addresses: []string{srvURL}})
	admin := bulk.NewAdmin(client)
	at := now()
	mig := "menu-v2@20260301T120000Z"
	for _, hb := range []schema.Heartbeat{
		{Instance: "ingest-0", MigrationID: mig, Applied: schema.PhaseBackfilled, At: at, State: schema.InstanceConsuming, Since: at.Add(-time.Hour)},
		{Instance: "ingest-1", MigrationID: mig, Applied: schema.PhaseBackfilled, At: at, State: schema.InstanceNoBroker,
			Since: at.Add(-90 * time.Second), Waiting: "dial tcp 10.0.0.7:9092: connect: connection refused"},
		{Instance: "ingest-2", MigrationID: mig, Applied: schema.PhaseDualWrites, At: at.Add(-312 * time.Second), State: schema.InstanceConsuming},
		{Instance: "ingest-3", MigrationID: mig, Applied: schema.PhaseBackfilled, At: at.Add(-5 * time.Second)},
		{Instance: "ingest-old", At: at.Add(-2 * time.Hour)},
	} {
		hb.Alias = "menu"
		putHeartbeat(t, admin, hb)
	}
	golden(t, "status-instances.txt", mustRun(t, with("status")...))

	var st struct {
		Backfill struct {
			Checkpointed, Copied, Stale int64
			Counted                     bool
		}
		Instances []struct {
			Instance, State, Waiting, Condition string
			Since                               time.Time
			Live                                bool
		}
	}
	js := mustRun(t, with("status", "--json")...)
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatal(err)
	}
	if b := st.Backfill; b.Checkpointed != int64(docs) || b.Copied != int64(docs) || b.Stale != 0 || !b.Counted {
		t.Errorf("status --json backfill = %+v, want %d checkpointed, all copied", b, docs)
	}
	if len(st.Instances) != 4 {
		t.Fatalf("status --json instances = %+v, want 4 (the 2-hour-old one left out)", st.Instances)
	}
	if in := st.Instances[1]; in.State != "cannot_reach_broker" || !in.Since.Equal(at.Add(-90*time.Second)) ||
		!strings.Contains(in.Condition, "waiting for the Kafka brokers since 2026-03-01T11:58:30Z") || in.Waiting == "" {
		t.Errorf("status --json ingest-1 = %+v, want what it waits for and since when", in)
	}
	if in := st.Instances[2]; in.Live || in.Condition != "not heard from for 312s (stopped, or cannot reach OpenSearch)" {
		t.Errorf("status --json ingest-2 = %+v, want not heard from for 312s", in)
	}
}

// Status names each slice's owner and its lease: until when it holds, or
// since when it has expired (the owner died; another worker takes the
// slice over).
func TestStatusShowsLeases(t *testing.T) {
	fixClock(t)
	at := now()
	m := &schema.Migration{Alias: "menu", ID: "menu-v2@20260301T110000Z", Phase: schema.PhaseBackfilling, Updated: at,
		Backfill: []schema.SliceState{
			{Slice: 0, SourceShard: 0, Docs: 1000, After: "dish:r1-0", Owner: "geoshard-reshard-backfill-0-x7k2p", LeaseUntil: at.Add(25 * time.Second), Claim: 1},
			{Slice: 1, SourceShard: 1, Docs: 2000, After: "dish:r9-2", Owner: "geoshard-reshard-backfill-1-q9d4m", LeaseUntil: at.Add(-12 * time.Second), Claim: 1},
			{Slice: 2, SourceShard: 2, Docs: 3000, After: "restaurant:r7", Done: true, Claim: 2},
			{Slice: 3, SourceShard: 3},
		}}
	tt := migrate.BackfillTotals{Checkpointed: 6000, Slices: 4, SlicesDone: 1}
	var out strings.Builder
	if err := writeStatus(&out, &migrate.Status{Alias: "menu", Migration: m, Backfill: &tt}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"  0      0             1,000         dish:r1-0      no    geoshard-reshard-backfill-0-x7k2p  until 2026-03-01T12:00:25Z\n",
		"  1      1             2,000         dish:r9-2      no    geoshard-reshard-backfill-1-q9d4m  expired 2026-03-01T11:59:48Z\n",
		"  2      2             3,000         restaurant:r7  yes   -                                  -\n",
		"  3      3             0             -              no    -                                  -\n",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("status:\n%s\nwant the line %q", out.String(), want)
		}
	}
}
