package osfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"time"
)

// Options configure a Server. The zero value is usable.
type Options struct {
	// Version is the OpenSearch version the emulator reports and answers
	// as: a 2.19.x or a 3.9.x version (dialect.go says what differs).
	// Default DefaultVersion.
	Version string
	// Clock returns the current time; it drives refresh intervals, delete
	// tombstone expiry (index.gc_deletes) and point-in-time expiry.
	// Default time.Now. Tests inject a *ManualClock's Now.
	Clock func() time.Time
	// ClusterName is reported by GET / and cluster health. Default "osfake".
	ClusterName string
	// Disk is what the data nodes report of their disks
	// (_nodes/stats/fs) and the disk watermarks (_cluster/settings).
	// Default: DefaultNodeDisk on every node, OpenSearch's watermarks.
	Disk Disk
}

// Validate reports what in the options New cannot use.
func (o Options) Validate() error {
	if o.Version != "" {
		if _, err := dialectOf(o.Version); err != nil {
			return err
		}
	}
	return o.Disk.validate()
}

// Server is an in-memory OpenSearch emulator. It is an http.Handler
// and safe for concurrent use. One mutex guards all state: requests are
// serialised, which keeps every operation atomic the way a single-node
// cluster applies one cluster-state update at a time. Injected latency is
// slept outside the lock.
type Server struct {
	opts    Options
	dialect *dialect // the answers of the line of opts.Version
	badOpts error    // what Validate says of opts; every request fails with it

	mu      sync.Mutex
	indices map[string]*index
	pits    map[string]*pit
	faults  faultState
	uuidSeq uint64
	rng     *rand.Rand // for ids and uuids; deterministic
}

// New returns an empty emulator. Options that Validate rejects leave it
// answering every request with HTTP 500 and Validate's error, so that a
// test that asks for a version the emulator does not know fails at its
// first request rather than test another.
func New(opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.ClusterName == "" {
		opts.ClusterName = "osfake"
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	d, err := dialectOf(opts.Version)
	if err != nil {
		d, _ = dialectOf(DefaultVersion)
	}
	if err == nil {
		err = opts.Disk.validate()
	}
	return &Server{
		opts:    opts,
		dialect: d,
		badOpts: err,
		indices: make(map[string]*index),
		pits:    make(map[string]*pit),
		rng:     rand.New(rand.NewPCG(1, 2)),
	}
}

// TestServer is a Server listening on a random loopback port.
type TestServer struct {
	*Server
	HTTP *httptest.Server
	// URL is the base URL, e.g. http://127.0.0.1:41234.
	URL string
}

// NewTestServer starts an emulator on 127.0.0.1 at a random port. Close it
// when done.
func NewTestServer(opts Options) *TestServer {
	s := New(opts)
	h := httptest.NewServer(s)
	return &TestServer{Server: s, HTTP: h, URL: h.URL}
}

// Close stops the listener.
func (t *TestServer) Close() { t.HTTP.Close() }

func (s *Server) now() time.Time { return s.opts.Clock() }

// ManualClock is a clock that moves only when told to.
type ManualClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewManualClock returns a clock reading t.
func NewManualClock(t time.Time) *ManualClock { return &ManualClock{t: t} }

// Now reads the clock.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// request is one parsed HTTP request.
type request struct {
	r      *http.Request
	method string
	path   []string // path segments, unescaped
	vars   map[string]string
	query  map[string]string
	body   []byte
}

func (q *request) param(name string) string { return q.query[name] }

func (q *request) has(name string) bool {
	_, ok := q.query[name]
	return ok
}

// boolParam reads a boolean query parameter: present without a value or
// "true" is true.
func (q *request) boolParam(name string) bool {
	v, ok := q.query[name]
	return ok && (v == "" || v == "true")
}

// route is one REST endpoint: a method and a pattern of path segments,
// where {name} captures a segment.
type route struct {
	methods string // space-separated
	pattern []string
	handle  func(s *Server, w http.ResponseWriter, q *request)
}

func r(methods, pattern string, h func(s *Server, w http.ResponseWriter, q *request)) route {
	return route{methods: methods, pattern: strings.Split(strings.Trim(pattern, "/"), "/"), handle: h}
}

// routes lists every endpoint. Literal patterns come before patterns with
// captures at the same depth, so "/_bulk" wins over "/{index}".
var routes []route

func init() {
	routes = []route{
		r("GET HEAD", "/", (*Server).handleRoot),
		r("GET", "/_cluster/health", (*Server).handleClusterHealth),
		r("GET", "/_cluster/health/{index}", (*Server).handleClusterHealth),
		r("GET", "/_cluster/settings", (*Server).handleGetClusterSettings),
		r("GET", "/_nodes/stats/fs", (*Server).handleNodesStatsFS),
		r("GET", "/_cat/indices", (*Server).handleCatIndices),
		r("GET", "/_cat/indices/{index}", (*Server).handleCatIndices),
		r("GET", "/_cat/shards", (*Server).handleCatShards),
		r("GET", "/_cat/shards/{index}", (*Server).handleCatShards),
		r("GET", "/_cat/aliases", (*Server).handleCatAliases),
		r("GET", "/_cat/aliases/{name}", (*Server).handleCatAliases),
		r("GET", "/_cat/count", (*Server).handleCatCount),
		r("GET", "/_cat/count/{index}", (*Server).handleCatCount),
		r("PUT GET DELETE", "/_osfake/faults", (*Server).handleFaults),
		r("POST PUT", "/_bulk", (*Server).handleBulk),
		r("POST GET", "/_aliases", (*Server).handleAliases),
		r("GET HEAD", "/_alias", (*Server).handleGetAlias),
		r("GET HEAD", "/_alias/{name}", (*Server).handleGetAlias),
		r("GET POST", "/_search", (*Server).handleSearch),
		r("GET POST", "/_count", (*Server).handleCount),
		r("DELETE", "/_search/point_in_time", (*Server).handleDeletePIT),
		r("GET DELETE", "/_search/point_in_time/_all", (*Server).handleAllPITs),
		r("POST GET", "/_refresh", (*Server).handleRefresh),
		r("GET", "/_mapping", (*Server).handleGetMapping),
		r("GET", "/_settings", (*Server).handleGetSettings),
		r("POST PUT", "/{index}/_bulk", (*Server).handleBulk),
		r("GET POST", "/{index}/_search", (*Server).handleSearch),
		r("GET POST", "/{index}/_count", (*Server).handleCount),
		r("POST", "/{index}/_search/point_in_time", (*Server).handleCreatePIT),
		r("GET POST", "/{index}/_search_shards", (*Server).handleSearchShards),
		r("POST GET", "/{index}/_refresh", (*Server).handleRefresh),
		r("GET", "/{index}/_mapping", (*Server).handleGetMapping),
		r("PUT POST", "/{index}/_mapping", (*Server).handlePutMapping),
		r("GET", "/{index}/_settings", (*Server).handleGetSettings),
		r("PUT", "/{index}/_settings", (*Server).handlePutSettings),
		r("GET HEAD", "/{index}/_alias", (*Server).handleGetAlias),
		r("GET HEAD", "/{index}/_alias/{name}", (*Server).handleGetAlias),
		r("PUT POST", "/{index}/_alias/{name}", (*Server).handlePutAlias),
		r("DELETE", "/{index}/_alias/{name}", (*Server).handleDeleteAlias),
		r("POST", "/{index}/_doc", (*Server).handleIndexDoc),
		r("PUT POST", "/{index}/_doc/{id}", (*Server).handleIndexDoc),
		r("GET HEAD", "/{index}/_doc/{id}", (*Server).handleGetDoc),
		r("DELETE", "/{index}/_doc/{id}", (*Server).handleDeleteDoc),
		r("PUT POST", "/{index}/_create/{id}", (*Server).handleIndexDoc),
		r("POST", "/{index}/_update/{id}", (*Server).handleUpdateDoc),
		r("GET HEAD", "/{index}/_source/{id}", (*Server).handleGetSource),
		r("PUT", "/{index}", (*Server).handleCreateIndex),
		r("GET", "/{index}", (*Server).handleGetIndex),
		r("HEAD", "/{index}", (*Server).handleIndexExists),
		r("DELETE", "/{index}", (*Server).handleDeleteIndex),
	}
}

// ServeHTTP dispatches a REST request.
func (s *Server) ServeHTTP(w http.ResponseWriter, hr *http.Request) {
	if s.badOpts != nil {
		writeError(w, &osError{Status: 500, Type: "osfake_invalid_options", Reason: s.badOpts.Error()})
		return
	}
	segs := splitPath(hr.URL.EscapedPath())
	q := &request{r: hr, method: hr.Method, path: segs, query: make(map[string]string)}
	for k, v := range hr.URL.Query() {
		q.query[k] = v[len(v)-1]
	}
	var matched *route
	methodMismatch, literalMismatch := false, false
	for i := range routes {
		vars, ok := match(routes[i].pattern, segs)
		if !ok || (literalMismatch && len(vars) > 0) {
			// A literal endpoint such as /_bulk that exists for other
			// methods is not also an index name.
			continue
		}
		if !strings.Contains(" "+routes[i].methods+" ", " "+hr.Method+" ") {
			methodMismatch = true
			literalMismatch = literalMismatch || len(vars) == 0
			continue
		}
		matched, q.vars = &routes[i], vars
		break
	}
	if matched == nil {
		if methodMismatch {
			writeJSON(w, http.StatusMethodNotAllowed, map[string]any{
				"error":  fmt.Sprintf("Incorrect HTTP method for uri [%s] and method [%s]", hr.URL.Path, hr.Method),
				"status": 405,
			})
			return
		}
		writeError(w, &osError{Status: 400, Type: "illegal_argument_exception",
			Reason: fmt.Sprintf("no handler found for uri [%s] and method [%s]", hr.URL.Path, hr.Method)})
		return
	}
	body, err := io.ReadAll(hr.Body)
	if err != nil {
		writeError(w, &osError{Status: 400, Type: "parse_exception", Reason: "request body is required"})
		return
	}
	q.body = body
	if spec, ok := q.query["filter_path"]; ok && spec != "" {
		serveFiltered(w, spec, func(w http.ResponseWriter) {
			if !s.failRequest(w, q) {
				matched.handle(s, w, q)
			}
		})
		return
	}
	if s.failRequest(w, q) {
		return
	}
	matched.handle(s, w, q)
}

func splitPath(escaped string) []string {
	escaped = strings.Trim(escaped, "/")
	if escaped == "" {
		return []string{""}
	}
	parts := strings.Split(escaped, "/")
	for i, p := range parts {
		if u, err := url.PathUnescape(p); err == nil {
			parts[i] = u
		}
	}
	return parts
}

func match(pattern, segs []string) (map[string]string, bool) {
	if len(pattern) != len(segs) {
		return nil, false
	}
	var vars map[string]string
	for i, p := range pattern {
		if strings.HasPrefix(p, "{") {
			if vars == nil {
				vars = make(map[string]string)
			}
			vars[strings.Trim(p, "{}")] = segs[i]
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return vars, true
}

// writeJSON writes v as the response body with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = 500, []byte(`{"error":"osfake: cannot encode response"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("Content-Length", fmt.Sprint(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// decodeBody decodes a JSON request body into v, allowing an empty body.
func decodeBody(q *request, v any) *osError {
	if len(bytes.TrimSpace(q.body)) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(q.body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return &osError{Status: 400, Type: "parse_exception", Reason: "Failed to parse content to map: " + err.Error()}
	}
	return nil
}

// requireBody is decodeBody for endpoints whose body is mandatory.
func requireBody(q *request, v any) *osError {
	if len(bytes.TrimSpace(q.body)) == 0 {
		return &osError{Status: 400, Type: "parse_exception", Reason: "request body is required"}
	}
	return decodeBody(q, v)
}

func (s *Server) handleRoot(w http.ResponseWriter, q *request) {
	if q.method == http.MethodHead {
		w.WriteHeader(200)
		return
	}
	writeJSON(w, 200, map[string]any{
		"name":         "osfake-0",
		"cluster_name": s.opts.ClusterName,
		"cluster_uuid": "osfake-cluster-uuid",
		"version": map[string]any{
			"distribution":                        "opensearch",
			"number":                              s.dialect.version,
			"build_type":                          "tar",
			"build_hash":                          "osfake",
			"build_date":                          "2025-01-01T00:00:00.000000Z",
			"build_snapshot":                      false,
			"lucene_version":                      s.dialect.lucene,
			"minimum_wire_compatibility_version":  s.dialect.minWire,
			"minimum_index_compatibility_version": s.dialect.minIndex,
		},
		"tagline": "The OpenSearch Project: https://opensearch.org/",
	})
}
