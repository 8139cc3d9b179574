package decode

// The mapping file of the Debezium format: which source table is which
// document type, and which of its columns say what.
//
// A Debezium change event carries a table row, not a geoshard event:
// the mapping names the topic (or the source table) of restaurants and of
// dishes, the columns that hold the ids and the restaurant's location,
// the columns copied into the document, and where the version comes
// from. docs/database.md explains it with an example and the connector
// settings it expects.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/geoshard/geoshard/schema"
)

// Mapping says how Debezium change events of two source tables become
// restaurant and dish changes. Read it with LoadMapping or ParseMapping,
// which refuse unknown keys and validate it.
type Mapping struct {
	// Restaurants and Dishes map the two tables. Both required.
	Restaurants TableMapping `json:"restaurants"`
	Dishes      TableMapping `json:"dishes"`
	// Version is where a change's version comes from, for both tables
	// unless a table names its own: VersionLSN ("source.lsn", the default:
	// the change's position in the Postgres write-ahead log, which grows
	// with every change), VersionTsMs ("source.ts_ms": the commit time in
	// milliseconds; two changes of one row in one millisecond get the same
	// version, and the second is refused as stale, so the document keeps
	// the first), or "column:<name>", an integer column the application
	// raises on every change of a row (a delete's version is its before
	// image's plus one, so the table needs REPLICA IDENTITY FULL).
	Version string `json:"version"`
}

// TableMapping maps one source table.
type TableMapping struct {
	// Topic is the Kafka topic of the table's change events (Debezium's
	// <topic.prefix>.<schema>.<table>). If given, it is the pipeline's
	// restaurant or dish topic unless that is configured, and must equal
	// it if it is. Topic or Table (or both) required.
	Topic string `json:"topic"`
	// Table and Schema, if given, are checked against every event's
	// source.table and source.schema: an event of another table is
	// dead-lettered as unknown_type. Schema only with Table.
	Table  string `json:"table"`
	Schema string `json:"schema"`
	// ID is the column of the row's id. Required. A number becomes its
	// decimal string (42 → "42"), a string stays itself.
	ID string `json:"id"`
	// RestaurantID is, for dishes, the column of the dish's restaurant's
	// id. Required for dishes; not allowed for restaurants.
	RestaurantID string `json:"restaurant_id"`
	// Lat and Lon are, for restaurants, the columns of the latitude and
	// longitude in degrees (double precision, or numeric). Required for
	// restaurants; not allowed for dishes.
	Lat string `json:"lat"`
	Lon string `json:"lon"`
	// Columns, if given, are the only columns copied into the document.
	// Otherwise every column is copied except those in Exclude, so that a
	// column added by ALTER TABLE is copied from its first event on. Not
	// both.
	Columns []string `json:"columns"`
	Exclude []string `json:"exclude"`
	// Rename gives copied columns another field name in the document.
	Rename map[string]string `json:"rename"`
	// Version, if given, overrides Mapping.Version for this table.
	Version string `json:"version"`
}

// Version sources.
const (
	VersionLSN  = "source.lsn"
	VersionTsMs = "source.ts_ms"
	// VersionColumnPrefix prefixes a version column's name:
	// "column:row_version".
	VersionColumnPrefix = "column:"
)

// LoadMapping reads and validates a mapping file.
func LoadMapping(path string) (*Mapping, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mapping: %w", err)
	}
	m, err := ParseMapping(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// ParseMapping reads and validates a mapping from JSON. A key it does not
// know is an error, not ignored: a misspelt "exclude" would otherwise copy
// every column.
func ParseMapping(data []byte) (*Mapping, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Mapping
	if err := dec.Decode(&m); err != nil {
		if strings.HasPrefix(err.Error(), "json: unknown field ") {
			return nil, fmt.Errorf("mapping: %s: the keys are restaurants, dishes and version, and in a table topic, table, schema, id, restaurant_id, lat, lon, columns, exclude, rename and version",
				strings.TrimPrefix(err.Error(), "json: "))
		}
		return nil, fmt.Errorf("mapping: not a JSON object of the mapping's shape: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("mapping: more than one JSON value; want one object")
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate reports every bad field at once.
func (m *Mapping) Validate() error {
	var p []string
	bad := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if _, _, err := parseVersionSource(m.Version, true); err != nil {
		bad("version: %v", err)
	}
	m.Restaurants.validate("restaurants", true, m.Version, bad)
	m.Dishes.validate("dishes", false, m.Version, bad)
	r, d := m.Restaurants, m.Dishes
	if r.Topic != "" && r.Topic == d.Topic {
		bad("restaurants.topic and dishes.topic are both %q: each table has a topic of its own (Debezium writes one per table, and dishes are re-keyed by restaurant from theirs)", r.Topic)
	}
	if r.Table != "" && r.Table == d.Table && r.Schema == d.Schema {
		bad("restaurants.table and dishes.table are both %q: name the two tables", r.Table)
	}
	if len(p) > 0 {
		return errors.New("mapping: " + strings.Join(p, "; "))
	}
	return nil
}

func (t *TableMapping) validate(name string, restaurants bool, version string, bad func(string, ...any)) {
	if t.Topic == "" && t.Table == "" {
		if t.ID == "" && t.Lat == "" && t.RestaurantID == "" {
			bad("%s: missing; say which topic (or table) holds them and name their columns", name)
			return
		}
		bad("%s: give its topic, its table, or both", name)
	}
	if t.Schema != "" && t.Table == "" {
		bad("%s.schema %q: only with %s.table", name, t.Schema, name)
	}
	need := func(key, v, what string) {
		if strings.TrimSpace(v) == "" {
			bad("%s.%s: missing; name the column of %s", name, key, what)
		}
	}
	need("id", t.ID, "the row's id")
	if restaurants {
		need("lat", t.Lat, "the latitude")
		need("lon", t.Lon, "the longitude")
		if t.RestaurantID != "" {
			bad("%s.restaurant_id: only dishes have one; remove it", name)
		}
	} else {
		need("restaurant_id", t.RestaurantID, "the dish's restaurant's id")
		if t.Lat != "" || t.Lon != "" {
			bad("%s.lat and %s.lon: a dish has no location of its own (it is placed with its restaurant); remove them", name, name)
		}
	}
	if t.Version != "" {
		if _, _, err := parseVersionSource(t.Version, false); err != nil {
			bad("%s.version: %v", name, err)
		}
	}
	if len(t.Columns) > 0 && len(t.Exclude) > 0 {
		bad("%s: columns (copy these) and exclude (copy all but these) given together; keep one", name)
	}
	seen := map[string]bool{}
	for _, c := range t.Columns {
		switch {
		case strings.TrimSpace(c) == "":
			bad("%s.columns: an empty column name", name)
		case seen[c]:
			bad("%s.columns: %q listed twice", name, c)
		}
		seen[c] = true
	}
	excluded := map[string]bool{}
	for _, c := range t.Exclude {
		if strings.TrimSpace(c) == "" {
			bad("%s.exclude: an empty column name", name)
		}
		excluded[c] = true
	}
	// The document's field names: listed columns under their new names.
	fields := map[string]string{} // field -> column
	if len(t.Columns) > 0 {
		for _, c := range t.Columns {
			f := c
			if r, ok := t.Rename[c]; ok {
				f = r
			}
			if schema.IsReserved(f) {
				bad("%s.columns: %q would be the document's %q, a field ingest sets itself; rename it or leave it out", name, c, f)
			}
			if other, ok := fields[f]; ok && other != c {
				bad("%s: columns %q and %q would both be the document's %q", name, other, c, f)
			}
			fields[f] = c
		}
	}
	cols := make([]string, 0, len(t.Rename))
	for c := range t.Rename {
		cols = append(cols, c)
	}
	sort.Strings(cols)
	targets := map[string]string{}
	for _, c := range cols {
		f := t.Rename[c]
		switch {
		case strings.TrimSpace(f) == "":
			bad("%s.rename: %q renamed to an empty name", name, c)
		case len(t.Columns) > 0 && !seen[c]:
			bad("%s.rename: %q is not in %s.columns, so it is not copied", name, c, name)
		case excluded[c]:
			bad("%s.rename: %q is excluded, so it is not copied", name, c)
		case len(t.Columns) == 0 && schema.IsReserved(f):
			bad("%s.rename: %q renamed to %q, a field ingest sets itself", name, c, f)
		}
		if other, ok := targets[f]; ok && len(t.Columns) == 0 {
			bad("%s.rename: %q and %q both renamed to %q", name, other, c, f)
		}
		targets[f] = c
	}
}

// versionKind is where a version comes from.
type versionKind int

const (
	versionFromLSN versionKind = iota
	versionFromTsMs
	versionFromColumn
)

// parseVersion reads a version source; "" is the default (source.lsn)
// where allowed.
func parseVersionSource(s string, emptyOK bool) (versionKind, string, error) {
	switch {
	case s == "" && emptyOK, s == VersionLSN:
		return versionFromLSN, "", nil
	case s == VersionTsMs:
		return versionFromTsMs, "", nil
	case strings.HasPrefix(s, VersionColumnPrefix) && strings.TrimSpace(s[len(VersionColumnPrefix):]) != "":
		return versionFromColumn, s[len(VersionColumnPrefix):], nil
	}
	return 0, "", fmt.Errorf("%q: want %s (the default, for Postgres), %s, or %s<name> (an integer column the application raises on every change)",
		s, VersionLSN, VersionTsMs, VersionColumnPrefix)
}
