package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// The engine: which search engine, and which release of it, the nodes run,
// and whether geoshard runs on it (docs/engines.md).

// Distributions an Engine can name.
const (
	// OpenSearch's answer to GET / names it in version.distribution.
	DistOpenSearch = "opensearch"
	// Elasticsearch's answer names no distribution; it is known by its
	// tagline and version.build_flavor.
	DistElasticsearch = "elasticsearch"
)

// esTagline is the tagline of Elasticsearch's answer to GET /.
const esTagline = "You Know, for Search"

// Engine is the search engine a node runs, as its answer to GET / names
// it.
type Engine struct {
	// Distribution is DistOpenSearch, DistElasticsearch, another
	// version.distribution as given, or "" when the answer names none.
	Distribution string
	// Version is version.number as given: "2.19.1", "3.9.0-SNAPSHOT".
	Version string
}

// String names the engine as people do: "OpenSearch 2.19.1".
func (e Engine) String() string {
	name := e.Distribution
	switch e.Distribution {
	case DistOpenSearch:
		name = "OpenSearch"
	case DistElasticsearch:
		name = "Elasticsearch"
	case "":
		name = "an unnamed engine"
	}
	if e.Version == "" {
		return name
	}
	return name + " " + e.Version
}

// release is the numeric part of a version: major.minor.patch.
type release struct{ major, minor, patch int }

// parseRelease reads "2.19.1". A qualified build ("3.9.0-SNAPSHOT",
// "3.0.0-alpha1") is read as the release it is a build of: it has that
// release's APIs, which is what the check is about.
func parseRelease(v string) (release, bool) {
	num, _, _ := strings.Cut(v, "-")
	parts := strings.Split(num, ".")
	if len(parts) != 3 {
		return release{}, false
	}
	var n [3]int
	for i, p := range parts {
		x, err := strconv.Atoi(p)
		if err != nil || x < 0 || p != strconv.Itoa(x) {
			return release{}, false
		}
		n[i] = x
	}
	return release{n[0], n[1], n[2]}, true
}

func (r release) less(o release) bool {
	if r.major != o.major {
		return r.major < o.major
	}
	if r.minor != o.minor {
		return r.minor < o.minor
	}
	return r.patch < o.patch
}

// openSearchLine is a run of minor releases of one major, every patch of
// each: 3.0 to 3.9.x.
type openSearchLine struct{ major, fromMinor, toMinor int }

func (l openSearchLine) holds(r release) bool {
	return r.major == l.major && r.minor >= l.fromMinor && r.minor <= l.toMinor
}

func (l openSearchLine) String() string {
	if l.fromMinor == l.toMinor {
		return fmt.Sprintf("%d.%d.x", l.major, l.toMinor)
	}
	return fmt.Sprintf("%d.%d to %d.%d.x", l.major, l.fromMinor, l.major, l.toMinor)
}

// supportedOpenSearch is what geoshard runs on, oldest first: the
// OpenSearch lines CI tests, and no other engine. CI runs the suites on
// 3.9.0, the newest (the Makefile's OPENSEARCH_VERSION), and on 2.19.6
// (OPENSEARCH_2); a patch release of a supported minor is taken as
// tested. Widen it when CI tests a newer release, not before: a newer
// one is refused unless the operator allows it (CheckEngine).
var supportedOpenSearch = []openSearchLine{
	{major: 2, fromMinor: 19, toMinor: 19},
	{major: 3, fromMinor: 0, toMinor: 9},
}

// SupportedEngines says what geoshard runs on, for messages and logs:
// "OpenSearch 2.19.x and 3.0 to 3.9.x".
func SupportedEngines() string { return "OpenSearch " + supportedLines() }

// supportedLines is "2.19.x and 3.0 to 3.9.x".
func supportedLines() string {
	lines := make([]string, len(supportedOpenSearch))
	for i, l := range supportedOpenSearch {
		lines[i] = l.String()
	}
	if len(lines) == 1 {
		return lines[0]
	}
	return strings.Join(lines[:len(lines)-1], ", ") + " and " + lines[len(lines)-1]
}

// CheckEngine decides whether geoshard runs on e: nil for a supported
// OpenSearch, else an *EngineError saying why not. Only an OpenSearch
// newer than the newest tested (EngineUntested) is one an operator may
// choose to run on anyway; the caller decides, and says so.
func CheckEngine(e Engine) error {
	bad := func(p EngineProblem) error { return &EngineError{Engine: e, Problem: p} }
	if e.Distribution != DistOpenSearch {
		return bad(EngineNotOpenSearch)
	}
	r, ok := parseRelease(e.Version)
	if !ok {
		return bad(EngineUnreadable)
	}
	for _, l := range supportedOpenSearch {
		if l.holds(r) {
			return nil
		}
	}
	oldest := supportedOpenSearch[0]
	if r.less(release{oldest.major, oldest.fromMinor, 0}) {
		return bad(EngineTooOld)
	}
	// Newer than the oldest supported and in no tested line: newer than
	// the newest, or (were there one) a release between two lines.
	return bad(EngineUntested)
}

// Engine asks a node which engine it runs (GET /). A failed request is
// Send's error: an *APIError for an answer that is not 2xx (401 or 403
// for a user without the cluster monitor permission), else the transport
// error; a 2xx answer that is not an engine's JSON is an *EngineError
// (EngineUnreadable). It goes through Send, not opensearchapi's Info, so
// that its failures are classified as every other call's are
// (Transient), and because Info's answer lacks version.build_flavor.
func (a *Admin) Engine(ctx context.Context) (Engine, error) {
	var out struct {
		Version struct {
			Distribution string `json:"distribution"`
			Number       string `json:"number"`
			BuildFlavor  string `json:"build_flavor"`
		} `json:"version"`
		Tagline string `json:"tagline"`
	}
	err := a.Send(ctx, Request{Method: http.MethodGet, Path: "/"}, &out)
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syntax), errors.As(err, &typ):
		// Answered, but not as an engine does (a proxy's page): asking
		// again would get the same answer.
		return Engine{}, &EngineError{Problem: EngineUnreadable, Err: err}
	case err != nil:
		return Engine{}, err
	}
	e := Engine{Distribution: out.Version.Distribution, Version: out.Version.Number}
	if e.Distribution == "" && (out.Tagline == esTagline || out.Version.BuildFlavor != "") {
		e.Distribution = DistElasticsearch
	}
	return e, nil
}
