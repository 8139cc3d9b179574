package osfake

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"
)

// Aggregations: terms and composite (terms sources), with sub-aggregations.
// They run over every matching document, whatever size, from and
// search_after say, as on the server.
//
// The emulator counts exactly in one pass. The server's terms aggregation
// collects the top shard_size terms (size*1.5+10) per shard and merges
// them, so with more distinct terms per shard than that its counts may be
// approximate and doc_count_error_upper_bound non-zero; here it is always 0.

type aggSpec struct {
	name string
	kind string // "terms" or "composite"
	meta map[string]any
	subs []*aggSpec

	// terms
	field       string
	size        int
	byKey       bool // order by _key rather than _count
	asc         bool
	missing     any
	minDocCount int

	// composite
	sources []compositeSource
	after   map[string]any

	// range
	ranges []aggRange
	keyed  bool
}

// aggRange is one range of a range aggregation: from inclusive, to
// exclusive, either open.
type aggRange struct {
	key            string
	from, to       float64
	hasFrom, hasTo bool
}

type compositeSource struct {
	name, field   string
	desc          bool
	missingBucket bool
}

// notEmulatedAggs are aggregation types the server has and the emulator
// does not implement: they answer 501.
var notEmulatedAggs = map[string]bool{
	"avg": true, "sum": true, "min": true, "max": true, "value_count": true, "cardinality": true,
	"stats": true, "extended_stats": true, "percentiles": true, "percentile_ranks": true, "top_hits": true,
	"histogram": true, "date_histogram": true, "auto_date_histogram": true, "date_range": true,
	"ip_range": true, "filter": true, "filters": true, "nested": true, "reverse_nested": true, "global": true,
	"missing": true, "significant_terms": true, "significant_text": true, "geohash_grid": true,
	"geotile_grid": true, "geo_bounds": true, "geo_centroid": true, "multi_terms": true, "rare_terms": true,
	"children": true, "parent": true, "sampler": true, "diversified_sampler": true, "scripted_metric": true,
	"weighted_avg": true, "adjacency_matrix": true, "bucket_sort": true, "bucket_selector": true,
	"bucket_script": true, "avg_bucket": true, "sum_bucket": true, "max_bucket": true, "min_bucket": true,
	"stats_bucket": true, "derivative": true, "cumulative_sum": true, "moving_avg": true, "serial_diff": true,
	"matrix_stats": true, "median_absolute_deviation": true,
}

func parseAggs(v any) ([]*aggSpec, *osError) { return parseAggsAt(v, false) }

func parseAggsAt(v any, nested bool) ([]*aggSpec, *osError) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, parsingException("Aggregation definition must be an object")
	}
	var out []*aggSpec
	for _, name := range sortedNames(m) {
		def, ok := m[name].(map[string]any)
		if !ok {
			return nil, parsingException("Expected [START_OBJECT] under [" + name + "], but got a [" + tokenName(m[name]) + "] in [" + name + "]")
		}
		a := &aggSpec{name: name}
		var body map[string]any
		for _, k := range sortedNames(def) {
			switch k {
			case "aggs", "aggregations":
				subs, err := parseAggsAt(def[k], true)
				if err != nil {
					return nil, err
				}
				a.subs = subs
			case "meta":
				a.meta, _ = def[k].(map[string]any)
			default:
				if a.kind != "" {
					return nil, parsingException("Found two aggregation type definitions in [" + name + "]: [" + a.kind + "] and [" + k + "]")
				}
				a.kind = k
				body, _ = def[k].(map[string]any)
			}
		}
		var err *osError
		switch {
		case a.kind == "":
			err = parsingException("Missing definition for aggregation [" + name + "]")
		case a.kind == "terms":
			err = a.parseTerms(body)
		case a.kind == "composite" && nested:
			err = illegalArgument("[composite] aggregation cannot be used with a parent aggregation of type: [" + name + "]")
		case a.kind == "composite":
			err = a.parseComposite(body)
		case a.kind == "range":
			err = a.parseRange(body)
		case notEmulatedAggs[a.kind]:
			err = notEmulated("the [" + a.kind + "] aggregation")
		default:
			err = parsingException("Unknown aggregation type [" + a.kind + "]")
		}
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

func (a *aggSpec) parseTerms(body map[string]any) *osError {
	a.size, a.minDocCount = 10, 1
	for _, k := range sortedNames(body) {
		v := body[k]
		switch k {
		case "field":
			a.field, _ = v.(string)
		case "size":
			n, ok := toNum(v)
			if !ok || !n.isInt || n.i <= 0 {
				return illegalArgument(fmt.Sprintf("[size] must be greater than 0. Found [%v] in [%s]", v, a.name))
			}
			a.size = int(n.i)
		case "min_doc_count":
			n, _ := toNum(v)
			if n.i != 1 {
				return notEmulated("terms min_doc_count other than 1")
			}
		case "order":
			m, ok := v.(map[string]any)
			if !ok || len(m) != 1 {
				return notEmulated("a terms order other than one of _count or _key")
			}
			for by, dir := range m {
				switch by {
				case "_count":
				case "_key", "_term":
					a.byKey = true
				default:
					return notEmulated("terms order by a sub-aggregation")
				}
				a.asc = dir == "asc"
			}
		case "missing":
			a.missing = v
		case "shard_size", "show_term_doc_count_error", "execution_hint", "collect_mode", "value_type", "format":
		case "script", "include", "exclude":
			return notEmulated("terms [" + k + "]")
		default:
			return parsingException("[terms] unknown field [" + k + "]")
		}
	}
	if a.field == "" {
		return illegalArgument("Required one of fields [field, script], but none were specified. ")
	}
	return nil
}

func (a *aggSpec) parseComposite(body map[string]any) *osError {
	a.size = 10
	for _, k := range sortedNames(body) {
		v := body[k]
		switch k {
		case "size":
			n, ok := toNum(v)
			if !ok || !n.isInt || n.i <= 0 {
				return illegalArgument(fmt.Sprintf("[size] must be greater than 0. Found [%v] in [%s]", v, a.name))
			}
			a.size = int(n.i)
		case "after":
			m, ok := v.(map[string]any)
			if !ok {
				return parsingException("[composite] [after] must be an object")
			}
			a.after = m
		case "sources":
			arr, _ := v.([]any)
			for _, e := range arr {
				src, ok := e.(map[string]any)
				if !ok || len(src) != 1 {
					return parsingException("[composite] each source must be an object with one name")
				}
				for name, def := range src {
					d, _ := def.(map[string]any)
					terms, ok := d["terms"].(map[string]any)
					if !ok || len(d) != 1 {
						return notEmulated("composite sources other than terms")
					}
					if err := checkTermsSourceFields(terms); err != nil {
						return err
					}
					cs := compositeSource{name: name}
					cs.field, _ = terms["field"].(string)
					cs.desc = terms["order"] == "desc"
					cs.missingBucket = terms["missing_bucket"] == true
					if cs.field == "" {
						return notEmulated("composite terms sources without a field")
					}
					a.sources = append(a.sources, cs)
				}
			}
		default:
			return parsingException("[composite] unknown field [" + k + "]")
		}
	}
	if len(a.sources) == 0 {
		return illegalArgument("Composite [sources] cannot be null or empty")
	}
	if a.after != nil && len(a.after) != len(a.sources) {
		return illegalArgument(fmt.Sprintf("[after] has %d value(s) but [sources] has %d", len(a.after), len(a.sources)))
	}
	return nil
}

// fields lists the fields an aggregation reads.
func (a *aggSpec) fields() []string {
	if a.kind == "terms" || a.kind == "range" {
		return []string{a.field}
	}
	out := make([]string, len(a.sources))
	for i, s := range a.sources {
		out[i] = s.field
	}
	return out
}

// validateAggs is the shard-level check of aggregations against an
// index's mapping: text and geo_point fields cannot be bucketed.
func validateAggs(specs []*aggSpec, ix *index) *osError {
	for _, a := range specs {
		for _, name := range a.fields() {
			f := resolveField(ix, name)
			switch f.kind {
			case kindText:
				return illegalArgument("Text fields are not optimised for operations that require per-document field data like aggregations and sorting, " +
					"so these operations are disabled by default. Please use a keyword field instead. Alternatively, set fielddata=true on [" + name +
					"] in order to load field data by uninverting the inverted index. Note that this can use significant memory.")
			case kindGeo:
				return illegalArgument("Field [" + name + "] of type [geo_point] is not supported for aggregation [" + a.kind + "]")
			}
		}
		if err := a.checkAfter(ix); err != nil {
			return err
		}
		if err := validateAggs(a.subs, ix); err != nil {
			return err
		}
	}
	return nil
}

// aggKeys extracts the distinct bucket keys of a field from hits.
type aggKeys struct {
	reads []shardRead
	refs  map[aggRefKey]*fieldRef
}

type aggRefKey struct {
	ix    *index
	field string
}

func (k *aggKeys) ref(ix *index, field string) *fieldRef {
	rk := aggRefKey{ix, field}
	f := k.refs[rk]
	if f == nil {
		r := resolveField(ix, field)
		f = &r
		k.refs[rk] = f
	}
	return f
}

// of returns the distinct keys of field in h: strings for keyword fields,
// integers for integer, date (epoch millis) and boolean (0/1) fields,
// doubles for the others.
func (k *aggKeys) of(h *hit, field string) []sortKey {
	f := k.ref(k.reads[h.pos].ix, field)
	var out []sortKey
	add := func(key sortKey) {
		for _, o := range out {
			if o == key {
				return
			}
		}
		out = append(out, key)
	}
	switch f.kind {
	case kindNone, kindObject, kindText, kindGeo:
	case kindKeyword:
		f.eachKey(h.d, func(s string) bool { add(sortKey{kind: 's', s: s}); return true })
	default:
		integer := f.integer || f.kind == kindDate || f.kind == kindBool
		single := f.typ == "float" || f.typ == "half_float"
		f.each(h.d, func(v any) bool {
			if n, ok := f.docNum(v); ok {
				add(numSortKey(n, integer, single).widened())
			}
			return true
		})
	}
	return out
}

// keyString is a bucket's map key: equal for equal keys.
func (k sortKey) keyString() string {
	switch k.kind {
	case 'i':
		return "i" + strconv.FormatInt(k.i, 10)
	case 'f':
		return "f" + strconv.FormatFloat(k.f, 'g', -1, 64)
	case 's':
		return "s" + k.s
	}
	return "n"
}

type bucket struct {
	key   []sortKey
	count int
	pos   int    // read position of its first hit, for the field's type
	hits  []*hit // kept only for sub-aggregations
}

// runAggs computes the aggregations over the hits of a search.
func runAggs(specs []*aggSpec, res *searchResult) map[string]any {
	keys := &aggKeys{reads: res.reads, refs: map[aggRefKey]*fieldRef{}}
	return keys.run(specs, res.hits)
}

func (k *aggKeys) run(specs []*aggSpec, hits []*hit) map[string]any {
	out := map[string]any{}
	for _, a := range specs {
		var r map[string]any
		switch a.kind {
		case "terms":
			r = k.terms(a, hits)
		case "range":
			r = k.rangeAgg(a, hits)
		default:
			r = k.composite(a, hits)
		}
		if a.meta != nil {
			r["meta"] = a.meta
		}
		out[a.name] = r
	}
	return out
}

// group counts hits per key tuple; a hit with several values is counted
// once in each tuple its values form.
func (k *aggKeys) group(hits []*hit, tuples func(h *hit) [][]sortKey, keepHits bool) []*bucket {
	byKey := map[string]*bucket{}
	var out []*bucket
	for _, h := range hits {
		for _, t := range tuples(h) {
			ks := ""
			for _, e := range t {
				ks += e.keyString() + "\x00"
			}
			b := byKey[ks]
			if b == nil {
				b = &bucket{key: t, pos: h.pos}
				byKey[ks] = b
				out = append(out, b)
			}
			b.count++
			if keepHits {
				b.hits = append(b.hits, h)
			}
		}
	}
	return out
}

func (k *aggKeys) terms(a *aggSpec, hits []*hit) map[string]any {
	var missing []sortKey
	buckets := k.group(hits, func(h *hit) [][]sortKey {
		vals := k.of(h, a.field)
		if len(vals) == 0 && a.missing != nil {
			if missing == nil {
				f := k.ref(k.reads[h.pos].ix, a.field)
				missing = []sortKey{termsMissingKey(f, a.missing)}
			}
			vals = missing
		}
		out := make([][]sortKey, len(vals))
		for i, v := range vals {
			out[i] = []sortKey{v}
		}
		return out
	}, len(a.subs) > 0)
	keyOrder := sortClause{desc: a.byKey && !a.asc}
	sort.Slice(buckets, func(i, j int) bool {
		x, y := buckets[i], buckets[j]
		if !a.byKey && x.count != y.count {
			return x.count > y.count != a.asc
		}
		return cmpSortKey(x.key[0], y.key[0], &keyOrder) < 0
	})
	other := 0
	if len(buckets) > a.size {
		for _, b := range buckets[a.size:] {
			other += b.count
		}
		buckets = buckets[:a.size]
	}
	out := make([]any, 0, len(buckets))
	for _, b := range buckets {
		bj := map[string]any{"key": b.key[0].json(), "doc_count": b.count}
		f := k.ref(k.reads[b.pos].ix, a.field)
		if s, ok := keyAsString(f, b.key[0]); ok {
			bj["key_as_string"] = s
		}
		for name, sub := range k.run(a.subs, b.hits) {
			bj[name] = sub
		}
		out = append(out, bj)
	}
	return map[string]any{"doc_count_error_upper_bound": 0, "sum_other_doc_count": other, "buckets": out}
}

func termsMissingKey(f *fieldRef, v any) sortKey {
	if f.kind == kindKeyword || f.kind == kindNone {
		s, _ := toKeyword(v)
		return sortKey{kind: 's', s: s}
	}
	n, ok := f.docNum(v)
	if !ok {
		s, _ := toKeyword(v)
		return sortKey{kind: 's', s: s}
	}
	return numSortKey(n, f.integer || f.kind == kindDate || f.kind == kindBool, false)
}

// keyAsString is the formatted key the server adds for dates and booleans.
func keyAsString(f *fieldRef, k sortKey) (string, bool) {
	switch f.kind {
	case kindDate:
		return time.UnixMilli(k.i).UTC().Format("2006-01-02T15:04:05.000Z"), true
	case kindBool:
		return strconv.FormatBool(k.i != 0), true
	}
	return "", false
}

func (k *aggKeys) composite(a *aggSpec, hits []*hit) map[string]any {
	buckets := k.group(hits, func(h *hit) [][]sortKey {
		tuples := [][]sortKey{nil}
		for _, src := range a.sources {
			vals := k.of(h, src.field)
			if len(vals) == 0 {
				if !src.missingBucket {
					return nil
				}
				vals = []sortKey{{kind: 'n'}}
			}
			next := make([][]sortKey, 0, len(tuples)*len(vals))
			for _, t := range tuples {
				for _, v := range vals {
					next = append(next, append(append([]sortKey(nil), t...), v))
				}
			}
			tuples = next
		}
		return tuples
	}, len(a.subs) > 0)
	clauses := make([]sortClause, len(a.sources))
	for i, src := range a.sources {
		// A missing bucket sorts first ascending and last descending.
		clauses[i] = sortClause{desc: src.desc, missingFirst: !src.desc}
	}
	cmp := func(x, y []sortKey) int {
		for i := range clauses {
			if c := cmpSortKey(x[i], y[i], &clauses[i]); c != 0 {
				return c
			}
		}
		return 0
	}
	sort.Slice(buckets, func(i, j int) bool { return cmp(buckets[i].key, buckets[j].key) < 0 })
	if a.after != nil && len(buckets) > 0 {
		after := make([]sortKey, len(a.sources))
		for i, src := range a.sources {
			after[i] = afterKeyLike(a.after[src.name], k.ref(k.reads[buckets[0].pos].ix, src.field))
		}
		n := sort.Search(len(buckets), func(i int) bool { return cmp(buckets[i].key, after) > 0 })
		buckets = buckets[n:]
	}
	if len(buckets) > a.size {
		buckets = buckets[:a.size]
	}
	out := make([]any, 0, len(buckets))
	// Composite keys are formatted as InternalComposite.formatObject does
	// for a terms source (which takes no format): booleans as true/false,
	// dates as their epoch milliseconds, like other numbers.
	keyJSON := func(b *bucket) map[string]any {
		m := make(map[string]any, len(b.key))
		for i, src := range a.sources {
			m[src.name] = b.key[i].json()
			if f := k.ref(k.reads[b.pos].ix, src.field); f.kind == kindBool && b.key[i].kind != 'n' {
				m[src.name] = b.key[i].i != 0
			}
		}
		return m
	}
	for _, b := range buckets {
		bj := map[string]any{"key": keyJSON(b), "doc_count": b.count}
		for name, sub := range k.run(a.subs, b.hits) {
			bj[name] = sub
		}
		out = append(out, bj)
	}
	r := map[string]any{"buckets": out}
	if len(buckets) > 0 {
		r["after_key"] = keyJSON(buckets[len(buckets)-1])
	}
	return r
}

// afterKeyLike reads an "after" value as a key of the kind the field's
// buckets have: a number for numeric fields (a date may be given as a
// string, a boolean as true/false), else a string, or null.
func afterKeyLike(v any, f *fieldRef) sortKey {
	switch {
	case v == nil:
		return sortKey{kind: 'n'}
	case f.kind == kindBool:
		if b, ok := toBool(v); ok {
			return sortKey{kind: 'i', i: boolNum(b).i}
		}
	case f.kind == kindDate:
		if lo, _, ok := parseDate(v); ok {
			return sortKey{kind: 'i', i: lo}
		}
	case f.kind == kindNumber:
		if n, ok := f.docNum(v); ok {
			return numSortKey(n, f.integer, f.typ == "float" || f.typ == "half_float").widened()
		}
	}
	s, _ := toKeyword(v)
	return sortKey{kind: 's', s: s}
}

// --- range -------------------------------------------------------------------

func (a *aggSpec) parseRange(body map[string]any) *osError {
	for _, k := range sortedNames(body) {
		v := body[k]
		switch k {
		case "field":
			a.field, _ = v.(string)
		case "keyed":
			a.keyed = v == true
		case "ranges":
			list, ok := v.([]any)
			if !ok {
				return parsingException("[range] ranges must be an array")
			}
			for _, e := range list {
				m, ok := e.(map[string]any)
				if !ok {
					return parsingException("[range] a range must be an object")
				}
				var r aggRange
				for _, rk := range sortedNames(m) {
					switch rk {
					case "key":
						r.key, _ = m[rk].(string)
					case "from", "to":
						if m[rk] == nil {
							continue
						}
						n, ok := toNum(m[rk])
						if !ok {
							return parsingException("[range] [" + rk + "] must be a number")
						}
						if rk == "from" {
							r.from, r.hasFrom = n.f, true
						} else {
							r.to, r.hasTo = n.f, true
						}
					default:
						return parsingException("[range] unknown key [" + rk + "] in a range")
					}
				}
				a.ranges = append(a.ranges, r)
			}
		case "format", "script", "missing":
			return notEmulated("the [range] aggregation's [" + k + "]")
		default:
			return parsingException("[range] unknown key [" + k + "]")
		}
	}
	if a.field == "" {
		return illegalArgument("Required one of fields [field, script], but none were specified. ")
	}
	if len(a.ranges) == 0 {
		return illegalArgument("No [ranges] specified for the [" + a.name + "] aggregation")
	}
	return nil
}

// rangeKey is the server's key of a range: "from-to" with Java's double
// formatting and * for an open end.
func (r aggRange) rangeKey() string {
	if r.key != "" {
		return r.key
	}
	from, to := "*", "*"
	if r.hasFrom {
		from = javaDouble(r.from)
	}
	if r.hasTo {
		to = javaDouble(r.to)
	}
	return from + "-" + to
}

// rangeAgg counts the hits with a value in each range (a document with
// several values in one range counts once there). Buckets come in the
// order the server sorts the ranges: by from, then to.
func (k *aggKeys) rangeAgg(a *aggSpec, hits []*hit) map[string]any {
	ranges := append([]aggRange(nil), a.ranges...)
	lo := func(r aggRange) float64 {
		if r.hasFrom {
			return r.from
		}
		return math.Inf(-1)
	}
	hi := func(r aggRange) float64 {
		if r.hasTo {
			return r.to
		}
		return math.Inf(1)
	}
	sort.SliceStable(ranges, func(i, j int) bool {
		if lo(ranges[i]) != lo(ranges[j]) {
			return lo(ranges[i]) < lo(ranges[j])
		}
		return hi(ranges[i]) < hi(ranges[j])
	})
	counts := make([]int, len(ranges))
	members := make([][]*hit, len(ranges))
	for _, h := range hits {
		f := k.ref(k.reads[h.pos].ix, a.field)
		var vals []float64
		f.each(h.d, func(v any) bool {
			if n, ok := f.docNum(v); ok {
				vals = append(vals, n.f)
			}
			return true
		})
		for i, r := range ranges {
			for _, v := range vals {
				if v >= lo(r) && v < hi(r) {
					counts[i]++
					if len(a.subs) > 0 {
						members[i] = append(members[i], h)
					}
					break
				}
			}
		}
	}
	list := make([]any, 0, len(ranges))
	keyed := map[string]any{}
	for i, r := range ranges {
		b := map[string]any{"key": r.rangeKey(), "doc_count": counts[i]}
		// from and to as the server writes them: Java doubles (1000.0).
		if r.hasFrom {
			b["from"] = json.Number(javaDouble(r.from))
		}
		if r.hasTo {
			b["to"] = json.Number(javaDouble(r.to))
		}
		for name, sub := range k.run(a.subs, members[i]) {
			b[name] = sub
		}
		if a.keyed {
			delete(b, "key")
			keyed[r.rangeKey()] = b
		} else {
			list = append(list, b)
		}
	}
	if a.keyed {
		return map[string]any{"buckets": keyed}
	}
	return map[string]any{"buckets": list}
}
