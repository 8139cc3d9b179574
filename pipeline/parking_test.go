package pipeline

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/pipeline/outbox"
	"github.com/geoshard/geoshard/pipeline/placement"
	"github.com/geoshard/geoshard/schema"
)

// A dish waiting for its restaurant does not hold its partition's
// commit: with dishes of two unknown restaurants waiting (and an hour to
// wait), every offset is committed, the dishes being parked. A new
// instance reads them back: the dishes of the restaurant that comes are
// written under its routing, those of the one that never comes are
// dead-lettered as unknown_restaurant once their wait, counted from when
// they were first parked, is over; and every record ends in a tombstone.
func TestParkedDishesDoNotHoldTheCommit(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 2})
	sf := [2]float64{37.77, -122.42}
	var evs []genEvent
	dish := func(id, rid string) genEvent {
		return genEvent{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: id, rid: rid, version: 1,
			doc: map[string]any{"name": "dish " + id, "price_cents": 900}}
	}
	rest := func(rid string, i int) genEvent {
		return genEvent{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: rid, rid: rid, version: 1,
			lat: sf[0] + float64(i)*0.001, lon: sf[1], doc: map[string]any{"name": "place " + rid}}
	}
	for d := range 3 {
		evs = append(evs, dish(fmt.Sprintf("late-%d", d), "r-late"), dish(fmt.Sprintf("never-%d", d), "r-never"))
	}
	// Events after the waiting dishes, on both partitions.
	for i := range 40 {
		rid := fmt.Sprintf("r%03d", i)
		evs = append(evs, rest(rid, i), dish("d"+rid, rid))
	}
	encodeAll(evs)
	e.produce(context.Background(), evs)

	cfg := e.config()
	cfg.PendingMaxAge = time.Hour
	r := e.start(cfg)
	deadline := time.Now().Add(realenv.Slack(30 * time.Second))
	for {
		ok, why := e.committedAll(context.Background())
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not every offset committed with dishes waiting: %s; stats %+v", why, r.p.Stats())
		}
		time.Sleep(20 * time.Millisecond)
	}
	st := r.p.Stats()
	if st.Pending != 6 || st.Parked != 6 {
		t.Errorf("every offset committed with %d dishes pending and %d parked, want 6 and 6", st.Pending, st.Parked)
	}
	if n := e.parkedLive(); n != 6 {
		t.Errorf("%d parking records live, want 6", n)
	}
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}

	// The restaurant comes while no instance runs; the next one reads
	// the parked dishes back and writes those of r-late. It waits
	// without a limit: the dishes' wait counts from when the first
	// instance parked them, so a short one could run out, on a busy
	// machine, before this instance reads r-late. The dishes of r-never
	// are dead-lettered afterwards (expireOrphans), once nothing that
	// comes later could save them.
	late := encodeAll([]genEvent{rest("r-late", 99)})
	e.produce(context.Background(), late)
	cfg = e.config()
	cfg.PendingMaxAge = waitForever
	r2 := e.start(cfg)
	e.waitCommitted(t, r2, 30*time.Second)
	deadline = time.Now().Add(realenv.Slack(30 * time.Second))
	for r2.p.Stats().Pending > 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	st = r2.p.Stats()
	if err := r2.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	if st.ReadBack != 6 {
		t.Errorf("%d parked dishes read back, want 6", st.ReadBack)
	}
	if st.Pending != 3 {
		t.Errorf("%d dishes pending once r-late is written, want the 3 of r-never", st.Pending)
	}
	e.expireOrphans(t, nil, nil)
	docs := e.scanIndex(t)
	lat, lon := late[0].lat, late[0].lon
	shard, err := e.m.Locate(lat, lon)
	if err != nil {
		t.Fatal(err)
	}
	routing := e.m.Shard(shard).Routing
	for d := range 3 {
		id := schema.DishID(fmt.Sprintf("late-%d", d))
		if doc, ok := docs[id]; !ok || doc.routing != routing {
			t.Errorf("%s stored %v under routing %q, want under %q", id, ok, doc.routing, routing)
		}
		if _, ok := docs[schema.DishID(fmt.Sprintf("never-%d", d))]; ok {
			t.Errorf("never-%d was written without its restaurant", d)
		}
	}
	unknown := 0
	for _, dl := range e.readDLQ(t) {
		if dl.reason == string(decode.ReasonUnknownRestaurant) {
			unknown++
		}
	}
	if unknown != 3 {
		t.Errorf("%d unknown_restaurant dead letters, want the 3 dishes of r-never", unknown)
	}
	if n := e.parkedLive(); n != 0 {
		t.Errorf("%d parking records live after every dish was decided, want 0", n)
	}
}

// A parking record carries the event back as it was fetched: its place,
// key, timestamp, origin headers and the time it was first parked.
func TestParkRecordRoundTrip(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123)
	ts := time.UnixMilli(1_699_999_999_000)
	for _, tc := range []struct {
		name string
		ev   *event
	}{
		{"keyed", &event{part: partKey{"dishes", 3}, offset: 812, key: []byte("r1"), value: []byte(`{"type":"dish"}`), ts: ts, parkedAt: at}},
		{"no key", &event{part: partKey{"dishes", 0}, offset: 0, value: []byte(`{}`), ts: ts, parkedAt: at}},
		{"repartitioned", &event{part: partKey{"g.dishes-by-restaurant", 1}, offset: 7, key: []byte("r2"), value: []byte(`{}`), ts: ts, parkedAt: at,
			origin: &placement.Origin{Topic: "dishes", Partition: 4, Offset: 99, Key: []byte("d9")}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := (&parkRecord{ev: tc.ev}).Message()
			if want := fmt.Sprintf("%s/%d/%d", tc.ev.part.topic, tc.ev.part.partition, tc.ev.offset); string(m.Key) != want || m.Partition != tc.ev.part.partition {
				t.Errorf("record key %q partition %d, want %q partition %d", m.Key, m.Partition, want, tc.ev.part.partition)
			}
			u, err := parseParked(m.Value, m.Headers)
			if err != nil {
				t.Fatalf("parseParked: %v", err)
			}
			got := u.msg
			if got.Topic != tc.ev.part.topic || got.Partition != tc.ev.part.partition || got.Offset != tc.ev.offset ||
				string(got.Key) != string(tc.ev.key) || string(got.Value) != string(tc.ev.value) || !got.Time.Equal(ts) || !u.parkedAt.Equal(at) {
				t.Errorf("read back %+v parked at %v, want the event's place, key, value, time and %v", got, u.parkedAt, at)
			}
			o := placement.OriginOf(kafka.Message{Headers: got.Headers})
			if (o == nil) != (tc.ev.origin == nil) || o != nil && (o.Topic != tc.ev.origin.Topic || o.Offset != tc.ev.origin.Offset || string(o.Key) != string(tc.ev.origin.Key)) {
				t.Errorf("origin read back %+v, want %+v", o, tc.ev.origin)
			}
			tomb := (&parkRecord{ev: tc.ev, tombstone: true}).Message()
			if tomb.Value != nil || string(tomb.Key) != string(m.Key) || tomb.Partition != m.Partition {
				t.Errorf("tombstone %+v, want the record's key and partition and no value", tomb)
			}
		})
	}
	if _, err := parseParked([]byte(`{}`), nil); err == nil {
		t.Error("a record without its source place parsed")
	}
}

// Parked dishes follow their partition to its new owner: with dishes of
// unknown restaurants parked in every partition by one instance, a second
// joins and takes some partitions, reading their parked dishes back as it
// gains them, and leaves again, when the first gains them back and reads
// them again; when the restaurants come, every dish is written under its
// restaurant's routing, and no record is left.
func TestParkedDishesFollowTheirPartition(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 4})
	var dishes, rests []genEvent
	for i := range 16 {
		rid := fmt.Sprintf("r-late-%02d", i)
		for d := range 2 {
			dishes = append(dishes, genEvent{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: fmt.Sprintf("%s-%d", rid, d), rid: rid, version: 1,
				doc: map[string]any{"name": "dish", "price_cents": 900}})
		}
		rests = append(rests, genEvent{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: rid, rid: rid, version: 1,
			lat: 40.71 + float64(i)*0.01, lon: -74.0, doc: map[string]any{"name": "place " + rid}})
	}
	encodeAll(dishes)
	encodeAll(rests)
	where := e.produce(context.Background(), dishes)
	parts := map[int]bool{}
	for _, w := range where {
		parts[w.partition] = true
	}
	if len(parts) < 2 {
		t.Fatalf("the dishes are in %d partitions, want several", len(parts))
	}
	cfg := e.config()
	cfg.PendingMaxAge = time.Hour
	a := e.start(cfg)
	deadline := time.Now().Add(realenv.Slack(30 * time.Second))
	for a.p.Stats().Parked < int64(len(dishes)) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d dishes parked", a.p.Stats().Parked, len(dishes))
		}
		time.Sleep(10 * time.Millisecond)
	}
	cfg = e.config()
	cfg.PendingMaxAge = time.Hour
	b := e.start(cfg)
	deadline = time.Now().Add(realenv.Slack(60 * time.Second))
	for b.p.Stats().ReadBack == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the second instance read no parked dish back: %+v", b.p.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The second instance leaves: the first gains its partitions back and
	// reads their parked dishes again.
	if err := b.Stop(t); err != nil {
		t.Fatalf("second instance: Run = %v", err)
	}
	for a.p.Stats().ReadBack == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the first instance read no parked dish back after regaining the partitions: %+v", a.p.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	e.produce(context.Background(), rests)
	e.waitCaughtUp(t, a, 60*time.Second)
	sa, sb := a.p.Stats(), b.p.Stats()
	if err := a.Stop(t); err != nil {
		t.Fatalf("first instance: Run = %v", err)
	}
	t.Logf("first instance: parked %d, read back %d; second: parked %d, read back %d", sa.Parked, sa.ReadBack, sb.Parked, sb.ReadBack)
	docs := e.scanIndex(t)
	for i, d := range dishes {
		r := rests[i/2]
		shard, err := e.m.Locate(r.lat, r.lon)
		if err != nil {
			t.Fatal(err)
		}
		if doc, ok := docs[schema.DishID(d.id)]; !ok || doc.routing != e.m.Shard(shard).Routing {
			t.Errorf("%s stored %v under %q, want under %q", d.id, ok, doc.routing, e.m.Shard(shard).Routing)
		}
	}
	if n := e.parkedLive(); n != 0 {
		t.Errorf("%d parking records live, want 0", n)
	}
}

// TestPendingAgesOnTheClock: a dish waits for its restaurant by the
// pipeline's clock, not the wall's. With an hour's bound it waits while
// the clock stands, and once the clock has moved an hour on it is
// dead-lettered as unknown_restaurant without the hour passing.
func TestPendingAgesOnTheClock(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 1})
	clock := osfake.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := e.config()
	cfg.PendingMaxAge = time.Hour
	r := e.startWith(cfg, func(p *Pipeline) { p.now = clock.Now })
	e.produce(context.Background(), encodeAll([]genEvent{
		{dish: true, typ: decode.TypeDish, op: decode.OpUpsert, id: "d1", rid: "ghost", version: 1, doc: map[string]any{"name": "soup"}},
	}))
	deadline := time.Now().Add(realenv.Slack(20 * time.Second))
	for r.p.Stats().Pending != 1 {
		if time.Now().After(deadline) {
			t.Fatal("the dish never started waiting for its restaurant")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := r.p.Stats().DeadLetters[decode.ReasonUnknownRestaurant]; n != 0 {
		t.Fatalf("%d dead letters before the clock moved", n)
	}
	clock.Advance(time.Hour + time.Second)
	for r.p.Stats().DeadLetters[decode.ReasonUnknownRestaurant] != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the dish was not dead-lettered after the clock passed its bound (stats %+v)", r.p.Stats())
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.waitCaughtUp(t, r, 20*time.Second)
	if err := r.Stop(t); err != nil {
		t.Fatalf("Run = %v", err)
	}
	dl := e.readDLQ(t)
	if len(dl) != 1 || dl[0].reason != string(decode.ReasonUnknownRestaurant) {
		t.Errorf("dead letters %+v, want the dish as unknown_restaurant", dl)
	}
}

// TestRedeliveryRemovesParkingRecords: a redelivery of a kept partition
// drops the pending dishes it supersedes; the parking record of one that
// was parked is removed with it (its copy, if it waits again, is parked
// again under the same key), so that no record outlives its dish. A
// pending dish that was never parked leaves no tombstone.
func TestRedeliveryRemovesParkingRecords(t *testing.T) {
	p := offlinePipeline(t)
	p.parking.out = outbox.New[*parkRecord](nil, p.log, "parking", p.parking.written, nil)
	k := partKey{"events", 0}
	add := func(offset int64, parked bool) *event {
		e, _ := p.track.track(k, offset, 10)
		ev := &event{part: k, offset: offset, entry: e, rid: "r1",
			change: &decode.Change{Type: decode.TypeDish, Op: decode.OpUpsert, ID: fmt.Sprintf("d%d", offset), RestaurantID: "r1", Version: 1}}
		if parked {
			ev.parkedAt = time.Unix(1, 0)
		}
		p.ix.pend.Add(ev, time.Unix(1, 0))
		return ev
	}
	add(1, true)
	parked := add(2, true)
	add(3, false)
	_, dropped := p.track.track(k, 2, 10) // offset 2 comes again
	p.loop.redelivered(k, 2, dropped)
	q := p.parking.out.Queued()
	if len(q) != 1 || !q[0].tombstone || q[0].ev != parked {
		t.Fatalf("parking queue %+v, want one tombstone, of the parked dish at offset 2", q)
	}
	if n := p.ix.pend.Len(); n != 1 {
		t.Errorf("%d dishes pending, want the one before the redelivery", n)
	}
}

// TestRedeliveredParkedDishWaitsOnce: a kept partition read again from a
// committed offset behind a parked dish (the handover's commit refused
// when the coordinator failed over) delivers the dish again. Its copy
// changes nothing and finishes at once; the dish waits once, so that an
// orphan is dead-lettered once, not twice.
func TestRedeliveredParkedDishWaitsOnce(t *testing.T) {
	p := offlinePipeline(t)
	p.parking.out = outbox.New[*parkRecord](nil, p.log, "parking", p.parking.written, nil)
	ctx := context.Background()
	k := partKey{"events", 0}
	dish := func(offset int64) *event {
		e, dropped := p.track.track(k, offset, 10)
		p.loop.redelivered(k, offset, dropped)
		return &event{part: k, offset: offset, entry: e, rid: "ghost",
			change: &decode.Change{Type: decode.TypeDish, Op: decode.OpUpsert, ID: "d1", RestaurantID: "ghost", Version: 1}}
	}
	if err := p.ix.dishUpsert(ctx, dish(1)); err != nil {
		t.Fatal(err)
	}
	q := p.parking.out.Queued()
	if len(q) != 1 || q[0].tombstone {
		t.Fatalf("parking queue %+v, want the dish's record", q)
	}
	p.parking.written(q[0]) // the broker has the record: offset 1 may be committed
	if due := p.track.due(); len(due) != 1 || due[0].offset != 2 {
		t.Fatalf("commit points %+v, want %s at 2 once the dish is parked", due, k)
	}
	p.track.committed(nil) // the commit is refused: the group stays behind

	again := dish(1)
	if err := p.ix.dishUpsert(ctx, again); err != nil {
		t.Fatal(err)
	}
	if n := p.ix.pend.Len(); n != 1 {
		t.Errorf("%d dishes pending, want 1: the copy read again is the dish that waits", n)
	}
	if len(p.parking.out.Queued()) != 1 {
		t.Errorf("parking queue %+v, want only the first record", p.parking.out.Queued())
	}
	if due := p.track.due(); len(due) != 1 || due[0].offset != 2 {
		t.Errorf("commit points %+v, want %s at 2: the copy is finished", due, k)
	}

	// Another version of the dish at another offset is no copy: it waits too.
	other := dish(2)
	other.change = &decode.Change{Type: decode.TypeDish, Op: decode.OpUpsert, ID: "d1", RestaurantID: "ghost", Version: 2}
	if err := p.ix.dishUpsert(ctx, other); err != nil {
		t.Fatal(err)
	}
	if n := p.ix.pend.Len(); n != 2 {
		t.Errorf("%d dishes pending, want 2 after a newer version", n)
	}
}

// TestUnseenGenerationsReadParkedDishesAgain: a member that could not hear
// the group (frozen past its session) comes back in a generation more
// than one past its last. The partition it owns there was another
// member's meanwhile, which parked a dish of it; the member reads that
// partition's parking records again, though it had read them at its last
// generation, so the dish waits here rather than on nobody.
func TestUnseenGenerationsReadParkedDishesAgain(t *testing.T) {
	realenv.EmulatorOnly(t, "a member driven by hand against the emulator")
	e := newEnv(t, envOptions{partitions: 1})
	p := handMember(t, e)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cfg := Config{Brokers: e.kafka.Addrs(), ParkingTopic: e.parkingTopic()}
	if err := e.kafka.CreateTopic(ctx, cfg.ParkingTopic, 1); err != nil {
		t.Fatal(err)
	}
	p.parking.cfg.ParkingTopic = cfg.ParkingTopic
	p.parking.client = &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 30 * time.Second}
	p.parking.out = outbox.New(parkingWriter(cfg, &kafka.Transport{}), p.log, "parking", p.parking.written, func(*parkRecord) bool { return false })

	// Generation 1: the member owns partition 0 and reads its parking
	// records (none).
	owned := map[partKey]bool{{"events", 0}: true}
	p.ix.enterGen(1)
	p.ix.dirGen = 1
	p.loop.assigned = owned
	if err := p.parking.readBackOwned(ctx, owned, p.loop.decideUnparked); err != nil {
		t.Fatal(err)
	}
	p.grp.ended.Store(1)

	// Generation 2, unseen here: another member owns partition 0 and parks
	// a dish of it.
	other := parkingWriter(cfg, &kafka.Transport{})
	defer other.Close()
	now := time.Now()
	dish := &event{part: partKey{"events", 0}, offset: 7, ts: now, parkedAt: now,
		value: []byte(`{"type":"dish","op":"upsert","id":"d-away","restaurant_id":"r-away","version":1,"doc":{"name":"soup","price_cents":700}}`)}
	if err := other.WriteMessages(ctx, (&parkRecord{ev: dish}).Message()); err != nil {
		t.Fatal(err)
	}

	// Generation 3: the member is back, with partition 0 again.
	if err := p.loop.enterGeneration(ctx, &generation{id: 3, owned: owned}); err != nil {
		t.Fatal(err)
	}
	if n := p.parking.readBack.Load(); n != 1 {
		t.Errorf("%d parked dishes read back at generation 3, want 1: the dish parked in generation 2 waits on no member", n)
	}
}
