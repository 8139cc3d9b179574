package osfake

import (
	"context"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

func TestClusterHealthShape(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("h")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":4,"number_of_replicas":0}}`)
	resp, err := tg.client.Cluster.Health(context.Background(), &opensearchapi.ClusterHealthReq{Indices: []string{name}})
	if err != nil {
		t.Fatalf("Cluster.Health = %v", err)
	}
	if resp.Status != "green" || resp.TimedOut || resp.ActivePrimaryShards != 4 || resp.ActiveShards != 4 ||
		resp.UnassignedShards != 0 || resp.NumberOfNodes < 1 || resp.NumberOfDataNodes < 1 || resp.ClusterName == "" ||
		resp.ActiveShardsPercentAsNumber != 100 {
		t.Errorf("Cluster.Health(%s) = %+v, want green with 4 active primaries", name, resp)
	}
	out := tg.mustDo(200, "GET", "/_cluster/health/"+name+"?level=indices", "")
	if str(dig(out, "indices", name, "number_of_shards")) != "4" || dig(out, "indices", name, "status") != "green" {
		t.Errorf("level=indices = %v, want %s with 4 shards, green", out, name)
	}
	out = tg.mustDo(200, "GET", "/_cluster/health/"+name+"?level=shards", "")
	if dig(out, "indices", name, "shards", "3", "primary_active") != true {
		t.Errorf("level=shards = %v, want shard 3 with primary_active", out)
	}
	status, out := tg.do("GET", "/_cluster/health?wait_for_status=purple", "")
	if status != 400 || str(dig(out, "error", "type")) != "illegal_argument_exception" {
		t.Errorf("wait_for_status=purple = %d %v, want 400 illegal_argument_exception", status, out)
	}
}

// TestClusterHealthFollowsReplicas checks the status against the three
// pretend data nodes: up to two replicas are assigned, a third is not.
func TestClusterHealthFollowsReplicas(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	name := tg.name("rep")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":2,"number_of_replicas":2}}`)
	steps := []struct {
		replicas              string
		status                string
		active, unassigned    int
		clusterWideUnassigned int
		percent               float64
	}{
		{"2", "green", 6, 0, 0, 100},
		{"3", "yellow", 6, 2, 2, 75},
		{"1", "green", 4, 0, 0, 100},
	}
	for _, st := range steps {
		tg.mustDo(200, "PUT", "/"+name+"/_settings", `{"index":{"number_of_replicas":`+st.replicas+`}}`)
		resp, err := tg.client.Cluster.Health(context.Background(), nil)
		if err != nil {
			t.Fatalf("Cluster.Health = %v", err)
		}
		if resp.Status != st.status || resp.ActiveShards != st.active || resp.UnassignedShards != st.unassigned ||
			resp.ActiveShardsPercentAsNumber != st.percent || resp.NumberOfDataNodes != nodes {
			t.Errorf("replicas %s: health = %+v, want %s, %d active, %d unassigned, %v%%",
				st.replicas, resp, st.status, st.active, st.unassigned, st.percent)
		}
	}
}

func TestClusterHealthWaitForStatus(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("wait")
	// Five replicas cannot all be assigned on a small cluster (or the
	// emulator's three pretend nodes): yellow.
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_replicas":5}}`)

	status, out := tg.do("GET", "/_cluster/health/"+name+"?wait_for_status=green&timeout=100ms", "")
	if status != 408 || dig(out, "timed_out") != true || dig(out, "status") != "yellow" {
		t.Errorf("wait for green on a yellow index = %d %v, want 408 timed_out yellow", status, out)
	}
	// yellow is satisfied by yellow (and green) at once.
	out = tg.mustDo(200, "GET", "/_cluster/health/"+name+"?wait_for_status=yellow&timeout=5s", "")
	if dig(out, "timed_out") != false {
		t.Errorf("wait for yellow = %v, want timed_out false", out)
	}

	// Another client drops the replicas while the wait is in progress.
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(50 * time.Millisecond)
		tg.do("PUT", "/"+name+"/_settings", `{"index":{"number_of_replicas":0}}`)
	}()
	status, out = tg.do("GET", "/_cluster/health/"+name+"?wait_for_status=green&timeout=30s", "")
	<-done
	if status != 200 || dig(out, "status") != "green" || dig(out, "timed_out") != false {
		t.Errorf("wait for green while replicas drop = %d %v, want 200 green", status, out)
	}
}

func TestClusterHealthMissingIndexIsRed(t *testing.T) {
	tg := newTarget(t)
	missing := tg.name("absent")
	status, out := tg.do("GET", "/_cluster/health/"+missing+"?timeout=100ms", "")
	if status != 408 || dig(out, "status") != "red" || dig(out, "timed_out") != true {
		t.Errorf("health of a missing index = %d %v, want 408 red timed_out", status, out)
	}
	// Created while the request waits: it returns as soon as it exists.
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(50 * time.Millisecond)
		tg.do("PUT", "/"+missing, `{"settings":{"number_of_replicas":0}}`)
	}()
	// The server answers as soon as the index exists, which can be before
	// its primaries have started: a new index is yellow (not red) while
	// they initialize. The emulator starts shards at once, so it says
	// green.
	status, out = tg.do("GET", "/_cluster/health/"+missing+"?timeout=30s", "")
	<-done
	if st := dig(out, "status"); status != 200 || dig(out, "timed_out") != false || st != "green" && st != "yellow" {
		t.Errorf("health of an index created while waiting = %d %v, want 200 green or yellow", status, out)
	}
	if tg.fake != nil && dig(out, "status") != "green" {
		t.Errorf("emulator health of an index created while waiting = %v, want green: its shards start at once", out)
	}
}

func TestClusterHealthWaitConditions(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	name := tg.name("cond")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":2,"number_of_replicas":3}}`)
	cases := []struct {
		query  string
		status int
	}{
		{"wait_for_active_shards=6", 200},
		{"wait_for_active_shards=7", 408},
		{"wait_for_active_shards=all", 408},
		{"wait_for_nodes=3", 200},
		{"wait_for_nodes=>=2", 200},
		{"wait_for_nodes=ge(4)", 408},
		{"wait_for_no_relocating_shards=true&wait_for_no_initializing_shards=true&wait_for_events=languid", 200},
		{"wait_for_nodes=many", 400},
	}
	for _, tc := range cases {
		status, out := tg.do("GET", "/_cluster/health/"+name+"?timeout=20ms&"+tc.query, "")
		if status != tc.status {
			t.Errorf("health?%s = %d %v, want %d", tc.query, status, out, tc.status)
		}
	}
}
