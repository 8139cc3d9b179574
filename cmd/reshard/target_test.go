package main

import (
	"context"
	"net/http"
	"testing"

	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

// openSearch is the cluster a test of the verbs runs against: a fresh
// emulator, or with -tags realcluster the real node, cleared of what an
// earlier test left under the names these tests use (the menu indexes, and
// the migration state, which has one fixed name). Tests against the real
// node run one at a time (realenv.Parallel).
func openSearch(t *testing.T) string {
	t.Helper()
	if !realenv.Enabled() {
		srv := osfake.NewTestServer(osfake.Options{})
		t.Cleanup(srv.Close)
		return srv.URL
	}
	url := realenv.OpenSearchURL()
	clear := func() {
		req, err := http.NewRequestWithContext(context.Background(), http.MethodDelete,
			url+"/menu-*,"+schema.MigrationsIndex+"?ignore_unavailable=true&allow_no_indices=true", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("clear the real node: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNotFound {
			t.Fatalf("clear the real node: DELETE menu-*: %s", resp.Status)
		}
	}
	clear()
	t.Cleanup(clear)
	return url
}
