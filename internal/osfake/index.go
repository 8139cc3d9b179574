package osfake

import (
	"fmt"
	"math/bits"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
)

// Indices: the index itself (placement of documents, refresh, the write
// block) and the index admin endpoints (create, get, exists, delete,
// mappings, refresh). Settings are in settings.go, name resolution in
// resolve.go.

// Defaults of the emulated cluster.
const (
	defaultNumberOfShards   = 1
	defaultNumberOfReplicas = 1
	defaultRefreshInterval  = time.Second
	defaultGCDeletes        = 60 * time.Second
	// nodes is the number of data nodes the emulator pretends to have:
	// replicas beyond nodes−1 stay unassigned, which makes health yellow.
	nodes = 3
)

// index is one index: its settings, mapping, shards and aliases.
type index struct {
	dialect *dialect // the server's: how its parsers name their failures
	name    string
	uuid    string
	created time.Time

	numShards   int
	rns         int // index.number_of_routing_shards
	replicas    int
	refreshIntv time.Duration // < 0: periodic refresh off
	gcDeletes   time.Duration
	blockWrite  bool
	settings    map[string]string // flat "index.*" settings as strings

	mapping mapping
	shards  []*shard
	aliases map[string]*aliasMeta

	lastRefresh time.Time
}

// aliasMeta is an alias as attached to one index.
type aliasMeta struct {
	IsWriteIndex  *bool          `json:"is_write_index,omitempty"`
	IndexRouting  string         `json:"index_routing,omitempty"`
	SearchRouting string         `json:"search_routing,omitempty"`
	Filter        map[string]any `json:"filter,omitempty"`
	IsHidden      *bool          `json:"is_hidden,omitempty"`
}

// defaultRoutingNumShards is MetadataCreateIndexService.calculateNumRoutingShards.
func defaultRoutingNumShards(n int) int {
	log2 := 0
	if n > 1 {
		log2 = bits.Len(uint(n - 1))
	}
	return n << max(1, 10-log2)
}

// shardFor is the server's placement: the shard of a document with the
// given routing (or, without routing, its _id).
func (ix *index) shardFor(routing, id string) int {
	key := routing
	if key == "" {
		key = id
	}
	return shardhash.ForRouting(key, ix.rns, ix.numShards)
}

// maybeRefresh performs the periodic refresh if one is due. The emulator
// refreshes lazily, when state is read, which is indistinguishable from a
// timer for a client.
func (ix *index) maybeRefresh(now time.Time) {
	if ix.refreshIntv > 0 && now.Sub(ix.lastRefresh) >= ix.refreshIntv {
		ix.refresh(now)
	}
}

func (ix *index) refresh(now time.Time) {
	for _, sh := range ix.shards {
		sh.refresh()
	}
	ix.lastRefresh = now
}

// writeBlocked reports the index.blocks.write block, or nil.
func (ix *index) writeBlocked(s *Server) *osError {
	if ix.blockWrite || s.faults.blocked(ix.name) {
		return &osError{Status: 403, Type: "cluster_block_exception",
			Reason: "index [" + ix.name + "] blocked by: [FORBIDDEN/8/index write (api)];"}
	}
	return nil
}

// --- index admin handlers ---------------------------------------------

func validIndexName(name string) *osError {
	bad := func(why string) *osError {
		return &osError{Status: 400, Type: "invalid_index_name_exception", Index: name,
			Reason: "Invalid index name [" + name + "], " + why}
	}
	switch {
	case name == "" || name == "." || name == "..":
		return bad("must not be '.' or '..'")
	case strings.ToLower(name) != name:
		return bad("must be lowercase")
	case strings.ContainsAny(name, `\/*?"<>| ,#:`):
		return bad(`must not contain the following characters [ , ", *, \, <, |, ,, >, /, ?]`)
	case strings.HasPrefix(name, "_") || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "+"):
		return bad("must not start with '_', '-', or '+'")
	case len(name) > 255:
		return bad("index name is too long")
	}
	return nil
}

// createIndex creates an index from a create-index body, unless wait, the
// request's wait_for_active_shards, could never be met by its copies.
// Callers hold mu.
func (s *Server) createIndex(name string, body map[string]any, wait activeShardCount) (*index, *osError) {
	if err := validIndexName(name); err != nil {
		return nil, err
	}
	if ix, ok := s.indices[name]; ok {
		return nil, &osError{Status: 400, Type: "resource_already_exists_exception", Index: name, UUID: ix.uuid,
			Reason: "index [" + name + "/" + ix.uuid + "] already exists"}
	}
	if s.aliasExists(name) {
		return nil, &osError{Status: 400, Type: "invalid_index_name_exception", Index: name,
			Reason: "Invalid index name [" + name + "], already exists as alias"}
	}
	for k := range body {
		if k != "settings" && k != "mappings" && k != "aliases" {
			return nil, parseError("unknown key [" + k + "] for create index")
		}
	}
	now := s.now()
	s.uuidSeq++
	ix := &index{
		dialect: s.dialect,
		name:    name, uuid: fmt.Sprintf("osfake%016x", s.uuidSeq), created: now,
		numShards: defaultNumberOfShards, replicas: defaultNumberOfReplicas,
		refreshIntv: defaultRefreshInterval, gcDeletes: defaultGCDeletes,
		settings: map[string]string{}, aliases: map[string]*aliasMeta{}, lastRefresh: now,
	}
	set := map[string]*string{}
	if v, ok := body["settings"]; ok {
		if err := flattenSettings("", v, set); err != nil {
			return nil, err
		}
	}
	if err := ix.applySettings(set, true); err != nil {
		return nil, err
	}
	if _, explicit := ix.settings["index.number_of_routing_shards"]; !explicit {
		ix.rns = defaultRoutingNumShards(ix.numShards)
	}
	if ix.rns < ix.numShards || ix.rns%ix.numShards != 0 {
		return nil, illegalArgument(fmt.Sprintf("the number of source shards [%d] must be a factor of [%d]", ix.numShards, ix.rns))
	}
	ix.settings["index.number_of_shards"] = strconv.Itoa(ix.numShards)
	ix.settings["index.number_of_replicas"] = strconv.Itoa(ix.replicas)
	ix.settings["index.uuid"] = ix.uuid
	ix.settings["index.provided_name"] = name
	ix.settings["index.creation_date"] = strconv.FormatInt(now.UnixMilli(), 10)
	ix.settings["index.version.created"] = s.dialect.versionID()
	if m, ok := body["mappings"]; ok {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil, parseError("mappings must be an object")
		}
		if err := ix.mapping.merge(mm); err != nil {
			// MapperService wraps whatever fails to parse a new index's
			// mapping; a put mapping reports it bare.
			return nil, &osError{Status: 400, Type: "mapper_parsing_exception", Reason: "Failed to parse mapping [_doc]: " + err.Reason, CausedBy: err}
		}
	}
	if a, ok := body["aliases"]; ok {
		am, ok := a.(map[string]any)
		if !ok {
			return nil, parseError("aliases must be an object")
		}
		for _, aname := range sortedNames(am) {
			meta, err := parseAliasSpec(am[aname])
			if err != nil {
				return nil, err
			}
			if strings.Contains(meta.IndexRouting, ",") {
				return nil, severalIndexRoutings(aname)
			}
			if other, clash := s.indices[aname]; clash {
				return nil, aliasNameClash(aname, other)
			}
			if aname == name {
				return nil, aliasNameClash(aname, ix)
			}
			ix.aliases[aname] = meta
		}
	}
	if err := wait.validateFor(ix); err != nil {
		return nil, err
	}
	ix.shards = make([]*shard, ix.numShards)
	for i := range ix.shards {
		ix.shards[i] = newShard(i)
	}
	s.indices[name] = ix
	return ix, nil
}

func (s *Server) handleCreateIndex(w http.ResponseWriter, q *request) {
	var body map[string]any
	if err := decodeBody(q, &body); err != nil {
		writeError(w, err)
		return
	}
	wait, err := parseActiveShardCount(q.param("wait_for_active_shards"))
	timeout := 30 * time.Second // the ack timeout, which the wait shares
	if v := q.param("timeout"); v != "" && err == nil {
		timeout, err = parseTimeValue("timeout", v)
	}
	if err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	ix, err := s.createIndex(q.vars["index"], body, wait)
	s.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	// The index exists whatever the wait's outcome; shards_acknowledged
	// says whether its copies became active in time.
	active := s.pollUntil(q.r.Context(), max(timeout, 0), func() bool {
		cur := s.indices[ix.name]
		return cur == ix && wait.metBy(ix)
	})
	writeJSON(w, 200, map[string]any{"acknowledged": true, "shards_acknowledged": active, "index": ix.name})
}

func (s *Server) handleDeleteIndex(w http.ResponseWriter, q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ixs, err := s.resolveConcrete(q.vars["index"])
	if err != nil {
		writeError(w, err)
		return
	}
	for _, ix := range ixs {
		delete(s.indices, ix.name)
	}
	writeJSON(w, 200, map[string]any{"acknowledged": true})
}

func (s *Server) handleIndexExists(w http.ResponseWriter, q *request) {
	s.mu.Lock()
	ixs, err := s.resolveSearch(q.vars["index"], false)
	s.mu.Unlock()
	if err != nil || len(ixs) == 0 {
		w.WriteHeader(404)
		return
	}
	w.WriteHeader(200)
}

func (s *Server) handleGetIndex(w http.ResponseWriter, q *request) {
	s.writeEachIndex(w, q.vars["index"], func(ix *index) map[string]any {
		return map[string]any{
			"aliases":  ix.aliasesJSON(),
			"mappings": ix.mapping.toJSON(),
			"settings": ix.settingsJSON(q.boolParam("flat_settings")),
		}
	})
}

// writeEachIndex answers the GET calls that describe indices one by one
// (the index itself, _mapping, _settings): an object keyed by index name,
// each value what part makes of the index. Aliases and wildcards in expr
// are expanded, as those calls expand them.
func (s *Server) writeEachIndex(w http.ResponseWriter, expr string, part func(*index) map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ixs, err := s.resolveSearch(expr, false)
	if err != nil {
		writeError(w, err)
		return
	}
	out := map[string]any{}
	for _, ix := range ixs {
		out[ix.name] = part(ix)
	}
	writeJSON(w, 200, out)
}

func (ix *index) aliasesJSON() map[string]any {
	out := map[string]any{}
	for name, a := range ix.aliases {
		out[name] = a
	}
	return out
}

func (s *Server) handleGetMapping(w http.ResponseWriter, q *request) {
	s.writeEachIndex(w, orAll(q.vars["index"]), func(ix *index) map[string]any {
		return map[string]any{"mappings": ix.mapping.toJSON()}
	})
}

func (s *Server) handlePutMapping(w http.ResponseWriter, q *request) {
	var body map[string]any
	if err := requireBody(q, &body); err != nil {
		writeError(w, err)
		return
	}
	s.updateEachIndex(w, q.vars["index"], func(ix *index) *osError {
		probe := ix.mapping.clone()
		return probe.merge(body)
	}, func(ix *index) {
		ix.mapping.merge(body)
	})
}

// updateEachIndex makes one change (a mapping or settings update) to
// every index expr names, or to none: try makes it on a copy of each
// index first, and apply runs only when every try succeeded, because the
// server refuses the whole request when one index would refuse it.
func (s *Server) updateEachIndex(w http.ResponseWriter, expr string, try func(*index) *osError, apply func(*index)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ixs, err := s.resolveSearch(expr, false)
	if err != nil {
		writeError(w, err)
		return
	}
	for _, ix := range ixs {
		if err := try(ix); err != nil {
			writeError(w, err)
			return
		}
	}
	for _, ix := range ixs {
		apply(ix)
	}
	writeJSON(w, 200, map[string]any{"acknowledged": true})
}

func (s *Server) handleRefresh(w http.ResponseWriter, q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ixs, err := s.resolveSearch(orAll(q.vars["index"]), true)
	if err != nil {
		writeError(w, err)
		return
	}
	n := 0
	for _, ix := range ixs {
		ix.refresh(s.now())
		n += ix.numShards * (1 + min(ix.replicas, nodes-1))
	}
	writeJSON(w, 200, map[string]any{"_shards": map[string]any{"total": n, "successful": n, "failed": 0}})
}

func orAll(name string) string {
	if name == "" {
		return "_all"
	}
	return name
}

// parseAliasSpec reads an alias definition (create-index "aliases" value
// or an _aliases add action's options). A comma in the index routing is
// left to the callers, whose errors name the alias.
func parseAliasSpec(v any) (*aliasMeta, *osError) {
	m, ok := v.(map[string]any)
	if !ok && v != nil {
		return nil, parseError("alias definition must be an object")
	}
	a := &aliasMeta{}
	for k, val := range m {
		switch k {
		case "is_write_index", "is_hidden":
			b, ok := val.(bool)
			if !ok {
				return nil, parseError("[" + k + "] must be a boolean")
			}
			if k == "is_write_index" {
				a.IsWriteIndex = &b
			} else {
				a.IsHidden = &b
			}
		case "routing":
			a.IndexRouting, a.SearchRouting = scalarString(val), scalarString(val)
		case "index_routing":
			a.IndexRouting = scalarString(val)
		case "search_routing":
			a.SearchRouting = scalarString(val)
		case "filter":
			f, ok := val.(map[string]any)
			if !ok {
				return nil, parseError("[filter] must be an object")
			}
			a.Filter = f
		case "index", "indices", "alias", "aliases", "must_exist":
		default:
			return nil, parseError("[alias] unknown field [" + k + "]")
		}
	}
	return a, nil
}

// AppliedOps returns how many write operations (index, create, update,
// delete) the shards of an index have applied: the sum over its shards of
// their sequence numbers. Tests use it to check that an item was applied
// exactly once.
func (s *Server) AppliedOps(indexName string) (int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ix, ok := s.indices[indexName]
	if !ok {
		return 0, indexNotFound(indexName)
	}
	var n int64
	for _, sh := range ix.shards {
		n += sh.seqNo + 1
	}
	return n, nil
}
