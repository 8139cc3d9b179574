package e2e

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/schema"
)

// TestReplayAfterDeleteAcrossDualWrites delivers, once dual writes have
// begun, a replay of a dish upsert whose dish was deleted before they
// began — the event schema allows a replay up to 20 messages after the
// original, and after the document's delete. The source refuses it (its
// delete tombstone is newer); the target must end without the dish too:
// during dual writes ingest writes the source first and the target only
// if the source did not refuse the change.
func TestReplayAfterDeleteAcrossDualWrites(t *testing.T) {
	realenv.Parallel(t)
	s := startScenario(t, 15, 200, 700)
	e, in, f := s.e, s.in, s.f
	ctx := context.Background()

	// The last upsert of a live dish of a live restaurant, and its delete.
	before := buildModel(t, f.log())
	var upsert datagen.Message
	var ev datagen.Event
	for _, m := range f.log() {
		var x datagen.Event
		if datagen.IsPoison(m.Kind) || json.Unmarshal(m.Value, &x) != nil || x.Type != datagen.TypeDish || x.Op != datagen.OpUpsert {
			continue
		}
		d, r := before.Dishes[x.ID], before.Restaurants[x.RestaurantID]
		if d != nil && d.Live && d.Version == x.Version && r != nil && r.Live {
			upsert, ev = m, x
		}
	}
	if ev.ID == "" {
		t.Fatal("no live dish in the stream")
	}
	del, _ := json.Marshal(datagen.Event{Type: datagen.TypeDish, Op: datagen.OpDelete, ID: ev.ID, RestaurantID: ev.RestaurantID, Version: ev.Version + 1})
	f.inject(datagen.Message{Topic: eventTopic, Key: upsert.Key, Value: del, Kind: datagen.KindDishDelete})
	e.waitDrained(t, in, 20*time.Second)

	m := e.migrator(nil, nil)
	mig, err := m.Create(ctx, migrate.CreateConfig{Map: e.m24, Target: targetIdx})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.DualWrites(ctx, migrate.AckConfig{Timeout: 20 * time.Second}); err != nil {
		t.Fatal(err)
	}
	e.waitApplied(t, in, mig.ID, schema.PhaseDualWrites)
	replay := upsert
	replay.Kind = datagen.KindReplay
	f.inject(replay)
	e.waitDrained(t, in, 20*time.Second)
	t.Logf("dish %s v%d deleted (v%d) before dual writes; its upsert v%d replayed after", ev.ID, ev.Version, ev.Version+1, ev.Version)

	if _, err := m.Backfill(ctx, migrate.BackfillConfig{}); err != nil {
		t.Fatal(err)
	}
	final := buildModel(t, f.log())
	want := final.expected(e.m24)
	if _, ok := want[schema.DishID(ev.ID)]; ok {
		t.Fatalf("the model keeps %s: the test is wrong", ev.ID)
	}
	r := final.Restaurants[ev.RestaurantID]
	routing := want[schema.RestaurantID(ev.RestaurantID)].routing
	if _, v, found, err := e.admin.Get(ctx, targetIdx, schema.DishID(ev.ID), routing); err != nil {
		t.Fatal(err)
	} else if found {
		t.Errorf("%s, deleted at version %d before dual writes, is in the target at version %d (restaurant %s v%d): the replay resurrected it",
			schema.DishID(ev.ID), ev.Version+1, v, ev.RestaurantID, r.Version)
	}
	if ver, err := m.Verify(ctx, migrate.VerifyConfig{IDs: true, Attempts: 2, Pause: 50 * time.Millisecond}); err != nil {
		logVerification(t, ver)
		t.Errorf("Verify: %v", err)
	}
	e.checkIndex(t, targetIdx, e.m24, want)
	e.checkIndex(t, sourceIdx, e.m18, final.expected(e.m18))
}
