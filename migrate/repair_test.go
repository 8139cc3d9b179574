package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/golang/geo/s2"
	"github.com/opensearch-project/opensearch-go/v4"

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

// A repair's dry run is the requests the repair sends: it prints them,
// sends nothing but reads, and leaves the target and the migration as
// they were; the repair that follows sends exactly the printed requests.
func TestRepairDryRunIsItsRequests(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 40)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	// One document in the source only (its write to the target was lost),
	// one in the target only (its delete from the target was lost).
	at := e.docs.all()[0]
	lost := &testDoc{ID: "restaurant:dry-lost", Relation: schema.RelationRestaurant, Rest: "dry-lost", Lat: at.Lat, Lng: at.Lng, Version: 1}
	ghost := &testDoc{ID: "restaurant:dry-ghost", Relation: schema.RelationRestaurant, Rest: "dry-ghost", Lat: at.Lat, Lng: at.Lng, Version: 1}
	if err := e.writeItems(ctx, docItem(e.v1, e.src, lost), docItem(e.v2, e.dst, ghost)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1}); !errors.Is(err, ErrMismatch) {
		t.Fatalf("verify --ids of the damaged target = %v, want ErrMismatch", err)
	}
	rec := &recorder{next: http.DefaultTransport}
	client, err := opensearch.NewClient(opensearch.Config{Addresses: []string{e.url}, Transport: rec, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(client, Config{Alias: e.alias})
	if err != nil {
		t.Fatal(err)
	}
	before, err := e.m.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	target := e.stored(ctx, e.v2, e.dst.NumShards())

	var dry strings.Builder
	rep, err := m.Repair(ctx, RepairConfig{DryRun: &dry})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Copied != 1 || rep.Deleted != 1 || !strings.Contains(dry.String(), "copy "+lost.ID) || !strings.Contains(dry.String(), "delete "+ghost.ID) {
		t.Errorf("dry run %+v:\n%s\nwant %s copied and %s deleted", rep, dry.String(), lost.ID, ghost.ID)
	}
	for _, r := range rec.take() {
		if !isRead(r) {
			t.Errorf("the dry run sent %s %s", r.Method, r.Path)
		}
	}
	if err := e.admin.Refresh(ctx, e.v2); err != nil {
		t.Fatal(err)
	}
	if after := e.stored(ctx, e.v2, e.dst.NumShards()); !reflect.DeepEqual(after, target) {
		t.Errorf("the dry run changed the target: %d documents, %d before", len(after), len(target))
	}
	if after, err := e.m.Load(ctx); err != nil || !reflect.DeepEqual(after, before) {
		t.Errorf("the dry run changed the migration: %+v (%v), was %+v", after, err, before)
	}
	printed := regexp.MustCompile(`\n# \d+\n`).Split(dry.String(), -1)[1:]
	if len(printed) != 2 {
		t.Fatalf("the dry run prints %d requests, want 2 (the copy, then the delete):\n%s", len(printed), dry.String())
	}

	if rep, err = m.Repair(ctx, RepairConfig{}); err != nil || rep.Copied != 1 || rep.Deleted != 1 {
		t.Fatalf("repair = %+v, %v; want 1 copied and 1 deleted", rep, err)
	}
	var sent []string
	for _, r := range rec.take() {
		if r.Method == http.MethodPost && r.Path == "/_bulk" {
			sent = append(sent, r.String())
		}
	}
	if !reflect.DeepEqual(sent, printed) {
		t.Errorf("the repair sent\n%q\nits dry run printed\n%q", sent, printed)
	}
	if _, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1}); err != nil {
		t.Errorf("verify --ids after repair = %v", err)
	}
}

// recorder passes requests on to next and keeps each, as a bulk.Request.
type recorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	reqs []bulk.Request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	r.mu.Lock()
	r.reqs = append(r.reqs, bulk.Request{Method: req.Method, Path: req.URL.RequestURI(), Body: body})
	r.mu.Unlock()
	return r.next.RoundTrip(req)
}

// take returns the requests recorded since the last take.
func (r *recorder) take() []bulk.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.reqs
	r.reqs = nil
	return out
}

// isRead reports a request that changes no document, setting or alias.
func isRead(r bulk.Request) bool {
	path, _, _ := strings.Cut(r.Path, "?")
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost:
		return strings.HasSuffix(path, "/_search") || strings.HasSuffix(path, "/_refresh") || strings.HasSuffix(path, "/_count")
	}
	return false
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
