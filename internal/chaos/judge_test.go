package chaos

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/pipeline"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// The judge compares what a schedule left behind — the index read back
// shard by shard, the dead-letter topic, the group's commits — with the
// model of the event log. It is a pure function of those (judge), so that
// its own test (judge_self_test.go) can hand it a world that is wrong in
// a known way and see it say so.

// storedDoc is a document read back from the index.
type storedDoc struct {
	shard   int // the physical shard it was read from
	routing string
	source  map[string]any
}

// deadLetter is a record read back from the dead-letter topic.
type deadLetter struct {
	reason, detail, value string
	// src is where the dead-lettered event was read: topic/partition@offset.
	src string
}

// observed is what a schedule left behind.
type observed struct {
	docs map[string]storedDoc
	// twice are the ids read from more than one shard, with where.
	twice  []string
	counts []int64 // documents per physical shard, by _count
	dlq    []deadLetter
	// committed says whether every event topic is committed up to its
	// high watermark and no dish is parked; why says what lags if not.
	committed bool
	why       string
	// early are the dish events that may have been read before their
	// restaurant's creation (world.early); nil for none.
	early map[int]bool
}

// anomaly is one way the world differs from the model.
type anomaly struct {
	kind   string // see the kinds below
	id     string // the document's _id, or the dead letter's event
	detail string
}

// Kinds of anomaly.
const (
	kindMissing        = "missing_doc"               // the model has it, the index does not
	kindWrongShard     = "wrong_shard"               // stored under another routing or on another shard
	kindStale          = "old_version"               // stored at an older version than the newest
	kindSource         = "wrong_source"              // same version, another body
	kindExtra          = "extra_doc"                 // the index has it, the model does not
	kindTwice          = "duplicate_doc"             // stored on two shards
	kindApart          = "dish_apart"                // a dish not on its restaurant's shard
	kindCounts         = "shard_counts"              // _count per shard differs
	kindNoDead         = "missing_dead_letter"       // the model dead-letters it, the topic lacks it
	kindUnexpDead      = "unexpected_dead_letter"    // dead-lettered, the model says not
	kindDupDead        = "duplicate_dead_letter"     // dead-lettered more often than it occurs
	kindDeadAndWritten = "dead_lettered_and_written" // a waiting dish dead-lettered, and written too
	kindReason         = "wrong_reason"              // dead-lettered with another reason
	kindUncommitted    = "uncommitted"               // an offset not committed at the end
	kindMemberExit     = "member_exit"               // a member's Run failed
	kindNotDrained     = "not_drained"               // the group did not catch up in time
	kindReshard        = "reshard_failed"            // the reshard job failed or hung
)

func (a anomaly) String() string {
	if a.id == "" {
		return a.kind + ": " + a.detail
	}
	return a.kind + " " + a.id + ": " + a.detail
}

// verdict is the judge's answer.
type verdict struct {
	anomalies []anomaly
	// tolerated counts the dishes dead-lettered after waiting longer
	// than PendingMaxAge for a restaurant that came later, which the model
	// allows (model_test.go).
	tolerated int
	want      map[string]wantDoc
}

// judge compares o with the model of evs under mp.
func judge(evs []genEvent, mp *router.Map, o observed) verdict {
	var v verdict
	report := func(kind, id, format string, args ...any) {
		v.anomalies = append(v.anomalies, anomaly{kind: kind, id: id, detail: fmt.Sprintf(format, args...)})
	}

	// Settle the log: the dishes the topic holds as unknown_restaurant
	// beyond the model's own dead letters, that the model says may have
	// waited too long, are taken out of the log.
	base := runModel(evs, nil, o.early)
	extraUnknown := map[string]int{}
	for _, d := range o.dlq {
		if d.reason == string(decode.ReasonUnknownRestaurant) {
			extraUnknown[d.value]++
		}
	}
	for i, r := range base.dead {
		if r == decode.ReasonUnknownRestaurant {
			extraUnknown[string(evs[i].value)]--
		}
	}
	skip := map[int]bool{}
	for _, i := range testenv.SortedKeys(base.mayBeDead) {
		if extraUnknown[string(evs[i].value)] > 0 {
			extraUnknown[string(evs[i].value)]--
			skip[i] = true
		}
	}
	// A dish both dead-lettered and written (the index holds it at that
	// event's version, under that restaurant) was decided twice, two ways:
	// the write stands, and the dead letter is the anomaly.
	var both []int
	for _, i := range testenv.SortedKeys(skip) {
		ev := evs[i]
		if g, ok := o.docs[schema.DishID(ev.id)]; ok && versionOf(g.source) == float64(ev.version) && g.source[schema.FieldRestaurantID] == ev.rid {
			delete(skip, i)
			both = append(both, i)
		}
	}
	m := base
	if len(skip) > 0 {
		m = runModel(evs, skip, o.early)
	}
	v.tolerated = len(skip)
	for _, i := range both {
		report(kindDeadAndWritten, schema.DishID(evs[i].id), "event #%d (version %d) dead-lettered as %s after its wait, and written too: the index holds it at that version",
			i, evs[i].version, decode.ReasonUnknownRestaurant)
	}

	// Dead letters: each the model's (or a tolerated one) exactly once.
	want := map[string]int{}
	reasons := map[string]decode.Reason{}
	for i, r := range m.dead {
		want[string(evs[i].value)]++
		reasons[string(evs[i].value)] = r
	}
	for i := range skip {
		want[string(evs[i].value)]++
		reasons[string(evs[i].value)] = decode.ReasonUnknownRestaurant
	}
	for _, i := range both {
		want[string(evs[i].value)]++
		reasons[string(evs[i].value)] = decode.ReasonUnknownRestaurant
	}
	seen := map[string]int{}
	srcs := map[string][]string{}
	for _, d := range o.dlq {
		srcs[d.value] = append(srcs[d.value], d.src)
	}
	for _, d := range o.dlq {
		seen[d.value]++
		switch {
		case want[d.value] > 0:
			want[d.value]--
			if r := reasons[d.value]; d.reason != string(r) {
				report(kindReason, shortValue(d.value), "dead-lettered from %s with reason %s (%s), want %s", d.src, d.reason, d.detail, r)
			}
		case seen[d.value] > 1:
			report(kindDupDead, shortValue(d.value), "dead-lettered again (reason %s); read from %s; the log holds it %d times", d.reason, strings.Join(srcs[d.value], ", "), seen[d.value]-1)
		default:
			report(kindUnexpDead, shortValue(d.value), "dead-lettered from %s with reason %s (%s); the model writes it", d.src, d.reason, d.detail)
		}
	}
	for _, val := range testenv.SortedKeys(want) {
		if want[val] > 0 {
			report(kindNoDead, shortValue(val), "not dead-lettered (%d times), want reason %s", want[val], reasons[val])
		}
	}

	// The index: each document once, on its geoshard, at its newest
	// version.
	v.want = m.expected(mp)
	for _, id := range o.twice {
		report(kindTwice, id, "stored on two shards")
	}
	for _, id := range testenv.SortedKeys(v.want) {
		w := v.want[id]
		g, ok := o.docs[id]
		switch {
		case !ok:
			report(kindMissing, id, "missing; want version %v on shard %d (%s), geo_cell %v", w.source[schema.FieldVersion], w.shard, mp.Shard(w.shard).Name, w.source[schema.FieldGeoCell])
		case g.shard != w.shard || g.routing != w.routing:
			report(kindWrongShard, id, "on shard %d with routing %q (version %v, geo_cell %v, restaurant %v); want shard %d with routing %q (version %v, geo_cell %v, restaurant %v)",
				g.shard, g.routing, g.source[schema.FieldVersion], g.source[schema.FieldGeoCell], g.source[schema.FieldRestaurantID],
				w.shard, w.routing, w.source[schema.FieldVersion], w.source[schema.FieldGeoCell], w.source[schema.FieldRestaurantID])
		case versionOf(g.source) < versionOf(w.source):
			report(kindStale, id, "at version %v, want %v", g.source[schema.FieldVersion], w.source[schema.FieldVersion])
		case !reflect.DeepEqual(g.source, w.source):
			report(kindSource, id, "source = %v, want %v", g.source, w.source)
		}
	}
	for _, id := range testenv.SortedKeys(o.docs) {
		if _, ok := v.want[id]; !ok {
			g := o.docs[id]
			report(kindExtra, id, "should not be there: on shard %d (routing %q) at version %v, geo_cell %v", g.shard, g.routing, g.source[schema.FieldVersion], g.source[schema.FieldGeoCell])
		}
	}
	for _, id := range testenv.SortedKeys(o.docs) {
		g := o.docs[id]
		rid, _ := g.source[schema.FieldRestaurantID].(string)
		if rid == "" {
			continue
		}
		r, ok := o.docs[schema.RestaurantID(rid)]
		switch {
		case !ok:
			report(kindApart, id, "on shard %d; its restaurant %s is not in the index", g.shard, rid)
		case r.shard != g.shard:
			report(kindApart, id, "on shard %d, its restaurant %s on shard %d", g.shard, rid, r.shard)
		}
	}
	wantCounts := make([]int64, mp.NumShards())
	for _, d := range v.want {
		wantCounts[d.shard]++
	}
	if o.counts != nil && !slices.Equal(o.counts, wantCounts) {
		report(kindCounts, "", "documents per shard = %v, want %v", o.counts, wantCounts)
	}
	if !o.committed {
		report(kindUncommitted, "", "%s", o.why)
	}
	return v
}

func versionOf(src map[string]any) float64 {
	f, _ := src[schema.FieldVersion].(float64)
	return f
}

func shortValue(v string) string {
	if len(v) > 160 {
		return v[:160] + "…"
	}
	return v
}

// observe reads what the world left behind in index, built with mp.
func (w *world) observe(index string, mp *router.Map) observed {
	w.t.Helper()
	o := observed{docs: map[string]storedDoc{}}
	if err := w.admin.Refresh(context.Background(), index); err != nil {
		w.t.Fatal(err)
	}
	for i := range mp.NumShards() {
		testenv.ScanDocs(w.t, w.admin, index, bulk.SearchParams{Preference: testenv.ShardPreference(i)}, 2000, func(h bulk.Hit) {
			var src map[string]any
			if err := json.Unmarshal(h.Source, &src); err != nil {
				w.t.Fatalf("%s: %v", h.ID, err)
			}
			if prev, dup := o.docs[h.ID]; dup {
				o.twice = append(o.twice, fmt.Sprintf("%s: shard %d (routing %q, version %v) and shard %d (routing %q, version %v)",
					h.ID, prev.shard, prev.routing, prev.source[schema.FieldVersion], i, h.Routing, src[schema.FieldVersion]))
			}
			o.docs[h.ID] = storedDoc{shard: i, routing: h.Routing, source: src}
		})
	}
	o.counts = testenv.ShardCounts(w.t, w.admin, index, mp.NumShards())
	for _, m := range testenv.ReadTopic(w.t, w.kafka, dlqTopic) {
		d := deadLetter{value: string(m.Value)}
		var topic, part, off string
		for _, h := range m.Headers {
			switch h.Key {
			case pipeline.HeaderReason:
				d.reason = string(h.Value)
			case pipeline.HeaderError:
				d.detail = string(h.Value)
			case pipeline.HeaderSourceTopic:
				topic = string(h.Value)
			case pipeline.HeaderSourcePartition:
				part = string(h.Value)
			case pipeline.HeaderSourceOffset:
				off = string(h.Value)
			}
		}
		d.src = topic + "/" + part + "@" + off
		o.dlq = append(o.dlq, d)
	}
	o.committed, o.why = w.caughtUp(context.Background())
	o.early = w.early()
	return o
}

// history describes the log's events about a document (a restaurant:… or
// dish:… _id) and, for a dish, about every restaurant it had: their
// positions, versions, and for a restaurant upsert its shard under mp.
func history(evs []genEvent, docID string, mp *router.Map) []string {
	rel, id, err := schema.ParseID(docID)
	if err != nil {
		return nil
	}
	rids := map[string]bool{}
	if rel == schema.RelationRestaurant {
		rids[id] = true
	}
	for _, ev := range evs {
		if rel == schema.RelationDish && ev.dish && ev.id == id {
			rids[ev.rid] = true
		}
	}
	var out []string
	for i, ev := range evs {
		switch {
		case ev.poison != "":
		case ev.dish && rel == schema.RelationDish && ev.id == id:
			line := fmt.Sprintf("#%d dish %s %s v%d of restaurant %s", i, ev.id, ev.op, ev.version, ev.rid)
			if ev.former != "" {
				line += " (from " + ev.former + ")"
			}
			out = append(out, line)
		case !ev.dish && rids[ev.id]:
			line := fmt.Sprintf("#%d restaurant %s %s v%d", i, ev.id, ev.op, ev.version)
			if ev.op == decode.OpUpsert {
				cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(ev.lat, ev.lon)).Parent(mp.Level())
				sh := mp.LocateCell(cell)
				line += fmt.Sprintf(" at shard %d (%s)", sh, mp.Shard(sh).Name)
			}
			out = append(out, line)
		}
	}
	return out
}

// explain is a verdict's anomalies with the history of the first few
// documents, for a failure's report.
func explain(v verdict, evs []genEvent, mp *router.Map) string {
	var b strings.Builder
	shown := map[string]bool{}
	for i, a := range v.anomalies {
		if i == 30 {
			fmt.Fprintf(&b, "\t… %d anomalies in all\n", len(v.anomalies))
			break
		}
		fmt.Fprintf(&b, "\t%s\n", a)
		if strings.Contains(a.id, ":") && !strings.HasPrefix(a.id, "{") && !shown[a.id] && len(shown) < 5 {
			shown[a.id] = true
			for _, h := range history(evs, a.id, mp) {
				fmt.Fprintf(&b, "\t\t%s\n", h)
			}
		}
	}
	return b.String()
}
