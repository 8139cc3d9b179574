package osfake

import (
	"strconv"
	"testing"
	"time"
)

// Replicas against the nodes the engine reports: the emulator pretends to
// have three data nodes (a replica per node besides the primary's is
// STARTED, the rest UNASSIGNED); a real single node assigns no replica,
// a real cluster of three assigns two. Each test derives what it expects
// from number_of_data_nodes, so it holds on all three.

// An index of one replica: its copies in _cat/shards, its columns in
// _cat/indices and its _cluster/health.
func TestReplicaCopiesAndHealth(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("rep1")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":2,"number_of_replicas":1}}`)
	nodes := tg.dataNodes()
	tg.settled(name)
	assigned := min(1, nodes-1) // replicas of each shard a node can hold
	status := "green"
	if assigned < 1 {
		status = "yellow"
	}

	count := map[string]int{}
	for _, r := range catRows(tg, "/_cat/shards/"+name+"?h=shard,prirep,state,node") {
		count[str(r["prirep"])+" "+str(r["state"])]++
		if (r["state"] == "STARTED") != (r["node"] != nil) {
			t.Errorf("row %v: a started copy has a node, an unassigned one none", r)
		}
	}
	want := map[string]int{"p STARTED": 2}
	if assigned == 1 {
		want["r STARTED"] = 2
	} else {
		want["r UNASSIGNED"] = 2
	}
	if mustJSON(count) != mustJSON(want) {
		t.Errorf("copies by role and state on %d data nodes = %v, want %v", nodes, count, want)
	}

	rows := catRows(tg, "/_cat/indices/"+name+"?h=health,status,pri,rep")
	if len(rows) != 1 || rows[0]["health"] != status || rows[0]["status"] != "open" || rows[0]["pri"] != "2" || rows[0]["rep"] != "1" {
		t.Errorf("_cat/indices on %d data nodes = %v, want %s open 2 1", nodes, rows, status)
	}

	out := tg.mustDo(200, "GET", "/_cluster/health/"+name, "")
	got := str(out["status"]) + " active " + str(out["active_shards"]) + " primaries " + str(out["active_primary_shards"]) +
		" unassigned " + str(out["unassigned_shards"]) + " initializing " + str(out["initializing_shards"]) +
		" nodes " + str(out["number_of_nodes"]) + " timed_out " + str(out["timed_out"])
	wantHealth := status + " active " + strconv.Itoa(2+2*assigned) + " primaries 2 unassigned " + strconv.Itoa(2-2*assigned) +
		" initializing 0 nodes " + strconv.Itoa(nodes) + " timed_out false"
	if got != wantHealth {
		t.Errorf("_cluster/health/%s = %s, want %s", name, got, wantHealth)
	}
}

// Health follows number_of_replicas: one replica more than the other
// nodes can hold leaves one copy of each shard unassigned, yellow (on a
// single node, an index of one replica); a wait for green then times out
// with 408 and timed_out true, the body still the health. Taking that
// replica away makes the index green. The percentage of active shards is
// the cluster's, whatever index the request names, unless that is green.
func TestHealthFollowsNumberOfReplicas(t *testing.T) {
	tg := newTarget(t)
	nodes := tg.dataNodes()
	other, name := tg.name("other"), tg.name("grow")
	// An index of another state beside it, so that the cluster's
	// percentage differs from the index's.
	tg.mustDo(200, "PUT", "/"+other, `{"settings":{"number_of_replicas":0}}`)
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_replicas":`+strconv.Itoa(nodes)+`}}`)
	tg.settled(name)

	status, out := tg.do("GET", "/_cluster/health/"+name+"?wait_for_status=green&timeout=1s", "")
	if status != 408 || out["status"] != "yellow" || out["timed_out"] != true || str(out["unassigned_shards"]) != "1" ||
		str(out["active_shards"]) != strconv.Itoa(nodes) {
		t.Errorf("health of %d replicas on %d data nodes, waiting for green = %d %v; want 408 yellow, timed_out, %d active, 1 unassigned",
			nodes, nodes, status, out, nodes)
	}
	cluster := tg.mustDo(200, "GET", "/_cluster/health", "")
	if p, all := str(out["active_shards_percent_as_number"]), str(cluster["active_shards_percent_as_number"]); pct(p) != pct(all) || pct(p) == 100 {
		t.Errorf("active_shards_percent_as_number of a yellow index = %s, want the cluster's %s (below 100)", p, all)
	}
	rows := catRows(tg, "/_cat/indices/"+name+"?h=health,rep")
	if len(rows) != 1 || rows[0]["health"] != "yellow" || rows[0]["rep"] != strconv.Itoa(nodes) {
		t.Errorf("_cat/indices = %v, want yellow with %d replicas", rows, nodes)
	}

	tg.mustDo(200, "PUT", "/"+name+"/_settings", `{"index":{"number_of_replicas":`+strconv.Itoa(nodes-1)+`}}`)
	status, out = tg.do("GET", "/_cluster/health/"+name+"?wait_for_status=green&timeout=60s", "")
	if status != 200 || out["status"] != "green" || out["timed_out"] != false || str(out["unassigned_shards"]) != "0" ||
		pct(str(out["active_shards_percent_as_number"])) != 100 {
		t.Errorf("health with %d replicas = %d %v, want 200 green, no unassigned shard, 100%%", nodes-1, status, out)
	}
}

// pct reads a percentage as JSON wrote it (the server writes 75.0, the
// emulator 75), or -1.
func pct(s string) float64 {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return -1
	}
	return f
}

// wait_for_active_shards on index creation and on writes. An index of as
// many replicas as data nodes has one copy of each shard that no node can
// hold, so its copies are never all active.
func TestWaitForActiveShards(t *testing.T) {
	tg := newTarget(t)
	nodes := tg.dataNodes()
	copies := nodes + 1
	short, full := tg.name("short"), tg.name("full")
	settings := `{"settings":{"number_of_replicas":` + strconv.Itoa(nodes) + `}}`

	// Creation: the count is parsed, and may not exceed the copies.
	for _, tc := range []struct{ value, want string }{
		{"abc", `illegal_argument_exception: cannot parse ActiveShardCount[abc] / number_format_exception: For input string: "abc"`},
		{"ALL", `illegal_argument_exception: cannot parse ActiveShardCount[ALL] / number_format_exception: For input string: "ALL"`},
		{"-1", "illegal_argument_exception: shard count cannot be a negative value"},
		{strconv.Itoa(copies + 1), "illegal_argument_exception: invalid wait_for_active_shards[" + strconv.Itoa(copies+1) +
			"]: cannot be greater than number of shard copies [" + strconv.Itoa(copies) + "]"},
	} {
		status, out := tg.do("PUT", "/"+short+"?wait_for_active_shards="+tc.value, settings)
		if got := errorChain(dig(out, "error")); status != 400 || got != tc.want {
			t.Errorf("create with wait_for_active_shards=%s = %d %s, want 400 %s", tc.value, status, got, tc.want)
		}
	}
	if status, _ := tg.do("HEAD", "/"+short, ""); status != 404 {
		t.Errorf("HEAD %s after refused creates = %d, want 404", short, status)
	}
	// all, with a copy that cannot be assigned: the index is created, and
	// the answer says, once the timeout has passed, that its shards are
	// not all active.
	start := time.Now()
	out := tg.mustDo(200, "PUT", "/"+short+"?wait_for_active_shards=all&timeout=1s", settings)
	if elapsed := time.Since(start); out["acknowledged"] != true || out["shards_acknowledged"] != false || tg.early(elapsed) {
		t.Errorf("create with all of %d copies on %d data nodes = %v after %v, want acknowledged, shards not, after the 1s timeout",
			copies, nodes, out, elapsed)
	}
	// all, with every copy assignable: it answers once they are active.
	out = tg.mustDo(200, "PUT", "/"+full+"?wait_for_active_shards=all&timeout=60s", `{"settings":{"number_of_replicas":`+strconv.Itoa(nodes-1)+`}}`)
	if out["acknowledged"] != true || out["shards_acknowledged"] != true {
		t.Errorf("create with all of %d copies on %d data nodes = %v, want shards acknowledged", nodes, nodes, out)
	}
	tg.settled(short)

	// Writes: a count the active copies meet writes; one they do not
	// fails with 503 at the timeout, the document untouched; a count
	// above the copies is no error here but is never met.
	for _, v := range []string{"1", strconv.Itoa(nodes), "0"} {
		if status, out := tg.do("PUT", "/"+short+"/_doc/1?wait_for_active_shards="+v, `{"v":`+v+`}`); status != 200 && status != 201 {
			t.Errorf("PUT with wait_for_active_shards=%s = %d %v, want it written", v, status, out)
		}
	}
	unavailable := func(count string) string {
		return "unavailable_shards_exception: [" + short + "][0] Not enough active copies to meet shard count of [" + count +
			"] (have " + strconv.Itoa(nodes) + ", needed " + strconv.Itoa(map[string]int{"ALL": copies}[count]+atoi(count)) + "). Timeout: [1s]"
	}
	over := strconv.Itoa(copies + 1)
	writes := []struct{ method, path, body, want string }{
		{"PUT", "/_doc/1?wait_for_active_shards=all&timeout=1s", `{"v":"all"}`, unavailable("ALL")},
		{"PUT", "/_doc/1?wait_for_active_shards=" + over + "&timeout=1s", `{"v":"over"}`, unavailable(over)},
		{"DELETE", "/_doc/1?wait_for_active_shards=all&timeout=1s", "", unavailable("ALL")},
		{"DELETE", "/_doc/absent?wait_for_active_shards=all&timeout=1s", "", unavailable("ALL")},
		{"PUT", "/_doc/1?wait_for_active_shards=abc", `{"v":"abc"}`,
			`illegal_argument_exception: cannot parse ActiveShardCount[abc] / number_format_exception: For input string: "abc"`},
	}
	for _, w := range writes {
		start := time.Now()
		status, out := tg.do(w.method, "/"+short+w.path, w.body)
		got := errorChain(dig(out, "error"))
		wantStatus := 503
		if w.want[0] == 'i' {
			wantStatus = 400
		} else if elapsed := time.Since(start); tg.early(elapsed) {
			t.Errorf("%s %s answered after %v, before its 1s timeout", w.method, w.path, elapsed)
		}
		if status != wantStatus || got != w.want {
			t.Errorf("%s %s = %d %s\nwant %d %s", w.method, w.path, status, got, wantStatus, w.want)
		}
	}
	if out := tg.mustDo(200, "GET", "/"+short+"/_doc/1", ""); str(dig(out, "_source", "v")) != "0" {
		t.Errorf("document after the writes that failed = %v, want the last written, v 0", out)
	}

	// _bulk: only the items of the short index fail.
	body := `{"index":{"_index":"` + short + `","_id":"2"}}` + "\n{}\n" +
		`{"delete":{"_index":"` + short + `","_id":"1"}}` + "\n" +
		`{"index":{"_index":"` + full + `","_id":"2"}}` + "\n{}\n"
	start = time.Now()
	out = tg.mustDo(200, "POST", "/_bulk?wait_for_active_shards=all&timeout=1s", body)
	if elapsed := time.Since(start); tg.early(elapsed) {
		t.Errorf("_bulk answered after %v, before its 1s timeout", elapsed)
	}
	var got []string
	for i, action := range []string{"index", "delete", "index"} {
		it := dig(out, "items", i, action)
		got = append(got, str(dig(it, "status"))+" "+errorChain(dig(it, "error")))
	}
	want := []string{"503 " + unavailable("ALL"), "503 " + unavailable("ALL"), "201 "}
	if mustJSON(got) != mustJSON(want) || out["errors"] != true {
		t.Errorf("_bulk with all = %v\nwant %v", got, want)
	}
	out = tg.mustDo(200, "POST", "/_bulk?wait_for_active_shards=1", body)
	if out["errors"] != false {
		t.Errorf("_bulk with 1 = %v, want every item written", out)
	}
	if status, out := tg.do("POST", "/_bulk?wait_for_active_shards=-1", body); status != 400 ||
		errorChain(dig(out, "error")) != "illegal_argument_exception: shard count cannot be a negative value" {
		t.Errorf("_bulk with -1 = %d %v, want 400 shard count cannot be a negative value", status, out)
	}
}

// early reports whether the emulator answered a request that waits for
// active shards before its timeout of 1s: it waits the whole timeout, as
// the server does. The server's reason names the timeout it waited
// ("Timeout: [1s]"), which the tests check on both; its clock is not
// checked: a real cluster was seen to answer a _bulk after 0.82s (its
// wait starts on the node that holds the shard, and may end on a change
// of the cluster's state).
func (tg *target) early(elapsed time.Duration) bool {
	return tg.fake != nil && elapsed < time.Second
}

// atoi is strconv.Atoi that reads what is not a number as 0.
func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
