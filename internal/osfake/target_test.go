package osfake

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// The conformance tests run against a target: by default a fresh emulator
// with a manual clock; with the build tag "realcluster" and
// GEOSHARD_OPENSEARCH_URL set, a real OpenSearch cluster (see
// realcluster_test.go). Tests that need the emulator itself — its clock,
// its faults, its 501 answers, its replica placement or its internal
// state — call needFake and are skipped against a real cluster.
//
// Where the release lines answer differently, a test states the answer
// of each (byLine) and runs under eachLine: against the emulator once at
// each tested version, against a real cluster at the version it reports.

// realClusterURL is set by realcluster_test.go.
var realClusterURL string

// testedVersions are the versions eachLine runs the emulator at: one of
// each line whose answers the tests know.
var testedVersions = []string{"2.19.6", DefaultVersion}

type target struct {
	t       *testing.T
	url     string
	client  *opensearchapi.Client
	fake    *TestServer  // nil against a real cluster
	clock   *ManualClock // nil against a real cluster
	prefix  string       // prefix of every index the test creates
	version string       // the version the target reports

	elsewhere map[string]bool // primaryElsewhere's answers by index
}

var targetSeq atomic.Int64

// newTarget returns the test's target: a fresh emulator at the default
// version, or the real cluster.
func newTarget(t *testing.T) *target {
	t.Helper()
	return newTargetAt(t, DefaultVersion)
}

// newTargetAt is newTarget with an emulator that reports version; a real
// cluster reports its own.
func newTargetAt(t *testing.T, version string) *target {
	t.Helper()
	tg := &target{t: t, prefix: fmt.Sprintf("t%d-%d-", time.Now().UnixNano()%1e6, targetSeq.Add(1)), version: version}
	if realClusterURL != "" {
		tg.url = realClusterURL
		tg.version = realVersion(t)
	} else {
		tg.clock = NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		tg.fake = NewTestServer(Options{Clock: tg.clock.Now, Version: version})
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

// eachLine runs f in a subtest named after each release line it runs
// on: against the emulator, a fresh emulator at each of testedVersions;
// against a real cluster, the cluster, at the line it reports.
func eachLine(t *testing.T, f func(t *testing.T, tg *target)) {
	t.Helper()
	versions := testedVersions
	if realClusterURL != "" {
		versions = []string{realVersion(t)}
	}
	for _, v := range versions {
		t.Run(lineOf(v), func(t *testing.T) { f(t, newTargetAt(t, v)) })
	}
}

// byLine is an answer that differs by release line: v2_19 on a 2.19.x
// target, v3_9 on a 3.9.x one. On any other the test fails, as no answer
// of that line is known.
func byLine[T any](tg *target, v2_19, v3_9 T) T {
	tg.t.Helper()
	switch lineOf(tg.version) {
	case "2.19":
		return v2_19
	case "3.9":
		return v3_9
	}
	tg.t.Fatalf("the target reports OpenSearch %s; the tests know the answers of 2.19 and 3.9 only", tg.version)
	return v2_19
}

// lineOf is a version's release line, major.minor.
func lineOf(version string) string {
	if parts := strings.SplitN(version, ".", 3); len(parts) == 3 {
		return parts[0] + "." + parts[1]
	}
	return version
}

var (
	realVersionOnce sync.Once
	realVersionNum  string
	realVersionErr  error
)

// realVersion is the version the real cluster reports (GET /), asked
// once.
func realVersion(t *testing.T) string {
	t.Helper()
	realVersionOnce.Do(func() {
		resp, err := http.Get(realClusterURL + "/")
		if err != nil {
			realVersionErr = err
			return
		}
		defer resp.Body.Close()
		var root struct {
			Version struct{ Number string } `json:"version"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&root); err != nil || root.Version.Number == "" {
			realVersionErr = fmt.Errorf("GET / = %d, version %q: %v", resp.StatusCode, root.Version.Number, err)
			return
		}
		realVersionNum = root.Version.Number
	})
	if realVersionErr != nil {
		t.Fatalf("the real cluster's version: %v", realVersionErr)
	}
	return realVersionNum
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

// dataNodes is the number of data nodes the target reports: the
// emulator's pretend nodes, or the real cluster's. A test about replicas
// derives what it expects from it, so that it holds on a single node and
// on a cluster alike.
func (tg *target) dataNodes() int {
	tg.t.Helper()
	n, err := strconv.Atoi(str(dig(tg.mustDo(200, "GET", "/_cluster/health", ""), "number_of_data_nodes")))
	if err != nil || n < 1 {
		tg.t.Fatalf("number_of_data_nodes = %v, %v", n, err)
	}
	return n
}

// settled waits until every copy of index that can be assigned has
// started: a real cluster answers a create once the primaries are active,
// before the replicas it can assign have started, or even been assigned.
// The pending reroutes run first (wait_for_events), then the recoveries
// they began end (wait_for_no_initializing_shards). The emulator starts
// every copy at once, and a single node has none to start.
func (tg *target) settled(index string) {
	tg.t.Helper()
	tg.mustDo(200, "GET", "/_cluster/health/"+index+"?wait_for_events=languid&wait_for_no_initializing_shards=true&wait_for_status=yellow&timeout=60s", "")
}

// mappingSettled waits until the cluster manager has applied every
// pending change of state: a write that maps a new field is answered once
// the mapping update is committed, which can be before the cluster
// manager, which answers GET _mapping, has applied it. The emulator and a
// single node have nothing pending.
func (tg *target) mappingSettled() {
	tg.t.Helper()
	tg.mustDo(200, "GET", "/_cluster/health?wait_for_events=languid&timeout=60s", "")
}

// primaryElsewhere reports whether the primary of shard 0 of index is on
// another node than the one the test talks to: never with the emulator or
// a single node. A write fails on the primary, and when that is another
// node the failure comes back over the transport protocol, which changes
// how it reads (see overTransport).
func (tg *target) primaryElsewhere(index string) bool {
	tg.t.Helper()
	if tg.fake != nil || realenv.Nodes() < 2 {
		return false
	}
	if elsewhere, ok := tg.elsewhere[index]; ok {
		return elsewhere
	}
	tg.settled(index)
	nodes, _ := dig(tg.mustDo(200, "GET", "/_nodes/_local?filter_path=nodes.*.name", ""), "nodes").(map[string]any)
	var self string
	for _, n := range nodes {
		self = str(dig(n, "name"))
	}
	for _, row := range catRows(tg, "/_cat/shards/"+index+"?h=shard,prirep,state,node") {
		if str(row["shard"]) == "0" && row["prirep"] == "p" && row["state"] == "STARTED" && self != "" {
			if tg.elsewhere == nil {
				tg.elsewhere = map[string]bool{}
			}
			tg.elsewhere[index] = str(row["node"]) != self
			return tg.elsewhere[index]
		}
	}
	tg.t.Fatalf("no started primary of %s[0] on a node named %q", index, self)
	return false
}

// overTransport rewrites an error chain ("type: reason / type: reason",
// as errorChain writes it; a part may be a bare type) the way a node
// reads a failure that another node sent it. An exception that is not
// OpenSearch's own travels as the nearest class the transport protocol
// knows (StreamOutput.writeException); one it knows nothing of arrives
// wrapped (NotSerializableExceptionWrapper), named as before and with its
// name before its message. The JSON parser's failures are IOExceptions on
// 2.19, so json_parse_exception and its kind arrive as i_o_exception with
// the same message. On 3.x the parser's failure comes as two (doc.go,
// Release lines): the outer, an IOException, arrives as i_o_exception,
// and its cause, which is not one, arrives wrapped. not_x_content_exception
// arrives wrapped on both lines. Both shapes were read off a cluster of
// three nodes of each line.
func overTransport(chain string) string {
	parts := strings.Split(chain, " / ")
	parser := false // the part before was the parser's
	for i, p := range parts {
		typ, reason, hasReason := strings.Cut(p, ": ")
		switch {
		case parserFailures[typ] && !parser:
			typ, parser = "i_o_exception", true
		case parserFailures[typ], typ == "not_x_content_exception":
			if hasReason {
				reason = typ + ": " + reason
			}
		default:
			parser = false
		}
		if parts[i] = typ; hasReason {
			parts[i] += ": " + reason
		}
	}
	return strings.Join(parts, " / ")
}

// parserFailures are the types of the JSON parser's exceptions, of either
// line.
var parserFailures = map[string]bool{
	"json_parse_exception": true, "json_e_o_f_exception": true, "input_coercion_exception": true,
	"unexpected_end_of_input_exception": true, "stream_read_exception": true,
}

// failureOf is want as the test reads a write failure on index: as
// written, or over the transport protocol when the primary is on another
// node.
func (tg *target) failureOf(index, want string) string {
	tg.t.Helper()
	if tg.primaryElsewhere(index) {
		return overTransport(want)
	}
	return want
}
