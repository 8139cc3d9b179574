package osfake

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Faults describe the failures the emulator injects. They are set through
// SetFaults or PUT /_osfake/faults with the same JSON, and cleared with
// ClearFaults or DELETE /_osfake/faults. Random choices come from a PCG
// generator seeded with Seed, so a test that sends the same requests in the
// same order sees the same faults.
type Faults struct {
	// Seed seeds the random choices. Default 0.
	Seed uint64 `json:"seed,omitempty"`
	// RejectRate is the fraction of bulk items rejected with 429, 0 to 1.
	RejectRate float64 `json:"reject_rate,omitempty"`
	// RejectItems rejects the next N bulk items with 429, before RejectRate
	// applies.
	RejectItems int `json:"reject_items,omitempty"`
	// RejectType is the error type of a rejected item:
	// "rejected_execution_exception" (default) or "circuit_breaking_exception".
	RejectType string `json:"reject_type,omitempty"`
	// FailRequests fails the next N matching requests whole, with
	// FailStatus, before anything is applied.
	FailRequests int `json:"fail_requests,omitempty"`
	// FailRate fails that fraction of matching requests whole.
	FailRate float64 `json:"fail_rate,omitempty"`
	// FailStatus is 503 (default; an OpenSearch JSON error), 502 or 504 (a
	// proxy's plain-text page).
	FailStatus int `json:"fail_status,omitempty"`
	// FailEndpoints are the kinds of request that FailRequests and FailRate
	// apply to: "bulk" (default), "search", "count", "doc", "admin", or "all".
	FailEndpoints []string `json:"fail_endpoints,omitempty"`
	// ShardLatency delays every bulk request that writes to a shard, and
	// every search or count that reads it, by the given time: a hot shard.
	// A request waits for its slowest shard, as it does on the server.
	ShardLatency []ShardLatency `json:"shard_latency,omitempty"`
	// DropResponses cuts off the next N bulk responses half-way, after the
	// bulk has been applied, and closes the connection: the client cannot
	// know which items were written.
	DropResponses int `json:"drop_responses,omitempty"`
	// WriteBlock lists indices whose writes fail with 403
	// cluster_block_exception, as with index.blocks.write.
	WriteBlock []string `json:"write_block,omitempty"`
}

// ShardLatency is added latency for one shard of one index.
type ShardLatency struct {
	Index string   `json:"index"`
	Shard int      `json:"shard"`
	Delay Duration `json:"delay"`
}

// Duration is a time.Duration that reads from JSON as a string such as
// "2s" or "150ms", or as a number of milliseconds.
type Duration time.Duration

// UnmarshalJSON reads "2s" or 2000.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("osfake: delay %q: %w", s, err)
		}
		*d = Duration(v)
		return nil
	}
	ms, err := strconv.ParseFloat(string(b), 64)
	if err != nil {
		return fmt.Errorf("osfake: delay %s: want a duration string or milliseconds", b)
	}
	*d = Duration(time.Duration(ms * float64(time.Millisecond)))
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// faultState is the active Faults with their counters and generator.
type faultState struct {
	f   Faults
	rng *rand.Rand
	// Counters of what was injected, for tests.
	rejected, failed, dropped, delayed int
}

// FaultStats counts injected faults since the last SetFaults.
type FaultStats struct {
	RejectedItems  int `json:"rejected_items"`
	FailedRequests int `json:"failed_requests"`
	DroppedConns   int `json:"dropped_responses"`
	// DelayedRequests counts the requests that touched a slow shard and
	// were held for its latency, so a test can tell which requests were
	// slowed without timing them.
	DelayedRequests int `json:"delayed_requests"`
}

func (f *Faults) validate() error {
	var p []string
	if f.RejectRate < 0 || f.RejectRate > 1 {
		p = append(p, fmt.Sprintf("reject_rate %v: want 0 to 1", f.RejectRate))
	}
	if f.FailRate < 0 || f.FailRate > 1 {
		p = append(p, fmt.Sprintf("fail_rate %v: want 0 to 1", f.FailRate))
	}
	switch f.FailStatus {
	case 0, 502, 503, 504:
	default:
		p = append(p, fmt.Sprintf("fail_status %d: want 502, 503 or 504", f.FailStatus))
	}
	switch f.RejectType {
	case "", "rejected_execution_exception", "circuit_breaking_exception":
	default:
		p = append(p, fmt.Sprintf("reject_type %q: want rejected_execution_exception or circuit_breaking_exception", f.RejectType))
	}
	for _, e := range f.FailEndpoints {
		switch e {
		case "bulk", "search", "count", "doc", "admin", "all":
		default:
			p = append(p, fmt.Sprintf("fail_endpoints %q: want bulk, search, count, doc, admin or all", e))
		}
	}
	if f.RejectItems < 0 || f.FailRequests < 0 || f.DropResponses < 0 {
		p = append(p, "counts must not be negative")
	}
	if len(p) > 0 {
		return fmt.Errorf("osfake: faults: %s", strings.Join(p, "; "))
	}
	return nil
}

// SetFaults replaces the injected faults and resets their counters.
func (s *Server) SetFaults(f Faults) error {
	if err := f.validate(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = faultState{f: f, rng: rand.New(rand.NewPCG(f.Seed, 0x6f7366616b65))}
	return nil
}

// ClearFaults removes every injected fault.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = faultState{}
}

// FaultStats returns what was injected since the last SetFaults.
func (s *Server) FaultStats() FaultStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return FaultStats{RejectedItems: s.faults.rejected, FailedRequests: s.faults.failed, DroppedConns: s.faults.dropped, DelayedRequests: s.faults.delayed}
}

func (fs *faultState) roll(p float64) bool { return p > 0 && fs.rng != nil && fs.rng.Float64() < p }

// rejectItem decides whether the next bulk item is rejected, and with what
// error. Callers hold mu.
func (fs *faultState) rejectItem() *osError {
	hit := false
	if fs.f.RejectItems > 0 {
		fs.f.RejectItems--
		hit = true
	} else {
		hit = fs.roll(fs.f.RejectRate)
	}
	if !hit {
		return nil
	}
	fs.rejected++
	if fs.f.RejectType == "circuit_breaking_exception" {
		return &osError{Status: 429, Type: "circuit_breaking_exception",
			Reason: "[parent] Data too large, data for [<http_request>] would be larger than limit",
			Extra:  map[string]any{"bytes_wanted": 1 << 30, "bytes_limit": 1 << 29, "durability": "TRANSIENT"}}
	}
	return &osError{Status: 429, Type: "rejected_execution_exception",
		Reason: "rejected execution of coordinating operation [coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, coordinating_operation_bytes=1024, max_coordinating_and_primary_bytes=0]"}
}

// latency is the injected delay of a request touching the given shards
// of an index: the largest of theirs. Callers hold mu.
func (fs *faultState) latency(indexName string, shards map[int]bool) time.Duration {
	var d time.Duration
	for _, l := range fs.f.ShardLatency {
		if l.Index == indexName && shards[l.Shard] {
			d = max(d, time.Duration(l.Delay))
		}
	}
	return d
}

// held counts a request held for d, the latency of the slowest shard it
// touches, and returns d. Callers hold mu.
func (fs *faultState) held(d time.Duration) time.Duration {
	if d > 0 {
		fs.delayed++
	}
	return d
}

// takeDrop reports whether this bulk response is to be cut off. Callers
// hold mu.
func (fs *faultState) takeDrop() bool {
	if fs.f.DropResponses > 0 {
		fs.f.DropResponses--
		fs.dropped++
		return true
	}
	return false
}

func (fs *faultState) blocked(indexName string) bool {
	for _, n := range fs.f.WriteBlock {
		if n == indexName {
			return true
		}
	}
	return false
}

// endpointKind classifies a request for FailEndpoints.
func endpointKind(q *request) string {
	for _, seg := range q.path {
		switch seg {
		case "_bulk":
			return "bulk"
		case "_search":
			return "search"
		case "_count":
			return "count"
		case "_doc", "_create", "_update", "_source":
			return "doc"
		case "_osfake":
			return "control"
		}
	}
	return "admin"
}

// failRequest injects a whole-request failure, if one is due, and reports
// whether it wrote the response.
func (s *Server) failRequest(w http.ResponseWriter, q *request) bool {
	kind := endpointKind(q)
	if kind == "control" {
		return false
	}
	s.mu.Lock()
	fs := &s.faults
	eps := fs.f.FailEndpoints
	if len(eps) == 0 {
		eps = []string{"bulk"}
	}
	applies := false
	for _, e := range eps {
		applies = applies || e == kind || e == "all"
	}
	hit := false
	if applies {
		if fs.f.FailRequests > 0 {
			fs.f.FailRequests--
			hit = true
		} else {
			hit = fs.roll(fs.f.FailRate)
		}
	}
	if hit {
		fs.failed++
	}
	status := fs.f.FailStatus
	s.mu.Unlock()
	if !hit {
		return false
	}
	switch status {
	case 502, 504:
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		fmt.Fprintf(w, "%d %s\n", status, http.StatusText(status))
	default:
		writeError(w, &osError{Status: 503, Type: "unavailable_shards_exception",
			Reason: "[osfake][0] primary shard is not active Timeout: [1m], request: [osfake injected fault]"})
	}
	return true
}

// writeTruncated sends the first half of a JSON response with the full
// Content-Length and then aborts the connection, the way a connection
// dropped mid-response looks to a client.
func writeTruncated(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b[:len(b)/2])
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	panic(http.ErrAbortHandler)
}

func (s *Server) handleFaults(w http.ResponseWriter, q *request) {
	switch q.method {
	case http.MethodDelete:
		s.ClearFaults()
		writeJSON(w, 200, map[string]any{"acknowledged": true})
	case http.MethodGet:
		s.mu.Lock()
		f := s.faults.f
		st := FaultStats{RejectedItems: s.faults.rejected, FailedRequests: s.faults.failed, DroppedConns: s.faults.dropped, DelayedRequests: s.faults.delayed}
		s.mu.Unlock()
		writeJSON(w, 200, map[string]any{"faults": f, "stats": st})
	default:
		var f Faults
		dec := json.NewDecoder(strings.NewReader(string(q.body)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&f); err != nil {
			writeError(w, parseError("osfake: faults: "+err.Error()))
			return
		}
		if err := s.SetFaults(f); err != nil {
			writeError(w, illegalArgument(err.Error()))
			return
		}
		writeJSON(w, 200, map[string]any{"acknowledged": true})
	}
}
