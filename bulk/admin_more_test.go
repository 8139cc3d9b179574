package bulk

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
)

func TestAdminMore(t *testing.T) {
	realenv.Parallel(t)
	e := newAdminEnv(t)
	a, client := e.a, e.client
	ctx := context.Background()
	v1, v3, vintage, other, nope := e.index(t, "menu-v1"), e.index(t, "menu-v3"), e.index(t, "menu-vintage"), e.index(t, "other"), e.index(t, "nope")
	for _, ix := range []string{v1, v3, vintage, other} {
		if err := a.CreateIndex(ctx, ix, []byte(`{"settings":{"number_of_shards":2},"mappings":{"properties":{"k":{"type":"keyword"}}}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.CreateIndex(ctx, other, []byte(`{}`)); !IsAlreadyExists(err) {
		t.Errorf("CreateIndex(existing) = %v, want IsAlreadyExists", err)
	}
	if names, err := a.IndexNames(ctx, e.prefix+"menu-v*"); err != nil || !reflect.DeepEqual(names, []string{v1, v3, vintage}) {
		t.Errorf("IndexNames(%smenu-v*) = %v, %v", e.prefix, names, err)
	}
	if names, err := a.IndexNames(ctx, e.prefix+"nothing-*"); err != nil || len(names) != 0 {
		t.Errorf("IndexNames(%snothing-*) = %v, %v; want none", e.prefix, names, err)
	}

	// Single documents under optimistic concurrency.
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

	// Settings, through the request value Send sends.
	req, err := PutSettingsRequest(other, map[string]any{"gc_deletes": "1h", "number_of_replicas": 0})
	if err != nil {
		t.Fatal(err)
	}
	if want := "PUT /" + other + "/_settings\n{\n  \"index\": {\n    \"gc_deletes\": \"1h\",\n    \"number_of_replicas\": 0\n  }\n}\n"; req.String() != want {
		t.Errorf("PutSettingsRequest = %q, want %q", req.String(), want)
	}
	if err := a.Send(ctx, req, nil); err != nil {
		t.Fatal(err)
	}
	set, err := a.Settings(ctx, other)
	if err != nil || set["index.gc_deletes"] != "1h" || set["index.number_of_replicas"] != "0" || set["index.number_of_shards"] != "2" {
		t.Errorf("Settings = %v, %v", set, err)
	}
	var health struct{ Status string }
	if err := a.Send(ctx, HealthRequest(other, "green", "1s"), &health); err != nil || health.Status != "green" {
		t.Errorf("HealthRequest = %+v, %v", health, err)
	}
	if r := HealthRequest("menu-v2", "green", "5m"); r.String() != "GET /_cluster/health/menu-v2?timeout=5m&wait_for_status=green\n" {
		t.Errorf("HealthRequest = %q", r.String())
	}

	// Composite pages.
	w2, _ := New(client, Config{})
	for i, k := range []string{"a", "b", "b", "c", "c", "c"} {
		w2.Add(ctx, Item{Index: v1, ID: string(rune('0' + i)), Body: []byte(`{"k":"` + k + `"}`)})
	}
	w2.Close(ctx)
	if err := a.Refresh(ctx, v1); err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	var after json.RawMessage
	pages := 0
	for {
		comp := `{"size":2,"sources":[{"k":{"terms":{"field":"k"}}}]`
		if after != nil {
			comp += `,"after":` + string(after)
		}
		pg, err := a.Composite(ctx, v1, "ks", []byte(`{"size":0,"aggs":{"ks":{"composite":`+comp+`}}}}`), SearchParams{})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, b := range pg.Buckets {
			got[strings.Trim(string(b.Key["k"]), `"`)] = b.DocCount
		}
		if len(pg.Buckets) < 2 {
			break
		}
		after = pg.AfterKey
	}
	if !reflect.DeepEqual(got, map[string]int64{"a": 1, "b": 2, "c": 3}) || pages != 2 {
		t.Errorf("Composite pages: %v in %d pages", got, pages)
	}
	if err := a.Send(ctx, DeleteIndexRequest(vintage), nil); err != nil {
		t.Errorf("DeleteIndexRequest: %v", err)
	}
}
