package osfake

import (
	"sort"
	"strings"
)

// Name resolution: index expressions (names, aliases, wildcards, _all)
// resolved to indices for reads, for admin calls that need concrete
// indices, and for writes (an alias's write index).

func (s *Server) aliasExists(name string) bool {
	for _, ix := range s.indices {
		if _, ok := ix.aliases[name]; ok {
			return true
		}
	}
	return false
}

// aliasIndices returns the indices an alias points to, sorted by name.
func (s *Server) aliasIndices(alias string) []*index {
	var out []*index
	for _, ix := range s.indices {
		if _, ok := ix.aliases[alias]; ok {
			out = append(out, ix)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// resolveSearch resolves a comma-separated expression of index names,
// aliases, wildcards and _all to indices, in name order. A missing
// concrete name is a 404; a wildcard that matches nothing is not.
// refresh, when true, runs due periodic refreshes.
func (s *Server) resolveSearch(expr string, refresh bool) ([]*index, *osError) {
	seen := map[string]*index{}
	for _, part := range strings.Split(expr, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "_all" || part == "*" || part == "":
			for n, ix := range s.indices {
				seen[n] = ix
			}
		case strings.Contains(part, "*"):
			for n, ix := range s.indices {
				if wildcard(part, n) {
					seen[n] = ix
				}
				for a := range ix.aliases {
					if wildcard(part, a) {
						seen[n] = ix
					}
				}
			}
		default:
			if ix, ok := s.indices[part]; ok {
				seen[part] = ix
				continue
			}
			ixs := s.aliasIndices(part)
			if len(ixs) == 0 {
				return nil, indexNotFound(part)
			}
			for _, ix := range ixs {
				seen[ix.name] = ix
			}
		}
	}
	out := make([]*index, 0, len(seen))
	for _, ix := range seen {
		out = append(out, ix)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	if refresh {
		now := s.now()
		for _, ix := range out {
			ix.maybeRefresh(now)
		}
	}
	return out, nil
}

// resolveConcrete resolves names that must be concrete indices (delete
// index rejects aliases, as the server does).
func (s *Server) resolveConcrete(expr string) ([]*index, *osError) {
	var out []*index
	for _, part := range strings.Split(expr, ",") {
		if strings.Contains(part, "*") || part == "_all" {
			ixs, err := s.resolveSearch(part, false)
			if err != nil {
				return nil, err
			}
			out = append(out, ixs...)
			continue
		}
		ix, ok := s.indices[part]
		if !ok {
			return nil, s.notConcrete(part)
		}
		out = append(out, ix)
	}
	return out, nil
}

// notConcrete is the error for a name that is not an index where only a
// concrete index will do: an alias is refused with the server's hint to
// name its indices, anything else is missing.
func (s *Server) notConcrete(name string) *osError {
	if s.aliasExists(name) {
		return illegalArgument("The provided expression [" + name + "] matches an alias, specify the corresponding concrete indices instead.")
	}
	return indexNotFound(name)
}

// resolveWrite resolves the target of a write: a concrete index, or an
// alias's write index (with the alias's index routing). A missing name is
// created with default settings (action.auto_create_index defaults to
// true) unless requireAlias.
func (s *Server) resolveWrite(name string, requireAlias bool) (*index, *aliasMeta, *osError) {
	if ix, ok := s.indices[name]; ok {
		if requireAlias {
			return nil, nil, &osError{Status: 404, Type: "index_not_found_exception", Index: name,
				Reason: "no such index [" + name + "] and [require_alias] request flag is [true] and [" + name + "] is not an alias"}
		}
		return ix, nil, nil
	}
	ixs := s.aliasIndices(name)
	if len(ixs) == 0 {
		if requireAlias {
			return nil, nil, &osError{Status: 404, Type: "index_not_found_exception", Index: name,
				Reason: "no such index [" + name + "] and [require_alias] request flag is [true] and [" + name + "] is not an alias"}
		}
		ix, err := s.createIndex(name, nil, defaultActiveShards)
		return ix, nil, err
	}
	var write []*index
	for _, ix := range ixs {
		if w := ix.aliases[name].IsWriteIndex; w != nil && *w {
			write = append(write, ix)
		}
	}
	if len(write) == 0 && len(ixs) == 1 && ixs[0].aliases[name].IsWriteIndex == nil {
		write = ixs
	}
	if len(write) != 1 {
		return nil, nil, illegalArgument("no write index is defined for alias [" + name + "]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index")
	}
	return write[0], write[0].aliases[name], nil
}

// wildcard matches a pattern with '*' against s.
func wildcard(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i := 1; i < len(parts); i++ {
		if i == len(parts)-1 {
			return strings.HasSuffix(s, parts[i])
		}
		k := strings.Index(s, parts[i])
		if k < 0 {
			return false
		}
		s = s[k+len(parts[i]):]
	}
	return true
}
