package osfake

import (
	"encoding/json"
	"math"
	"sort"
	"strings"
)

// Sorting: sort clauses as the server parses them, their keys bound to an
// index's field types, the order of hits (missing values last unless
// asked otherwise), the sort values a hit renders, and search_after.

// sortClause is one sort key. Missing values sort last unless
// missingFirst, whatever the order, as on the server.
type sortClause struct {
	field        string
	desc         bool
	missingFirst bool
	missing      any // a replacement value, or nil
	unmappedType string
	mode         string // min, max or sum; "" is min ascending, max descending

	// _geo_distance: the distance of the field's points from center, in
	// units of unitM metres.
	geoField string
	center   geoPoint
	unitM    float64
}

// sortKey is one sort value of a hit.
type sortKey struct {
	kind   byte // 'i' integer, 'f' float, 's' string, 'n' missing string (null)
	i      int64
	f      float64
	s      string
	single bool // a float (32 bits): rendered as Float.toString
}

// json renders a sort value the way the server does: integers (longs,
// dates as epoch millis, booleans as 0/1), doubles and floats spelled as
// Java spells them (4.0; infinities as strings), strings, or null for a
// missing keyword.
func (k sortKey) json() any {
	switch k.kind {
	case 'i':
		return k.i
	case 'f':
		if math.IsInf(k.f, 1) {
			return "Infinity"
		}
		if math.IsInf(k.f, -1) {
			return "-Infinity"
		}
		if k.single {
			return json.Number(javaFloat(float32(k.f)))
		}
		return json.Number(javaDouble(k.f))
	case 's':
		return k.s
	}
	return nil
}

type sortFn func(r *shardRead, d *doc, score float64) sortKey

func parseSort(v any) ([]sortClause, *osError) {
	items, ok := v.([]any)
	if !ok {
		items = []any{v}
	}
	var out []sortClause
	for _, it := range items {
		switch x := it.(type) {
		case string:
			out = append(out, sortClause{field: x, desc: x == "_score"})
		case map[string]any:
			for _, field := range sortedNames(x) {
				c, err := parseSortClause(field, x[field])
				if err != nil {
					return nil, err
				}
				out = append(out, c)
			}
		default:
			return nil, parsingException("[sort] malformed sort element")
		}
	}
	return out, nil
}

func parseSortClause(field string, spec any) (sortClause, *osError) {
	c := sortClause{field: field, desc: field == "_score"}
	if field == "_script" {
		return c, notEmulated("[" + field + "] sort")
	}
	if field == "_geo_distance" {
		return parseGeoDistanceSort(spec)
	}
	order := func(v any) *osError {
		switch strings.ToLower(scalarString(v)) {
		case "asc":
			c.desc = false
		case "desc":
			c.desc = true
		default:
			return illegalArgument("Unknown SortOrder [" + scalarString(v) + "]")
		}
		return nil
	}
	m, ok := spec.(map[string]any)
	if !ok {
		return c, order(spec)
	}
	for _, k := range sortedNames(m) {
		v := m[k]
		switch k {
		case "order":
			if err := order(v); err != nil {
				return c, err
			}
		case "missing":
			switch v {
			case "_last":
			case "_first":
				c.missingFirst = true
			default:
				c.missing = v
			}
		case "unmapped_type":
			c.unmappedType = scalarString(v)
		case "mode":
			c.mode = scalarString(v)
			if c.mode != "min" && c.mode != "max" && c.mode != "sum" {
				return c, notEmulated("sort mode [" + c.mode + "]")
			}
		case "numeric_type", "format":
		default:
			return c, parsingException("[" + field + "] sort does not support [" + k + "]")
		}
	}
	return c, nil
}

// parseSortParam reads the URL form "field:desc,other".
func parseSortParam(p string) ([]sortClause, *osError) {
	var out []sortClause
	for _, part := range strings.Split(p, ",") {
		field, ord, hasOrd := strings.Cut(part, ":")
		c := sortClause{field: field, desc: field == "_score"}
		if hasOrd {
			c.desc = ord == "desc"
		}
		out = append(out, c)
	}
	return out, nil
}

// docOrdinals numbers each shard's documents in _id order: the emulator's
// stand-in for Lucene doc ids in a _doc sort.
type docOrdinals struct{ byRead map[*shardRead]map[string]int }

func (o *docOrdinals) of(r *shardRead, id string) int {
	if o.byRead == nil {
		o.byRead = map[*shardRead]map[string]int{}
	}
	m := o.byRead[r]
	if m == nil {
		ids := make([]string, 0, len(r.docs))
		for k := range r.docs {
			ids = append(ids, k)
		}
		sort.Strings(ids)
		m = make(map[string]int, len(ids))
		for i, k := range ids {
			m[k] = i
		}
		o.byRead[r] = m
	}
	return m[id]
}

// parseGeoDistanceSort reads {"_geo_distance": {"<field>": point, "order",
// "unit", "mode", "distance_type"}}: the arc distance of the field's
// nearest point (mode min, the default ascending) or farthest (max), in
// unit (default m). A document without a point is +Infinity away: last
// ascending, first descending, as on the server.
func parseGeoDistanceSort(spec any) (sortClause, *osError) {
	c := sortClause{field: "_geo_distance", unitM: 1}
	m, ok := spec.(map[string]any)
	if !ok {
		return c, parsingException("[_geo_distance] malformed sort")
	}
	for _, k := range sortedNames(m) {
		v := m[k]
		switch k {
		case "order":
			switch strings.ToLower(scalarString(v)) {
			case "asc":
			case "desc":
				c.desc = true
			default:
				return c, illegalArgument("Unknown SortOrder [" + scalarString(v) + "]")
			}
		case "unit":
			u := scalarString(v)
			found := false
			for _, du := range distanceUnits {
				for _, name := range du.names {
					if name == u {
						c.unitM, found = du.meters, true
					}
				}
			}
			if !found {
				return c, illegalArgument("No distance unit match [" + u + "]")
			}
		case "mode":
			c.mode = scalarString(v)
			if c.mode != "min" && c.mode != "max" {
				return c, notEmulated("[_geo_distance] sort mode [" + c.mode + "]")
			}
		case "distance_type", "ignore_unmapped", "validation_method", "nested":
		default:
			if c.geoField != "" {
				return c, parsingException("[_geo_distance] sort on more than one field: [" + c.geoField + "] and [" + k + "]")
			}
			p, ok := parseGeoPoint(v)
			if !ok {
				return c, parsingException("[_geo_distance] failed to parse the point of [" + k + "]")
			}
			c.geoField, c.center = k, p
		}
	}
	if c.geoField == "" {
		return c, illegalArgument("No geo points given for [_geo_distance] sort")
	}
	return c, nil
}

// bindSort resolves a sort clause against an index's mapping.
func bindSort(c sortClause, ix *index, ord *docOrdinals) (sortFn, *osError) {
	if c.field == "_geo_distance" {
		f := resolveField(ix, c.geoField)
		if f.kind != kindGeo {
			return nil, illegalArgument("failed to find mapper for [" + c.geoField + "] for geo distance based sort")
		}
		useMax := c.mode == "max" || c.mode == "" && c.desc
		return func(_ *shardRead, d *doc, _ float64) sortKey {
			best, found := 0.0, false
			walkPath(d.fields, f.path, func(v any) bool {
				eachGeoPoint(v, func(p geoPoint) bool {
					dist := arcDistance(c.center, p) / c.unitM
					if !found || useMax && dist > best || !useMax && dist < best {
						best, found = dist, true
					}
					return true
				})
				return true
			})
			if !found {
				// The server's missing distance is +Infinity in either
				// order: last ascending, first descending.
				return sortKey{kind: 'f', f: math.Inf(1)}
			}
			return sortKey{kind: 'f', f: best}
		}, nil
	}
	switch c.field {
	case "_score":
		return func(_ *shardRead, _ *doc, score float64) sortKey { return sortKey{kind: 'f', f: score, single: true} }, nil
	case "_doc":
		return func(r *shardRead, d *doc, _ float64) sortKey { return sortKey{kind: 'i', i: int64(ord.of(r, d.id))} }, nil
	}
	f := resolveField(ix, c.field)
	switch f.kind {
	case kindNone, kindObject:
		if c.unmappedType == "" {
			return nil, queryShardException("No mapping found for [" + c.field + "] in order to sort on")
		}
		kind, integer := typeKind(c.unmappedType)
		miss := missingSortKey(c, kind, c.unmappedType, integer || kind == kindDate || kind == kindBool, nil)
		return func(*shardRead, *doc, float64) sortKey { return miss }, nil
	case kindText:
		return nil, illegalArgument("Text fields are not optimised for operations that require per-document field data like aggregations and sorting, " +
			"so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [" + c.field +
			"] in order to load field data by uninverting the inverted index. Note that this can use significant memory.")
	case kindGeo:
		return nil, illegalArgument("can't sort on geo_point field without using specific sorting feature, like geo_distance")
	}
	if f.kind == kindKeyword {
		miss := missingSortKey(c, kindKeyword, "keyword", false, nil)
		useMax := c.mode == "max" || c.mode == "" && c.desc
		return func(_ *shardRead, d *doc, _ float64) sortKey {
			k, found := sortKey{kind: 's'}, false
			f.eachKey(d, func(v string) bool {
				if !found || useMax && v > k.s || !useMax && v < k.s {
					k.s, found = v, true
				}
				return true
			})
			if !found {
				return miss
			}
			return k
		}, nil
	}
	integer := f.integer || f.kind == kindDate || f.kind == kindBool
	single := f.typ == "float" || f.typ == "half_float"
	miss := missingSortKey(c, f.kind, f.typ, integer, &f)
	useMax := c.mode == "max" || c.mode == "" && c.desc
	return func(_ *shardRead, d *doc, _ float64) sortKey {
		var acc num
		found := false
		f.each(d, func(v any) bool {
			n, ok := f.docNum(v)
			switch {
			case !ok:
			case !found:
				acc, found = n, true
			case c.mode == "sum":
				if acc.isInt && n.isInt {
					acc = intNum(acc.i + n.i)
				} else {
					acc = num{f: acc.f + n.f}
				}
			case useMax && cmpNum(n, acc) > 0, !useMax && cmpNum(n, acc) < 0:
				acc = n
			}
			return true
		})
		if !found {
			return miss
		}
		return numSortKey(acc, integer, single)
	}, nil
}

func numSortKey(n num, integer, single bool) sortKey {
	switch {
	case integer:
		n = n.truncate()
		return sortKey{kind: 'i', i: n.i}
	case single:
		return sortKey{kind: 'f', f: float64(float32(n.f)), single: true}
	}
	return sortKey{kind: 'f', f: n.f}
}

// widened is k as a double: bucket keys of float fields are the float's
// value as a double (3.9 reads 3.9000000953674316), where sort values
// are floats.
func (k sortKey) widened() sortKey {
	k.single = false
	return k
}

// intSorted reports whether a type sorts as a Java int (SortField.Type.INT),
// whose missing values are Integer.MIN_VALUE and MAX_VALUE.
func intSorted(typ string) bool {
	return typ == "integer" || typ == "short" || typ == "byte" || typ == "boolean"
}

// missingSortKey is the sort value of a document without the field: the
// "missing" replacement if given; else for numbers the extreme that sorts
// it last (or first), as the server substitutes Long.MAX_VALUE and the
// like; else a null that sorts last (or first).
func missingSortKey(c sortClause, kind int, typ string, integer bool, f *fieldRef) sortKey {
	single := typ == "float" || typ == "half_float"
	if c.missing != nil {
		if kind == kindKeyword {
			s, _ := toKeyword(c.missing)
			return sortKey{kind: 's', s: s}
		}
		if f != nil {
			if n, ok := f.docNum(c.missing); ok {
				return numSortKey(n, integer, single)
			}
		}
	}
	if kind == kindKeyword || kind == kindText || kind == kindNone {
		return sortKey{kind: 'n'}
	}
	high := c.missingFirst == c.desc
	switch {
	case intSorted(typ) && high:
		return sortKey{kind: 'i', i: math.MaxInt32}
	case intSorted(typ):
		return sortKey{kind: 'i', i: math.MinInt32}
	case integer && high:
		return sortKey{kind: 'i', i: math.MaxInt64}
	case integer:
		return sortKey{kind: 'i', i: math.MinInt64}
	case high:
		return sortKey{kind: 'f', f: math.Inf(1), single: single}
	}
	return sortKey{kind: 'f', f: math.Inf(-1), single: single}
}

// cmpSortKey orders two values of one clause.
func cmpSortKey(a, b sortKey, c *sortClause) int {
	if a.kind == 'n' || b.kind == 'n' {
		if a.kind == b.kind {
			return 0
		}
		r := 1 // missing last
		if c.missingFirst {
			r = -1
		}
		if a.kind == 'n' {
			return r
		}
		return -r
	}
	var r int
	switch {
	case a.kind == 'i' && b.kind == 'i':
		r = cmpNum(intNum(a.i), intNum(b.i))
	case a.kind != 's' && b.kind != 's':
		r = cmpNum(num{f: a.asFloat()}, num{f: b.asFloat()})
	case a.kind == 's' && b.kind == 's':
		r = strings.Compare(a.s, b.s)
	case a.kind == 's':
		r = 1
	default:
		r = -1
	}
	if c.desc {
		return -r
	}
	return r
}

func (k sortKey) asFloat() float64 {
	if k.kind == 'i' {
		return float64(k.i)
	}
	return k.f
}

func compareHits(a, b *hit, clauses []sortClause) int {
	for i := range clauses {
		if c := cmpSortKey(a.keys[i], b.keys[i], &clauses[i]); c != 0 {
			return c
		}
	}
	if a.pos != b.pos {
		return a.pos - b.pos
	}
	return strings.Compare(a.d.id, b.d.id)
}

// afterValues reports whether h sorts strictly after the search_after
// values: a hit equal on every sort value is skipped, as on the server,
// which is why callers page on a unique tiebreaker.
func afterValues(h *hit, after []any, clauses []sortClause) bool {
	for i := range clauses {
		like := h.keys[i]
		var k sortKey
		switch like.kind {
		case 'i', 'f':
			n, ok := toNum(after[i])
			if !ok && like.kind == 'i' {
				// A date sort takes a date as text.
				var lo int64
				if lo, _, ok = parseDate(after[i]); ok {
					n = intNum(lo)
				}
			}
			switch {
			case !ok:
				k = sortKey{kind: 's', s: scalarString(after[i])}
			case n.isInt && like.kind == 'i':
				k = sortKey{kind: 'i', i: n.i}
			case like.single:
				k = sortKey{kind: 'f', f: float64(float32(n.f)), single: true}
			default:
				k = sortKey{kind: 'f', f: n.f}
			}
		default:
			if after[i] == nil {
				k = sortKey{kind: 'n'}
			} else {
				s, _ := toKeyword(after[i])
				k = sortKey{kind: 's', s: s}
			}
		}
		if c := cmpSortKey(like, k, &clauses[i]); c != 0 {
			return c > 0
		}
	}
	return false
}
