package osfake

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The _cat endpoints render a table the way RestTable does: as JSON (an
// array of objects whose values are all strings or null) when format=json
// or the Accept header asks for JSON, else as aligned plain text with a
// header line when v is set. h selects and renames columns (by name, alias
// or wildcard; unknown names are ignored), s sorts rows.

// catCol is one column of a _cat table.
type catCol struct {
	name    string
	aliases []string // other names h= and s= accept
	right   bool     // right-aligned in text output
	hidden  bool     // shown only when h= asks for it
}

// catTable is a _cat table. Cells hold a string, an integer (sorted as a
// number), or nil (null in JSON, empty in text).
type catTable struct {
	cols []catCol
	rows [][]any
}

func (t *catTable) add(cells ...any) { t.rows = append(t.rows, cells) }

// catHeader is a column to display and the name it is displayed under:
// the name h= used, which may be an alias.
type catHeader struct {
	col     int
	display string
}

func (t *catTable) find(name string) int {
	for i, c := range t.cols {
		if c.name == name {
			return i
		}
		for _, a := range c.aliases {
			if a == name {
				return i
			}
		}
	}
	return -1
}

func (t *catTable) headers(h string) []catHeader {
	var out []catHeader
	if h == "" {
		for i, c := range t.cols {
			if !c.hidden {
				out = append(out, catHeader{i, c.name})
			}
		}
		return out
	}
	for _, want := range strings.Split(h, ",") {
		want = strings.TrimSpace(want)
		if strings.Contains(want, "*") {
			for i, c := range t.cols {
				if wildcard(want, c.name) {
					out = append(out, catHeader{i, c.name})
				}
			}
			continue
		}
		if i := t.find(want); i >= 0 {
			out = append(out, catHeader{i, want})
		}
	}
	return out
}

// sort orders rows by the s= parameter: columns with optional :asc or
// :desc. Numbers compare as numbers; nulls sort last.
func (t *catTable) sort(spec string) *osError {
	if spec == "" {
		return nil
	}
	type key struct {
		col  int
		desc bool
	}
	var keys []key
	for _, part := range strings.Split(spec, ",") {
		name, dir, _ := strings.Cut(strings.TrimSpace(part), ":")
		i := t.find(name)
		if i < 0 {
			return &osError{Status: 500, Type: "unsupported_operation_exception",
				Reason: "Unable to sort by unknown sort key `" + name + "`"}
		}
		keys = append(keys, key{i, dir == "desc"})
	}
	sort.SliceStable(t.rows, func(a, b int) bool {
		for _, k := range keys {
			c := compareCells(t.rows[a][k.col], t.rows[b][k.col])
			if c == 0 {
				continue
			}
			if k.desc {
				return c > 0
			}
			return c < 0
		}
		return false
	})
	return nil
}

func compareCells(a, b any) int {
	switch {
	case a == nil && b == nil:
		return 0
	case a == nil:
		return 1
	case b == nil:
		return -1
	}
	ai, aok := a.(int64)
	bi, bok := b.(int64)
	if aok && bok {
		return cmp.Compare(ai, bi)
	}
	return strings.Compare(cellString(a), cellString(b))
}

func cellString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	}
	return fmt.Sprint(v)
}

// catWantsJSON reports the output format: the format parameter, or the
// Accept header when format is absent. ok is false for a format the
// emulator does not render (yaml, cbor, smile).
func catWantsJSON(q *request) (asJSON, ok bool) {
	switch q.param("format") {
	case "json":
		return true, true
	case "txt", "text":
		return false, true
	case "":
		return strings.Contains(q.r.Header.Get("Accept"), "application/json"), true
	}
	return false, false
}

// writeCat renders a table in the requested format.
func writeCat(w http.ResponseWriter, q *request, t *catTable) {
	asJSON, ok := catWantsJSON(q)
	if !ok {
		writeError(w, &osError{Status: 501, Type: "osfake_not_implemented",
			Reason: "osfake does not emulate _cat format [" + q.param("format") + "]"})
		return
	}
	if err := t.sort(q.param("s")); err != nil {
		writeError(w, err)
		return
	}
	heads := t.headers(q.param("h"))
	var b bytes.Buffer
	if asJSON {
		// Built by hand to keep the columns in table order, as the
		// server does.
		b.WriteByte('[')
		for r, row := range t.rows {
			if r > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('{')
			for i, h := range heads {
				if i > 0 {
					b.WriteByte(',')
				}
				k, _ := json.Marshal(h.display)
				b.Write(k)
				b.WriteByte(':')
				if v := row[h.col]; v == nil {
					b.WriteString("null")
				} else {
					s, _ := json.Marshal(cellString(v))
					b.Write(s)
				}
			}
			b.WriteByte('}')
		}
		b.WriteByte(']')
		w.Header().Set("Content-Type", "application/json; charset=UTF-8")
		w.WriteHeader(200)
		w.Write(b.Bytes())
		return
	}
	withHeader := q.boolParam("v")
	width := make([]int, len(heads))
	for i, h := range heads {
		if withHeader {
			width[i] = len(h.display)
		}
		for _, row := range t.rows {
			if v := row[h.col]; v != nil {
				width[i] = max(width[i], len(cellString(v)))
			}
		}
	}
	line := func(cells []string) {
		for i, c := range cells {
			last := i == len(cells)-1
			pad := strings.Repeat(" ", width[i]-len(c))
			switch {
			case t.cols[heads[i].col].right:
				b.WriteString(pad + c)
			case last:
				b.WriteString(c)
			default:
				b.WriteString(c + pad)
			}
			if !last {
				b.WriteByte(' ')
			}
		}
		b.WriteByte('\n')
	}
	if withHeader {
		cells := make([]string, len(heads))
		for i, h := range heads {
			cells[i] = h.display
		}
		line(cells)
	}
	for _, row := range t.rows {
		cells := make([]string, len(heads))
		for i, h := range heads {
			if v := row[h.col]; v != nil {
				cells[i] = cellString(v)
			}
		}
		line(cells)
	}
	w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	w.WriteHeader(200)
	w.Write(b.Bytes())
}

// formatBytes renders a size for the bytes parameter: a unit (b, kb, mb,
// gb, tb, pb) gives a whole number in it; none gives ByteSizeValue's
// human form, such as "208b" or "1.2kb" (truncated to one decimal).
func formatBytes(n int64, unit string) string {
	units := []string{"b", "kb", "mb", "gb", "tb", "pb"}
	for i, u := range units {
		if unit == u {
			return strconv.FormatInt(n>>(10*i), 10)
		}
	}
	i := 0
	for i < len(units)-1 && n >= int64(1)<<(10*(i+1)) {
		i++
	}
	if i == 0 {
		return strconv.FormatInt(n, 10) + "b"
	}
	tenths := n * 10 >> (10 * i)
	if tenths%10 == 0 {
		return strconv.FormatInt(tenths/10, 10) + units[i]
	}
	return fmt.Sprintf("%d.%d%s", tenths/10, tenths%10, units[i])
}

// emptyShardBytes is the store size of a shard without documents, about
// what an empty Lucene index takes.
const emptyShardBytes = 208

// storeBytes approximates a shard copy's store size: the searchable
// documents' _source plus an empty index. The server's figure comes from
// segment files and is not reproducible.
func (sh *shard) storeBytes() int64 {
	n := int64(emptyShardBytes)
	for _, d := range sh.searchable {
		n += int64(len(d.source))
	}
	return n
}

// assignedReplicas is the number of replica copies of each shard that are
// STARTED: one per node besides the primary's.
func (ix *index) assignedReplicas() int { return min(ix.replicas, nodes-1) }

// healthStatus is green when every copy is assigned, yellow when some
// replicas cannot be (more replicas than nodes−1). It is never red: the
// emulator's primaries are always active.
func (ix *index) healthStatus() string {
	if ix.replicas > nodes-1 {
		return "yellow"
	}
	return "green"
}

func (s *Server) handleCatIndices(w http.ResponseWriter, q *request) {
	t := &catTable{cols: []catCol{
		{name: "health", aliases: []string{"h"}},
		{name: "status", aliases: []string{"s"}},
		{name: "index", aliases: []string{"i", "idx"}},
		{name: "uuid", aliases: []string{"id", "uuid"}},
		{name: "pri", aliases: []string{"p", "shards.primary", "shardsPrimary"}, right: true},
		{name: "rep", aliases: []string{"r", "shards.replica", "shardsReplica"}, right: true},
		{name: "docs.count", aliases: []string{"dc", "docsCount"}, right: true},
		{name: "docs.deleted", aliases: []string{"dd", "docsDeleted"}, right: true},
		{name: "creation.date", aliases: []string{"cd"}, right: true, hidden: true},
		{name: "creation.date.string", aliases: []string{"cds"}, hidden: true},
		{name: "store.size", aliases: []string{"ss", "storeSize"}, right: true},
		{name: "pri.store.size", right: true},
	}}
	unit := q.param("bytes")
	s.serveCat(w, q, t, func(ixs []*index) {
		for _, ix := range ixs {
			var docs, deleted, pri int64
			for _, sh := range ix.shards {
				docs += int64(len(sh.searchable))
				deleted += sh.deletedDocs
				pri += sh.storeBytes()
			}
			total := pri * int64(1+ix.assignedReplicas())
			t.add(ix.healthStatus(), "open", ix.name, ix.uuid, int64(ix.numShards), int64(ix.replicas),
				docs, deleted, ix.created.UnixMilli(), ix.created.UTC().Format("2006-01-02T15:04:05.000Z"),
				formatBytes(total, unit), formatBytes(pri, unit))
		}
	})
}

// serveCat fills t from the indices the path names, under the lock and
// after due periodic refreshes (the counts are the searchable ones), then
// renders it once the lock is released: formatting needs only the rows.
func (s *Server) serveCat(w http.ResponseWriter, q *request, t *catTable, fill func([]*index)) {
	s.mu.Lock()
	ixs, err := s.resolveSearch(orAll(q.vars["index"]), true)
	if err != nil {
		s.mu.Unlock()
		writeError(w, err)
		return
	}
	fill(ixs)
	s.mu.Unlock()
	writeCat(w, q, t)
}

// nodeName names the emulator's pretend data nodes; GET / reports the
// first.
func nodeName(n int) string { return fmt.Sprintf("osfake-%d", n) }

func (s *Server) handleCatShards(w http.ResponseWriter, q *request) {
	t := &catTable{cols: []catCol{
		{name: "index", aliases: []string{"i", "idx"}},
		{name: "shard", aliases: []string{"s", "sh"}, right: true},
		{name: "prirep", aliases: []string{"p", "pr", "primaryOrReplica"}},
		{name: "state", aliases: []string{"st"}},
		{name: "docs", aliases: []string{"d", "dc"}, right: true},
		{name: "store", aliases: []string{"sto"}, right: true},
		{name: "ip"},
		{name: "id", hidden: true},
		{name: "node", aliases: []string{"n"}},
		{name: "unassigned.reason", aliases: []string{"ur"}, hidden: true},
	}}
	unit := q.param("bytes")
	s.serveCat(w, q, t, func(ixs []*index) {
		for _, ix := range ixs {
			for _, sh := range ix.shards {
				docs := int64(len(sh.searchable))
				store := formatBytes(sh.storeBytes(), unit)
				// Copies are spread over the nodes: the primary of shard k on
				// node k mod 3, its replicas on the next nodes.
				for c := 0; c <= ix.replicas; c++ {
					prirep := "r"
					if c == 0 {
						prirep = "p"
					}
					if c > ix.assignedReplicas() {
						t.add(ix.name, int64(sh.num), prirep, "UNASSIGNED", nil, nil, nil, nil, nil, "INDEX_CREATED")
						continue
					}
					node := (sh.num + c) % nodes
					t.add(ix.name, int64(sh.num), prirep, "STARTED", docs, store, "127.0.0.1",
						nodeID(node), nodeName(node), nil)
				}
			}
		}
	})
}

func (s *Server) handleCatAliases(w http.ResponseWriter, q *request) {
	t := &catTable{cols: []catCol{
		{name: "alias", aliases: []string{"a"}},
		{name: "index", aliases: []string{"i", "idx"}},
		{name: "filter", aliases: []string{"f", "fi"}},
		{name: "routing.index", aliases: []string{"ri", "routingIndex"}},
		{name: "routing.search", aliases: []string{"rs", "routingSearch"}},
		{name: "is_write_index", aliases: []string{"w", "isWriteIndex"}},
	}}
	var names []string
	if n := q.vars["name"]; n != "" {
		names = strings.Split(n, ",")
	}
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return s
	}
	type row struct{ alias, index string }
	var rows []row
	s.mu.Lock()
	metas := map[row]aliasMeta{}
	for _, ix := range s.indices {
		for alias, meta := range ix.aliases {
			if names == nil || matchesAny(names, alias) {
				r := row{alias, ix.name}
				rows = append(rows, r)
				metas[r] = *meta
			}
		}
	}
	s.mu.Unlock()
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].alias != rows[j].alias {
			return rows[i].alias < rows[j].alias
		}
		return rows[i].index < rows[j].index
	})
	for _, r := range rows {
		m := metas[r]
		filter, write := "-", "-"
		if m.Filter != nil {
			filter = "*"
		}
		if m.IsWriteIndex != nil {
			write = strconv.FormatBool(*m.IsWriteIndex)
		}
		t.add(r.alias, r.index, filter, dash(m.IndexRouting), dash(m.SearchRouting), write)
	}
	writeCat(w, q, t)
}

// handleCatCount counts the searchable documents (as of the last refresh)
// of the named indices. Known difference: the filter of an alias named in
// the path is not applied.
func (s *Server) handleCatCount(w http.ResponseWriter, q *request) {
	t := &catTable{cols: []catCol{
		{name: "epoch", aliases: []string{"t", "time"}},
		{name: "timestamp", aliases: []string{"ts", "hms", "hhmmss"}},
		{name: "count", aliases: []string{"dc", "docs.count", "docsCount"}},
	}}
	s.serveCat(w, q, t, func(ixs []*index) {
		var n int64
		for _, ix := range ixs {
			for _, sh := range ix.shards {
				n += int64(len(sh.searchable))
			}
		}
		now := s.now().UTC()
		t.add(now.Unix(), now.Format(time.TimeOnly), n)
	})
}
