//go:build realcluster

package realenv

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestNodesRunTheNamedVersion asks each real node its version: the suites
// of a run meant for one OpenSearch line must not pass on another.
func TestNodesRunTheNamedVersion(t *testing.T) {
	want := OpenSearchVersion()
	if want == "" {
		if Required() {
			t.Fatal(OpenSearchVersionVar + " not set, and " + RequireVar + "=1: the run does not say which OpenSearch it tests")
		}
		t.Skip(OpenSearchVersionVar + " not set")
	}
	for _, u := range OpenSearchURLs() {
		resp, err := http.Get(u + "/")
		if err != nil {
			t.Fatal(err)
		}
		var root struct {
			Version struct {
				Distribution string `json:"distribution"`
				Number       string `json:"number"`
			} `json:"version"`
		}
		err = json.NewDecoder(resp.Body).Decode(&root)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("GET %s/: %v", u, err)
		}
		if root.Version.Distribution != "opensearch" || root.Version.Number != want {
			t.Errorf("%s runs %s %s, want opensearch %s", u, root.Version.Distribution, root.Version.Number, want)
		}
		t.Logf("%s: opensearch %s", u, root.Version.Number)
	}
}
