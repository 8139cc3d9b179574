package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/testenv"
)

// Before it searches, search reads the engine: Elasticsearch, an older
// OpenSearch and (unless allowed) a newer one than tested are refused
// with one line and exit 1, asking nothing more; the emulator is
// searched with nothing on stderr; a node that will not say (403) is
// searched with a warning.
func TestEngineAtStart(t *testing.T) {
	// Past GET /, the requests go to the emulator holding the menu.
	seeded, _ := seed(t)
	u, err := url.Parse(seeded)
	if err != nil {
		t.Fatal(err)
	}
	emulator := httputil.NewSingleHostReverseProxy(u)
	circle := []string{"--lat", "37.7749", "--lng", "-122.4194", "--radius", "15mi"}
	cases := []struct {
		name   string
		status int
		answer string
		next   http.Handler
		args   []string
		env    map[string]string
		code   int
		stderr string // a regular expression the whole of stderr matches
	}{
		{name: "Elasticsearch 9", status: 200, answer: testenv.Elasticsearch9, code: 1,
			stderr: `^search: --opensearch http://\S+: Elasticsearch 9\.4\.0 is not supported: geoshard runs on OpenSearch only \(2\.19\.x and 3\.0 to 3\.9\.x\); what running on Elasticsearch would take is in docs/engines\.md#elasticsearch\n$`},
		{name: "OpenSearch 2.18", status: 200, answer: testenv.OpenSearchAnswer("2.18.0"), code: 1,
			stderr: `^search: --opensearch http://\S+: OpenSearch 2\.18\.0 is older than geoshard supports \(OpenSearch 2\.19\.x and 3\.0 to 3\.9\.x\): upgrade OpenSearch\n$`},
		{name: "OpenSearch 3.10", status: 200, answer: testenv.OpenSearchAnswer("3.10.0"), code: 1,
			stderr: `^search: --opensearch http://\S+: OpenSearch 3\.10\.0 is newer than geoshard is tested with \(OpenSearch 2\.19\.x and 3\.0 to 3\.9\.x\); --allow-untested-opensearch runs on it anyway\n$`},
		{name: "OpenSearch 3.10 allowed by the flag", status: 200, answer: testenv.OpenSearchAnswer("3.10.0"), next: emulator,
			args:   []string{"--allow-untested-opensearch"},
			stderr: `^time=\S+ level=WARN msg="OpenSearch is newer than geoshard is tested with; going on as --allow-untested-opensearch asks" version=3\.10\.0 supported="OpenSearch 2\.19\.x and 3\.0 to 3\.9\.x" nodes=http://\S+\n$`},
		{name: "OpenSearch 4 allowed by the environment", status: 200, answer: testenv.OpenSearchAnswer("4.0.0"), next: emulator,
			env:    map[string]string{"GEOSHARD_ALLOW_UNTESTED_OPENSEARCH": "true"},
			stderr: `^time=\S+ level=WARN msg="OpenSearch is newer than geoshard is tested with; going on as --allow-untested-opensearch asks" version=4\.0\.0 `},
		{name: "the override does not reach Elasticsearch", status: 200, answer: testenv.Elasticsearch9, args: []string{"--allow-untested-opensearch"}, code: 1,
			stderr: `Elasticsearch 9\.4\.0 is not supported`},
		{name: "the override does not reach an older OpenSearch", status: 200, answer: testenv.OpenSearchAnswer("1.3.20"), args: []string{"--allow-untested-opensearch"}, code: 1,
			stderr: `OpenSearch 1\.3\.20 is older than geoshard supports`},
		{name: "no monitor permission", status: 403, answer: `{"error":{"type":"security_exception","reason":"no permissions for [cluster:monitor/main]"},"status":403}`, next: emulator,
			stderr: `^time=\S+ level=WARN msg="cannot read the OpenSearch version \(GET / needs the cluster monitor permission\); going on unchecked" nodes=http://\S+ status=403 `},
		{name: "a garbled version", status: 200, answer: testenv.OpenSearchAnswer("3.x"), code: 1,
			stderr: `^search: --opensearch http://\S+: OpenSearch version "3\.x" is not a version \(want major\.minor\.patch\): geoshard runs on OpenSearch 2\.19\.x and 3\.0 to 3\.9\.x\n$`},
		{name: "a 3.9 snapshot", status: 200, answer: testenv.OpenSearchAnswer("3.9.0-SNAPSHOT"), next: emulator, stderr: `^$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := testenv.EngineServer(t, tc.status, tc.answer, tc.next)
			args := append(append([]string{"--opensearch", node}, circle...), tc.args...)
			var out, errb bytes.Buffer
			code := run(context.Background(), args, envOf(tc.env), &out, &errb)
			if code != tc.code || !regexp.MustCompile(tc.stderr).MatchString(errb.String()) {
				t.Errorf("search %v: exit %d, stderr %q; want exit %d and stderr matching %s", tc.args, code, errb.String(), tc.code, tc.stderr)
			}
			if tc.code != 0 && out.Len() > 0 {
				t.Errorf("search %v refused the engine but printed %q", tc.args, out.String())
			}
		})
	}
}

// Against the emulator search says nothing of the engine: its stderr is
// empty and its result is printed.
func TestEngineOfTheEmulator(t *testing.T) {
	node, _ := seed(t)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"--opensearch", node, "--lat", "37.7749", "--lng", "-122.4194", "--radius", "15mi"}, envOf(nil), &out, &errb)
	if code != 0 || errb.Len() != 0 || !strings.Contains(out.String(), "pad thai") {
		t.Errorf("search against the emulator: exit %d, stderr %q, stdout %q; want 0, nothing and pad thai", code, errb.String(), out.String())
	}
}
