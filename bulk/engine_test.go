package bulk

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
)

func TestCheckEngine(t *testing.T) {
	openSearch := func(v string) Engine { return Engine{Distribution: DistOpenSearch, Version: v} }
	elastic := func(v string) Engine { return Engine{Distribution: DistElasticsearch, Version: v} }
	cases := []struct {
		name string
		e    Engine
		want EngineProblem // 0: supported
	}{
		{"1.x", openSearch("1.3.20"), EngineTooOld},
		{"the minor before the oldest", openSearch("2.18.0"), EngineTooOld},
		{"2.19.0", openSearch("2.19.0"), 0},
		{"an earlier 2.19 patch", openSearch("2.19.1"), 0},
		{"2.19.6, the 2.x CI tests", openSearch("2.19.6"), 0},
		{"a later 2.19 patch", openSearch("2.19.9"), 0},
		{"3.0.0", openSearch("3.0.0"), 0},
		{"3.9.0, the newest CI tests", openSearch("3.9.0"), 0},
		{"a later 3.9 patch", openSearch("3.9.5"), 0},
		{"a 3.9 snapshot", openSearch("3.9.0-SNAPSHOT"), 0},
		{"a 3.0 pre-release", openSearch("3.0.0-alpha1"), 0},
		{"a 2.18 snapshot", openSearch("2.18.0-SNAPSHOT"), EngineTooOld},
		{"the minor after the newest", openSearch("3.10.0"), EngineUntested},
		{"a 3.10 snapshot", openSearch("3.10.0-SNAPSHOT"), EngineUntested},
		{"the next major", openSearch("4.0.0"), EngineUntested},
		{"a 2.x after the last tested", openSearch("2.20.0"), EngineUntested},
		{"Elasticsearch 7", elastic("7.10.2"), EngineNotOpenSearch},
		{"Elasticsearch 8", elastic("8.17.0"), EngineNotOpenSearch},
		{"Elasticsearch 9", elastic("9.4.0"), EngineNotOpenSearch},
		{"Elasticsearch at a supported OpenSearch number", elastic("3.9.0"), EngineNotOpenSearch},
		{"no engine named", Engine{Version: "2.19.1"}, EngineNotOpenSearch},
		{"another engine", Engine{Distribution: "solr", Version: "9.0.0"}, EngineNotOpenSearch},
		{"no version", openSearch(""), EngineUnreadable},
		{"two parts", openSearch("3.9"), EngineUnreadable},
		{"four parts", openSearch("3.9.0.1"), EngineUnreadable},
		{"words", openSearch("banana"), EngineUnreadable},
		{"a v prefix", openSearch("v3.9.0"), EngineUnreadable},
		{"a negative part", openSearch("3.-1.0"), EngineUnreadable},
		{"a plus sign", openSearch("3.+9.0"), EngineUnreadable},
		{"an empty part", openSearch("3..0"), EngineUnreadable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckEngine(tc.e)
			var ee *EngineError
			switch {
			case tc.want == 0 && err != nil:
				t.Errorf("CheckEngine(%v) = %v, want nil", tc.e, err)
			case tc.want != 0 && (!errors.As(err, &ee) || ee.Problem != tc.want || ee.Engine != tc.e):
				t.Errorf("CheckEngine(%v) = %#v, want an *EngineError with problem %d", tc.e, err, tc.want)
			}
		})
	}
}

// Each refusal is one line that names the engine and what is supported.
func TestEngineErrorMessages(t *testing.T) {
	if got, want := SupportedEngines(), "OpenSearch 2.19.x and 3.0 to 3.9.x"; got != want {
		t.Errorf("SupportedEngines() = %q, want %q", got, want)
	}
	cases := []struct {
		e    Engine
		want string
	}{
		{Engine{DistElasticsearch, "9.4.0"}, "Elasticsearch 9.4.0 is not supported: geoshard runs on OpenSearch only (2.19.x and 3.0 to 3.9.x); what running on Elasticsearch would take is in docs/engines.md#elasticsearch"},
		{Engine{"", "2.19.1"}, "the answer to GET / names no engine (no version.distribution) and is not Elasticsearch's: geoshard runs on OpenSearch only (2.19.x and 3.0 to 3.9.x)"},
		{Engine{"solr", "9.0.0"}, `engine "solr" 9.0.0 is not supported: geoshard runs on OpenSearch only (2.19.x and 3.0 to 3.9.x)`},
		{Engine{DistOpenSearch, ""}, "OpenSearch gives no version (version.number): geoshard runs on OpenSearch 2.19.x and 3.0 to 3.9.x"},
		{Engine{DistOpenSearch, "banana"}, `OpenSearch version "banana" is not a version (want major.minor.patch): geoshard runs on OpenSearch 2.19.x and 3.0 to 3.9.x`},
		{Engine{DistOpenSearch, "1.3.20"}, "OpenSearch 1.3.20 is older than geoshard supports (OpenSearch 2.19.x and 3.0 to 3.9.x): upgrade OpenSearch"},
		{Engine{DistOpenSearch, "3.10.0"}, "OpenSearch 3.10.0 is newer than geoshard is tested with (OpenSearch 2.19.x and 3.0 to 3.9.x)"},
	}
	for _, tc := range cases {
		if got := CheckEngine(tc.e); got == nil || got.Error() != tc.want {
			t.Errorf("CheckEngine(%v) = %v,\nwant %s", tc.e, got, tc.want)
		}
	}
}

// Admin.Engine reads the answer of OpenSearch and of Elasticsearch, which
// names no distribution; an answer that is not JSON is unreadable, and a
// refused request is Send's *APIError.
func TestAdminEngine(t *testing.T) {
	cases := []struct {
		name   string
		status int
		body   string
		want   Engine
		err    func(error) bool
	}{
		{"OpenSearch 2", 200, `{"name":"n","version":{"distribution":"opensearch","number":"2.19.1","build_type":"tar"},"tagline":"The OpenSearch Project: https://opensearch.org/"}`,
			Engine{DistOpenSearch, "2.19.1"}, nil},
		{"OpenSearch 3 snapshot", 200, `{"version":{"distribution":"opensearch","number":"3.9.0-SNAPSHOT","build_snapshot":true}}`,
			Engine{DistOpenSearch, "3.9.0-SNAPSHOT"}, nil},
		{"Elasticsearch 8", 200, `{"version":{"number":"8.17.0","build_flavor":"default"},"tagline":"You Know, for Search"}`,
			Engine{DistElasticsearch, "8.17.0"}, nil},
		{"Elasticsearch without a tagline", 200, `{"version":{"number":"9.4.0","build_flavor":"default"}}`,
			Engine{DistElasticsearch, "9.4.0"}, nil},
		{"no engine named", 200, `{"version":{"number":"1.0.0"}}`, Engine{Version: "1.0.0"}, nil},
		{"a proxy's page", 200, `<html>hello</html>`, Engine{}, func(err error) bool {
			var ee *EngineError
			return errors.As(err, &ee) && ee.Problem == EngineUnreadable && !Transient(err)
		}},
		{"a version that is not an object", 200, `{"version":"2.19.1"}`, Engine{}, func(err error) bool {
			var ee *EngineError
			return errors.As(err, &ee) && ee.Problem == EngineUnreadable
		}},
		{"no monitor permission", 403, `{"error":{"type":"security_exception","reason":"no permissions for [cluster:monitor/main]"},"status":403}`, Engine{}, func(err error) bool {
			var ae *APIError
			return errors.As(err, &ae) && ae.Status == 403 && ae.Type == "security_exception" && !Transient(err)
		}},
		{"unavailable", 503, `{"error":{"type":"cluster_block_exception","reason":"state not recovered"},"status":503}`, Engine{}, Transient},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/" {
					t.Errorf("request %s %s, want GET /", r.Method, r.URL.Path)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			client, err := NewClient(ClientConfig{Addresses: []string{srv.URL}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := NewAdmin(client).Engine(context.Background())
			switch {
			case tc.err == nil && (err != nil || got != tc.want):
				t.Errorf("Engine() = %+v, %v; want %+v", got, err, tc.want)
			case tc.err != nil && (err == nil || !tc.err(err)):
				t.Errorf("Engine() = %+v, %#v; not the error wanted", got, err)
			}
		})
	}
}

// The engine the tests run against — the emulator, or the real node — is
// one geoshard runs on.
func TestAdminEngineOfTheTestEngine(t *testing.T) {
	realenv.Parallel(t)
	e := newAdminEnv(t)
	got, err := e.a.Engine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := CheckEngine(got); err != nil {
		t.Errorf("CheckEngine(%v) = %v, want nil", got, err)
	}
}
