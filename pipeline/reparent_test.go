package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

// reparentRests are two restaurants far apart (San Francisco, New York),
// on two shards of the test map.
func reparentRests() []genEvent {
	return []genEvent{
		{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "zsf", rid: "zsf", version: 1, lat: 37.7749, lon: -122.4194, doc: map[string]any{"name": "sf"}},
		{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "zny", rid: "zny", version: 1, lat: 40.7128, lon: -74.0060, doc: map[string]any{"name": "ny"}},
	}
}

func dishAt(id, rid string, version int64, former string) genEvent {
	return genEvent{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: id, rid: rid, version: version, former: former,
		doc: map[string]any{"name": id + " v" + fmt.Sprint(version)}}
}

func dishGone(id, rid string, version int64) genEvent {
	return genEvent{dish: true, typ: decode.TypeDish, op: decode.OpDelete, id: id, rid: rid, version: version}
}

// TestDishChangesRestaurant: a dish written under one restaurant and then,
// at a newer version, under another on another shard is stored once,
// under the newer — in either order of the two writes, with or without
// the event naming the former restaurant, and when the older version is
// delivered again afterwards; and deleted under its new restaurant, its
// delete coming before or after its move.
func TestDishChangesRestaurant(t *testing.T) {
	realenv.Parallel(t)
	cases := []struct {
		name   string
		dishes []genEvent
	}{
		{"older first", []genEvent{dishAt("zd1", "zsf", 1, ""), dishAt("zd1", "zny", 2, "")}},
		{"newer first", []genEvent{dishAt("zd1", "zny", 2, ""), dishAt("zd1", "zsf", 1, "")}},
		{"former named", []genEvent{dishAt("zd1", "zsf", 1, ""), dishAt("zd1", "zny", 2, "zsf")}},
		{"there and back", []genEvent{dishAt("zd1", "zsf", 1, ""), dishAt("zd1", "zny", 2, ""), dishAt("zd1", "zsf", 3, "")}},
		{"older delivered again", []genEvent{dishAt("zd1", "zsf", 1, ""), dishAt("zd1", "zny", 2, ""), dishAt("zd1", "zsf", 1, "")}},
		{"moved, then deleted", []genEvent{dishAt("zd1", "zsf", 1, ""), dishAt("zd1", "zny", 2, ""), dishGone("zd1", "zny", 3)}},
		{"moved, deleted, older again", []genEvent{dishAt("zd1", "zsf", 1, ""), dishAt("zd1", "zny", 2, ""), dishGone("zd1", "zny", 3), dishAt("zd1", "zsf", 1, "")}},
		// Versions 0 and 1 are both first versions: no tombstone protects
		// either, the write looks for the other copy.
		{"first versions, older second", []genEvent{dishAt("zd1", "zny", 1, ""), dishAt("zd1", "zsf", 0, "")}},
		{"first versions, newer second", []genEvent{dishAt("zd1", "zsf", 0, ""), dishAt("zd1", "zny", 1, "")}},
		{"deleted under the new restaurant first", []genEvent{dishAt("zd1", "zsf", 1, ""), dishGone("zd1", "zny", 3), dishAt("zd1", "zny", 2, "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			realenv.Parallel(t)
			e := newEnv(t, envOptions{partitions: 4})
			r := e.start(e.config())
			e.produce(context.Background(), encodeAll(reparentRests()))
			e.waitCaughtUp(t, r, 40*time.Second)
			// One event at a time: each is written (and checked) before
			// the next, so the order is the case's, not the partitions'.
			var evs []genEvent
			for _, d := range encodeAll(tc.dishes) {
				e.produce(context.Background(), []genEvent{d})
				e.waitCaughtUp(t, r, 40*time.Second)
				for !r.p.ix.reparent.looksIdle() {
					time.Sleep(time.Millisecond) // the look of a first version runs behind its write
				}
				evs = append(evs, d)
				// Searches see it, as they do once a refresh interval
				// has passed.
				if err := e.admin.Refresh(context.Background(), testIndex); err != nil {
					t.Fatal(err)
				}
			}
			if err := r.Stop(t); err != nil {
				t.Fatalf("Run = %v", err)
			}
			m := runModel(append(reparentRests(), evs...))
			checkIndexDocs(t, e, testIndex, e.m, m.expectedDocs(e.m))
			rp := r.p.ix.reparent
			t.Logf("spread %d, looked %d, copies deleted %d", rp.checked.Load(), rp.looked.Load(), rp.removed.Load())
		})
	}
}

// TestDishChangesRestaurantAtOnce: the two versions of every dish, under
// two restaurants on two shards, produced together so that their writes
// and checks overlap, in both orders; every dish ends stored once.
func TestDishChangesRestaurantAtOnce(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 4})
	r := e.start(e.config())
	e.produce(context.Background(), encodeAll(reparentRests()))
	e.waitCaughtUp(t, r, 40*time.Second)
	var evs []genEvent
	for i := range 400 {
		id := fmt.Sprintf("zd%03d", i)
		a, b := dishAt(id, "zsf", 1, ""), dishAt(id, "zny", 2, "")
		if i%2 == 1 {
			a, b = b, a
		}
		evs = append(evs, a, b)
	}
	evs = encodeAll(evs)
	e.produce(context.Background(), evs)
	e.waitCaughtUp(t, r, 60*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	m := runModel(append(reparentRests(), evs...))
	got := checkIndexDocs(t, e, testIndex, e.m, m.expectedDocs(e.m))
	for i := range 400 {
		if d, ok := got[schema.DishID(fmt.Sprintf("zd%03d", i))]; ok && d.source["restaurant_id"] != "zny" {
			t.Errorf("zd%03d under %v, want zny", i, d.source["restaurant_id"])
		}
	}
	t.Logf("checks %d, copies deleted %d", r.p.ix.reparent.checked.Load(), r.p.ix.reparent.removed.Load())
}
