package router

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/golang/geo/s2"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
)

// FormatVersion is the map file format this package reads and writes.
const FormatVersion = 1

// Shard is one geoshard as it appears in a map file.
type Shard struct {
	// Name is the shard's lowercase name, unique in its map.
	Name string `json:"name"`
	// Start is the S2 token of the first cell the shard owns.
	Start string `json:"start"`
	// Routing is the routing value that OpenSearch sends to physical shard
	// i, where i is this shard's position in the map.
	Routing string `json:"routing"`
	// Docs is the planned document load; informational, not hashed.
	Docs int64 `json:"docs"`
}

// File is the JSON form of a map file. Field order and names are pinned:
// tools outside this project read it.
type File struct {
	Version          int     `json:"version"`
	Level            int     `json:"level"`
	NumberOfShards   int     `json:"number_of_shards"`
	RoutingNumShards int     `json:"routing_num_shards"`
	Shards           []Shard `json:"shards"`
}

// Map is a validated, immutable geoshard map. Its methods are safe for
// concurrent use.
type Map struct {
	level  int
	rns    int
	shards []Shard
	// lo[i] is the smallest leaf cell ID inside shard i's start cell, so the
	// shard of any cell at the map's level or finer is the last i with
	// lo[i] <= id.
	lo   []uint64
	hash string
}

// New validates a map and returns it. routingNumShards 0 means "equal to the
// number of shards". Every problem is reported at once in a *MapError.
func New(level, routingNumShards int, shards []Shard) (*Map, error) {
	return FromFile(File{
		Version:          FormatVersion,
		Level:            level,
		NumberOfShards:   len(shards),
		RoutingNumShards: routingNumShards,
		Shards:           shards,
	})
}

// Parse decodes and validates a map file. Unknown fields are rejected, so a
// misspelt field is an error rather than a silent default.
func Parse(data []byte) (*Map, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f File
	if err := dec.Decode(&f); err != nil {
		if field, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			return nil, fmt.Errorf("router: map file: unknown field %s (a misspelt field? the fields are those of router.File)", field)
		}
		return nil, fmt.Errorf("router: map file is not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("router: map file has data after the map object")
	}
	return FromFile(f)
}

// FromFile validates the decoded form of a map file. A zero
// RoutingNumShards defaults to NumberOfShards.
func FromFile(f File) (*Map, error) {
	var p []string
	bad := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }

	if f.Version != FormatVersion {
		bad("version: %d, this reader understands version %d", f.Version, FormatVersion)
	}
	levelOK := f.Level >= 1 && f.Level <= s2.MaxLevel
	if !levelOK {
		bad("level: %d, want 1 to %d", f.Level, s2.MaxLevel)
	}
	n := len(f.Shards)
	if n == 0 {
		bad("shards: none; a map needs at least one shard")
	}
	if f.NumberOfShards != n {
		bad("number_of_shards: %d, but the map lists %d shards", f.NumberOfShards, n)
	}
	rns := f.RoutingNumShards
	if rns == 0 {
		rns = n
	}
	rnsOK := n > 0 && rns >= n && rns%n == 0
	if !rnsOK && n > 0 {
		bad("routing_num_shards: %d, want a positive multiple of number_of_shards (%d)", f.RoutingNumShards, n)
	}

	m := &Map{level: f.Level, rns: rns, shards: make([]Shard, n), lo: make([]uint64, n)}
	copy(m.shards, f.Shards)
	names := make(map[string]int, n)
	keys := make(map[string]int, n)
	var prev s2.CellID
	for i, s := range m.shards {
		who := fmt.Sprintf("shard %d %q", i, s.Name)
		if err := checkName(s.Name); err != nil {
			bad("%s: name %v", who, err)
		} else if j, dup := names[s.Name]; dup {
			bad("%s: name already used by shard %d", who, j)
		} else {
			names[s.Name] = i
		}
		if s.Docs < 0 {
			bad("%s: docs %d is negative", who, s.Docs)
		}
		id, err := ParseToken(s.Start)
		switch {
		case err != nil:
			bad("%s: start %v", who, err)
		case levelOK && id.Level() != f.Level:
			bad("%s: start %q is a level-%d cell, want level %d", who, s.Start, id.Level(), f.Level)
		case i == 0 && levelOK && id != firstCell(f.Level):
			bad("%s: start %q, but the first shard must start at the first cell, %q", who, s.Start, firstCell(f.Level).ToToken())
		case i > 0 && prev != 0 && id <= prev:
			bad("%s: start %q is not after the previous shard's start %q", who, s.Start, prev.ToToken())
		default:
			m.lo[i] = uint64(id.RangeMin())
		}
		if err == nil {
			prev = id
		}
		if err := checkRouting(s.Routing); err != nil {
			bad("%s: routing %v", who, err)
			continue
		}
		if j, dup := keys[s.Routing]; dup {
			bad("%s: routing %q already used by shard %d", who, s.Routing, j)
			continue
		}
		keys[s.Routing] = i
		if rnsOK && f.NumberOfShards == n {
			if got := shardhash.ForRouting(s.Routing, rns, n); got != i {
				bad("%s: routing %q lands on physical shard %d, not %d (routing_num_shards %d); use %q",
					who, s.Routing, got, i, rns, RoutingKey(s.Name, i, rns, n))
			}
		}
	}
	if len(p) > 0 {
		return nil, &MapError{Problems: p}
	}
	m.hash = m.computeHash()
	return m, nil
}

func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("is empty")
	}
	if len(name) > 64 {
		return fmt.Errorf("%q is longer than 64 bytes", name)
	}
	for i, c := range name {
		lower := c >= 'a' && c <= 'z'
		if lower || (i > 0 && (c >= '0' && c <= '9' || c == '-' || c == '_')) {
			continue
		}
		return fmt.Errorf("%q: want lowercase letters, then letters, digits, '-' or '_'", name)
	}
	return nil
}

func checkRouting(key string) error {
	switch {
	case key == "":
		// OpenSearch treats an empty routing value as no routing at all.
		return fmt.Errorf("is empty")
	case !utf8.ValidString(key):
		return fmt.Errorf("%q is not valid UTF-8", key)
	case strings.ContainsRune(key, ','):
		// Search splits the routing parameter on commas.
		return fmt.Errorf("%q contains a comma", key)
	case len(key) > 512:
		return fmt.Errorf("is longer than 512 bytes")
	}
	return nil
}

// computeHash is sha256 over the canonical form:
//
//	geoshard-map\n
//	version=1\n
//	level=10\n
//	number_of_shards=18\n
//	routing_num_shards=18\n
//	shard=<name>,<start>,<routing>\n   (one line per shard, in map order)
//
// Docs are not part of it: two maps that place every cell and route every
// shard alike have the same hash.
func (m *Map) computeHash() string {
	h := sha256.New()
	fmt.Fprintf(h, "geoshard-map\nversion=%d\nlevel=%d\nnumber_of_shards=%d\nrouting_num_shards=%d\n",
		FormatVersion, m.level, len(m.shards), m.rns)
	for _, s := range m.shards {
		fmt.Fprintf(h, "shard=%s,%s,%s\n", s.Name, s.Start, s.Routing)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Hash is the map's content hash: 64 lowercase hex digits of sha256 over
// its canonical form (see the package documentation of the file format).
func (m *Map) Hash() string { return m.hash }

// ShortHash is the first 12 hex digits of Hash, for logs and labels.
func (m *Map) ShortHash() string { return m.hash[:12] }

// Level is the S2 level of the map's cells.
func (m *Map) Level() int { return m.level }

// NumShards is the number of shards, OpenSearch's index.number_of_shards.
func (m *Map) NumShards() int { return len(m.shards) }

// RoutingNumShards is OpenSearch's index.number_of_routing_shards for an
// index built with this map.
func (m *Map) RoutingNumShards() int { return m.rns }

// Shard returns shard i.
func (m *Map) Shard(i int) Shard { return m.shards[i] }

// Shards returns a copy of the shards in map order.
func (m *Map) Shards() []Shard { return append([]Shard(nil), m.shards...) }

// Index returns the position of the shard with the given name.
func (m *Map) Index(name string) (int, bool) {
	for i, s := range m.shards {
		if s.Name == name {
			return i, true
		}
	}
	return 0, false
}

// File returns the map in its file form.
func (m *Map) File() File {
	return File{
		Version:          FormatVersion,
		Level:            m.level,
		NumberOfShards:   len(m.shards),
		RoutingNumShards: m.rns,
		Shards:           m.Shards(),
	}
}

// MarshalJSON writes the map file, one shard per line.
func (m *Map) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "{\n  \"version\": %d,\n  \"level\": %d,\n  \"number_of_shards\": %d,\n  \"routing_num_shards\": %d,\n  \"shards\": [\n",
		FormatVersion, m.level, len(m.shards), m.rns)
	for i, s := range m.shards {
		b.WriteString(`    {"name": `)
		b.WriteString(strconv.Quote(s.Name))
		b.WriteString(`, "start": `)
		b.WriteString(strconv.Quote(s.Start))
		b.WriteString(`, "routing": `)
		r, _ := json.Marshal(s.Routing)
		b.Write(r)
		fmt.Fprintf(&b, `, "docs": %d}`, s.Docs)
		if i < len(m.shards)-1 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
	}
	b.WriteString("  ]\n}\n")
	return b.Bytes(), nil
}

// Range returns the first and last cells at the map's level that shard i
// owns.
func (m *Map) Range(i int) (first, last s2.CellID) {
	first = posCell(cellPos(s2.CellID(m.lo[i]), m.level), m.level)
	end := numPos(m.level)
	if i+1 < len(m.lo) {
		end = cellPos(s2.CellID(m.lo[i+1]), m.level)
	}
	return first, posCell(end-1, m.level)
}
