package decode

// The Debezium format: change events of a restaurant table and a dish
// table, as Debezium's Postgres connector writes them through Kafka
// Connect's JSON converter, read through a Mapping (mapping.go) into the
// Change the native decoder makes.
//
// An event's value is the change event envelope, bare or inside the JSON
// converter's schema envelope ({"schema":…,"payload":{…}}):
//
//	{"before":{…}|null,"after":{…}|null,"source":{…,"lsn":…,"ts_ms":…},"op":"c"}
//
//   - op c (insert), u (update) and r (a snapshot's read) are upserts of
//     the after image; d is a delete, its row read from the before image.
//   - A tombstone (the null value Debezium writes after a delete, so that
//     compaction can drop the key) finishes with no write and no dead
//     letter: the delete before it did the work.
//   - op m (a logical decoding message, pg_logical_emit_message) carries
//     no row: it finishes with no write, counted as noop. Debezium writes
//     them to a topic of their own unless routed here.
//   - op t (a TRUNCATE) is dead-lettered as unknown_op: ingest does not
//     delete a whole table's documents on its own. Debezium skips
//     truncates unless skipped.operations leaves them in.
//
// Which table an event is comes from its topic: the restaurant topic's
// events are restaurants, any other topic's (the dish topic, the
// repartition topic, the parking topic's records) dishes. A mapping that
// names the table also checks source.table (and source.schema).
//
// Keys: Debezium keys a row's events by its primary key, {"id":42} (or
// that inside the schema envelope). A restaurant event's key must name
// its id (KeyID); the dish topic is keyed by dish id, so ingest re-keys
// dish events by restaurant (pipeline.DishKeyDish,
// pipeline/placement/repartition.go) and checks the repartitioned key as
// it does a native one.
//
// Before images: Postgres sends a row's old values only under REPLICA
// IDENTITY FULL; with the default identity a delete's before image holds
// the key columns, and Debezium fills the table's other NOT NULL columns
// with 0 or "" (their type's fallback). A dish delete needs the dish's
// restaurant, so a before image whose restaurant id is absent, null, ""
// or 0 is dead-lettered as missing_restaurant_id, naming the fix (a real
// restaurant id 0 cannot be deleted from a dish's before image). An
// update whose before image names another restaurant than its after image
// sets Change.FormerRestaurantID.
//
// The checks run in a fixed order, so an event with several defects
// always gets the same reason: size, JSON, envelope, op, table, row, id,
// version, restaurant id, key, location, document.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"sync/atomic"
)

// The two tables, as indexes of debezium.tables.
const (
	restaurantTable = 0
	dishTable       = 1
)

// toastPlaceholder is what Debezium sends (unavailable.value.placeholder,
// default) for a column stored out of line (TOAST) that an update left
// unchanged, when the before image does not carry it.
const toastPlaceholder = "__debezium_unavailable_value"

// debezium reads Debezium change events through a mapping.
type debezium struct {
	restaurantTopic string
	tables          [2]dbzTable
	// schemas caches, per table, the decimal columns of the last value
	// schema seen: a schema repeats unchanged on every event until the
	// table's columns change. The decoder goroutine, the loop (parked
	// dishes) and the repartitioner read it.
	schemas [2]atomic.Pointer[rowSchema]
}

// dbzTable is one table's mapping, ready for the hot path.
type dbzTable struct {
	typ, name     string // TypeRestaurant or TypeDish; "restaurants" or "dishes"
	table, schema string // "" if the mapping names none
	id, rid       string // rid: dishes only
	lat, lon      string // restaurants only
	version       versionKind
	versionColumn string
	// fields maps a copied column to its `"field":` token: every copied
	// column under Columns, the renamed ones otherwise. all: every column
	// not in exclude is copied.
	fields  map[string][]byte
	all     bool
	exclude map[string]bool
}

// rowSchema is what the decoder takes from a value schema: the scale of
// each Decimal column (decimal.handling.mode=precise).
type rowSchema struct {
	raw      []byte
	decimals map[string]int
}

func newDebezium(m *Mapping, restaurantTopic string) *debezium {
	d := &debezium{restaurantTopic: restaurantTopic}
	d.tables[restaurantTable] = compileTable(TypeRestaurant, "restaurants", m.Restaurants, m.Version)
	d.tables[dishTable] = compileTable(TypeDish, "dishes", m.Dishes, m.Version)
	return d
}

func compileTable(typ, name string, t TableMapping, version string) dbzTable {
	if t.Version != "" {
		version = t.Version
	}
	kind, column, _ := parseVersionSource(version, true) // validated
	c := dbzTable{
		typ: typ, name: name, table: t.Table, schema: t.Schema,
		id: t.ID, rid: t.RestaurantID, lat: t.Lat, lon: t.Lon,
		version: kind, versionColumn: column,
		fields: map[string][]byte{}, all: len(t.Columns) == 0, exclude: map[string]bool{},
	}
	token := func(field string) []byte {
		b, _ := json.Marshal(field)
		return append(b, ':')
	}
	for _, col := range t.Columns {
		field := col
		if r, ok := t.Rename[col]; ok {
			field = r
		}
		c.fields[col] = token(field)
	}
	if c.all {
		for col, field := range t.Rename {
			c.fields[col] = token(field)
		}
		for _, col := range t.Exclude {
			c.exclude[col] = true
		}
	}
	return c
}

// Decode decodes a message of topic (see the top of this file).
func (d *debezium) Decode(topic string, key, value []byte, maxBytes int) (*Change, bool, *InvalidEventError) {
	t := &d.tables[dishTable]
	if topic == d.restaurantTopic {
		t = &d.tables[restaurantTable]
	}
	c := &Change{Type: t.typ}
	skip, bad := d.read(c, t, key, value, maxBytes, true)
	return c, skip, bad
}

// KeyID is the restaurant id a restaurant event's key names: the id
// column of the key's row ({"id":42} → "42", bare or in the schema
// envelope), a JSON string's text, or else the key itself (a key
// converter that writes the id as text, or the repartition topic's key).
// The partitioner detection (pipeline/placement/detect.go) reads
// restaurant keys through it, as the decoder's key check does.
func (d *debezium) KeyID(key []byte) (string, bool) {
	k := bytes.TrimSpace(key)
	if len(k) == 0 {
		return "", false
	}
	switch k[0] {
	case '"':
		s, ok := jsonString(k)
		if ok && json.Valid(k) {
			return s, s != ""
		}
	case '{':
		if !json.Valid(k) {
			break
		}
		row := k
		w, _ := walkObject(k)
		for name, v, ok := w.next(); ok; name, v, ok = w.next() {
			if nameIs(name, "payload") {
				row = v
				break
			}
		}
		if row[0] != '{' {
			return idText(row)
		}
		w, _ = walkObject(row)
		for name, v, ok := w.next(); ok; name, v, ok = w.next() {
			if nameIs(name, d.tables[restaurantTable].id) {
				return idText(v)
			}
		}
		return "", false
	}
	return string(key), true
}

// RestaurantID is a dish event's restaurant id, read as the decoder reads
// it (the after image's, or a delete's before image's): the repartitioner
// keys dish events by it.
func (d *debezium) RestaurantID(value []byte) (string, bool) {
	c := &Change{Type: TypeDish}
	d.read(c, &d.tables[dishTable], nil, value, 0, false)
	return c.RestaurantID, c.RestaurantID != ""
}

// envelope is a change event's parts, sliced from the value.
type envelope struct {
	schema, op, before, after, source []byte
}

// read decodes value into c for table t; withDoc false skips the
// document (the repartitioner needs only the restaurant id). skip reports
// an event that finishes without a write.
func (d *debezium) read(c *Change, t *dbzTable, key, value []byte, maxBytes int, withDoc bool) (skip bool, bad *InvalidEventError) {
	if maxBytes > 0 && len(value) > maxBytes {
		return false, invalid(ReasonOversized, "value of %d bytes exceeds %d", len(value), maxBytes)
	}
	trimmed := bytes.TrimSpace(value)
	if isNull(trimmed) {
		c.Op = OpDelete // a tombstone follows a delete
		return true, nil
	}
	if trimmed[0] != '{' || !json.Valid(trimmed) {
		return false, invalid(ReasonInvalidJSON, "value is not a JSON object")
	}
	env, tombstone, bad := readEnvelope(trimmed)
	if bad != nil || tombstone {
		if tombstone {
			c.Op = OpDelete
		}
		return tombstone, bad
	}

	op, _ := jsonString(env.op)
	switch op {
	case "c", "u", "r":
		c.Op = OpUpsert
		c.First = op == "c" // an INSERT: no earlier version of the row exists
	case "d":
		c.Op = OpDelete
	case "m":
		return true, nil
	case "t":
		return false, invalid(ReasonUnknownOp, "op t (TRUNCATE of %s): ingest does not delete a table's documents on its own; delete them in the index, and keep truncates out with the connector's skipped.operations=t", t.name)
	case "":
		if isNull(env.op) && isNull(env.after) && isNull(env.before) {
			return false, invalid(ReasonUnknownOp, "no op, before or after: not a Debezium change event envelope (is the ExtractNewRecordState transform on? ingest needs the whole envelope)")
		}
		return false, invalid(ReasonUnknownOp, "op %s: want \"c\", \"u\", \"r\" or \"d\"", clip(env.op))
	default:
		return false, invalid(ReasonUnknownOp, "op %s: want \"c\", \"u\", \"r\" or \"d\"", clip(env.op))
	}

	var src sourceInfo
	if bad := src.read(env.source); bad != nil {
		return false, bad
	}
	if t.table != "" && (src.table != t.table || t.schema != "" && src.schema != t.schema) {
		return false, invalid(ReasonUnknownType, "source table %s is not the %s table %s: this topic carries %s; check which topic holds which table",
			qualified(src.schema, src.table), t.name, qualified(t.schema, t.table), t.name)
	}

	row := env.after
	if c.Op == OpDelete {
		row = env.before
		if isNull(row) {
			row = nil
		} else if row[0] != '{' {
			return false, invalid(ReasonMissingDoc, "before %s: want the deleted row", clip(row))
		}
	} else if isNull(row) || row[0] != '{' {
		return false, invalid(ReasonMissingDoc, "after %s: op %q carries no row", clip(row), op)
	}

	var schema *rowSchema
	if withDoc && c.Op == OpUpsert && !isNull(env.schema) {
		schema = d.schemaOf(t, env.schema)
	}
	var r rowRead
	r.walk(t, row, env.before, schema, withDoc && c.Op == OpUpsert)

	// id
	id, ok := idText(r.id)
	if !ok && row == nil && t.typ == TypeRestaurant {
		id, ok = d.KeyID(key)
	}
	if !ok {
		return false, invalid(ReasonMissingID, "%s column %q %s: want a non-empty string or an integer", t.name, t.id, clip(r.id))
	}
	if len(id) > MaxIDBytes {
		return false, invalid(ReasonOversized, "id of %d bytes exceeds %d", len(id), MaxIDBytes)
	}
	c.ID = id

	// version
	switch t.version {
	case versionFromLSN:
		if c.Version, ok = versionOf(src.lsn); !ok {
			return false, invalid(ReasonMissingVersion, "source.lsn %s: want an integer >= 0 (the mapping's version is source.lsn, which Postgres events carry; for another database use source.ts_ms or a column)", clip(src.lsn))
		}
	case versionFromTsMs:
		if c.Version, ok = versionOf(src.tsMs); !ok {
			return false, invalid(ReasonMissingVersion, "source.ts_ms %s: want an integer >= 0", clip(src.tsMs))
		}
	case versionFromColumn:
		v, ok := versionOf(r.version)
		if c.Op == OpDelete && (!ok || v == 0) {
			return false, invalid(ReasonMissingVersion, "%s column %q %s in the before image: a delete's version is its row's plus one; set REPLICA IDENTITY FULL on the table so that the before image carries it",
				t.name, t.versionColumn, clip(r.version))
		}
		if !ok {
			return false, invalid(ReasonMissingVersion, "%s column %q %s: want an integer >= 0", t.name, t.versionColumn, clip(r.version))
		}
		if c.Op == OpDelete {
			if v == 1<<63-1 {
				return false, invalid(ReasonMissingVersion, "%s column %q %s: no version is newer", t.name, t.versionColumn, clip(r.version))
			}
			v++
		}
		c.Version = v
	}

	// restaurant id
	if t.typ == TypeDish {
		rid, ok := idText(r.rid)
		if c.Op == OpDelete && (!ok || rid == "0") {
			return false, invalid(ReasonMissingRestaurantID, "dish delete: its before image has %s for column %q: with the default REPLICA IDENTITY, Postgres sends only the key of a deleted row; run ALTER TABLE %s REPLICA IDENTITY FULL",
				clip(r.rid), t.rid, tableName(t, src))
		}
		if !ok {
			return false, invalid(ReasonMissingRestaurantID, "dishes column %q %s: want a non-empty string or an integer", t.rid, clip(r.rid))
		}
		if len(rid) > MaxIDBytes {
			return false, invalid(ReasonOversized, "restaurant id of %d bytes exceeds %d", len(rid), MaxIDBytes)
		}
		c.RestaurantID = rid
		if op == "u" {
			if former, ok := idText(r.formerRid); ok && former != rid && former != "0" && len(former) <= MaxIDBytes {
				c.FormerRestaurantID = former
			}
		}
	} else {
		c.RestaurantID = c.ID
	}

	// key
	if len(key) > 0 {
		if kid, ok := d.KeyID(key); !ok || kid != c.RestaurantID {
			return false, invalid(ReasonKeyMismatch, "key %q does not name the restaurant id %q", clip(key), c.RestaurantID)
		}
	}
	if c.Op == OpDelete || !withDoc {
		return false, nil
	}

	// location
	if t.typ == TypeRestaurant {
		lat, err := coordinate(t.lat, "latitude", r.lat, schema, 90)
		if err != nil {
			return false, invalid(ReasonBadLocation, "%v", err)
		}
		lon, err := coordinate(t.lon, "longitude", r.lon, schema, 180)
		if err != nil {
			return false, invalid(ReasonBadLocation, "%v", err)
		}
		c.Lat, c.Lon = lat, lon
	}

	// document
	if r.unavailable != "" {
		return false, invalid(ReasonMissingDoc, "%s column %q: Debezium sent its placeholder for a value stored out of line (TOAST) that the update left unchanged; set REPLICA IDENTITY FULL on %s so that the before image carries it",
			t.name, r.unavailable, tableName(t, src))
	}
	c.Doc = r.doc
	return false, nil
}

// readEnvelope slices a change event, bare or in the schema envelope.
// tombstone reports a schema envelope with a null payload.
func readEnvelope(value []byte) (env envelope, tombstone bool, bad *InvalidEventError) {
	var payload []byte
	hasPayload := false
	w, _ := walkObject(value)
	for name, v, ok := w.next(); ok; name, v, ok = w.next() {
		switch memberKey(name) {
		case "schema":
			env.schema = v
		case "payload":
			payload, hasPayload = v, true
		case "op":
			env.op = v
		case "before":
			env.before = v
		case "after":
			env.after = v
		case "source":
			env.source = v
		}
	}
	if !hasPayload {
		if env.schema != nil && env.op == nil {
			return env, false, invalid(ReasonInvalidJSON, "a schema and no payload: want the JSON converter's {\"schema\":…,\"payload\":…}")
		}
		env.schema = nil // a column called schema is not the envelope's
		return env, false, nil
	}
	if isNull(payload) {
		return env, true, nil
	}
	if payload[0] != '{' {
		return env, false, invalid(ReasonInvalidJSON, "payload %s: want the change event object", clip(payload))
	}
	env.op, env.before, env.after, env.source = nil, nil, nil, nil
	w, _ = walkObject(payload)
	for name, v, ok := w.next(); ok; name, v, ok = w.next() {
		switch memberKey(name) {
		case "op":
			env.op = v
		case "before":
			env.before = v
		case "after":
			env.after = v
		case "source":
			env.source = v
		}
	}
	return env, false, nil
}

// memberKey is a name token's text for the envelope's few names, without
// allocating.
func memberKey(tok []byte) string {
	for _, k := range [...]string{"schema", "payload", "op", "before", "after", "source"} {
		if nameIs(tok, k) {
			return k
		}
	}
	return ""
}

// sourceInfo is what the decoder reads from an event's source block.
type sourceInfo struct {
	table, schema string
	lsn, tsMs     []byte
}

func (s *sourceInfo) read(raw []byte) *InvalidEventError {
	if isNull(raw) {
		return nil // each use says what it lacks
	}
	w, ok := walkObject(raw)
	if !ok {
		return invalid(ReasonInvalidJSON, "source %s: want an object", clip(raw))
	}
	for name, v, ok := w.next(); ok; name, v, ok = w.next() {
		switch {
		case nameIs(name, "table"):
			s.table, _ = jsonString(v)
		case nameIs(name, "schema"):
			s.schema, _ = jsonString(v)
		case nameIs(name, "lsn"):
			s.lsn = v
		case nameIs(name, "ts_ms"):
			s.tsMs = v
		}
	}
	return nil
}

// rowRead is what one walk over a row takes from it: the mapped columns'
// raw values and, for an upsert, the document.
type rowRead struct {
	id, rid, lat, lon, version []byte
	// formerRid is the before image's restaurant id of an update.
	formerRid []byte
	doc       []byte
	// unavailable names a copied column whose value is the TOAST
	// placeholder and that the before image does not carry.
	unavailable string
}

func (r *rowRead) walk(t *dbzTable, row, before []byte, schema *rowSchema, withDoc bool) {
	if withDoc {
		r.doc = make([]byte, 1, len(row)+2)
		r.doc[0] = '{'
	}
	w, _ := walkObject(row)
	for name, v, ok := w.next(); ok; name, v, ok = w.next() {
		// col is the column's name; comparing string(col) and looking it
		// up in a map do not allocate.
		col := name[1 : len(name)-1]
		if bytes.IndexByte(col, '\\') >= 0 {
			col = []byte(memberName(name))
		}
		if string(col) == t.id {
			r.id = v
		}
		if string(col) == t.rid {
			r.rid = v
		}
		if string(col) == t.lat {
			r.lat = v
		}
		if string(col) == t.lon {
			r.lon = v
		}
		if string(col) == t.versionColumn {
			r.version = v
		}
		if !withDoc {
			continue
		}
		field, renamed := t.fields[string(col)]
		if !renamed && (!t.all || t.exclude[string(col)]) {
			continue
		}
		if isUnavailable(v) {
			if v = columnOf(before, string(col)); v == nil || isUnavailable(v) {
				r.unavailable = string(col)
				continue
			}
		}
		if len(r.doc) > 1 {
			r.doc = append(r.doc, ',')
		}
		if renamed {
			r.doc = append(r.doc, field...)
		} else {
			r.doc = append(r.doc, name...)
			r.doc = append(r.doc, ':')
		}
		r.doc = appendColumn(r.doc, v, col, schema)
	}
	if withDoc {
		r.doc = append(r.doc, '}')
	}
	if t.rid != "" && !isNull(before) && before[0] == '{' {
		r.formerRid = columnOf(before, t.rid)
	}
}

// columnOf is a column's raw value in a row image (nil: absent).
func columnOf(row []byte, col string) []byte {
	w, ok := walkObject(row)
	if !ok {
		return nil
	}
	for name, v, ok := w.next(); ok; name, v, ok = w.next() {
		if nameIs(name, col) {
			return v
		}
	}
	return nil
}

// isUnavailable reports the TOAST placeholder, as a string, an array of
// it, or base64 bytes.
func isUnavailable(v []byte) bool {
	if len(v) < 10 || (v[0] != '"' && v[0] != '[') {
		return false
	}
	s := string(v)
	return s == `"`+toastPlaceholder+`"` || s == `["`+toastPlaceholder+`"]` || s == `"X19kZWJleml1bV91bmF2YWlsYWJsZV92YWx1ZQ=="`
}

// appendColumn appends a copied column's value: as the JSON converter
// wrote it, except decimals under decimal.handling.mode=precise, which
// become JSON numbers (a Decimal column the schema names, or a
// VariableScaleDecimal object).
func appendColumn(dst, v, col []byte, schema *rowSchema) []byte {
	if len(v) > 2 && v[0] == '"' && schema != nil {
		if scale, ok := schema.decimals[string(col)]; ok {
			if out, ok := appendDecimal(dst, v[1:len(v)-1], scale); ok {
				return out
			}
		}
	}
	if len(v) > 0 && v[0] == '{' {
		if out, ok := appendVariableDecimal(dst, v); ok {
			return out
		}
	}
	return append(dst, v...)
}

// coordinate reads a latitude or longitude column: a number (double
// precision, or numeric under decimal.handling.mode=double), a string
// (decimal.handling.mode=string), or a decimal under precise mode (base64
// with the schema's scale, or a VariableScaleDecimal).
func coordinate(col, what string, v []byte, schema *rowSchema, limit float64) (float64, error) {
	if isNull(v) {
		return 0, fmt.Errorf("%s column %q %s: the row has no %s", what, col, clip(v), what)
	}
	var num []byte
	var small [48]byte
	switch v[0] {
	case '"':
		s := v[1 : len(v)-1]
		if scale, ok := schema.decimalScale(col); ok {
			out, ok := appendDecimal(small[:0], s, scale)
			if !ok {
				return 0, fmt.Errorf("%s column %q %s: not the base64 decimal its schema says", what, col, clip(v))
			}
			num = out
		} else {
			num = s
		}
	case '{':
		out, ok := appendVariableDecimal(small[:0], v)
		if !ok {
			return 0, fmt.Errorf("%s column %q %s: want a number", what, col, clip(v))
		}
		num = out
	case 't', 'f', '[':
		return 0, fmt.Errorf("%s column %q %s: want a number", what, col, clip(v))
	default:
		num = v
	}
	f, err := strconv.ParseFloat(string(num), 64)
	if err != nil && f == 0 {
		if v[0] == '"' && schema == nil {
			return 0, fmt.Errorf("%s column %q %s: not a number; a numeric column under decimal.handling.mode=precise needs the schema (value.converter.schemas.enable=true): set decimal.handling.mode=double or string", what, col, clip(v))
		}
		return 0, fmt.Errorf("%s column %q %s: want a number", what, col, clip(v))
	}
	if f != f || f < -limit || f > limit {
		return 0, fmt.Errorf("%s column %q %s: want a finite number in [-%v, %v]", what, col, clip(v), limit, limit)
	}
	return f, nil
}

func (s *rowSchema) decimalScale(col string) (int, bool) {
	if s == nil {
		return 0, false
	}
	scale, ok := s.decimals[col]
	return scale, ok
}

// schemaOf returns the decimal columns of a value schema, from the cache
// while the table's schema is unchanged.
func (d *debezium) schemaOf(t *dbzTable, raw []byte) *rowSchema {
	i := restaurantTable
	if t.typ == TypeDish {
		i = dishTable
	}
	if s := d.schemas[i].Load(); s != nil && bytes.Equal(s.raw, raw) {
		return s
	}
	s := parseRowSchema(raw)
	d.schemas[i].Store(s)
	return s
}

// parseRowSchema reads the Decimal columns of a change event's value
// schema: the fields of its "after" (or "before") struct whose name is
// org.apache.kafka.connect.data.Decimal, with parameters.scale.
func parseRowSchema(raw []byte) *rowSchema {
	s := &rowSchema{raw: bytes.Clone(raw), decimals: map[string]int{}}
	type field struct {
		Field      string            `json:"field"`
		Name       string            `json:"name"`
		Parameters map[string]string `json:"parameters"`
		Fields     []field           `json:"fields"`
	}
	var env field
	if json.Unmarshal(raw, &env) != nil {
		return s
	}
	for _, f := range env.Fields {
		if f.Field != "after" && f.Field != "before" {
			continue
		}
		for _, col := range f.Fields {
			if col.Name != "org.apache.kafka.connect.data.Decimal" {
				continue
			}
			if scale, err := strconv.Atoi(col.Parameters["scale"]); err == nil {
				s.decimals[col.Field] = scale
			}
		}
	}
	return s
}

func qualified(schema, table string) string {
	if schema == "" {
		return table
	}
	return schema + "." + table
}

// tableName names the event's table for a remedy: the source's, else the
// mapping's, else the mapping's side.
func tableName(t *dbzTable, src sourceInfo) string {
	switch {
	case src.table != "":
		return qualified(src.schema, src.table)
	case t.table != "":
		return qualified(t.schema, t.table)
	}
	return "the " + t.name + " table"
}
