package osfake

import (
	"sort"
	"strconv"
	"strings"
	"time"
)

// Search targets: the shards a search reads. An index expression
// resolves to indices named directly or reached through aliases (whose
// filters and search routing then apply); the routing and preference
// parameters narrow the shards; the injected latency of a read is that of
// its slowest shard.

// shardRead is one shard a search reads: its documents (the searchable
// map, or a point in time's snapshot), the alias filter that applies, and
// for a slice of a shard, which part of its documents.
type shardRead struct {
	ix        *index
	shard     int
	docs      map[string]*doc
	filter    query // nil: no alias filter
	sliceMod  int   // > 1: keep the documents whose _id hashes to sliceRem
	sliceRem  int
	sliceNone bool     // outside the slice: the shard is asked but matches nothing
	gone      *osError // set when a point in time's index was deleted
}

// targetIndex is an index a search expression reaches: directly (by name,
// wildcard or _all) or only through aliases.
type targetIndex struct {
	ix      *index
	direct  bool
	aliases []string
}

// resolveTargets resolves a search expression the way the server's
// IndexNameExpressionResolver does for alias filters and search routing.
// Callers hold mu.
func (s *Server) resolveTargets(expr string, ignoreUnavailable bool) ([]*targetIndex, *osError) {
	byName := map[string]*targetIndex{}
	get := func(ix *index) *targetIndex {
		t := byName[ix.name]
		if t == nil {
			t = &targetIndex{ix: ix}
			byName[ix.name] = t
		}
		return t
	}
	for _, part := range strings.Split(expr, ",") {
		part = strings.TrimSpace(part)
		ixs, err := s.resolveSearch(part, true)
		if err != nil {
			if ignoreUnavailable && err.Status == 404 {
				continue
			}
			return nil, err
		}
		for _, ix := range ixs {
			t := get(ix)
			switch {
			case part == "_all" || part == "" || part == "*":
				t.direct = true
			case strings.Contains(part, "*"):
				if wildcard(part, ix.name) {
					t.direct = true
				}
				for a := range ix.aliases {
					if wildcard(part, a) {
						t.aliases = append(t.aliases, a)
					}
				}
			case part == ix.name:
				t.direct = true
			default:
				t.aliases = append(t.aliases, part)
			}
		}
	}
	out := make([]*targetIndex, 0, len(byName))
	for _, t := range byName {
		sort.Strings(t.aliases)
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ix.name < out[j].ix.name })
	return out, nil
}

// aliasFilter is the filter of the aliases an index was reached through:
// none if it was also named directly or through an alias without a
// filter, else the filters OR-ed.
func (t *targetIndex) aliasFilter() (query, *osError) {
	if t.direct || len(t.aliases) == 0 {
		return nil, nil
	}
	var should []query
	for _, a := range t.aliases {
		f := t.ix.aliases[a].Filter
		if f == nil {
			return nil, nil
		}
		fq, err := parseQuery(f)
		if err != nil {
			return nil, err
		}
		should = append(should, fq)
	}
	if len(should) == 1 {
		return should[0], nil
	}
	return &boolQuery{should: should}, nil
}

// routings is IndexNameExpressionResolver.resolveSearchRouting for one
// index: nil means every shard. The routing parameter applies to indices
// named directly or through aliases without search routing; through
// routing aliases only, it is intersected with their search routing, and
// an empty intersection (like the server) falls back to every shard.
func (t *targetIndex) routings(param []string) []string {
	if t.direct {
		return param
	}
	var union []string
	for _, a := range t.aliases {
		sr := t.ix.aliases[a].SearchRouting
		if sr == "" {
			return param
		}
		union = append(union, strings.Split(sr, ",")...)
	}
	if param == nil {
		return union
	}
	var out []string
	for _, r := range union {
		for _, p := range param {
			if r == p {
				out = append(out, r)
			}
		}
	}
	return out
}

// parsePreference returns the shard ids of a "_shards:2,3[|...]"
// preference, nil for every shard. Other preferences only choose copies,
// which the emulator does not have.
func parsePreference(p string) (map[int]bool, *osError) {
	if p == "" {
		return nil, nil
	}
	var only map[int]bool
	if rest, ok := strings.CutPrefix(p, "_shards:"); ok {
		ids, tail, _ := strings.Cut(rest, "|")
		only = map[int]bool{}
		for _, s := range strings.Split(ids, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return nil, &osError{Status: 400, Type: "number_format_exception", Reason: "For input string: \"" + s + "\""}
			}
			only[n] = true
		}
		p = tail
	}
	if strings.HasPrefix(p, "_") {
		name, _, _ := strings.Cut(p, ":")
		switch name {
		case "_local", "_only_local", "_prefer_nodes", "_only_nodes", "_primary", "_primary_first", "_replica", "_replica_first":
		default:
			return nil, illegalArgument("no Preference for [" + name + "]")
		}
	}
	return only, nil
}

// resolveReads turns an index expression, routing and preference into the
// shards a search reads, in (index name, shard) order. Callers hold mu.
func (s *Server) resolveReads(expr, routing, preference string, ignoreUnavailable bool) ([]shardRead, []*targetIndex, *osError) {
	only, err := parsePreference(preference)
	if err != nil {
		return nil, nil, err
	}
	var param []string
	if routing != "" {
		param = strings.Split(routing, ",")
	}
	targets, err := s.resolveTargets(expr, ignoreUnavailable)
	if err != nil {
		return nil, nil, err
	}
	var reads []shardRead
	for _, t := range targets {
		filter, err := t.aliasFilter()
		if err != nil {
			return nil, nil, err
		}
		shards := map[int]bool{}
		if rs := t.routings(param); len(rs) > 0 {
			for _, r := range rs {
				shards[t.ix.shardFor(r, "")] = true
			}
		} else {
			for i := range t.ix.numShards {
				shards[i] = true
			}
		}
		for i := range t.ix.numShards {
			if shards[i] && (only == nil || only[i]) {
				reads = append(reads, shardRead{ix: t.ix, shard: i, docs: t.ix.shards[i].searchable, filter: filter})
			}
		}
	}
	return reads, targets, nil
}

// readLatency is the injected latency of reading the given shards: that of
// the slowest. Callers hold mu.
func (s *Server) readLatency(reads []shardRead) time.Duration {
	byIndex := map[string]map[int]bool{}
	for _, r := range reads {
		if byIndex[r.ix.name] == nil {
			byIndex[r.ix.name] = map[int]bool{}
		}
		byIndex[r.ix.name][r.shard] = true
	}
	var d time.Duration
	for name, shards := range byIndex {
		d = max(d, s.faults.latency(name, shards))
	}
	return s.faults.held(d)
}
