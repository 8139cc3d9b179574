package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// TestRepair: a target with a document missing, a second copy of one on
// a shard it does not belong on, and a document the source does not have
// fails verify --ids; repair --dry-run says what it would do and changes
// nothing; repair copies the missing one and deletes the two extra
// copies, clears the verification, and the next verify --ids passes.
func TestRepair(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 60)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	stored := e.stored(ctx, e.v2, e.dst.NumShards())
	ids := make([]string, 0, len(stored))
	for id := range stored {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var rests []string
	for _, id := range ids {
		if strings.HasPrefix(id, "restaurant:") {
			rests = append(rests, id)
		}
	}
	twice := rests[len(rests)/2]
	tw := stored[twice]
	other := (tw.Shard + 1) % e.dst.NumShards()
	body := func(index, id string) []byte {
		q, _ := json.Marshal(map[string]any{"query": map[string]any{"ids": map[string]any{"values": []string{id}}}})
		pg, err := e.admin.Search(ctx, index, q, bulk.SearchParams{})
		if err != nil || len(pg.Hits) != 1 {
			t.Fatalf("read %s: %v, %d hits", id, err, len(pg.Hits))
		}
		return pg.Hits[0].Source
	}
	// rename gives a body another doc_id (what verify compares).
	rename := func(b []byte, from, to string) []byte {
		out := bytes.ReplaceAll(b, []byte(`"`+from+`"`), []byte(`"`+to+`"`))
		if bytes.Equal(out, b) {
			t.Fatalf("no %q in %s", from, b)
		}
		return out
	}
	// In the source only, as if its dual write to the target was lost.
	const missing = "restaurant:lost"
	lost := rename(body(e.v1, twice), twice, missing)
	lostShard := e.src.Shard(e.src.LocateCell(cellOf(t, lost, e.src.Level())))
	if err := e.writeItems(ctx, bulk.Item{Action: bulk.Index, Index: e.v1, ID: missing, Routing: lostShard.Routing, Body: lost, Version: 1, VersionType: bulk.External, Shard: "s"}); err != nil {
		t.Fatal(err)
	}
	ghost := rename(body(e.v2, twice), twice, "restaurant:ghost")
	err := e.writeItems(ctx,
		bulk.Item{Action: bulk.Index, Index: e.v2, ID: twice, Routing: e.dst.Shard(other).Routing, Body: body(e.v2, twice), Shard: "s"},
		bulk.Item{Action: bulk.Index, Index: e.v2, ID: "restaurant:ghost", Routing: e.dst.Shard(other).Routing, Body: ghost, Shard: "s"},
	)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1}); !errors.Is(err, ErrMismatch) {
		t.Fatalf("verify --ids of the damaged target = %v, want ErrMismatch", err)
	}

	var dry strings.Builder
	rep, err := e.m.Repair(ctx, RepairConfig{DryRun: &dry})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied < 1 || rep.Deleted != 2 || !strings.Contains(dry.String(), "copy "+missing) || !strings.Contains(dry.String(), "delete restaurant:ghost") {
		t.Errorf("dry run %+v:\n%s\nwant %s copied and two deletes", rep, dry.String(), missing)
	}
	if mig, _ := e.m.Load(ctx); mig.Verification == nil {
		t.Error("the dry run cleared the verification")
	}

	rep, err = e.m.Repair(ctx, RepairConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied != 1 || rep.Stale != 1 || rep.Deleted != 2 || rep.Changed != 0 || rep.Blocked != 0 || rep.Unlisted != 0 {
		t.Errorf("repair %+v: want the missing document copied, the twice-stored one stale where it belongs, and two extra copies deleted", rep)
	}
	mig, err := e.m.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if mig.Verification != nil || mig.Phase != schema.PhaseBackfilled {
		t.Errorf("after repair: phase %s, verification %v; want backfilled and none (cutover needs a new one)", mig.Phase, mig.Verification != nil)
	}
	if _, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1}); err != nil {
		t.Errorf("verify --ids after repair = %v", err)
	}
	// A passing verification leaves nothing to repair, and stands.
	if rep, err := e.m.Repair(ctx, RepairConfig{}); err != nil || rep.Copied+rep.Deleted != 0 {
		t.Errorf("repair after a passing verification: %+v, %v; want nothing done", rep, err)
	}
	if mig, _ := e.m.Load(ctx); mig.Phase != schema.PhaseVerified || mig.Verification == nil {
		t.Errorf("after a repair with nothing to do: phase %s; want verified, its verification kept", mig.Phase)
	}
	// Without ids, there is nothing to act on.
	if _, err := e.m.Verify(ctx, VerifyConfig{Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Repair(ctx, RepairConfig{}); err == nil || !strings.Contains(err.Error(), "no verification with ids") {
		t.Errorf("repair after a verification without ids = %v, want it refused", err)
	}
}

// cellOf reads a document body's geo_cell at level.
func cellOf(t *testing.T, body []byte, level int) s2.CellID {
	t.Helper()
	var f copyFields
	if err := json.Unmarshal(body, &f); err != nil {
		t.Fatal(err)
	}
	c, err := router.ParseCellAt(f.GeoCell, level)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
