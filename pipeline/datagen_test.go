package pipeline

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
)

// poisonReasons maps the generator's poison kinds to the dead-letter
// reason the pipeline must give them.
var poisonReasons = map[string]decode.Reason{
	datagen.KindPoisonJSON:           decode.ReasonInvalidJSON,
	datagen.KindPoisonType:           decode.ReasonUnknownType,
	datagen.KindPoisonOp:             decode.ReasonUnknownOp,
	datagen.KindPoisonMissingID:      decode.ReasonMissingID,
	datagen.KindPoisonMissingVersion: decode.ReasonMissingVersion,
	datagen.KindPoisonLocation:       decode.ReasonBadLocation,
	datagen.KindPoisonOversized:      decode.ReasonOversized,
}

// fromDatagen turns generated messages into events the model reads.
func fromDatagen(t *testing.T, msgs []datagen.Message) []genEvent {
	t.Helper()
	evs := make([]genEvent, len(msgs))
	for i, m := range msgs {
		ev := genEvent{key: m.Key, value: m.Value}
		if datagen.IsPoison(m.Kind) {
			ev.poison = poisonReasons[m.Kind]
			if ev.poison == "" {
				t.Fatalf("message %d: poison kind %s has no reason", i, m.Kind)
			}
			_, bad := decode.Decode(m.Key, m.Value, DefaultMaxEventBytes)
			if bad == nil || bad.Reason != ev.poison {
				t.Fatalf("message %d (%s): Decode = %v, want reason %s", i, m.Kind, bad, ev.poison)
			}
			evs[i] = ev
			continue
		}
		c, bad := decode.Decode(m.Key, m.Value, DefaultMaxEventBytes)
		if bad != nil {
			t.Fatalf("message %d (%s, %.100s): Decode = %v, want a valid event", i, m.Kind, m.Value, bad)
		}
		ev.dish, ev.typ, ev.op, ev.id, ev.rid, ev.version = c.Type == decode.TypeDish, c.Type, c.Op, c.ID, c.RestaurantID, c.Version
		ev.lat, ev.lon = c.Lat, c.Lon
		if c.Op == decode.OpUpsert {
			if err := json.Unmarshal(c.Doc, &ev.doc); err != nil {
				t.Fatal(err)
			}
		}
		evs[i] = ev
	}
	return evs
}

// TestEndToEndDatagen ingests the project's realistic event stream
// (updates, moves, deletes and re-creations, replays, overtaken versions,
// early and orphan dishes, poison) and checks it against the model.
func TestEndToEndDatagen(t *testing.T) {
	realenv.Parallel(t)
	sc := datagen.DefaultStreamConfig()
	sc.Restaurants = 400
	sc.DeleteRate, sc.MoveRate, sc.ReplayRate, sc.OutOfOrderRate, sc.EarlyDishRate, sc.OrphanRate = 0.05, 0.05, 0.03, 0.03, 0.05, 0.02
	sc.PoisonRate = 0.002
	sc.RestaurantTopic, sc.DishTopic = "menu-events", "menu-events"
	// The broker refuses a record over 1 MiB, which the oversized poison
	// message is; the pipeline's own oversized check is tested elsewhere
	// with a smaller bound.
	kept := testenv.BrokerStream(t, sc)
	evs := fromDatagen(t, kept)
	t.Logf("%d messages: %s", len(evs), summarize(evs))
	e := newEnv(t, envOptions{partitions: 4})
	where := e.produce(context.Background(), evs)
	cfg := e.config()
	cfg.MaxEventBytes = DefaultMaxEventBytes
	cfg.PendingMaxAge = waitForever // the early dishes wait however long their restaurant takes
	r := e.start(cfg)
	e.waitCommitted(t, r, 40*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	e.expireOrphans(t, evs, where)
	checkFinal(t, e, evs, where)
}
