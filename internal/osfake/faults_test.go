package osfake

import (
	"strings"
	"testing"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

func TestFaultsAPIRoundTrip(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	body := `{"seed":7,"reject_rate":0.25,"reject_type":"circuit_breaking_exception","fail_requests":2,"fail_status":504,
		"fail_endpoints":["search","count"],"shard_latency":[{"index":"x","shard":3,"delay":"150ms"}],
		"drop_responses":1,"write_block":["y"]}`
	tg.mustDo(200, "PUT", "/_osfake/faults", body)
	out := tg.mustDo(200, "GET", "/_osfake/faults", "")
	f := dig(out, "faults")
	checks := map[string]any{
		"seed": "7", "reject_rate": "0.25", "reject_type": "circuit_breaking_exception", "fail_requests": "2",
		"fail_status": "504", "fail_endpoints": "[search count]", "drop_responses": "1", "write_block": "[y]",
	}
	for k, want := range checks {
		if got := str(dig(f, k)); got != want {
			t.Errorf("GET faults %s = %q, want %q", k, got, want)
		}
	}
	if got := str(dig(f, "shard_latency", 0, "delay")); got != "150ms" {
		t.Errorf("shard_latency delay = %q, want 150ms", got)
	}
	if str(dig(out, "stats", "failed_requests")) != "0" {
		t.Errorf("stats = %v, want zero counters", dig(out, "stats"))
	}
	// A delay given in milliseconds reads the same.
	tg.mustDo(200, "PUT", "/_osfake/faults", `{"shard_latency":[{"index":"x","shard":0,"delay":250}]}`)
	if got := str(dig(tg.mustDo(200, "GET", "/_osfake/faults", ""), "faults", "shard_latency", 0, "delay")); got != "250ms" {
		t.Errorf("delay 250 = %q, want 250ms", got)
	}

	tg.mustDo(200, "DELETE", "/_osfake/faults", "")
	out = tg.mustDo(200, "GET", "/_osfake/faults", "")
	if f, _ := dig(out, "faults").(map[string]any); len(f) != 0 {
		t.Errorf("faults after DELETE = %v, want none", f)
	}
}

func TestFaultsAPIRejectsBadInput(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	tg.mustDo(200, "PUT", "/_osfake/faults", `{"fail_requests":1,"fail_endpoints":["admin"]}`)
	cases := []struct{ name, body, field string }{
		{"unknown field", `{"rejct_rate":0.5}`, "rejct_rate"},
		{"not JSON", `{"reject_rate":`, "unexpected EOF"},
		{"wrong type", `{"fail_requests":"many"}`, "fail_requests"},
		{"rate above 1", `{"reject_rate":1.5}`, "reject_rate"},
		{"negative fail rate", `{"fail_rate":-0.1}`, "fail_rate"},
		{"status not a proxy error", `{"fail_status":500}`, "fail_status"},
		{"unknown endpoint kind", `{"fail_endpoints":["bulk","nope"]}`, "fail_endpoints"},
		{"unknown reject type", `{"reject_type":"oops"}`, "reject_type"},
		{"bad delay", `{"shard_latency":[{"index":"x","shard":0,"delay":"soon"}]}`, "delay"},
		{"negative count", `{"drop_responses":-1}`, "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, out := tg.do("PUT", "/_osfake/faults", tc.body)
			if status != 400 || !strings.Contains(str(dig(out, "error", "reason")), tc.field) {
				t.Errorf("PUT faults %s = %d %v, want 400 naming %q", tc.body, status, out, tc.field)
			}
		})
	}
	// A rejected update leaves the faults in force unchanged.
	if got := str(dig(tg.mustDo(200, "GET", "/_osfake/faults", ""), "faults", "fail_requests")); got != "1" {
		t.Errorf("fail_requests after rejected updates = %q, want 1", got)
	}
	if err := tg.fake.SetFaults(Faults{FailStatus: 418}); err == nil || !strings.Contains(err.Error(), "fail_status 418") {
		t.Errorf("SetFaults(FailStatus 418) = %v, want an error naming fail_status", err)
	}
}

func TestFaultsFailRequests(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	created := tg.name("created")

	// Two admin requests fail whole with 503, as a cluster without an
	// active primary answers; nothing they asked for is applied.
	tg.mustDo(200, "PUT", "/_osfake/faults", `{"fail_requests":2,"fail_endpoints":["admin"]}`)
	status, out := tg.do("GET", "/_cat/indices?format=json", "")
	if status != 503 || str(dig(out, "error", "type")) != "unavailable_shards_exception" || str(out["status"]) != "503" {
		t.Errorf("first admin request = %d %v, want 503 unavailable_shards_exception", status, out)
	}
	if status, _ := tg.do("PUT", "/"+created, ""); status != 503 {
		t.Errorf("second admin request = %d, want 503", status)
	}
	tg.mustDo(404, "HEAD", "/"+created, "") // the failed create did nothing, and the count is spent
	if st := tg.fake.FaultStats(); st.FailedRequests != 2 {
		t.Errorf("FaultStats = %+v, want 2 failed requests", st)
	}
	// The control endpoint itself never fails.
	tg.mustDo(200, "PUT", "/_osfake/faults", `{"fail_rate":1,"fail_endpoints":["all"]}`)
	tg.mustDo(200, "GET", "/_osfake/faults", "")
	if status, _ := tg.do("GET", "/_cluster/health", ""); status != 503 {
		t.Errorf("health with fail_rate 1 on all = %d, want 503", status)
	}

	// 502 and 504 look like a proxy's page: plain text, not JSON.
	tg.mustDo(200, "PUT", "/_osfake/faults", `{"fail_requests":1,"fail_status":502,"fail_endpoints":["admin"]}`)
	status, ctype, body := getRaw(tg, "/_cat/indices")
	if status != 502 || !strings.HasPrefix(ctype, "text/plain") || body != "502 Bad Gateway\n" {
		t.Errorf("502 fault = %d %q %q, want plain text 502 Bad Gateway", status, ctype, body)
	}
	if st := tg.fake.FaultStats(); st.FailedRequests != 1 {
		t.Errorf("FaultStats after SetFaults = %+v, want the counter reset to 1", st)
	}
}

func TestFaultsFailEndpointsSelectRequests(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	name := tg.name("sel")
	cases := []struct {
		name      string
		endpoints string
		method    string
		path      string
		fails     bool
	}{
		{"default is bulk only: admin passes", ``, "GET", "/_cat/indices", false},
		{"admin: cat", `,"fail_endpoints":["admin"]`, "GET", "/_cat/shards", true},
		{"admin: create index", `,"fail_endpoints":["admin"]`, "PUT", "/" + name, true},
		{"admin: health", `,"fail_endpoints":["admin"]`, "GET", "/_cluster/health", true},
		{"search only: admin passes", `,"fail_endpoints":["search"]`, "GET", "/_cat/indices", false},
		{"every kind but admin: alias read passes", `,"fail_endpoints":["search","bulk","doc","count"]`, "GET", "/_alias", false},
		{"all", `,"fail_endpoints":["all"]`, "GET", "/_alias", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tg.mustDo(200, "PUT", "/_osfake/faults", `{"fail_requests":1`+tc.endpoints+`}`)
			status, _ := tg.do(tc.method, tc.path, "")
			if failed := status == 503; failed != tc.fails {
				t.Errorf("%s %s with %s = %d, want failed=%v", tc.method, tc.path, tc.endpoints, status, tc.fails)
			}
			want := 0
			if tc.fails {
				want = 1
			}
			if st := tg.fake.FaultStats(); st.FailedRequests != want {
				t.Errorf("FaultStats = %+v, want %d failed", st, want)
			}
		})
	}
}

// TestFaultsRealClientRetries checks that the real client, which retries
// 502, 503 and 504, gets through a single injected failure.
func TestFaultsRealClientRetries(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	for _, status := range []int{503, 502} {
		if err := tg.fake.SetFaults(Faults{FailRequests: 1, FailStatus: status, FailEndpoints: []string{"admin"}}); err != nil {
			t.Fatal(err)
		}
		// No deadline of its own: what is checked is that the retry gets
		// through, not how fast; go test's -timeout stops a hang.
		_, err := tg.client.Cat.Indices(t.Context(), &opensearchapi.CatIndicesReq{})
		if err != nil {
			t.Errorf("Cat.Indices through one %d = %v, want the client's retry to succeed", status, err)
		}
		if st := tg.fake.FaultStats(); st.FailedRequests != 1 {
			t.Errorf("FaultStats after %d = %+v, want 1 failed request", status, st)
		}
	}
	tg.fake.ClearFaults()
	if st := tg.fake.FaultStats(); st != (FaultStats{}) {
		t.Errorf("FaultStats after ClearFaults = %+v, want zero", st)
	}
}
