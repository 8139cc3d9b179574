package bulk

import (
	"context"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
)

// TestDocuments covers single documents under optimistic concurrency.
func TestDocuments(t *testing.T) {
	realenv.Parallel(t)
	e := newAdminEnv(t)
	a := e.a
	ctx := context.Background()
	other, nope := e.index(t, "other"), e.index(t, "nope")
	if err := a.CreateIndex(ctx, other, []byte(`{"settings":{"number_of_shards":2},"mappings":{"properties":{"k":{"type":"keyword"}}}}`)); err != nil {
		t.Fatal(err)
	}
	w, err := a.IndexDoc(ctx, other, "doc:1", []byte(`{"k":"a"}`), DocOptions{Create: true})
	if err != nil || w.Result != "created" {
		t.Fatalf("IndexDoc(create) = %+v, %v", w, err)
	}
	if _, err := a.IndexDoc(ctx, other, "doc:1", []byte(`{"k":"b"}`), DocOptions{Create: true}); !IsConflict(err) {
		t.Errorf("IndexDoc(create existing) = %v, want a conflict", err)
	}
	d, err := a.GetDoc(ctx, other, "doc:1")
	if err != nil || !d.Found || d.SeqNo != w.SeqNo || d.PrimaryTerm != w.PrimaryTerm || string(d.Source) != `{"k":"a"}` {
		t.Fatalf("GetDoc = %+v, %v", d, err)
	}
	stale := d.SeqNo + 5
	if _, err := a.IndexDoc(ctx, other, "doc:1", []byte(`{"k":"c"}`), DocOptions{IfSeqNo: &stale, IfPrimaryTerm: &d.PrimaryTerm}); !IsConflict(err) {
		t.Errorf("IndexDoc(stale if_seq_no) = %v, want a conflict", err)
	}
	if _, err := a.IndexDoc(ctx, other, "doc:1", []byte(`{"k":"c"}`), DocOptions{IfSeqNo: &d.SeqNo, IfPrimaryTerm: &d.PrimaryTerm, Refresh: true}); err != nil {
		t.Errorf("IndexDoc(current if_seq_no) = %v", err)
	}
	if d, err := a.GetDoc(ctx, other, "doc:2"); err != nil || d.Found {
		t.Errorf("GetDoc(missing document) = %+v, %v; want not found, no error", d, err)
	}
	if _, err := a.GetDoc(ctx, nope, "doc:1"); !IsNotFound(err) {
		t.Errorf("GetDoc(missing index) = %v, want a not-found error", err)
	}

	// Index replaces unconditionally and refreshes: a count that follows
	// sees the document without a Refresh.
	if err := a.Index(ctx, other, "doc:3", []byte(`{"k":"d"}`)); err != nil {
		t.Fatalf("Index = %v", err)
	}
	if err := a.Index(ctx, other, "doc:3", []byte(`{"k":"e"}`)); err != nil {
		t.Fatalf("Index(existing) = %v", err)
	}
	if d, err := a.GetDoc(ctx, other, "doc:3"); err != nil || !d.Found || d.Version != 2 || string(d.Source) != `{"k":"e"}` {
		t.Errorf("GetDoc after two Index = %+v, %v; want version 2 of {\"k\":\"e\"}", d, err)
	}
	if n, err := a.Count(ctx, other, []byte(`{"term":{"k":"e"}}`), SearchParams{}); n != 1 || err != nil {
		t.Errorf("Count(k=e) after Index = %d, %v, want 1", n, err)
	}
}

// TestGetRouted covers Get, which reads where a routing points.
func TestGetRouted(t *testing.T) {
	realenv.Parallel(t)
	e := newAdminEnv(t)
	a := e.a
	ctx := context.Background()
	_, alias := e.menu(t)
	nope := e.index(t, "nope")
	src, v, found, err := a.Get(ctx, alias, "2", "b")
	if !found || v != 1 || string(src) != `{"k":"b"}` || err != nil {
		t.Errorf("Get(2, b) = %s, %d, %v, %v", src, v, found, err)
	}
	// Routing a and b go to different shards of three, so the document
	// is not where routing a points.
	if _, _, found, err := a.Get(ctx, alias, "2", "a"); found || err != nil {
		t.Errorf("Get(2, wrong routing) = found %v, %v", found, err)
	}
	if _, _, found, err := a.Get(ctx, nope, "2", "b"); found || err != nil {
		t.Errorf("Get(missing index) = found %v, %v; want not found, no error", found, err)
	}
}
