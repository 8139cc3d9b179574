package bulk

import (
	"context"
	"errors"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
)

func ptr[T any](v T) *T { return &v }

// BulkRequest is the NDJSON a dry run prints: one action line per item,
// and a source line for all but deletes, in order.
func TestBulkRequest(t *testing.T) {
	r, err := BulkRequest([]Item{
		{Action: Index, Index: "menu-v2", ID: "r1", Routing: "ares", Version: 3, VersionType: External, Body: []byte("{\n  \"k\": \"a\"\n}")},
		{Action: Delete, Index: "menu-v2", ID: "r2", Routing: "bravo", IfSeqNo: ptr(int64(12)), IfPrimaryTerm: ptr(int64(1))},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "POST /_bulk\n" +
		`{"index":{"_index":"menu-v2","_id":"r1","routing":"ares","version":3,"version_type":"external"}}` + "\n" +
		`{"k":"a"}` + "\n" +
		`{"delete":{"_index":"menu-v2","_id":"r2","routing":"bravo","if_seq_no":12,"if_primary_term":1}}` + "\n"
	if got := r.String(); got != want {
		t.Errorf("BulkRequest(...).String() = %q, want %q", got, want)
	}
	if _, err := BulkRequest(nil); err == nil {
		t.Errorf("BulkRequest(no items) succeeded")
	}
	if _, err := BulkRequest([]Item{{Action: Delete, Index: "m", ID: "1", IfSeqNo: ptr(int64(1))}}); err == nil {
		t.Errorf("BulkRequest(if_seq_no without if_primary_term) succeeded")
	}
}

// Bulk sends one request and reports each item as Classify decides: a
// copy under external versioning that is not newer is Stale, a delete of
// a missing document NotFound, a conditional delete of a document that
// changed since Permanent with status 409.
func TestAdminBulk(t *testing.T) {
	realenv.Parallel(t)
	e := newAdminEnv(t)
	a := e.a
	ctx := context.Background()
	index := e.index(t, "bulk")
	if err := a.CreateIndex(ctx, index, []byte(`{"settings":{"number_of_shards":2},"mappings":{"properties":{"k":{"type":"keyword"}}}}`)); err != nil {
		t.Fatal(err)
	}
	res, err := a.Bulk(ctx, []Item{
		{Action: Index, Index: index, ID: "1", Routing: "a", Version: 5, VersionType: External, Body: []byte(`{"k":"a"}`)},
		{Action: Index, Index: index, ID: "2", Routing: "b", Body: []byte(`{"k":"b"}`)},
	})
	if err != nil || len(res) != 2 || res[0].Outcome != OK || res[1].Outcome != OK {
		t.Fatalf("Bulk(two new documents) = %+v, %v", res, err)
	}
	d, err := a.GetDocRouted(ctx, index, "2", "b")
	if err != nil || !d.Found {
		t.Fatalf("GetDocRouted(2, b) = %+v, %v", d, err)
	}
	if d, err := a.GetDocRouted(ctx, index, "2", "a"); err != nil || d.Found {
		t.Errorf("GetDocRouted(2, routing of another shard) = %+v, %v; want not found", d, err)
	}
	stale := d.SeqNo + 1
	res, err = a.Bulk(ctx, []Item{
		{Action: Index, Index: index, ID: "1", Routing: "a", Version: 5, VersionType: External, Body: []byte(`{"k":"a"}`)},
		{Action: Delete, Index: index, ID: "2", Routing: "b", IfSeqNo: &stale, IfPrimaryTerm: &d.PrimaryTerm},
		{Action: Delete, Index: index, ID: "3", Routing: "c"},
		{Action: Delete, Index: index, ID: "2", Routing: "b", IfSeqNo: &d.SeqNo, IfPrimaryTerm: &d.PrimaryTerm},
	})
	if err != nil {
		t.Fatal(err)
	}
	var ie *ItemError
	for i, want := range []struct {
		outcome Outcome
		status  int
	}{{Stale, 409}, {Permanent, 409}, {NotFound, 404}, {OK, 200}} {
		if r := res[i]; r.Outcome != want.outcome || r.Status != want.status || r.Item.ID != []string{"1", "2", "3", "2"}[i] {
			t.Errorf("item %d: %s %d (%v), want %s %d", i, r.Outcome, r.Status, r.Err, want.outcome, want.status)
		}
	}
	if !errors.As(res[1].Err, &ie) || ie.Type != "version_conflict_engine_exception" {
		t.Errorf("the stale conditional delete: %v, want a version conflict", res[1].Err)
	}
	if d, err := a.GetDocRouted(ctx, index, "2", "b"); err != nil || d.Found {
		t.Errorf("after the conditional delete: %+v, %v; want gone", d, err)
	}
}
