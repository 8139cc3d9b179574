package pipeline

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/pipeline/health"
	"github.com/geoshard/geoshard/pipeline/topics"
)

// fetched is a message, decoded, and the consumer-group generation it
// was read in; or, with start set, the start of a generation.
type fetched struct {
	msg   kafka.Message
	gen   int64
	dec   decoded
	start *generation
}

// The consumer group.
//
// ingest's instances share the event topics through one Kafka consumer
// group, joined with kafka-go's ConsumerGroup. Each generation gives this
// member its partitions (the co-partitioned balancer, topics.Copartitioned) with
// the group's committed offsets. The member then:
//
//  1. hands the generation to the processing loop (a marker in the same
//     channel as the messages, ahead of every message of it), which
//     releases the partitions lost and takes on those gained before it
//     decides anything more (loop.enterGeneration);
//  2. reads each partition with a reader of its own from the committed
//     offset (member.read), every message stamped with the generation;
//  3. commits through the generation (committer.commit): only the
//     partitions it owns, and never once the group has moved on (the
//     coordinator refuses a commit of an ended generation);
//  4. holds the next join until what it has in flight is settled
//     (handOver). kafka-go waits for every function a generation started
//     before it joins the next generation, and the next generation cannot
//     form without that join: one of them waits, once the generation
//     ends, for the processing loop to land every write in flight and for
//     the finished offsets to be committed through the ending generation.
//     The partitions' next owners then start where this member stopped,
//     with the index holding every write it made. The wait is bounded by
//     half the rebalance timeout (a shard that does not answer), and
//     logged when cut: the next owner may then see the last writes land
//     late.
//
// The messages of an ended generation still queued between a reader and
// the processing loop are not decided (loop.ended): their
// partitions' next owners (this member, for a partition kept) read them
// again from the committed offset.

// generation is one consumer-group generation, as the processing loop
// and the committer see it.
type generation struct {
	id    int64
	owned map[partKey]bool
	// offsets are where each partition's reading starts: the group's
	// committed offset, or kafka.FirstOffset.
	offsets map[partKey]int64
	group   *kafka.Generation // nil in tests that enter generations by hand
}

// newGeneration reads a kafka-go generation's assignment.
func newGeneration(g *kafka.Generation) *generation {
	gen := &generation{id: int64(g.ID), owned: map[partKey]bool{}, offsets: map[partKey]int64{}, group: g}
	for topic, parts := range g.Assignments {
		for _, a := range parts {
			k := partKey{topic: topic, partition: a.ID}
			gen.owned[k] = true
			gen.offsets[k] = a.Offset
		}
	}
	return gen
}

// member is this instance in the consumer group: it joins, reads the
// partitions of each generation into the processing loop's channel, and
// holds each join for the handover. It shares with the loop only the
// settles channel, and with the committer the current generation.
type member struct {
	cfg    Config
	log    *slog.Logger
	dialer *kafka.Dialer   // the connections of the group and the readers
	health *health.Monitor // told whether the brokers answer (nil: nothing)
	// current is the latest generation, generations counts them; ended is
	// the id of the latest one that has ended (handOver sets it before
	// anything else: generations end in order).
	current     atomic.Pointer[generation]
	generations atomic.Int64
	ended       atomic.Int64
	// deciding reports whether the processing loop decides events (it
	// has nothing in flight before, nor once it has stopped); the
	// handover asks it through settles to land what it has in flight.
	deciding func() bool
	settles  chan chan struct{} // the loop closes the channel it is sent once settled
	// wake wakes the processing loop (nil: nothing to wake).
	wake func()
	// commit commits the finished offsets of gen's partitions through gen
	// (the committer's), and says why when it could not.
	commit func(ctx context.Context, gen *generation) error
}

func newMember(cfg Config, log *slog.Logger, commit func(context.Context, *generation) error) *member {
	return &member{cfg: cfg, log: log, settles: make(chan chan struct{}), commit: commit}
}

// config is the consumer group: every event topic, the co-partitioned
// balancer first (range only so that a group still holding members of an
// older version can form: a group votes for the first strategy all its
// members offer).
func (m *member) config() kafka.ConsumerGroupConfig {
	c := groupConfig(m.cfg, m.cfg.Group, m.dialer, m.cfg.topics())
	c.GroupBalancers = []kafka.GroupBalancer{topics.Copartitioned{}, kafka.RangeGroupBalancer{}}
	c.ErrorLogger = kafka.LoggerFunc(func(msg string, args ...any) {
		detail := fmt.Sprintf(msg, args...)
		m.log.Debug("kafka consumer group", "detail", detail)
		if health.BrokerLogged(detail) {
			m.health.Failed(health.Broker, "keep the consumer group's membership", errors.New(detail))
		}
	})
	return c
}

// groupConfig is a consumer group of cfg's brokers and timings, reading
// topics from the committed offsets (the first offset where none is).
func groupConfig(cfg Config, id string, d *kafka.Dialer, topics []string) kafka.ConsumerGroupConfig {
	k := cfg.Kafka
	return kafka.ConsumerGroupConfig{
		ID:                    id,
		Brokers:               cfg.Brokers,
		Dialer:                d,
		Topics:                topics,
		HeartbeatInterval:     k.HeartbeatInterval,
		SessionTimeout:        k.SessionTimeout,
		RebalanceTimeout:      k.RebalanceTimeout,
		JoinGroupBackoff:      k.JoinGroupBackoff,
		WatchPartitionChanges: true,
		StartOffset:           kafka.FirstOffset,
	}
}

// reader reads one partition, outside any group.
func (m *member) reader(k partKey) *kafka.Reader {
	return kafka.NewReader(kafka.ReaderConfig{
		Brokers:         m.cfg.Brokers,
		Topic:           k.topic,
		Partition:       k.partition,
		Dialer:          m.dialer,
		MinBytes:        1,
		MaxBytes:        max(10<<20, 2*m.cfg.MaxEventBytes),
		MaxWait:         m.cfg.Kafka.MaxWait,
		ReadLagInterval: -1,
		ReadBackoffMin:  50 * time.Millisecond,
		ReadBackoffMax:  time.Second,
		ErrorLogger: kafka.LoggerFunc(func(msg string, args ...any) {
			detail := fmt.Sprintf(msg, args...)
			m.log.Debug("kafka reader", "partition", k.String(), "detail", detail)
			if health.BrokerLogged(detail) {
				m.health.Failed(health.Broker, "fetch events of "+k.String(), errors.New(detail))
			}
		}),
	})
}

// run takes each generation the group gives, reads its partitions into
// out and holds the next join for the handover, until stop ends. It
// returns once nothing more is written to out; the generation's functions
// then wait for it to end (Run closes the group after the last commit).
func (m *member) run(stop context.Context, cg *kafka.ConsumerGroup, out chan<- fetched) {
	var reading sync.WaitGroup
	defer reading.Wait()
	failures := 0
	for {
		g, err := cg.Next(stop)
		if err != nil {
			if stop.Err() != nil || errors.Is(err, kafka.ErrGroupClosed) {
				return
			}
			// kafka-go rejoins by itself; what reaches here is one failed
			// attempt to form a generation.
			failures++
			if health.Unreachable(err) {
				m.health.Failed(health.Broker, "join the consumer group", err)
			}
			if !pause(stop, m.log, "consumer group: joining failed; trying again", failures, err) {
				return
			}
			continue
		}
		failures = 0
		m.health.OK(health.Broker)
		gen := newGeneration(g)
		m.current.Store(gen)
		m.generations.Add(1)
		select {
		case out <- fetched{gen: gen.id, start: gen}:
		case <-stop.Done():
			return
		}
		for k, offset := range gen.offsets {
			reading.Add(1)
			g.Start(func(ctx context.Context) {
				rctx, cancel := mergeDone(ctx, stop)
				m.read(rctx, k, offset, gen.id, out)
				cancel()
				reading.Done()
				<-ctx.Done() // a function that returns ends the generation
			})
		}
		g.Start(func(ctx context.Context) {
			<-ctx.Done()
			m.handOver(stop, gen)
		})
	}
}

// read hands partition k's messages, from offset on, to out until ctx
// ends.
func (m *member) read(ctx context.Context, k partKey, offset, gen int64, out chan<- fetched) {
	r := m.reader(k)
	defer r.Close()
	if err := r.SetOffset(offset); err != nil {
		m.log.Error("consumer group: cannot start a partition's reader", "partition", k.String(), "offset", offset, "error", err)
		return
	}
	fetchAll(ctx, m.log, m.health, r, func(msg kafka.Message) bool {
		select {
		case out <- fetched{msg: msg, gen: gen}:
			return true
		case <-ctx.Done():
			return false
		}
	})
}

// messageFetcher is the part of a kafka-go Reader fetchAll uses.
type messageFetcher interface {
	FetchMessage(ctx context.Context) (kafka.Message, error)
}

// fetchBackoff spaces the fetches that kafka-go gave up on.
var fetchBackoff = bulk.Backoff{Initial: 250 * time.Millisecond, Max: 2 * time.Second}

// fetchAll is the one fetch loop: it hands r's messages to deliver until
// ctx ends or deliver returns false. kafka-go retries broker errors
// itself; a fetch that still fails is tried again after a pause that
// grows with the failures in a row.
//
// Each fetch tells h (which may be nil) whether the brokers answered.
func fetchAll(ctx context.Context, log *slog.Logger, h *health.Monitor, r messageFetcher, deliver func(kafka.Message) bool) {
	failures := 0
	for {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, io.EOF) {
				return
			}
			failures++
			if health.Unreachable(err) {
				h.Failed(health.Broker, "fetch events", err)
			}
			if !pause(ctx, log, "kafka fetch failed; retrying", failures, err) {
				return
			}
			continue
		}
		failures = 0
		h.OK(health.Broker)
		if !deliver(m) {
			return
		}
	}
}

// handOver runs when gen ends, and returns (letting the member join the
// next generation) once the processing loop has settled what it had in
// flight and the finished offsets are committed through gen, or after
// half the rebalance timeout. A member that is stopping has drained
// already, or is draining, and a loop that is not deciding yet has
// nothing in flight: they join at once. Either way the loop decides no
// more of gen's messages from here on (ended).
func (m *member) handOver(stop context.Context, gen *generation) {
	m.ended.Store(gen.id)
	if m.wake != nil {
		m.wake() // a loop waiting for quiet learns that it will not come
	}
	if stop.Err() != nil || !m.deciding() {
		return
	}
	start := time.Now()
	wait := time.NewTimer(m.cfg.Kafka.RebalanceTimeout / 2)
	defer wait.Stop()
	settled := make(chan struct{})
	select {
	case m.settles <- settled:
	case <-wait.C:
		m.log.Warn("joining the consumer group unsettled: the processing loop did not answer", "waited", time.Since(start).Round(time.Millisecond))
		return
	case <-stop.Done():
		return
	}
	select {
	case <-settled:
	case <-wait.C:
		m.log.Warn("joining the consumer group with writes still in flight", "generation", gen.id, "waited", time.Since(start).Round(time.Millisecond))
		return
	case <-stop.Done():
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.Kafka.RebalanceTimeout/2)
	err := m.commit(ctx, gen)
	cancel()
	if err != nil {
		// The coordinator moved or forgot the member: the partitions'
		// next owners, this member for those it keeps, read again from
		// the group's older commits, and decide those events again.
		m.log.Warn("consumer group rebalancing: what was in flight landed, but its commit was refused; the next owners read it again", "generation", gen.id, "paused", time.Since(start).Round(time.Millisecond), "error", err)
		return
	}
	m.log.Info("consumer group rebalancing: what was in flight landed and is committed", "generation", gen.id, "paused", time.Since(start).Round(time.Millisecond))
}

// mergeDone is a context that ends when either ctx or also does; cancel
// releases it.
func mergeDone(ctx, also context.Context) (merged context.Context, cancel func()) {
	merged, stop := context.WithCancel(ctx)
	unhook := context.AfterFunc(also, stop)
	return merged, func() { unhook(); stop() }
}

// pause is the Kafka loops' one wait after a failure: it logs msg and
// waits fetchBackoff's delay for the failures in a row, and reports false
// if ctx ended first.
func pause(ctx context.Context, log *slog.Logger, msg string, failures int, err error) bool {
	wait := fetchBackoff.Delay(failures)
	log.Warn(msg, "in", wait, "error", err)
	return sleepCtx(ctx, wait)
}

// sleepCtx waits d, and reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
