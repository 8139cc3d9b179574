package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/kafkarange"
	"github.com/geoshard/geoshard/pipeline/deadletter"
	"github.com/geoshard/geoshard/pipeline/health"
	"github.com/geoshard/geoshard/pipeline/outbox"
	"github.com/geoshard/geoshard/pipeline/pending"
	"github.com/geoshard/geoshard/pipeline/topics"
)

// Pipeline consumes change events and writes them to OpenSearch. Create it
// with New and run it once with Run; Ready and Stats may be called at any
// time, from any goroutine.
//
// The stages it builds and runs are told in the package doc (doc.go).
type Pipeline struct {
	cfg    Config
	log    *slog.Logger
	client *opensearch.Client
	admin  *bulk.Admin
	met    *metrics

	// health is what the instance waits for, if anything (package health).
	health *health.Monitor

	// The stages, in the order a message meets them; set by New.
	grp     *member
	dec     *decoder
	loop    *loop
	ix      *indexer
	out     *outcomes
	track   *tracker
	commits *committer
	modes   *modes
	parking *parker

	// transport is the connections' settings (Config.Kafka) of every
	// client and writer; the member's dialer has them for the readers.
	// deadWriter writes the dead letters, parkWriter the parking topic
	// (Run closes both).
	transport              *kafka.Transport
	deadWriter, parkWriter *kafka.Writer

	// now is the clock of ages and stalls: how long a dish has waited for
	// its restaurant, since an event last finished (tests set it before
	// Run).
	now func() time.Time

	started       atomic.Bool
	running       atomic.Bool
	repartitioned atomic.Int64

	mu        sync.Mutex   // guards the fields below
	writer    *bulk.Writer // for Stats; the indexer writes through it
	fatalErr  error
	cancelRun context.CancelCauseFunc
}

// New checks the configuration, registers the metrics and builds the
// stages. It does no I/O but read the TLS files Config.Kafka names: Run
// connects, resolves the alias and loads the map.
func New(cfg Config, client *opensearch.Client) (*Pipeline, error) {
	if client == nil {
		return nil, errors.New("pipeline: nil OpenSearch client")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, fmt.Errorf("pipeline: register metrics: %w", err)
	}
	dialer, transport, err := cfg.Kafka.KafkaDialer()
	if err != nil {
		return nil, err
	}
	p := &Pipeline{cfg: cfg, log: cfg.Logger, met: m, track: newTracker(), now: time.Now, transport: transport}
	now := func() time.Time { return p.now() }
	p.health = health.New(cfg.Brokers, health.SearchNodes(client), p.log, now)
	p.client = p.health.Observe(client)
	p.admin = bulk.NewAdmin(p.client)
	p.commits = &committer{log: p.log, track: p.track, gauge: m.committed, every: cfg.CommitInterval}
	p.grp = newMember(cfg, p.log, p.commits.commit)
	p.grp.health = p.health
	p.dec = &decoder{cfg: cfg, log: p.log, format: newDecoder(cfg), fail: p.fail}
	p.parking = newParker(cfg, p.log, p.track, m)
	p.modes = newModes(cfg, p.log, p.admin, m, p.fail)
	p.modes.health = p.Health
	p.modes.progress = newProgress(p.track, time.Now().UTC())
	once, err := deadletter.New[*event](deadletter.Config{
		Topic: cfg.DLQTopic, EventTopics: cfg.topics(), Logger: p.log,
		Client: &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 30 * time.Second, Transport: transport},
	})
	if err != nil {
		return nil, fmt.Errorf("pipeline: %w", err)
	}
	p.out = &outcomes{
		log: p.log, met: m, track: p.track, now: now, parking: p.parking, fail: p.fail,
		counts: make(map[EventKey]int64), deadCount: make(map[decode.Reason]int64),
		once: once,
	}
	p.deadWriter = deadletter.Writer(cfg.Brokers, cfg.DLQTopic, transport)
	p.out.dead = outbox.New(p.deadWriter, p.log, "dead-letter", p.out.deadLetterWritten, p.out.skipDeadLetter)
	p.commits.passed = p.out.deadLettersPassed
	p.parking.readAlso = p.out.deadLettersParked
	p.ix = newIndexer(p.log, p.admin, m, p.out, pending.New[*event](cfg.PendingMax, cfg.PendingMaxAge), p.fail)
	p.ix.now = now
	p.ix.reparent.trustFirst = cfg.TrustFirstVersions
	p.ix.sourceDeletesDishes = cfg.SourceDeletesDishes
	p.loop = &loop{
		cfg: cfg, log: p.log, met: m, ix: p.ix, track: p.track, grp: p.grp, modes: p.modes,
		parking: p.parking, out: p.out, dec: p.dec, maxTracked: maxTracked,
	}
	p.grp.deciding = p.loop.deciding.Load
	p.ix.ended = &p.grp.ended
	p.grp.wake = func() { p.ix.inbox.post(nil) }
	p.out.groupCommitted = groupOffsets(cfg, transport)
	p.grp.dialer = dialer
	p.parking.client = &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 30 * time.Second, Transport: transport}
	p.parkWriter = parkingWriter(cfg, transport)
	p.parking.out = outbox.New(p.parkWriter, p.log, "parking", p.parking.written, func(r *parkRecord) bool {
		return !r.tombstone && p.track.isDropped(r.ev.entry)
	})
	return p, nil
}

// parkingWriter is the parking topic's writer: each record goes to the
// partition its message names (the parked event's partition number),
// acknowledged by every in-sync replica.
func parkingWriter(cfg Config, t *kafka.Transport) *kafka.Writer {
	return &kafka.Writer{
		Addr:         kafka.TCP(cfg.Brokers...),
		Topic:        cfg.ParkingTopic,
		Balancer:     kafka.BalancerFunc(func(m kafka.Message, _ ...int) int { return m.Partition }),
		RequiredAcks: kafka.RequireAll,
		BatchSize:    500,
		BatchTimeout: 2 * time.Millisecond,
		MaxAttempts:  3,
		Transport:    t,
	}
}

// Run consumes until ctx is cancelled or a fatal error. On cancel it stops
// fetching, gives the writes in flight and the dead letters
// Config.DrainTimeout to finish, commits what is finished, closes the
// reader and writers, and returns nil. A fatal error (the map changed to
// one that is not expected, a write that ran out of retries, an index
// that refuses writes) stops it the same way without the drain, and is
// returned.
//
// Before it consumes anything it reads the migration state and writes
// its first heartbeat, so that it starts writing the way the current
// migration phase asks (modes.go).
func (p *Pipeline) Run(ctx context.Context) error {
	if !p.started.CompareAndSwap(false, true) {
		return ErrAlreadyRun
	}
	watch, err := p.modes.enter(ctx, p.ix)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	transport := p.transport
	meta := &kafka.Client{Addr: kafka.TCP(p.cfg.Brokers...), Timeout: 10 * time.Second, Transport: transport}
	err = p.health.AwaitBrokers(ctx, "read the topics' metadata", func(ctx context.Context) error {
		_, err := kafkarange.PartitionCounts(ctx, meta, p.cfg.RestaurantTopic)
		return err
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("pipeline: read the topics' metadata: %w", err)
	}
	admin := &kafka.Client{Addr: kafka.TCP(p.cfg.Brokers...), Timeout: 10 * time.Second, Transport: transport}
	for _, own := range p.cfg.ownTopics() {
		if err = topics.Ensure(ctx, admin, p.log, own); err != nil {
			if ctx.Err() != nil {
				return nil // cancelled while starting: a stop, not a failure
			}
			return err
		}
	}
	if err = topics.Check(ctx, admin, p.log, p.cfg.topics()...); err != nil {
		return err
	}
	// Under DishKeyDish: where the restaurant topic holds each restaurant,
	// known before the repartitioner forwards anything
	// (placement/learn.go).
	if p.dec.placement, err = newPlacer(ctx, p.cfg, p.log, transport, p.dec.format, p.cfg.nativeKeys()); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	lt := p.newLifetimes(ctx)
	defer lt.release()
	p.ix.refresher.base = lt.work
	w, err := p.startWriter()
	if err != nil {
		return err
	}
	group, err := kafka.NewConsumerGroup(p.grp.config())
	if err != nil {
		return fmt.Errorf("pipeline: consumer group: %w", err)
	}

	p.out.lastProgress.Store(p.now().UnixNano())
	p.running.Store(true)
	defer p.running.Store(false)
	p.log.Info("consuming", "topics", p.cfg.topics(), "group", p.cfg.Group)
	if p.cfg.DishKey == DishKeyDish {
		p.log.Info("re-keying dish events by restaurant", "from", p.cfg.DishTopic, "to", p.cfg.RepartitionTopic, "group", p.cfg.repartitionGroup())
	}
	var bg sync.WaitGroup
	bg.Go(func() { p.out.dead.Run(lt.work) })
	bg.Go(func() { p.parking.out.Run(lt.work) })
	bg.Go(func() { p.commits.run(lt.commit, p.grp.current.Load) })
	bg.Go(func() { p.progressLoop(lt.work) })
	bg.Go(func() { p.modes.watch(lt.intake, watch) })
	bg.Go(func() { p.ix.reparent.run(lt.work) })
	bg.Go(func() { p.ix.reparent.runLooks(lt.work) })
	bg.Go(func() { p.health.ProbeBrokers(lt.work, meta, p.cfg.RestaurantTopic, health.BrokerProbeInterval) })

	p.consume(lt, group)
	p.drain(lt, w)
	lt.stopWork()
	p.ix.tasks.Wait() // their writes have ended: cancelled, or failed by Close
	lt.stopCommit()
	bg.Wait() // the committer has stopped: the last commit below is the only one

	finalCtx, cancelFinal := context.WithTimeout(context.Background(), 5*time.Second)
	p.commits.commit(finalCtx, p.grp.current.Load())
	cancelFinal()
	lt.cancelRun(nil)
	if err := group.Close(); err != nil { // leaves the group
		p.log.Warn("close the consumer group", "error", err)
	}
	if err := p.deadWriter.Close(); err != nil {
		p.log.Warn("close dead-letter writer", "error", err)
	}
	if err := p.parkWriter.Close(); err != nil {
		p.log.Warn("close parking writer", "error", err)
	}
	p.publishGauges()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log.Info("stopped", "finished", p.out.finished.Load(), "pending", p.ix.pend.Len(), "error", p.fatalErr)
	return p.fatalErr
}

// startWriter creates the bulk writer every target is written through.
func (p *Pipeline) startWriter() (*bulk.Writer, error) {
	bcfg := p.cfg.Bulk
	if bcfg.RetryMaxElapsed == 0 {
		// Nothing transient is fatal: a write the cluster answers 429 or
		// 5xx to, or does not answer, waits for it, and back-pressure
		// stops the fetching meanwhile.
		bcfg.RetryMaxElapsed = bulk.NoRetryLimit
	}
	if bcfg.MaxBufferedItems == 0 {
		// At least one shard's own bound (bulk's default: four batches).
		shard := bcfg.MaxShardItems
		if shard == 0 {
			shard = 4 * cmp.Or(bcfg.FlushItems, bulk.DefaultFlushItems)
		}
		bcfg.MaxBufferedItems = max(DefaultMaxBufferedItems, shard)
	}
	bcfg.OnResult = p.ix.onResult
	bcfg.Withdraw = p.ix.withdrawn
	bcfg.Registerer = p.cfg.Registerer
	if bcfg.Logger == nil {
		bcfg.Logger = p.log
	}
	w, err := bulk.New(p.client, bcfg)
	if err != nil {
		return nil, fmt.Errorf("pipeline: bulk writer: %w", err)
	}
	p.ix.writer = w
	p.mu.Lock()
	p.writer = w
	p.mu.Unlock()
	return w, nil
}

// lifetimes are the contexts of one Run. They order its shutdown:
//
//  1. intake ends when Run's context does: nothing more is fetched, the
//     repartitioner finishes the batch it writes, the processing loop
//     returns.
//  2. The drain (Pipeline.drain) then waits, under work, for the writes
//     and tasks in flight and the events queued behind them, then for the
//     dead letters, and closes the bulk writer. work ends DrainTimeout
//     after Run's context did, which cuts the drain short.
//  3. work ends: the tasks still running stop, and Run waits for them,
//     so that nothing can finish an event any more.
//  4. commit ends: the committer stops, and Run commits once more, the
//     last commit, of everything finished.
//
// run ends all of them at once on a fatal error (fail): there is no
// drain then.
type lifetimes struct {
	run, intake, work, commit        context.Context
	cancelRun                        context.CancelCauseFunc
	stopIntake, stopWork, stopCommit context.CancelFunc
	stopWatch                        func() bool
	timerMu                          sync.Mutex
	drainTimer                       *time.Timer
}

// newLifetimes derives a Run's contexts from ctx, and makes fail end
// them.
func (p *Pipeline) newLifetimes(ctx context.Context) *lifetimes {
	lt := &lifetimes{}
	lt.run, lt.cancelRun = context.WithCancelCause(context.Background())
	lt.intake, lt.stopIntake = context.WithCancel(lt.run)
	lt.work, lt.stopWork = context.WithCancel(lt.run)
	lt.commit, lt.stopCommit = context.WithCancel(lt.run)
	lt.stopWatch = context.AfterFunc(ctx, func() {
		lt.stopIntake()
		lt.timerMu.Lock()
		lt.drainTimer = time.AfterFunc(p.cfg.DrainTimeout, lt.stopWork)
		lt.timerMu.Unlock()
	})
	p.mu.Lock()
	p.cancelRun = lt.cancelRun
	p.mu.Unlock()
	return lt
}

// release ends every context and the drain timer.
func (lt *lifetimes) release() {
	lt.stopWatch()
	lt.timerMu.Lock()
	if lt.drainTimer != nil {
		lt.drainTimer.Stop()
	}
	lt.timerMu.Unlock()
	lt.stopIntake()
	lt.stopWork()
	lt.stopCommit()
	lt.cancelRun(nil)
}

// consume runs intake: the repartitioner (under DishKeyDish), the fetch
// and the decoding beside the processing loop, until intake ends or the
// loop fails. It returns once all of them have stopped.
func (p *Pipeline) consume(lt *lifetimes, group *kafka.ConsumerGroup) {
	// The repartitioner (placement/repartition.go) stops with intake, and finishes
	// the batch it is writing within the drain.
	var repart sync.WaitGroup
	if p.cfg.DishKey == DishKeyDish {
		rp, err := newRepartitioner(p.cfg, p.log, p.grp.dialer, p.transport, p.dec.placement, p.fail, func(n int) {
			p.met.repartitioned.Add(float64(n))
			p.repartitioned.Add(int64(n))
		})
		if err != nil {
			p.fail(err) // as when its consumer group cannot be made
		} else {
			repart.Go(func() { rp.Run(lt.intake, lt.work) })
		}
	}
	raw, msgs := make(chan fetched, 64), make(chan fetched, 64)
	var fetcher sync.WaitGroup
	fetcher.Go(func() {
		defer close(raw)
		p.grp.run(lt.intake, group, raw)
	})
	fetcher.Go(func() { p.dec.run(lt.intake, raw, msgs) })

	// An error that is only the stop reaching a call (intake cancelled,
	// the drain not yet over) is a stop, not a failure.
	err := p.loop.process(lt.intake, lt.work, msgs)
	if err != nil && lt.work.Err() == nil && (lt.intake.Err() == nil || !errors.Is(err, context.Canceled)) {
		p.fail(err)
	}
	lt.stopIntake()
	fetcher.Wait()
	repart.Wait()
}

// drain waits, within work, for the writes and tasks in flight (and the
// events queued behind them), then for the dead letters, and closes the
// writer, aborting what is still in flight. After a fatal error run has
// ended, so nothing is waited for.
func (p *Pipeline) drain(lt *lifetimes, w *bulk.Writer) {
	warn := func(msg string, err error) {
		if err != nil && lt.run.Err() == nil {
			p.log.Warn(msg, "error", err)
		}
	}
	warn("drain: writes still in flight at the deadline", p.ix.quiesce(lt.work))
	warn("drain: writes still in flight at the deadline", w.Flush(lt.work))
	warn("drain: dead letters still unwritten at the deadline", p.out.dead.WaitEmpty(lt.work))
	warn("drain: parking records still unwritten at the deadline", p.parking.out.WaitEmpty(lt.work))
	closeCtx, cancelClose := context.WithTimeout(lt.work, time.Second)
	_ = w.Close(closeCtx)
	cancelClose()
}

// fail stops the pipeline with err; the first error wins.
func (p *Pipeline) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.fatalErr == nil {
		p.fatalErr = err
		p.log.Error("stopping", "error", err)
	}
	if p.cancelRun != nil {
		p.cancelRun(err)
	}
}
