package osfake

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
)

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

// --- settings ---------------------------------------------------------

// staticSettings cannot change once the index exists.
var staticSettings = map[string]bool{
	"index.number_of_shards":         true,
	"index.number_of_routing_shards": true,
	"index.routing_partition_size":   true,
	"index.codec":                    true,
	"index.provided_name":            true,
	"index.creation_date":            true,
	"index.uuid":                     true,
	"index.version.created":          true,
}

// flattenSettings turns {"index":{"refresh_interval":"1s"}},
// {"refresh_interval":"1s"} and {"index.refresh_interval":"1s"} alike into
// {"index.refresh_interval":"1s"}, values as strings (as the server stores
// them). A null value resets the setting to its default.
func flattenSettings(prefix string, v any, out map[string]*string) *osError {
	m, ok := v.(map[string]any)
	if !ok {
		return parseError("settings must be an object")
	}
	for k, val := range m {
		key := k
		if prefix != "" {
			key = prefix + "." + k
		}
		switch x := val.(type) {
		case map[string]any:
			if err := flattenSettings(key, x, out); err != nil {
				return err
			}
			continue
		case nil:
			out[normSetting(key)] = nil
			continue
		}
		s := scalarString(val)
		out[normSetting(key)] = &s
	}
	return nil
}

func normSetting(k string) string {
	if !strings.HasPrefix(k, "index.") {
		return "index." + k
	}
	return k
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalarString(e)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// parseTimeValue parses an OpenSearch time value: "-1", "0", or a number
// with a unit nanos, micros, ms, s, m, h or d.
func parseTimeValue(setting, v string) (time.Duration, *osError) {
	if v == "-1" {
		return -1, nil
	}
	if v == "0" {
		return 0, nil
	}
	units := []struct {
		suffix string
		d      time.Duration
	}{{"nanos", time.Nanosecond}, {"micros", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(v, u.suffix); ok {
			if n, err := strconv.ParseFloat(num, 64); err == nil && n >= 0 {
				return time.Duration(n * float64(u.d)), nil
			}
			break
		}
	}
	return 0, illegalArgument(fmt.Sprintf("failed to parse setting [%s] with value [%s] as a time value: unit is missing or unrecognized", setting, v))
}

func parsePositiveInt(setting, v string, min int) (int, *osError) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, illegalArgument(fmt.Sprintf("Failed to parse value [%s] for setting [%s]", v, setting))
	}
	if n < min {
		return 0, illegalArgument(fmt.Sprintf("Failed to parse value [%s] for setting [%s] must be >= %d", v, setting, min))
	}
	return n, nil
}

// applySettings validates and applies flat settings to ix. creating allows
// static settings.
func (ix *index) applySettings(set map[string]*string, creating bool) *osError {
	var static []string
	for k := range set {
		if staticSettings[k] && !creating {
			static = append(static, k)
		}
	}
	if len(static) > 0 {
		sort.Strings(static)
		return illegalArgument(fmt.Sprintf("Can't update non dynamic settings [[%s]] for open indices [[%s/%s]]",
			strings.Join(static, ", "), ix.name, ix.uuid))
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		pv := set[k]
		if pv == nil {
			delete(ix.settings, k)
		}
		val := ""
		if pv != nil {
			val = *pv
		}
		var err *osError
		switch k {
		case "index.number_of_shards":
			if pv != nil {
				ix.numShards, err = parsePositiveInt(k, val, 1)
				if err == nil && ix.numShards > 1024 {
					err = illegalArgument(fmt.Sprintf("Failed to parse value [%s] for setting [%s] must be <= 1024", val, k))
				}
			}
		case "index.number_of_routing_shards":
			if pv != nil {
				ix.rns, err = parsePositiveInt(k, val, 1)
			}
		case "index.number_of_replicas":
			ix.replicas = defaultNumberOfReplicas
			if pv != nil {
				ix.replicas, err = parsePositiveInt(k, val, 0)
			}
		case "index.refresh_interval":
			ix.refreshIntv = defaultRefreshInterval
			if pv != nil {
				ix.refreshIntv, err = parseTimeValue(k, val)
			}
		case "index.gc_deletes":
			ix.gcDeletes = defaultGCDeletes
			if pv != nil {
				ix.gcDeletes, err = parseTimeValue(k, val)
			}
		case "index.blocks.write":
			ix.blockWrite = pv != nil && val == "true"
		case "index.routing_partition_size":
			if pv != nil && val != "1" {
				err = illegalArgument("osfake: index.routing_partition_size other than 1 is not emulated")
			}
		}
		if err != nil {
			return err
		}
		if pv != nil {
			ix.settings[k] = val
		}
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

// createIndex creates an index from a create-index body. Callers hold mu.
func (s *Server) createIndex(name string, body map[string]any) (*index, *osError) {
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
		name: name, uuid: fmt.Sprintf("osfake%016x", s.uuidSeq), created: now,
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
	ix.settings["index.version.created"] = "136408127"
	if m, ok := body["mappings"]; ok {
		mm, ok := m.(map[string]any)
		if !ok {
			return nil, parseError("mappings must be an object")
		}
		if err := ix.mapping.merge(mm); err != nil {
			return nil, err
		}
	}
	if a, ok := body["aliases"]; ok {
		am, ok := a.(map[string]any)
		if !ok {
			return nil, parseError("aliases must be an object")
		}
		for aname, spec := range am {
			meta, err := parseAliasSpec(spec)
			if err != nil {
				return nil, err
			}
			if _, clash := s.indices[aname]; clash || aname == name {
				return nil, &osError{Status: 400, Type: "invalid_alias_name_exception",
					Reason: "Invalid alias name [" + aname + "]: an index or data stream exists with the same name as the alias"}
			}
			ix.aliases[aname] = meta
		}
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
	s.mu.Lock()
	ix, err := s.createIndex(q.vars["index"], body)
	s.mu.Unlock()
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, 200, map[string]any{"acknowledged": true, "shards_acknowledged": true, "index": ix.name})
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
	s.mu.Lock()
	defer s.mu.Unlock()
	ixs, err := s.resolveSearch(q.vars["index"], false)
	if err != nil {
		writeError(w, err)
		return
	}
	out := map[string]any{}
	for _, ix := range ixs {
		out[ix.name] = map[string]any{
			"aliases":  ix.aliasesJSON(),
			"mappings": ix.mapping.toJSON(),
			"settings": ix.settingsJSON(q.boolParam("flat_settings")),
		}
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

// settingsJSON renders settings nested ({"index":{"number_of_shards":"1"}})
// or flat, all values strings, as the server does.
func (ix *index) settingsJSON(flat bool) map[string]any {
	if flat {
		out := map[string]any{}
		for k, v := range ix.settings {
			out[k] = v
		}
		return out
	}
	root := map[string]any{}
	for k, v := range ix.settings {
		parts := strings.Split(k, ".")
		m := root
		for _, p := range parts[:len(parts)-1] {
			next, ok := m[p].(map[string]any)
			if !ok {
				next = map[string]any{}
				m[p] = next
			}
			m = next
		}
		m[parts[len(parts)-1]] = v
	}
	return root
}

func (s *Server) handleGetSettings(w http.ResponseWriter, q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ixs, err := s.resolveSearch(orAll(q.vars["index"]), false)
	if err != nil {
		writeError(w, err)
		return
	}
	out := map[string]any{}
	for _, ix := range ixs {
		out[ix.name] = map[string]any{"settings": ix.settingsJSON(q.boolParam("flat_settings"))}
	}
	writeJSON(w, 200, out)
}

func (s *Server) handlePutSettings(w http.ResponseWriter, q *request) {
	var body map[string]any
	if err := requireBody(q, &body); err != nil {
		writeError(w, err)
		return
	}
	if inner, ok := body["settings"]; ok && len(body) == 1 {
		body, _ = inner.(map[string]any)
	}
	set := map[string]*string{}
	if err := flattenSettings("", body, set); err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ixs, err := s.resolveSearch(q.vars["index"], false)
	if err != nil {
		writeError(w, err)
		return
	}
	// Validate against every index before changing any.
	for _, ix := range ixs {
		probe := *ix
		probe.settings = map[string]string{}
		if err := probe.applySettings(set, false); err != nil {
			writeError(w, err)
			return
		}
	}
	for _, ix := range ixs {
		ix.applySettings(set, false)
		ix.settings["index.number_of_replicas"] = strconv.Itoa(ix.replicas)
	}
	writeJSON(w, 200, map[string]any{"acknowledged": true})
}

func (s *Server) handleGetMapping(w http.ResponseWriter, q *request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ixs, err := s.resolveSearch(orAll(q.vars["index"]), false)
	if err != nil {
		writeError(w, err)
		return
	}
	out := map[string]any{}
	for _, ix := range ixs {
		out[ix.name] = map[string]any{"mappings": ix.mapping.toJSON()}
	}
	writeJSON(w, 200, out)
}

func (s *Server) handlePutMapping(w http.ResponseWriter, q *request) {
	var body map[string]any
	if err := requireBody(q, &body); err != nil {
		writeError(w, err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ixs, err := s.resolveSearch(q.vars["index"], false)
	if err != nil {
		writeError(w, err)
		return
	}
	for _, ix := range ixs {
		probe := ix.mapping.clone()
		if err := probe.merge(body); err != nil {
			writeError(w, err)
			return
		}
	}
	for _, ix := range ixs {
		ix.mapping.merge(body)
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

// --- name resolution ----------------------------------------------------

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
			if s.aliasExists(part) {
				return nil, illegalArgument("The provided expression [" + part + "] matches an alias, specify the corresponding concrete indices instead.")
			}
			return nil, indexNotFound(part)
		}
		out = append(out, ix)
	}
	return out, nil
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
		ix, err := s.createIndex(name, nil)
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

// parseAliasSpec reads an alias definition (create-index "aliases" value
// or an _aliases add action's options).
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
	if strings.Contains(a.IndexRouting, ",") {
		return nil, illegalArgument("index_routing [" + a.IndexRouting + "] has a comma")
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
