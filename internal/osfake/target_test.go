package osfake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// The conformance tests run against a target: by default a fresh emulator
// with a manual clock; with the build tag "realcluster" and
// GEOSHARD_OPENSEARCH_URL set, a real OpenSearch cluster (see
// realcluster_test.go). Tests that need the emulator itself — its clock,
// its faults, its 501 answers, its replica placement or its internal
// state — call needFake and are skipped against a real cluster.

// realClusterURL is set by realcluster_test.go.
var realClusterURL string

type target struct {
	t      *testing.T
	url    string
	client *opensearchapi.Client
	fake   *TestServer  // nil against a real cluster
	clock  *ManualClock // nil against a real cluster
	prefix string       // prefix of every index the test creates
}

var targetSeq atomic.Int64

func newTarget(t *testing.T) *target {
	t.Helper()
	tg := &target{t: t, prefix: fmt.Sprintf("t%d-%d-", time.Now().UnixNano()%1e6, targetSeq.Add(1))}
	if realClusterURL != "" {
		tg.url = realClusterURL
	} else {
		tg.clock = NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		tg.fake = NewTestServer(Options{Clock: tg.clock.Now})
		t.Cleanup(tg.fake.Close)
		tg.url = tg.fake.URL
	}
	c, err := opensearchapi.NewClient(opensearchapi.Config{Client: opensearch.Config{Addresses: []string{tg.url}}})
	if err != nil {
		t.Fatal(err)
	}
	tg.client = c
	if realClusterURL != "" {
		t.Cleanup(func() { tg.do("DELETE", "/"+tg.prefix+"*", "") })
	}
	return tg
}

// needFake skips, against a real cluster, a test that needs the emulator
// itself.
func (tg *target) needFake() {
	tg.t.Helper()
	if tg.fake == nil {
		tg.t.Skip("needs the emulator (clock, faults, 501 answers, placement or internal state)")
	}
}

// emulatorOnly skips, against a real cluster, a test that pins what the
// emulator does where it knowingly differs from the server; why says
// how.
func (tg *target) emulatorOnly(why string) {
	tg.t.Helper()
	if tg.fake == nil {
		tg.t.Skip("emulator-only: " + why)
	}
}

// name returns a unique index name for this test.
func (tg *target) name(base string) string { return tg.prefix + base }

// do sends a raw request and returns the status and decoded JSON body
// (nil when the body is empty or not JSON).
func (tg *target) do(method, path, body string) (int, map[string]any) {
	tg.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(context.Background(), method, tg.url+path, rd)
	if err != nil {
		tg.t.Fatal(err)
	}
	if body != "" {
		ct := "application/json"
		if strings.Contains(path, "_bulk") {
			ct = "application/x-ndjson"
		}
		req.Header.Set("Content-Type", ct)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tg.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	if dec.Decode(&out) != nil {
		out = nil
	}
	return resp.StatusCode, out
}

// mustDo is do that fails the test unless the status is want.
func (tg *target) mustDo(want int, method, path, body string) map[string]any {
	tg.t.Helper()
	got, out := tg.do(method, path, body)
	if got != want {
		tg.t.Fatalf("%s %s = %d %v, want %d", method, path, got, out, want)
	}
	return out
}

// dig walks a decoded JSON value by keys and array indexes.
func dig(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func str(v any) string {
	if v == nil {
		return ""
	}
	if n, ok := v.(json.Number); ok {
		return n.String()
	}
	return fmt.Sprint(v)
}
