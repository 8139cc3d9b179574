package osfake

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Cluster health. The emulator keeps one node's worth of state but
// pretends to have nodes data nodes: an index whose replicas fit on the
// other nodes is green, one with more replicas is yellow.

// healthRank orders statuses the way ClusterHealthStatus does: a wait for
// yellow is satisfied by green.
var healthRank = map[string]int{"green": 0, "yellow": 1, "red": 2}

// healthRequest is a parsed GET /_cluster/health.
type healthRequest struct {
	indices    string // "" for the whole cluster
	waitStatus string // "" when not waiting
	waitActive string // wait_for_active_shards: "", "all" or a count
	waitNodes  string // wait_for_nodes: "N", ">=N", "<=N", ">N", "<N"
	timeout    time.Duration
	level      string
}

func parseHealthRequest(q *request) (*healthRequest, *osError) {
	hr := &healthRequest{indices: q.vars["index"], timeout: 30 * time.Second, level: "cluster"}
	if v := q.param("wait_for_status"); v != "" {
		if _, ok := healthRank[v]; !ok {
			return nil, illegalArgument("unknown cluster health status [" + v + "]")
		}
		hr.waitStatus = v
	}
	if v := q.param("timeout"); v != "" {
		d, err := parseTimeValue("timeout", v)
		if err != nil {
			return nil, err
		}
		hr.timeout = max(d, 0)
	}
	if v := q.param("level"); v != "" {
		if v != "cluster" && v != "indices" && v != "shards" {
			return nil, illegalArgument("No enum constant org.opensearch.cluster.health.ClusterHealthRequest.Level." + strings.ToUpper(v))
		}
		hr.level = v
	}
	if v := q.param("wait_for_active_shards"); v != "" && v != "0" {
		if _, err := parseActiveShardCount(v); err != nil {
			return nil, err
		}
		hr.waitActive = v
	}
	if v := q.param("wait_for_nodes"); v != "" {
		if _, ok := nodesSatisfy(v); !ok {
			return nil, illegalArgument("cannot parse wait_for_nodes [" + v + "]")
		}
		hr.waitNodes = v
	}
	// wait_for_no_relocating_shards, wait_for_no_initializing_shards and
	// wait_for_events are accepted and hold at once: there is never a
	// relocating or initializing shard, nor a pending cluster-state task.
	return hr, nil
}

// nodesSatisfy evaluates a wait_for_nodes expression against the pretend
// node count; ok is false when the expression does not parse.
func nodesSatisfy(expr string) (sat, ok bool) {
	ops := []struct {
		prefix string
		cmp    func(a, b int) bool
	}{
		{">=", func(a, b int) bool { return a >= b }}, {"<=", func(a, b int) bool { return a <= b }},
		{"ge(", func(a, b int) bool { return a >= b }}, {"le(", func(a, b int) bool { return a <= b }},
		{">", func(a, b int) bool { return a > b }}, {"<", func(a, b int) bool { return a < b }},
		{"gt(", func(a, b int) bool { return a > b }}, {"lt(", func(a, b int) bool { return a < b }},
		{"", func(a, b int) bool { return a == b }},
	}
	for _, op := range ops {
		rest, found := strings.CutPrefix(expr, op.prefix)
		if !found {
			continue
		}
		rest = strings.TrimSuffix(rest, ")")
		n, err := strconv.Atoi(rest)
		if err != nil {
			return false, false
		}
		return op.cmp(nodes, n), true
	}
	return false, false
}

// clusterHealth computes the health response for hr and whether every
// condition hr waits for holds. Callers hold mu.
func (s *Server) clusterHealth(hr *healthRequest) (map[string]any, bool) {
	var ixs []*index
	missing := false
	if hr.indices != "" {
		var err *osError
		ixs, err = s.resolveSearch(hr.indices, false)
		// A missing index is RED and is itself waited for, as on the
		// server: the request waits until it appears or the timeout.
		missing = err != nil
	} else {
		ixs, _ = s.resolveSearch("_all", false)
	}
	status := "green"
	var primaries, active, unassigned int
	perIndex := map[string]any{}
	for _, ix := range ixs {
		copies := 1 + ix.assignedReplicas()
		un := ix.numShards * (ix.replicas + 1 - copies)
		primaries += ix.numShards
		active += ix.numShards * copies
		unassigned += un
		st := ix.healthStatus()
		if healthRank[st] > healthRank[status] {
			status = st
		}
		if hr.level == "cluster" {
			continue
		}
		entry := map[string]any{
			"status": st, "number_of_shards": ix.numShards, "number_of_replicas": ix.replicas,
			"active_primary_shards": ix.numShards, "active_shards": ix.numShards * copies,
			"relocating_shards": 0, "initializing_shards": 0, "unassigned_shards": un,
		}
		if hr.level == "shards" {
			shards := map[string]any{}
			for i := range ix.numShards {
				shards[strconv.Itoa(i)] = map[string]any{
					"status": st, "primary_active": true, "active_shards": copies,
					"relocating_shards": 0, "initializing_shards": 0, "unassigned_shards": ix.replicas + 1 - copies,
				}
			}
			entry["shards"] = shards
		}
		perIndex[ix.name] = entry
	}
	if missing {
		status = "red"
	}
	// The percentage is ClusterStateHealth's: 100 when what was asked
	// about is green, else over every shard copy of the cluster, whatever
	// indices the request names.
	percent := 100.0
	if status != "green" {
		var allActive, all int
		for _, ix := range s.indices {
			allActive += ix.numShards * (1 + ix.assignedReplicas())
			all += ix.numShards * (1 + ix.replicas)
		}
		if all > 0 {
			percent = 100 * float64(allActive) / float64(all)
		}
	}
	body := map[string]any{
		"cluster_name":                     s.opts.ClusterName,
		"status":                           status,
		"timed_out":                        false,
		"number_of_nodes":                  nodes,
		"number_of_data_nodes":             nodes,
		"discovered_master":                true,
		"discovered_cluster_manager":       true,
		"active_primary_shards":            primaries,
		"active_shards":                    active,
		"relocating_shards":                0,
		"initializing_shards":              0,
		"unassigned_shards":                unassigned,
		"delayed_unassigned_shards":        0,
		"number_of_pending_tasks":          0,
		"number_of_in_flight_fetch":        0,
		"task_max_waiting_in_queue_millis": 0,
		"active_shards_percent_as_number":  percent,
	}
	if hr.level != "cluster" {
		body["indices"] = perIndex
	}

	ok := !missing
	if hr.waitStatus != "" && healthRank[status] > healthRank[hr.waitStatus] {
		ok = false
	}
	switch hr.waitActive {
	case "":
	case "all":
		ok = ok && unassigned == 0
	default:
		n, _ := strconv.Atoi(hr.waitActive)
		ok = ok && active >= n
	}
	if hr.waitNodes != "" {
		sat, _ := nodesSatisfy(hr.waitNodes)
		ok = ok && sat
	}
	return body, ok
}

// handleClusterHealth serves GET /_cluster/health[/{index}]. With wait
// conditions it polls the state every 10 ms of real time, releasing the
// lock between polls so other requests can change what it waits for;
// when the timeout passes first it answers with timed_out: true and HTTP
// 408, like the server.
func (s *Server) handleClusterHealth(w http.ResponseWriter, q *request) {
	hr, err := parseHealthRequest(q)
	if err != nil {
		writeError(w, err)
		return
	}
	deadline := time.Now().Add(hr.timeout)
	for {
		s.mu.Lock()
		body, ok := s.clusterHealth(hr)
		s.mu.Unlock()
		if ok {
			writeJSON(w, 200, body)
			return
		}
		left := time.Until(deadline)
		if left <= 0 {
			body["timed_out"] = true
			writeJSON(w, http.StatusRequestTimeout, body)
			return
		}
		t := time.NewTimer(min(left, 10*time.Millisecond))
		select {
		case <-q.r.Context().Done():
			t.Stop()
			return // the client has gone
		case <-t.C:
		}
	}
}
