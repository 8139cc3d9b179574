package osfake

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
)

// filter_path, the URL parameter that cuts a response down to the
// fields it names, as the server's XContent filtering does: dotted paths
// whose names may hold * wildcards, ** for any number of levels, and a
// leading - for paths to leave out (applied after the others). Paths go
// through arrays to their elements; objects and arrays left empty are
// dropped, and a response that keeps nothing is {}. Error responses
// (HTTP 4xx and 5xx) are not filtered, as on the server. The filtered
// response is re-encoded, its keys sorted.

type filterPathWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (f *filterPathWriter) WriteHeader(status int) { f.status = status }
func (f *filterPathWriter) Write(b []byte) (int, error) {
	return f.buf.Write(b)
}

// serveFiltered runs handle with its response filtered by spec.
func serveFiltered(w http.ResponseWriter, spec string, handle func(w http.ResponseWriter)) {
	fw := &filterPathWriter{ResponseWriter: w, status: http.StatusOK}
	handle(fw)
	out := fw.buf.Bytes()
	var v any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if fw.status < 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "application/json") && dec.Decode(&v) == nil {
		if kept, ok := applyFilterPath(v, spec); ok {
			out, _ = json.Marshal(kept)
		} else {
			out = []byte("{}")
		}
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(out)))
	w.WriteHeader(fw.status)
	w.Write(out)
}

func applyFilterPath(v any, spec string) (any, bool) {
	var include, exclude [][]string
	for _, p := range strings.Split(spec, ",") {
		p = strings.TrimSpace(p)
		switch {
		case p == "":
		case strings.HasPrefix(p, "-"):
			exclude = append(exclude, strings.Split(p[1:], "."))
		default:
			include = append(include, strings.Split(p, "."))
		}
	}
	ok := true
	if len(include) > 0 {
		v, ok = keepPaths(v, include)
	}
	if ok && len(exclude) > 0 {
		v, ok = dropPaths(v, exclude)
	}
	return v, ok
}

// advance returns what is left of each pattern after matching name, and
// whether one of them ends there.
func advance(patterns [][]string, name string) (rest [][]string, done bool) {
	for _, p := range patterns {
		if p[0] == "**" {
			if len(p) == 1 {
				return nil, true
			}
			rest = append(rest, p) // ** may span this level too
			if wildcard(p[1], name) {
				if len(p) == 2 {
					return nil, true
				}
				rest = append(rest, p[2:])
			}
			continue
		}
		if wildcard(p[0], name) {
			if len(p) == 1 {
				return nil, true
			}
			rest = append(rest, p[1:])
		}
	}
	return rest, false
}

// keepPaths keeps what the patterns reach; false when nothing is left.
func keepPaths(v any, patterns [][]string) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			rest, done := advance(patterns, k)
			if done {
				out[k] = e
			} else if len(rest) > 0 {
				if kept, ok := keepPaths(e, rest); ok {
					out[k] = kept
				}
			}
		}
		return out, len(out) > 0
	case []any:
		var out []any
		for _, e := range x {
			if kept, ok := keepPaths(e, patterns); ok {
				out = append(out, kept)
			}
		}
		return out, len(out) > 0
	}
	return nil, false
}

// dropPaths leaves out what the patterns reach; false when nothing is
// left of an object or array that had something.
func dropPaths(v any, patterns [][]string) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			rest, done := advance(patterns, k)
			switch {
			case done:
			case len(rest) > 0:
				if kept, ok := dropPaths(e, rest); ok {
					out[k] = kept
				}
			default:
				out[k] = e
			}
		}
		return out, len(out) > 0 || len(x) == 0
	case []any:
		out := []any{}
		for _, e := range x {
			if kept, ok := dropPaths(e, patterns); ok {
				out = append(out, kept)
			}
		}
		return out, len(out) > 0 || len(x) == 0
	}
	return v, true
}
