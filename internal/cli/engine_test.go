package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/bulk"
)

// node answers GET / with each of its answers in turn, the last one for
// good, and counts the requests.
type node struct {
	answers []answer
	asked   atomic.Int32
}

type answer struct {
	status int
	body   string
}

func openSearchAt(v string) answer {
	return answer{200, fmt.Sprintf(`{"version":{"distribution":"opensearch","number":%q}}`, v)}
}

var (
	unavailable = answer{503, `{"error":{"type":"cluster_block_exception","reason":"state not recovered"},"status":503}`}
	forbidden   = answer{403, `{"error":{"type":"security_exception","reason":"no permissions for [cluster:monitor/main]"},"status":403}`}
	proxyPage   = answer{200, `<html>welcome</html>`}
)

func (n *node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := int(n.asked.Add(1)) - 1
	a := n.answers[min(i, len(n.answers)-1)]
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(a.status)
	fmt.Fprint(w, a.body)
}

// connect parses args and env with the client flags, the node's URL as
// --opensearch, and returns the flags and a client.
func connect(t *testing.T, n *node, args []string, env map[string]string) (*ClientFlags, *opensearch.Client) {
	t.Helper()
	srv := httptest.NewServer(n)
	t.Cleanup(srv.Close)
	getenv := func(k string) string { return env[k] }
	var cc bulk.ClientConfig
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cf := RegisterClientFlags(fs, &cc, getenv)
	if err := Parse(fs, append([]string{"--opensearch", srv.URL}, args...), getenv); err != nil {
		t.Fatal(err)
	}
	if err := cf.Resolve(); err != nil {
		t.Fatal(err)
	}
	client, err := bulk.NewClient(cc)
	if err != nil {
		t.Fatal(err)
	}
	return cf, client
}

// CheckEngine asks once: what it cannot read it returns, except a 401 or
// 403, which it logs; AwaitEngine asks again while the node answers 503,
// and not after an answer that is not an engine's. The override of an
// untested OpenSearch comes from the flag or its variable.
func TestCheckAndAwaitEngine(t *testing.T) {
	defer func(b bulk.Backoff) { awaitEngineBackoff = b }(awaitEngineBackoff)
	awaitEngineBackoff = bulk.Backoff{Initial: time.Millisecond, Max: 5 * time.Millisecond}
	cases := []struct {
		name    string
		answers []answer
		await   bool
		args    []string
		env     map[string]string
		asked   int32
		err     string // a regular expression; "" for nil
		log     string // a regular expression the log matches
	}{
		{name: "supported", answers: []answer{openSearchAt("3.9.0")}, asked: 1,
			log: `^level=INFO msg="talking to OpenSearch" version=3\.9\.0 nodes=http://\S+\n$`},
		{name: "503 once", answers: []answer{unavailable}, asked: 1,
			err: `^read the engine's version at http://\S+: bulk: GET /: status 503 cluster_block_exception: state not recovered$`, log: `^$`},
		{name: "503 awaited", answers: []answer{unavailable, unavailable, openSearchAt("2.19.1")}, await: true, asked: 3,
			log: `^(level=WARN msg="request failed; retrying" step="read the engine's version" attempt=[12] in=\S+ error="bulk: GET /: status 503 [^\n]*\n){2}level=INFO msg="talking to OpenSearch" version=2\.19\.1 `},
		{name: "forbidden", answers: []answer{forbidden}, await: true, asked: 1,
			log: `^level=WARN msg="cannot read the OpenSearch version \(GET / needs the cluster monitor permission\); going on unchecked" nodes=http://\S+ status=403 error=`},
		{name: "a proxy's page is not awaited", answers: []answer{proxyPage}, await: true, asked: 1,
			err: `^--opensearch http://\S+: the answer to GET / is not an engine's \(bulk: GET /: decode response: invalid character '<' [^)]*\): geoshard runs on OpenSearch 2\.19\.x and 3\.0 to 3\.9\.x$`, log: `^$`},
		{name: "untested", answers: []answer{openSearchAt("3.10.0")}, asked: 1,
			err: `^--opensearch http://\S+: OpenSearch 3\.10\.0 is newer than geoshard is tested with \(OpenSearch 2\.19\.x and 3\.0 to 3\.9\.x\); --allow-untested-opensearch runs on it anyway$`, log: `^$`},
		{name: "untested, allowed by the flag", answers: []answer{openSearchAt("3.10.0")}, args: []string{"--allow-untested-opensearch"}, asked: 1,
			log: `^level=WARN msg="OpenSearch is newer than geoshard is tested with; going on as --allow-untested-opensearch asks" version=3\.10\.0 supported="OpenSearch 2\.19\.x and 3\.0 to 3\.9\.x" nodes=http://\S+\n$`},
		{name: "untested, allowed by the variable", answers: []answer{openSearchAt("4.0.0")}, env: map[string]string{"GEOSHARD_ALLOW_UNTESTED_OPENSEARCH": "true"}, asked: 1,
			log: `^level=WARN msg="OpenSearch is newer than geoshard is tested with; going on as --allow-untested-opensearch asks" version=4\.0\.0 `},
		{name: "too old, not allowed by the flag", answers: []answer{openSearchAt("2.18.0")}, args: []string{"--allow-untested-opensearch"}, asked: 1,
			err: `^--opensearch http://\S+: OpenSearch 2\.18\.0 is older than geoshard supports \(OpenSearch 2\.19\.x and 3\.0 to 3\.9\.x\): upgrade OpenSearch$`, log: `^$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := &node{answers: tc.answers}
			cf, client := connect(t, n, tc.args, tc.env)
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if a.Key == slog.TimeKey {
					return slog.Attr{}
				}
				return a
			}}))
			check := cf.CheckEngine
			if tc.await {
				check = cf.AwaitEngine
			}
			err := check(context.Background(), client, log)
			switch {
			case tc.err == "" && err != nil:
				t.Errorf("check: %v, want nil", err)
			case tc.err != "" && (err == nil || !regexp.MustCompile(tc.err).MatchString(err.Error())):
				t.Errorf("check: %v, want an error matching %s", err, tc.err)
			}
			if !regexp.MustCompile(tc.log).MatchString(logs.String()) {
				t.Errorf("log:\n%s\nwant it to match %s", logs.String(), tc.log)
			}
			if got := n.asked.Load(); got != tc.asked {
				t.Errorf("the node was asked %d times, want %d", got, tc.asked)
			}
		})
	}
}

// AwaitEngine waits for a node that does not answer until its context
// ends, and then returns the context's error.
func TestAwaitEngineEndsWithItsContext(t *testing.T) {
	var cc bulk.ClientConfig
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	cf := RegisterClientFlags(fs, &cc, func(string) string { return "" })
	if err := Parse(fs, []string{"--opensearch", "http://127.0.0.1:1"}, func(string) string { return "" }); err != nil {
		t.Fatal(err)
	}
	if err := cf.Resolve(); err != nil {
		t.Fatal(err)
	}
	client, err := bulk.NewClient(cc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var logs bytes.Buffer
	if err := cf.AwaitEngine(ctx, client, slog.New(slog.NewTextHandler(&logs, nil))); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AwaitEngine of a closed port = %v, want the context's end", err)
	}
	if !bytes.Contains(logs.Bytes(), []byte(`msg="request failed; retrying" step="read the engine's version" attempt=1`)) {
		t.Errorf("no failure logged:\n%s", logs.String())
	}
}
