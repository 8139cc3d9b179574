package bulk

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/opensearch-project/opensearch-go/v4"
)

// adminEnv is what the admin tests talk to: a fresh emulator, or under
// -tags realcluster the real node, where every index a test names gets a
// prefix unique to the run and is deleted when the test ends.
type adminEnv struct {
	client *opensearch.Client
	a      *Admin
	prefix string
}

func newAdminEnv(t *testing.T) *adminEnv {
	t.Helper()
	urls := realenv.OpenSearchURLs() // every node of a cluster
	if !realenv.Enabled() {
		srv := osfake.NewTestServer(osfake.Options{})
		t.Cleanup(srv.Close)
		urls = []string{srv.URL}
	}
	client, err := NewClient(ClientConfig{Addresses: urls})
	if err != nil {
		t.Fatal(err)
	}
	return &adminEnv{client: client, a: NewAdmin(client), prefix: realenv.Unique("bulk-admin") + "-"}
}

// index is the name of an index the test creates (or means to be
// missing); on the real node it is deleted when the test ends.
func (e *adminEnv) index(t *testing.T, base string) string {
	name := e.prefix + base
	if realenv.Enabled() {
		t.Cleanup(func() {
			if err := e.a.DeleteIndex(context.Background(), name); err != nil && !IsNotFound(err) {
				t.Errorf("delete %s: %v", name, err)
			}
		})
	}
	return name
}

// alias is the name of an alias; it goes with its indices.
func (e *adminEnv) alias(base string) string { return e.prefix + base }

// menu creates index menu-v1 (three shards, no replica, _meta owner
// geoshard) behind the write alias menu, and writes four documents
// through the alias with the Writer, routed by their k: "1" a, "2" b,
// "3" c, "4" a. It returns the index and the alias, refreshed.
func (e *adminEnv) menu(t *testing.T) (index, alias string) {
	t.Helper()
	ctx := context.Background()
	index, alias = e.index(t, "menu-v1"), e.alias("menu")
	body := []byte(`{"settings":{"number_of_shards":3,"number_of_replicas":0},"mappings":{"_meta":{"owner":"geoshard"},"properties":{"k":{"type":"keyword"}}}}`)
	if err := e.a.CreateIndex(ctx, index, body); err != nil {
		t.Fatal(err)
	}
	yes := true
	if err := e.a.UpdateAliases(ctx, []AliasAction{{Add: &AliasSpec{Index: index, Alias: alias, IsWriteIndex: &yes}}}); err != nil {
		t.Fatal(err)
	}
	w, err := New(e.client, Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range []string{"a", "b", "c", "a"} {
		w.Add(ctx, Item{Action: Index, Index: alias, ID: string(rune('1' + i)), Routing: r, Body: []byte(`{"k":"` + r + `"}`)})
	}
	w.Close(ctx)
	if st := w.Stats(); st.OK != 4 {
		t.Fatalf("writer: %+v, want 4 ok", st)
	}
	if err := e.a.Refresh(ctx, alias); err != nil {
		t.Fatal(err)
	}
	return index, alias
}

// TestRequestString pins what a dry run prints: the request Send would
// send, byte for byte.
func TestRequestString(t *testing.T) {
	yes := true
	seq, term := int64(7), int64(2)
	settings, err := PutSettingsRequest("menu-v2", map[string]any{"gc_deletes": "1h", "number_of_replicas": 0})
	if err != nil {
		t.Fatal(err)
	}
	swap, err := UpdateAliasesRequest([]AliasAction{
		{Remove: &AliasSpec{Index: "menu-v1", Alias: "menu", MustExist: &yes}},
		{Add: &AliasSpec{Index: "menu-v2", Alias: "menu", IsWriteIndex: &yes}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		r    Request
		want string
	}{
		{"put settings", settings, "PUT /menu-v2/_settings\n{\n  \"index\": {\n    \"gc_deletes\": \"1h\",\n    \"number_of_replicas\": 0\n  }\n}\n"},
		{"health", HealthRequest("menu-v2", "green", "5m"), "GET /_cluster/health/menu-v2?timeout=5m&wait_for_status=green\n"},
		{"delete index", DeleteIndexRequest("menu-v1"), "DELETE /menu-v1\n"},
		{"swap aliases", swap, "POST /_aliases\n{\n  \"actions\": [\n    {\n      \"remove\": {\n        \"index\": \"menu-v1\",\n        \"alias\": \"menu\",\n        \"must_exist\": true\n      }\n    },\n    {\n      \"add\": {\n        \"index\": \"menu-v2\",\n        \"alias\": \"menu\",\n        \"is_write_index\": true\n      }\n    }\n  ]\n}\n"},
		{"conditional write", IndexDocRequest("state", "mig:menu", []byte(`{"phase":"copy"}`), DocOptions{IfSeqNo: &seq, IfPrimaryTerm: &term}), "PUT /state/_doc/mig:menu?if_primary_term=2&if_seq_no=7\n{\"phase\":\"copy\"}\n"},
		{"create write", IndexDocRequest("state", "a/b", nil, DocOptions{Create: true, Refresh: true}), "PUT /state/_doc/a%2Fb?op_type=create&refresh=true\n"},
		{"routed search", SearchRequest("menu", []byte(`{"size":0}`), SearchParams{Routing: "a,b"}), "POST /menu/_search?routing=a%2Cb\n{\"size\":0}\n"},
		{"search on a shard", SearchRequest("menu", nil, SearchParams{Preference: "_shards:3"}), "POST /menu/_search?preference=_shards%3A3\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.r.String(); got != c.want {
				t.Errorf("String() = %q, want %q", got, c.want)
			}
		})
	}
}

// Send reads the whole answer: a 2xx is decoded, an error status becomes
// an *APIError, and an answer cut off mid-body is a read failure, told
// apart from a request that never reached the server.
func TestSendReadsTheWholeAnswer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/ok":
			io.WriteString(w, `{"acknowledged":true}`)
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"error":{"type":"index_not_found_exception","reason":"no such index [x]"},"status":404}`)
		case "/cut":
			w.Header().Set("Content-Length", "100")
			io.WriteString(w, `{"acknowledged":`)
			w.(http.Flusher).Flush()
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
		}
	}))
	defer srv.Close()
	client, err := NewClient(ClientConfig{Addresses: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	a := NewAdmin(client)
	ctx := context.Background()
	var out struct{ Acknowledged bool }
	if err := a.Send(ctx, Request{Method: http.MethodGet, Path: "/ok"}, &out); err != nil || !out.Acknowledged {
		t.Errorf("GET /ok: %v, %+v", err, out)
	}
	var ae *APIError
	if err := a.Send(ctx, Request{Method: http.MethodGet, Path: "/missing"}, nil); !errors.As(err, &ae) || ae.Status != 404 || ae.Type != "index_not_found_exception" {
		t.Errorf("GET /missing = %v, want an *APIError 404 index_not_found_exception", err)
	}
	err = a.Send(ctx, Request{Method: http.MethodGet, Path: "/cut"}, &out)
	if err == nil || !strings.Contains(err.Error(), "read response") {
		t.Errorf("GET /cut = %v, want a read failure", err)
	}
}
