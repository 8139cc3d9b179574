package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/dbztest"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/pipeline/placement"
)

// TestDebeziumEndToEnd runs a generated stream, written as a Postgres
// Debezium connector writes it, through the pipeline with --format
// debezium: restaurants keyed {"id":N} with numeric ids, dishes keyed by
// their own id (so under the dish keying debezium defaults to, re-keyed
// through the repartition topic), values bare or in the schema envelope
// (lat/lon then numeric under decimal.handling.mode=precise), a tombstone
// after every delete, dish deletes and moves with REPLICA IDENTITY FULL
// before images, restaurant deletes with the default identity's key-only
// before image, and a handful of bad events, read by two instances. Every document must be in
// the index on its restaurant's routing at its version (checkFinal), every
// bad event dead-lettered with its reason, and no tombstone dead-lettered.
//
// As in TestDishesKeyedByDish, the stream has no restaurant deletes,
// replays or late dish versions while dishes flow: the restaurant topic
// and the repartition topic are read side by side, so a dish may be
// decided after a delete of its restaurant that followed it in the
// stream. Restaurants are deleted in a second round, once the first is
// caught up.
func TestDebeziumEndToEnd(t *testing.T) {
	realenv.Parallel(t)
	const seed = 23
	e := newEnv(t, envOptions{partitions: 3, twoTopics: true, dishKeyDish: true})
	g := defaultGen(seed, 1500)
	g.poison = false // native-format poison; the Debezium ones are added below
	g.wRestDelete, g.wReplay, g.wDishOutOfOrder = 0, 0, 0
	s := &debeziumStream{rng: rand.New(rand.NewPCG(seed, 5))}
	evs := generate(t, g)
	s.addAll(evs[:len(evs)/2])
	s.addBad()
	s.addAll(evs[len(evs)/2:])

	cfg := e.config()
	cfg.DishKey = "" // debezium's default: dish
	cfg.Format = decode.FormatDebezium
	m, err := decode.ParseMapping(fmt.Appendf(nil, `{
	  "restaurants": {"topic": %q, "table": "restaurants", "schema": "public", "id": "id", "lat": "latitude", "lon": "longitude",
	    "exclude": ["id", "latitude", "longitude"]},
	  "dishes": {"topic": %q, "table": "dishes", "id": "id", "restaurant_id": "restaurant_id", "exclude": ["id"]}
	}`, e.restaurantTopic, e.dishTopic))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Mapping = m
	// The stream's orphans (dishes whose restaurant never comes) are
	// dead-lettered once they have waited PendingMaxAge, which must also
	// outlast how far the restaurant topic, read beside the repartition
	// topic, can fall behind on a busy machine: 2s did not, under -race
	// beside a benchmark.
	cfg.PendingMaxAge = 15 * time.Second
	if realenv.Enabled() {
		cfg.PendingMaxAge = time.Minute
	}
	ctx := context.Background()
	where := e.produce(ctx, s.all)
	// Two instances: each restaurant's dishes must reach the instance
	// that reads the restaurant, through the placement learnt from the
	// restaurant topic's Debezium keys.
	a, b := e.startMember(cfg, "a"), e.startMember(cfg, "b")
	e.waitCaughtUp(t, a.r, 60*time.Second)

	// The second round: delete some of the live restaurants.
	first := len(s.all)
	model := runModel(s.model())
	var live []string
	for id, mr := range model.rests {
		if mr.live {
			live = append(live, id)
		}
	}
	slices.Sort(live)
	for _, id := range live[:min(8, len(live))] {
		s.add(genEvent{typ: decode.TypeRestaurant, op: decode.OpDelete, id: "r" + id, rid: "r" + id, version: model.rests[id].version + 1})
	}
	where = append(where, e.produce(ctx, s.all[first:])...)
	e.waitCaughtUp(t, a.r, 60*time.Second)
	events, repartitioned := map[EventKey]int64{}, int64(0)
	for _, m := range []*testMember{a, b} {
		st := m.r.p.Stats()
		for k, n := range st.Events {
			events[k] += n
		}
		repartitioned += st.Repartitioned
		if err := m.r.Stop(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
	}
	t.Logf("seed %d: %d events (%d tombstones): %s", seed, len(s.all), s.tombstones[0]+s.tombstones[1], summarize(s.model()))

	var modelWhere []produced
	for i, w := range where {
		if !s.tombstone[i] {
			modelWhere = append(modelWhere, w)
		}
	}
	checkFinal(t, e, s.model(), modelWhere)
	for typ, n := range map[string]int{decode.TypeRestaurant: s.tombstones[0], decode.TypeDish: s.tombstones[1]} {
		if got := events[EventKey{Type: typ, Op: decode.OpDelete, Result: resultNoop}]; got < int64(n) {
			t.Errorf("%s/delete/noop events = %d, want at least the %d tombstones", typ, got, n)
		}
	}
	// Each dish was forwarded to its restaurant's partition: the
	// placement read the restaurant topic's keys through the format.
	home := map[string]int{}
	for i, ev := range s.all {
		if !ev.dish && ev.poison == "" && !s.tombstone[i] {
			home[ev.id] = where[i].partition
		}
	}
	ridOf := newDecoder(cfg.withDefaults()).RestaurantID
	misplaced := 0
	for _, msg := range testenv.ReadTopic(t, e.kafka, e.repartition) {
		if rid, ok := ridOf(msg.Value); ok {
			if p, known := home[rid]; known && p != msg.Partition {
				misplaced++
			}
		}
	}
	if misplaced > 0 {
		t.Errorf("%d dish events forwarded to another partition than their restaurant's", misplaced)
	}
	if repartitioned < int64(countDish(s.model())) {
		t.Errorf("repartitioned %d events, want at least the %d dish events", repartitioned, countDish(s.model()))
	}
}

// debeziumStream is a generated stream written as Debezium events: all
// is what is produced, tombstone[i] marks the tombstones among them, and
// each other event keeps its generated meaning with ids as the decoder
// reads them, for the model.
type debeziumStream struct {
	rng *rand.Rand
	// seen are the rows an event was made of so far: only a row's first
	// event can be an INSERT (op c).
	seen       map[string]bool
	all        []genEvent
	tombstone  []bool
	tombstones [2]int // restaurant, dish
}

// model is the stream without its tombstones.
func (s *debeziumStream) model() []genEvent {
	var out []genEvent
	for i, ev := range s.all {
		if !s.tombstone[i] {
			out = append(out, ev)
		}
	}
	return out
}

func (s *debeziumStream) addAll(evs []genEvent) {
	for _, ev := range evs {
		s.add(ev)
	}
}

// dbzID is a generated id as the source table holds it: restaurant
// "r00012" is the bigint 12, any other id (dishes, orphans' restaurants)
// text.
func dbzID(id string) (value any, text string) {
	if n, err := strconv.Atoi(id[1:]); err == nil && id[0] == 'r' {
		return n, strconv.Itoa(n)
	}
	return id, id
}

// add writes a generated event as a Debezium change event, followed by a
// tombstone if it is a delete.
func (s *debeziumStream) add(ev genEvent) {
	source := func(table string, lsn int64) map[string]any {
		return map[string]any{"version": "2.7.3.Final", "connector": "postgresql", "name": "menu", "ts_ms": 1700000000000 + lsn,
			"snapshot": "false", "db": "menu", "schema": "public", "table": table, "txId": 700 + lsn, "lsn": lsn, "xmin": nil}
	}
	marshal := func(v any) []byte {
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		return b
	}
	op := "d"
	row := ev.typ + "/" + ev.id
	if ev.op == decode.OpUpsert {
		op = []string{"u", "r"}[s.rng.IntN(2)]
		if !s.seen[row] && s.rng.IntN(2) == 0 {
			op = "c"
		}
	}
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[row] = true
	envelope := map[string]any{"op": op, "ts_ms": 1700000000000, "transaction": nil}
	schemaOn := s.rng.IntN(3) == 0
	var id any
	var before, after map[string]any
	if ev.dish {
		ridVal, ridText := dbzID(ev.rid)
		id = ev.id
		row := map[string]any{"id": ev.id, "restaurant_id": ridVal}
		if ev.op == decode.OpUpsert {
			for k, v := range ev.doc {
				if k != "restaurant_id" {
					row[k] = v
				}
			}
			after = row
			if ev.former != "" {
				fv, ft := dbzID(ev.former)
				before = map[string]any{"id": ev.id, "restaurant_id": fv, "name": "before"}
				envelope["op"], ev.former = "u", ft
			}
		} else {
			before = row // REPLICA IDENTITY FULL
		}
		envelope["source"] = source("dishes", ev.version)
		ev.rid = ridText
	} else {
		idVal, idText := dbzID(ev.id)
		id = idVal
		row := map[string]any{"id": idVal}
		if ev.op == decode.OpUpsert {
			for k, v := range ev.doc {
				row[k] = v
			}
			row["latitude"], row["longitude"] = ev.lat, ev.lon
			if schemaOn {
				// numeric(9,6) under decimal.handling.mode=precise.
				lat, lon := math.Round(ev.lat*1e6), math.Round(ev.lon*1e6)
				row["latitude"], row["longitude"] = dbztest.Unscaled(int64(lat)), dbztest.Unscaled(int64(lon))
				ev.lat, _ = strconv.ParseFloat(strconv.FormatFloat(lat/1e6, 'f', 6, 64), 64)
				ev.lon, _ = strconv.ParseFloat(strconv.FormatFloat(lon/1e6, 'f', 6, 64), 64)
			}
			after = row
		} else {
			before = map[string]any{"id": idVal} // the default identity: the key only
		}
		envelope["source"] = source("restaurants", ev.version)
		ev.id, ev.rid = idText, idText
	}
	envelope["before"], envelope["after"] = before, after
	ev.key = marshal(map[string]any{"id": id})
	ev.value = marshal(envelope)
	if schemaOn {
		ev.value = []byte(dbztest.WithSchema(dbztest.RestaurantSchema(""), string(ev.value)))
	}
	s.all, s.tombstone = append(s.all, ev), append(s.tombstone, false)
	if ev.op == decode.OpDelete {
		s.all, s.tombstone = append(s.all, genEvent{dish: ev.dish, key: ev.key}), append(s.tombstone, true)
		if ev.dish {
			s.tombstones[1]++
		} else {
			s.tombstones[0]++
		}
	}
}

// addBad adds one bad event of each kind the decoder refuses.
func (s *debeziumStream) addBad() {
	for _, ev := range []genEvent{
		{poison: decode.ReasonUnknownOp, value: []byte(`{"before":null,"after":null,"source":{"table":"restaurants","lsn":5},"op":"t"}`)},
		{poison: decode.ReasonBadLocation, key: []byte(`{"id":99001}`), value: []byte(dbztest.Value("restaurants", "c", "", `{"id":99001,"latitude":95,"longitude":0}`, 5))},
		{poison: decode.ReasonKeyMismatch, key: []byte(`{"id":99002}`), value: []byte(dbztest.Value("restaurants", "c", "", `{"id":99003,"latitude":1,"longitude":1}`, 5))},
		{poison: decode.ReasonMissingDoc, key: []byte(`{"id":99004}`), value: []byte(dbztest.Value("restaurants", "u", "", "", 5))},
		{dish: true, poison: decode.ReasonMissingRestaurantID, key: []byte(`{"id":"d-x1"}`), value: []byte(dbztest.Value("dishes", "d", `{"id":"d-x1","restaurant_id":0}`, "", 5))},
		{dish: true, poison: decode.ReasonInvalidJSON, key: []byte(`{"id":"d-x2"}`), value: []byte(`{"before":null,`)},
		{dish: true, poison: decode.ReasonUnknownType, key: []byte(`{"id":"d-x3"}`), value: []byte(dbztest.Value("orders", "c", "", `{"id":"d-x3","restaurant_id":1}`, 5))},
	} {
		s.all, s.tombstone = append(s.all, ev), append(s.tombstone, false)
	}
}

// TestDebeziumCapturedEndToEnd produces the events a real Debezium
// Postgres connector wrote (decode/testdata/debezium, each converter
// shape), keys and values byte for byte, the dish topic keyed by dish id,
// and runs them through the pipeline: restaurant 1 indexed where it moved to, dish
// 11 under the restaurant it moved to and nowhere else, dish 10 deleted,
// nothing dead-lettered (checkFinal).
func TestDebeziumCapturedEndToEnd(t *testing.T) {
	realenv.Parallel(t)
	for _, shape := range dbztest.Shapes {
		t.Run(shape, func(t *testing.T) {
			realenv.Parallel(t)
			e := newEnv(t, envOptions{partitions: 3, twoTopics: true, dishKeyDish: true})
			var all, model []genEvent
			var tombstone []bool
			for _, ce := range dbztest.CapturedEvents {
				key, value, lsn := dbztest.ReadCaptured(t, "../decode/testdata/debezium", shape, ce.File)
				ev := genEvent{dish: ce.Dish, key: key, value: value}
				if !ce.Skip {
					w := ce.Want
					ev.typ, ev.op, ev.id, ev.rid, ev.version, ev.lat, ev.lon = w.Type, w.Op, w.ID, w.RestaurantID, lsn, w.Lat, w.Lon
					if w.Doc != nil {
						if err := json.Unmarshal(w.Doc, &ev.doc); err != nil {
							t.Fatal(err)
						}
					}
					model = append(model, ev)
				}
				all, tombstone = append(all, ev), append(tombstone, ce.Skip)
			}
			cfg := e.config()
			cfg.Format = decode.FormatDebezium
			m, err := decode.ParseMapping([]byte(dbztest.CapturedMapping))
			if err != nil {
				t.Fatal(err)
			}
			cfg.Mapping = m
			// One restaurant's key may fit several partitioners, and then
			// its dishes would wait for more restaurants: name the one
			// the test's producer uses, Kafka Connect's.
			cfg.RestaurantPartitioner = placement.PartitionerMurmur2
			where := e.produce(context.Background(), all)
			r := e.start(cfg)
			e.waitCaughtUp(t, r, 30*time.Second)
			if err := r.Stop(t); err != nil {
				t.Fatalf("Run = %v", err)
			}
			var modelWhere []produced
			for i, w := range where {
				if !tombstone[i] {
					modelWhere = append(modelWhere, w)
				}
			}
			checkFinal(t, e, model, modelWhere)
		})
	}
}
