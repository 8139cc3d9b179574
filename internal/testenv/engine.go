package testenv

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// Elasticsearch9 is the answer of an Elasticsearch 9.4.0 node to GET /:
// no version.distribution, a build_flavor and Elasticsearch's tagline.
const Elasticsearch9 = `{
  "name": "es-0",
  "cluster_name": "elasticsearch",
  "cluster_uuid": "4Ep1kQ3cTN2tQ0zJ1Xk3bA",
  "version": {
    "number": "9.4.0",
    "build_flavor": "default",
    "build_type": "docker",
    "build_snapshot": false,
    "minimum_wire_compatibility_version": "8.19.0",
    "minimum_index_compatibility_version": "8.0.0"
  },
  "tagline": "You Know, for Search"
}`

// OpenSearchAnswer is the answer of an OpenSearch node of version v to
// GET /.
func OpenSearchAnswer(v string) string {
	return fmt.Sprintf(`{"name":"os-0","cluster_name":"opensearch","version":{"distribution":"opensearch","number":%q,"build_type":"tar"},"tagline":"The OpenSearch Project: https://opensearch.org/"}`, v)
}

// EngineServer serves status and answer to GET / and hands every other
// request to next; it returns its URL. With next nil any other request
// fails the test: a command that refuses the engine asks nothing more.
func EngineServer(t testing.TB, status int, answer string, next http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/" && r.Method == http.MethodGet:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			fmt.Fprint(w, answer)
		case next == nil:
			t.Errorf("%s %s after GET / answered %d: want nothing more", r.Method, r.URL, status)
			http.Error(w, "unexpected", http.StatusTeapot)
		default:
			next.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
