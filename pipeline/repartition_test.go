package pipeline

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/realenv"
)

// keyDishesByDish re-keys a stream's dish events the way a
// change-data-capture tool keys them, by the dish's own id. Dish events
// that were key mismatches are dropped: keyed by dish, no key is one. It
// adds bad dish events the repartitioner must forward so that they are
// dead-lettered with their reason, naming their place in the dish topic.
func keyDishesByDish(evs []genEvent) []genEvent {
	out := make([]genEvent, 0, len(evs)+8)
	for _, ev := range evs {
		if ev.dish && ev.poison == decode.ReasonKeyMismatch {
			continue
		}
		if ev.dish && ev.key != nil {
			ev.key = []byte(ev.id)
		}
		out = append(out, ev)
	}
	bad := []genEvent{
		{poison: decode.ReasonInvalidJSON, key: []byte("d-x1"), value: []byte(`{"type":"dish","op":"upsert",`)},
		{poison: decode.ReasonMissingRestaurantID, key: []byte("d-x2"), value: []byte(`{"type":"dish","op":"upsert","id":"d-x2","version":1,"doc":{}}`)},
		{poison: decode.ReasonMissingDoc, key: []byte("d-x3"), value: []byte(`{"type":"dish","op":"upsert","id":"d-x3","restaurant_id":"r-x","version":1,"doc":"x"}`)},
		{poison: decode.ReasonOversized, key: []byte("d-x4"), value: []byte(`{"type":"dish","op":"upsert","id":"d-x4","restaurant_id":"r-x","version":1,"doc":{"name":"` + strings.Repeat("x", 70<<10) + `"}}`)},
		{poison: decode.ReasonMissingID, value: []byte(`{"type":"dish","op":"delete","restaurant_id":"r-x","version":1}`)},
	}
	for i, b := range bad {
		b.dish, b.typ = true, decode.TypeDish
		at := (i + 1) * len(out) / (len(bad) + 1)
		out = append(out[:at], append([]genEvent{b}, out[at:]...)...)
	}
	return out
}

// TestDishesKeyedByDish: a dish topic keyed by dish id, as a
// change-data-capture tool keys it, consumed with DishKeyDish by two
// instances in one group: the repartition topic is created with the
// restaurant topic's partition count, the index ends equal to the event
// log's model with every document on its shard, nothing is dead-lettered
// as key_mismatch, and the bad dish events are dead-lettered with their
// reasons under their place and key in the dish topic. The instances
// start together (usually one generation), or the second once the first
// is deciding events: the first then loses partitions with their
// messages still queued in its reader, which it must leave to the second
// (a dish decided there with its directory would land where its
// restaurant had just moved away from).
func TestDishesKeyedByDish(t *testing.T) {
	realenv.Parallel(t)
	for _, tc := range []struct {
		name string
		late bool
	}{{"together", false}, {"second joins mid-stream", true}} {
		t.Run(tc.name, func(t *testing.T) {
			realenv.Parallel(t)
			testDishesKeyedByDish(t, tc.late)
		})
	}
}

func testDishesKeyedByDish(t *testing.T, late bool) {
	const seed = 11
	e := newEnv(t, envOptions{partitions: 3, twoTopics: true, dishKeyDish: true})
	g := defaultGen(seed, 2000)
	g.wRestDelete, g.wReplay, g.wDishOutOfOrder = 0, 0, 0
	evs := keyDishesByDish(generate(t, g))
	t.Logf("seed %d: %d events: %s", seed, len(evs), summarize(evs))
	where := e.produce(context.Background(), evs)
	cfg := e.config()
	if realenv.Enabled() {
		cfg.PendingMaxAge = time.Minute // as in TestEndToEndTwoTopics
	}
	a := e.startMember(cfg, "a")
	if late {
		deadline := time.Now().Add(realenv.Slack(30 * time.Second))
		for a.r.p.Stats().Finished < 200 {
			if time.Now().After(deadline) {
				t.Fatalf("member a finished %d events in 30s, want 200 before the second joins", a.r.p.Stats().Finished)
			}
			time.Sleep(time.Millisecond)
		}
	}
	b := e.startMember(cfg, "b")
	e.waitCaughtUp(t, a.r, 60*time.Second)
	stA, stB := a.r.p.Stats(), b.r.p.Stats()
	for _, m := range []*testMember{a, b} {
		if err := m.r.Stop(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
	}
	if got := stA.Repartitioned + stB.Repartitioned; got < int64(countDish(evs)) {
		t.Errorf("repartitioned %d events, want at least the %d dish events", got, countDish(evs))
	}
	if stA.Misplaced+stB.Misplaced != 0 {
		t.Errorf("%d restaurant events reported misplaced; the test producer uses the default partitioner", stA.Misplaced+stB.Misplaced)
	}
	n, err := e.kafka.HighWatermarks(context.Background(), e.repartition)
	if err != nil {
		t.Fatal(err)
	}
	if len(n) != 3 {
		t.Errorf("repartition topic has %d partitions, want the restaurant topic's 3", len(n))
	}
	checkFinal(t, e, evs, where)
	for _, r := range e.readDLQ(t) {
		if r.src.topic != e.restaurantTopic && r.src.topic != e.dishTopic {
			t.Errorf("dead letter names topic %s, want an event topic", r.src.topic)
		}
		if r.src.topic == e.dishTopic && strings.Contains(r.value, `"id":"d-x`) && !strings.HasPrefix(r.key, "d-x") {
			t.Errorf("dead letter of %.60s keyed %q, want its key in the dish topic", r.value, r.key)
		}
	}
}

func countDish(evs []genEvent) int {
	n := 0
	for _, ev := range evs {
		if ev.dish {
			n++
		}
	}
	return n
}

// TestRepartitionTopicRefusals: a repartition topic with another
// partition count than the restaurant topic's is refused with the command
// that fixes it; one that cannot be created is refused with the command
// that would create it; neither consumes anything.
func TestRepartitionTopicRefusals(t *testing.T) {
	realenv.Parallel(t)
	t.Run("other partition count", func(t *testing.T) {
		e := newEnv(t, envOptions{partitions: 3, twoTopics: true})
		topic := realenv.Unique("dishes-by-restaurant")
		if err := e.kafka.CreateTopic(context.Background(), topic, 2); err != nil {
			t.Fatal(err)
		}
		cfg := e.config()
		cfg.DishKey, cfg.RepartitionTopic = DishKeyDish, topic
		r := e.start(cfg)
		err := r.Wait(t, 20*time.Second)
		var rt *RepartitionTopicError
		if !errors.As(err, &rt) {
			t.Fatalf("Run = %v, want a *RepartitionTopicError", err)
		}
		if rt.Have != 2 || rt.Partitions != 3 || !strings.Contains(err.Error(), "--alter --topic "+topic+" --partitions 3") {
			t.Errorf("Run = %v; want 2 partitions against 3 and the --alter command", err)
		}
		if f := r.p.Stats().Fetched; f != 0 {
			t.Errorf("%d events fetched before the refusal, want none", f)
		}
	})
	t.Run("cannot create", func(t *testing.T) {
		realenv.EmulatorOnly(t, "needs the in-process broker to refuse CreateTopics")
		e := newEnv(t, envOptions{partitions: 3, twoTopics: true})
		e.kafka.Fake().ControlKey(int16(kmsg.CreateTopics), func(req kmsg.Request) (kmsg.Response, error, bool) {
			e.kafka.Fake().KeepControl()
			creq := req.(*kmsg.CreateTopicsRequest)
			resp := creq.ResponseKind().(*kmsg.CreateTopicsResponse)
			for _, tp := range creq.Topics {
				rt := kmsg.NewCreateTopicsResponseTopic()
				rt.Topic, rt.ErrorCode = tp.Topic, kerr.TopicAuthorizationFailed.Code
				resp.Topics = append(resp.Topics, rt)
			}
			return resp, nil, true
		})
		cfg := e.config()
		cfg.DishKey = DishKeyDish
		r := e.start(cfg)
		err := r.Wait(t, 20*time.Second)
		var rt *RepartitionTopicError
		if !errors.As(err, &rt) || !errors.Is(err, kafka.TopicAuthorizationFailed) {
			t.Fatalf("Run = %v, want a *RepartitionTopicError for TOPIC_AUTHORIZATION_FAILED", err)
		}
		want := "--create --topic " + e.group + ".dishes-by-restaurant --partitions 3 --config cleanup.policy=delete --config retention.ms=604800000"
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Run = %v\nwant the command %q", err, want)
		}
	})
}

// TestRepartitionerWithoutPartitionsKeepsItsGeneration: with more members
// than the dish topic has partitions, a repartitioner given none waits
// for its generation's end rather than ending it, so the group is not
// rebalanced again and again: once both members have joined and caught
// up, the repartition group's generation stands while events flow.
func TestRepartitionerWithoutPartitionsKeepsItsGeneration(t *testing.T) {
	realenv.EmulatorOnly(t, "reads the in-process broker's group generation")
	e := newEnv(t, envOptions{partitions: 1, twoTopics: true, dishKeyDish: true})
	g := defaultGen(7, 200)
	evs := keyDishesByDish(generate(t, g))
	half := len(evs) / 2
	e.produce(context.Background(), evs[:half])
	cfg := e.config()
	a := e.startMember(cfg, "a")
	b := e.startMember(cfg, "b")
	ctx := context.Background()
	repGroup := cfg.repartitionGroup()
	if _, err := e.kafka.WaitGroupStable(ctx, repGroup, 2); err != nil {
		t.Fatal(err)
	}
	e.waitCaughtUp(t, a.r, 60*time.Second)
	before, err := e.kafka.DescribeGroup(ctx, repGroup)
	if err != nil {
		t.Fatal(err)
	}
	e.produce(ctx, evs[half:])
	e.waitCaughtUp(t, a.r, 60*time.Second)
	after, err := e.kafka.DescribeGroup(ctx, repGroup)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []*testMember{a, b} {
		if err := m.r.Stop(t); err != nil {
			t.Fatalf("Run = %v", err)
		}
	}
	if after.Generation != before.Generation || len(after.Members) != 2 {
		t.Errorf("the repartition group went from generation %d to %d while events flowed (members %d), want it to stand", before.Generation, after.Generation, len(after.Members))
	}
}
