package chaos

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/eventmodel"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/pipeline/placement"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// The judge must be able to fail. These tests hand it worlds that are
// wrong in one known way each — built from the model itself, or left by a
// real schedule and then broken — and check that it names the fault.

// perfect is the world the model of evs predicts: every document where
// the model puts it, every dead letter once, every offset committed.
func perfect(evs []genEvent, mp *router.Map) observed {
	m := runModel(evs, nil, nil)
	o := observed{docs: map[string]storedDoc{}, counts: make([]int64, mp.NumShards()), committed: true}
	for id, d := range m.expected(mp) {
		o.docs[id] = storedDoc{shard: d.shard, routing: d.routing, source: eventmodel.RoundTrip(d.source)}
		o.counts[d.shard]++
	}
	for _, i := range testenv.SortedKeys(m.dead) {
		o.dlq = append(o.dlq, deadLetter{reason: string(m.dead[i]), value: string(evs[i].value), src: fmt.Sprintf("#%d", i)})
	}
	return o
}

// kinds lists the kinds of a verdict's anomalies, each once.
func kinds(v verdict) []string {
	var out []string
	for _, a := range v.anomalies {
		if !slices.Contains(out, a.kind) {
			out = append(out, a.kind)
		}
	}
	return out
}

func TestJudgeCatchesABrokenWorld(t *testing.T) {
	const seed = 7
	t.Logf("seed %d", seed)
	mp := testenv.LoadMap(t, testenv.MapUS18)
	evs := generate(t, defaultGen(seed, 400))
	if v := judge(evs, mp, perfect(evs, mp)); len(v.anomalies) > 0 {
		t.Fatalf("the model's own world: %v", v.anomalies)
	}
	// aDish is a dish the model keeps, and its restaurant.
	want := runModel(evs, nil, nil).expected(mp)
	var aDish, itsRestaurant string
	for _, id := range testenv.SortedKeys(want) {
		if rid, _ := want[id].source[schema.FieldRestaurantID].(string); rid != "" {
			aDish, itsRestaurant = id, schema.RestaurantID(rid)
			break
		}
	}
	// aValid is a valid event the model does not dead-letter.
	var aValid string
	for _, ev := range evs {
		if ev.poison == "" && !ev.dish {
			aValid = string(ev.value)
			break
		}
	}
	// aWaited is a dish that waited for its restaurant and stands in the
	// index at that event's version: dead-lettered too, it was decided
	// twice.
	var aWaited string
	for _, i := range testenv.SortedKeys(runModel(evs, nil, nil).mayBeDead) {
		ev := evs[i]
		if d, ok := want[schema.DishID(ev.id)]; ok && versionOf(d.source) == float64(ev.version) {
			aWaited = string(ev.value)
			break
		}
	}
	if aWaited == "" {
		t.Fatalf("seed %d: no dish waited for its restaurant and stayed", seed)
	}
	other := func(shard int) int { return (shard + 1) % mp.NumShards() }
	for _, tc := range []struct {
		name   string
		break_ func(o *observed)
		want   []string
	}{
		{"a dish missing", func(o *observed) {
			o.counts[o.docs[aDish].shard]--
			delete(o.docs, aDish)
		}, []string{kindMissing, kindCounts}},
		{"a dish on the wrong shard", func(o *observed) {
			d := o.docs[aDish]
			o.counts[d.shard]--
			d.shard = other(d.shard)
			d.routing = mp.Shard(d.shard).Routing
			o.counts[d.shard]++
			o.docs[aDish] = d
		}, []string{kindWrongShard, kindApart, kindCounts}},
		{"a restaurant on the wrong shard with its routing", func(o *observed) {
			d := o.docs[itsRestaurant]
			d.routing = mp.Shard(other(d.shard)).Routing
			o.docs[itsRestaurant] = d
		}, []string{kindWrongShard}},
		{"a dish at an old version", func(o *observed) {
			d := o.docs[aDish]
			src := eventmodel.RoundTrip(d.source)
			src[schema.FieldVersion] = versionOf(d.source) - 1
			d.source = src
			o.docs[aDish] = d
		}, []string{kindStale}},
		{"a dish's body changed", func(o *observed) {
			d := o.docs[aDish]
			src := eventmodel.RoundTrip(d.source)
			src["name"] = "something else"
			d.source = src
			o.docs[aDish] = d
		}, []string{kindSource}},
		{"a document too many", func(o *observed) {
			d := o.docs[aDish]
			o.docs["dish:ghost"] = d
			o.counts[d.shard]++
		}, []string{kindExtra, kindCounts}},
		{"a document on two shards", func(o *observed) {
			o.twice = append(o.twice, aDish+": shard 1 and shard 2")
		}, []string{kindTwice}},
		{"the per-shard counts off", func(o *observed) {
			o.counts[0]++
		}, []string{kindCounts}},
		{"a dead letter written twice", func(o *observed) {
			o.dlq = append(o.dlq, o.dlq[0])
		}, []string{kindDupDead}},
		{"a dead letter missing", func(o *observed) {
			o.dlq = o.dlq[1:]
		}, []string{kindNoDead}},
		{"a valid event dead-lettered", func(o *observed) {
			o.dlq = append(o.dlq, deadLetter{reason: string(decode.ReasonRejected), value: aValid})
		}, []string{kindUnexpDead}},
		{"a waiting dish dead-lettered and written", func(o *observed) {
			o.dlq = append(o.dlq, deadLetter{reason: string(decode.ReasonUnknownRestaurant), value: aWaited})
		}, []string{kindDeadAndWritten}},
		{"a dead letter with another reason", func(o *observed) {
			o.dlq[0].reason = "some_other_reason"
		}, []string{kindReason}},
		{"an offset not committed", func(o *observed) {
			o.committed, o.why = false, "menu-events/0 committed 3, high watermark 9"
		}, []string{kindUncommitted}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := perfect(evs, mp)
			tc.break_(&o)
			v := judge(evs, mp, o)
			if got := kinds(v); !slices.Equal(got, tc.want) {
				t.Errorf("judge found %v, want %v: %v", got, tc.want, v.anomalies)
			}
		})
	}
}

// TestJudgeCatchesABrokenModelOrIndex runs a schedule without faults,
// whose world must equal the model, and then judges it against a model
// that lost one event, and an index that a stray writer changed: a
// document deleted, one written under the wrong routing.
func TestJudgeCatchesABrokenModelOrIndex(t *testing.T) {
	s := &schedule{seed: 11, topo: topology{topics: 1, partitions: 3, producer: placement.PartitionerMurmur2, told: placement.PartitionerAuto, order: "log"},
		gen: defaultGen(11, 200), parts: 2, killable: map[int]bool{}}
	s.steps = []step{{kind: stepStart, member: 1}, {kind: stepProduce, part: 0}, {kind: stepProduce, part: 1}}
	t.Logf("schedule:\n%s", s)
	w := newWorld(t, s)
	if extra := w.play(); len(extra) > 0 {
		t.Fatal(extra)
	}
	o := w.observe(testIndex, w.m)
	if v := judge(w.events, w.m, o); len(v.anomalies) > 0 {
		t.Fatalf("a schedule without faults:\n%s", explain(v, w.events, w.m))
	}

	// The model without the last upsert of a dish that the index holds.
	last := -1
	for i, ev := range w.events {
		if ev.dish && ev.op == decode.OpUpsert && ev.poison == "" {
			if _, ok := o.docs[schema.DishID(ev.id)]; ok {
				last = i
			}
		}
	}
	shorter := slices.Delete(slices.Clone(w.events), last, last+1)
	if v := judge(shorter, w.m, o); len(v.anomalies) == 0 {
		t.Errorf("a model without event #%d (%s) finds nothing wrong", last, w.events[last].value)
	} else {
		t.Logf("a model without event #%d: %v", last, kinds(v))
	}

	// The index changed behind the pipeline's back.
	var dish, rest string
	for _, id := range testenv.SortedKeys(o.docs) {
		switch {
		case dish == "" && strings.HasPrefix(id, "dish:"):
			dish = id
		case rest == "" && strings.HasPrefix(id, "restaurant:"):
			rest = id
		}
	}
	r := o.docs[rest]
	elsewhere := w.m.Shard((r.shard + 1) % w.m.NumShards()).Routing
	w.raw(t, http.MethodDelete, fmt.Sprintf("/%s/_doc/%s?routing=%s", testIndex, dish, o.docs[dish].routing), "")
	w.raw(t, http.MethodPut, fmt.Sprintf("/%s/_doc/%s?routing=%s&version=%d&version_type=external", testIndex, rest, elsewhere, int64(versionOf(r.source))+1),
		`{"relation":"restaurant","doc_id":"`+rest+`"}`)
	v := judge(w.events, w.m, w.observe(testIndex, w.m))
	got := kinds(v)
	for _, k := range []string{kindMissing, kindTwice, kindWrongShard} {
		if !slices.Contains(got, k) {
			t.Errorf("after deleting %s and writing %s under routing %s, the judge found %v, want %s among them", dish, rest, elsewhere, got, k)
		}
	}
}

// raw sends one request to the emulator, failing on an error status.
func (w *world) raw(t *testing.T, method, path, body string) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), method, w.url+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		t.Fatalf("%s %s: %s", method, path, resp.Status)
	}
}
