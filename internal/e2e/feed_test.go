package e2e

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/internal/kafkatest"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
)

// streamConfig is the change stream of the tests: a few hundred
// restaurants with a handful of dishes each, and every kind of message the
// generator makes — updates, moves to another city, nudged locations,
// deletes and re-creations, replays, overtaken versions, dishes before
// their restaurant, dishes of restaurants that never come, and poison.
// The rates are raised well above the demo's so that a few thousand
// messages hold many of each.
func streamConfig(seed uint64, restaurants int) datagen.StreamConfig {
	return datagen.StreamConfig{
		Restaurants:     restaurants,
		MeanDishes:      3,
		UpdateRate:      0.6,
		DeleteRate:      0.08,
		MoveRate:        0.15,
		ReplayRate:      0.03,
		OutOfOrderRate:  0.03,
		EarlyDishRate:   0.05,
		OrphanRate:      0.02,
		PoisonRate:      0.002,
		Seed:            seed,
		RestaurantTopic: eventTopic,
		DishTopic:       eventTopic,
	}
}

// feed produces a generated stream, in its order, to the event topic:
// synchronously (produce) or paced in the background (start, stop). What
// it sends is recorded, in order, as the event log the model reads: a
// prefix of the stream, with the messages inject added.
type feed struct {
	t    testing.TB
	e    *env
	msgs []datagen.Message

	sentN atomic.Int64 // len(sent), readable without mu

	mu   sync.Mutex // serialises producing; guards the fields below
	next int        // the stream position: messages of msgs taken so far
	sent []datagen.Message

	stopBg context.CancelFunc
	bgDone chan struct{}
	bgErr  error
	ranDry atomic.Bool // the background producer reached the end of the stream
}

// newFeed generates the stream. The broker refuses records over 1 MiB,
// which the oversized poison message is: it is left out (the pipeline's
// own size check is tested in its package).
func (e *env) newFeed(t testing.TB, sc datagen.StreamConfig) *feed {
	t.Helper()
	kept := testenv.BrokerStream(t, sc)
	kinds := map[string]int{}
	for _, m := range kept {
		kinds[m.Kind]++
	}
	t.Logf("stream seed %d: %d restaurants, %d messages: %v", sc.Seed, sc.Restaurants, len(kept), kinds)
	return &feed{t: t, e: e, msgs: kept}
}

// count is the number of messages produced so far.
func (f *feed) count() int { return int(f.sentN.Load()) }

// log returns the messages produced so far, in order: the event log.
func (f *feed) log() []datagen.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sent[:len(f.sent):len(f.sent)]
}

// send produces msgs, in order, and records them. Callers hold mu.
func (f *feed) send(ctx context.Context, msgs []datagen.Message) error {
	out := make([]datagen.Message, 0, len(msgs))
	batch := make([]kafkatest.Message, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, m)
		batch = append(batch, kafkatest.Message{Key: m.Key, Value: m.Value})
	}
	if len(batch) == 0 {
		return nil
	}
	// ProduceBatch keeps the order of messages with the same key, which is
	// every order the model needs (a restaurant and its dishes share a
	// key).
	if _, err := f.e.kafka.ProduceBatch(ctx, f.e.topic, batch); err != nil {
		return err
	}
	f.sent = append(f.sent, out...)
	f.sentN.Store(int64(len(f.sent)))
	return nil
}

// produceNext produces the next n messages of the stream (fewer at its
// end) and reports how many.
func (f *feed) produceNext(ctx context.Context, n int) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	from := f.next
	to := min(from+n, len(f.msgs))
	if to == from {
		return 0, nil
	}
	if err := f.send(ctx, f.msgs[from:to]); err != nil {
		return 0, err
	}
	f.next = to
	return to - from, nil
}

// inject produces messages that are not part of the stream, between two
// of its batches, and adds them to the log.
func (f *feed) inject(msgs ...datagen.Message) {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.send(context.Background(), msgs); err != nil {
		f.t.Fatal(err)
	}
}

// restaurantEvent encodes a restaurant upsert as a stream message.
func restaurantEvent(t testing.TB, kind, id string, version int64, at datagen.Location, doc json.RawMessage) datagen.Message {
	t.Helper()
	v, err := json.Marshal(datagen.Event{Type: datagen.TypeRestaurant, Op: datagen.OpUpsert, ID: id, Version: version, Location: &at, Doc: doc})
	if err != nil {
		t.Fatal(err)
	}
	return datagen.Message{Topic: eventTopic, Key: []byte(id), Value: v, Kind: kind}
}

// produce produces the next n messages synchronously.
func (f *feed) produce(n int) {
	f.t.Helper()
	got, err := f.produceNext(context.Background(), n)
	if err != nil {
		f.t.Fatal(err)
	}
	if got < n {
		f.t.Fatalf("the stream has only %d messages; the test wants %d more", len(f.msgs), n-got)
	}
}

// start produces batch messages every interval in the background until
// stop. It is live traffic: the test's steps run while it flows.
func (f *feed) start(batch int, every time.Duration) {
	// The real engines do the same work more slowly (a refresh takes the
	// real node hundreds of milliseconds): slow the traffic down so that
	// the stream lasts the scenario.
	every = realenv.Slack(every)
	ctx, cancel := context.WithCancel(context.Background())
	f.stopBg, f.bgDone = cancel, make(chan struct{})
	go func() {
		defer close(f.bgDone)
		// The traffic must last the scenario however busy the machine is:
		// past half of the stream each batch waits a tenth longer than the
		// one before, up to slowest, so the second half lasts several times
		// as long as the first.
		slowest := realenv.Slack(250 * time.Millisecond)
		interval := every
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
			if f.count()*2 > len(f.msgs) {
				interval = min(interval*11/10, slowest)
			}
			// A batch is produced whole or not at all, whatever stop does
			// meanwhile: a produce cut short could leave messages in the
			// topic that the log does not hold.
			n, err := f.produceNext(context.Background(), batch)
			if err != nil {
				f.bgErr = err
				return
			}
			if n == 0 {
				f.ranDry.Store(true)
				return
			}
		}
	}()
	f.t.Cleanup(func() {
		if f.stopBg != nil {
			f.stopBg()
			<-f.bgDone
		}
	})
}

// stop ends the background production and fails the test if it broke
// off or ran out of messages before it was stopped (the traffic would not
// have lasted the whole scenario).
func (f *feed) stop() {
	f.t.Helper()
	if f.stopBg == nil {
		return // never started
	}
	f.stopBg()
	<-f.bgDone
	if f.bgErr != nil {
		f.t.Fatalf("background producer: %v", f.bgErr)
	}
	if f.ranDry.Load() {
		f.t.Fatalf("the stream ran out (%d messages) before the scenario ended: live traffic did not last; generate more restaurants", len(f.msgs))
	}
}

// waitProduced waits until at least n messages are produced by the
// background producer.
func (f *feed) waitProduced(n int, timeout time.Duration) {
	f.t.Helper()
	timeout = realenv.Slack(timeout)
	deadline := time.Now().Add(timeout)
	for f.count() < n {
		if time.Now().After(deadline) {
			f.t.Fatalf("only %d of %d messages produced after %v", f.count(), n, timeout)
		}
		if f.ranDry.Load() {
			f.t.Fatalf("the stream ran out at %d messages, want %d", len(f.msgs), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
