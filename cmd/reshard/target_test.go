package main

import (
	"context"
	"testing"

	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
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
		if err := realenv.DeleteIndexes(context.Background(), realenv.MenuIndexes...); err != nil {
			t.Fatalf("clear the real node: %v", err)
		}
	}
	clear()
	t.Cleanup(clear)
	return url
}
