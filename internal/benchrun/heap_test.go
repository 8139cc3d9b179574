package benchrun

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A heap profile is saved once for each fraction of the events passed,
// in order, and only after a collection was asked for.
func TestHeapProfilesAtFractions(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.String())
		io.WriteString(w, "profile")
	}))
	defer srv.Close()
	dir := t.TempDir()
	h := &heapProfiles{dir: dir, addr: strings.TrimPrefix(srv.URL, "http://"), total: 1000, at: []float64{0.25, 0.5, 0.75}}
	b := &bench{log: io.Discard}
	for _, finished := range []int64{0, 249, 250, 251, 800, 1000} {
		h.due(context.Background(), b, finished)
	}
	var got []string
	for _, p := range h.saved {
		got = append(got, filepath.Base(p))
		if data, err := os.ReadFile(p); err != nil || string(data) != "profile" {
			t.Errorf("%s: %q, %v", p, data, err)
		}
	}
	if want := "heap-25.pb.gz heap-50.pb.gz heap-75.pb.gz"; strings.Join(got, " ") != want {
		t.Errorf("saved %v, want %s", got, want)
	}
	for _, u := range asked {
		if u != "/debug/pprof/heap?gc=1" {
			t.Errorf("asked for %s, want /debug/pprof/heap?gc=1", u)
		}
	}
	var nilHeaps *heapProfiles
	nilHeaps.due(context.Background(), b, 1000) // no profiles asked for: nothing, no panic
}
