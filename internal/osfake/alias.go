package osfake

import (
	"fmt"
	"maps"
	"net/http"
	"sort"
	"strings"
)

// Alias endpoints: POST /_aliases, GET|HEAD /_alias…, PUT|POST and DELETE
// /{index}/_alias/{name}. Every change goes through updateAliases, which
// applies a list of actions as one atomic update, as the server's
// MetadataIndexAliasesService applies them in one cluster-state task.

// aliasAction is one action of an _aliases request as parsed, before its
// index expressions and alias names are resolved.
type aliasAction struct {
	kind      string     // "add", "remove" or "remove_index"
	indices   []string   // index names, wildcards or _all
	aliases   []string   // alias names; for remove also wildcards and _all
	meta      *aliasMeta // add only
	mustExist bool       // remove only
}

// aliasOp is an action on one concrete index and one alias name.
type aliasOp struct {
	kind      string
	index     string
	alias     string
	meta      *aliasMeta
	mustExist bool
}

// aliasTargets resolves the index expressions of an alias action. Aliases
// are not expanded: IndicesAliasesRequest resolves with ignoreAliases, so
// naming an alias where an index is expected is an error. A concrete name
// that does not exist is a 404; a wildcard that matches nothing is not.
func (s *Server) aliasTargets(exprs []string) ([]string, *osError) {
	seen := map[string]bool{}
	for _, e := range exprs {
		for _, part := range strings.Split(e, ",") {
			switch {
			case part == "_all" || part == "*":
				for n := range s.indices {
					seen[n] = true
				}
			case strings.Contains(part, "*"):
				for n := range s.indices {
					if wildcard(part, n) {
						seen[n] = true
					}
				}
			default:
				if _, ok := s.indices[part]; !ok {
					return nil, s.notConcrete(part)
				}
				seen[part] = true
			}
		}
	}
	return sortedKeys(seen), nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// matchesAny reports whether name matches one of the alias patterns
// (names, wildcards, _all).
func matchesAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if p == "_all" || p == name || (strings.Contains(p, "*") && wildcard(p, name)) {
			return true
		}
	}
	return false
}

// updateAliases applies alias actions atomically. Callers hold mu.
//
// As on the server, it resolves every action against the current state
// first (index expressions, and the alias patterns of remove actions
// against the aliases each index has), then applies all remove_index
// actions, then the other actions in order, on a copy of the alias state.
// The copy replaces the live state only if every action and the final
// validation succeed, so a failing request changes nothing.
func (s *Server) updateAliases(acts []aliasAction) *osError {
	var ops []aliasOp
	named := map[string]bool{}
	for _, a := range acts {
		targets, err := s.aliasTargets(a.indices)
		if err != nil {
			return err
		}
		for _, n := range a.aliases {
			named[n] = true
		}
		for _, name := range targets {
			switch a.kind {
			case "add":
				for _, alias := range a.aliases {
					ops = append(ops, aliasOp{kind: "add", index: name, alias: alias, meta: a.meta})
				}
			case "remove":
				have := s.indices[name].aliases
				var missing []string
				for _, p := range a.aliases {
					hit := false
					for alias := range have {
						hit = hit || matchesAny([]string{p}, alias)
					}
					if !hit {
						missing = append(missing, p)
					}
				}
				if a.mustExist && len(missing) > 0 {
					// must_exist (2.12+): every named alias must exist on
					// every index of the action.
					return aliasesNotFound(missing)
				}
				for _, alias := range sortedKeys(have) {
					if matchesAny(a.aliases, alias) {
						ops = append(ops, aliasOp{kind: "remove", index: name, alias: alias, mustExist: a.mustExist})
					}
				}
			case "remove_index":
				ops = append(ops, aliasOp{kind: "remove_index", index: name})
			}
		}
	}
	if len(ops) == 0 {
		// Before 3.0 a request whose actions resolve to nothing (say, a
		// single remove of an alias that does not exist) is a 404 even
		// without must_exist; removes of missing aliases next to other
		// effective actions are ignored.
		return aliasesNotFound(sortedKeys(named))
	}

	state := make(map[string]map[string]*aliasMeta, len(s.indices))
	for n, ix := range s.indices {
		state[n] = maps.Clone(ix.aliases)
	}
	removed := map[string]bool{}
	for _, op := range ops {
		if op.kind == "remove_index" {
			delete(state, op.index)
			removed[op.index] = true
		}
	}
	for _, op := range ops {
		if op.kind == "remove_index" {
			continue
		}
		as, ok := state[op.index]
		if !ok {
			return indexNotFound(op.index)
		}
		switch op.kind {
		case "add":
			if err := validAliasName(op.alias); err != nil {
				return err
			}
			if _, clash := state[op.alias]; clash {
				return aliasNameClash(op.alias, s.indices[op.alias])
			}
			meta := *op.meta
			as[op.alias] = &meta
		case "remove":
			if _, ok := as[op.alias]; !ok {
				if op.mustExist {
					return &osError{Status: 404, Type: "resource_not_found_exception",
						Reason: "required alias [" + op.alias + "] does not exist"}
				}
				continue
			}
			delete(as, op.alias)
		}
	}
	if err := validateAliasState(state); err != nil {
		return err
	}
	for n := range removed {
		delete(s.indices, n)
	}
	for n, as := range state {
		s.indices[n].aliases = as
	}
	return nil
}

// aliasNameClash is AliasValidator's InvalidAliasNameException for an
// alias named like an existing index, which the error names.
func aliasNameClash(alias string, ix *index) *osError {
	return &osError{Status: 400, Type: "invalid_alias_name_exception", Index: ix.name, UUID: ix.uuid,
		Reason: "Invalid alias name [" + alias + "], an index exists with the same name as the alias"}
}

// severalIndexRoutings is AliasValidator's rejection of an index routing
// that holds a comma (a search routing may hold several values).
func severalIndexRoutings(alias string) *osError {
	return illegalArgument("alias [" + alias + "] has several index routing values associated with it")
}

// validAliasName is MetadataCreateIndexService.validateIndexOrAliasName as
// applied to aliases: unlike index names, alias names may hold capitals.
func validAliasName(name string) *osError {
	bad := func(why string) *osError {
		return &osError{Status: 400, Type: "invalid_alias_name_exception", Reason: "Invalid alias name [" + name + "]: " + why}
	}
	switch {
	case strings.ContainsAny(name, `\/*?"<>| ,`):
		return bad(`must not contain the following characters [ , ", *, \, <, |, ,, >, /, ?]`)
	case strings.Contains(name, "#"):
		return bad("must not contain '#'")
	case strings.Contains(name, ":"):
		return bad("must not contain ':'")
	case strings.HasPrefix(name, "_") || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "+"):
		return bad("must not start with '_', '-', or '+'")
	case len(name) > 255:
		return bad(fmt.Sprintf("index name is too long, (%d > 255)", len(name)))
	case name == "." || name == "..":
		return bad("must not be '.' or '..'")
	}
	return nil
}

// validateAliasState checks every alias the way Metadata.build does
// (IndexAbstraction.Alias): at most one explicit write index, and the same
// is_hidden on every index. Both are IllegalStateException, HTTP 500.
func validateAliasState(state map[string]map[string]*aliasMeta) *osError {
	byAlias := map[string][]string{}
	for ixName, as := range state {
		for a := range as {
			byAlias[a] = append(byAlias[a], ixName)
		}
	}
	for _, alias := range sortedKeys(byAlias) {
		ixs := byAlias[alias]
		sort.Strings(ixs)
		var writes, hidden, visible []string
		for _, n := range ixs {
			m := state[n][alias]
			if m.IsWriteIndex != nil && *m.IsWriteIndex {
				writes = append(writes, n)
			}
			if m.IsHidden != nil && *m.IsHidden {
				hidden = append(hidden, n)
			} else {
				visible = append(visible, n)
			}
		}
		if len(writes) > 1 {
			return &osError{Status: 500, Type: "illegal_state_exception",
				Reason: "alias [" + alias + "] has more than one write index [" + strings.Join(writes, ",") + "]"}
		}
		if len(hidden) > 0 && len(visible) > 0 {
			return &osError{Status: 500, Type: "illegal_state_exception",
				Reason: "alias [" + alias + "] has is_hidden set to true on indices [" + strings.Join(hidden, ",") +
					"] but does not have is_hidden set to true on indices [" + strings.Join(visible, ",") +
					"]; alias must have the same is_hidden setting on all indices"}
		}
	}
	return nil
}

func (s *Server) applyAliasActions(w http.ResponseWriter, acts []aliasAction) {
	s.mu.Lock()
	err := s.updateAliases(acts)
	s.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, 200, map[string]any{"acknowledged": true})
}

// handleAliases serves POST /_aliases, and GET /_aliases like GET /_alias.
func (s *Server) handleAliases(w http.ResponseWriter, q *request) {
	if q.method == http.MethodGet {
		s.handleGetAlias(w, q)
		return
	}
	var body map[string]any
	if err := requireBody(q, &body); err != nil {
		writeError(w, err)
		return
	}
	acts, err := parseAliasActions(body)
	if err != nil {
		writeError(w, err)
		return
	}
	s.applyAliasActions(w, acts)
}

// handleDeleteAlias serves DELETE /{index}/_alias/{name}: a remove action,
// so a name that matches no alias is 404 aliases_not_found_exception.
func (s *Server) handleDeleteAlias(w http.ResponseWriter, q *request) {
	a := aliasAction{kind: "remove",
		indices: strings.Split(q.vars["index"], ","), aliases: strings.Split(q.vars["name"], ",")}
	s.applyAliasActions(w, []aliasAction{a})
}

// handleGetAlias serves GET|HEAD /_alias, /_alias/{name}, /{index}/_alias
// and /{index}/_alias/{name} the way RestGetAliasesAction renders them:
// {"<index>":{"aliases":{"<alias>":{...}}}}. Without names every index is
// listed, with its aliases or none; with names only indices that have a
// matching alias are. A name without wildcards that matches nothing makes
// the response a 404 that carries {"error":"alias [x] missing","status":404}
// beside whatever was found.
func (s *Server) handleGetAlias(w http.ResponseWriter, q *request) {
	var names []string
	if n := q.vars["name"]; n != "" {
		names = strings.Split(n, ",")
	}
	s.mu.Lock()
	ixs, err := s.resolveSearch(orAll(q.vars["index"]), false)
	if err != nil {
		s.mu.Unlock()
		if q.method == http.MethodHead {
			w.WriteHeader(err.Status)
			return
		}
		writeError(w, err)
		return
	}
	out := map[string]any{}
	found := map[string]bool{}
	for _, ix := range ixs {
		as := map[string]any{}
		for alias, meta := range ix.aliases {
			if names == nil || matchesAny(names, alias) {
				m := *meta
				as[alias] = &m
				found[alias] = true
			}
		}
		if names == nil || len(as) > 0 {
			out[ix.name] = map[string]any{"aliases": as}
		}
	}
	s.mu.Unlock()

	var missing []string
	for _, n := range names {
		if n != "_all" && !strings.Contains(n, "*") && !found[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	status := 200
	if len(missing) > 0 {
		status = 404
		word := "alias"
		if len(missing) > 1 {
			word = "aliases"
		}
		out["error"] = word + " [" + strings.Join(missing, ",") + "] missing"
		out["status"] = 404
	}
	if q.method == http.MethodHead {
		w.WriteHeader(status)
		return
	}
	writeJSON(w, status, out)
}
