package pipeline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/bulk"
)

// consumer is the part of kafka-go's Reader the repartitioner uses.
type consumer interface {
	FetchMessage(ctx context.Context) (kafka.Message, error)
	CommitMessages(ctx context.Context, msgs ...kafka.Message) error
	Stats() kafka.ReaderStats
	Close() error
}

var _ consumer = (*kafka.Reader)(nil)

// Pipeline consumes change events and writes them to OpenSearch. Create it
// with New and run it once with Run; Ready and Stats may be called at any
// time, from any goroutine.
type Pipeline struct {
	cfg    Config
	log    *slog.Logger
	client *opensearch.Client
	admin  *bulk.Admin
	met    *metrics

	// Hooks, replaced by tests.
	wrapDialer  func(*kafka.Dialer) *kafka.Dialer // the group's and the readers' connections
	newProducer func(*kafka.Transport) producer
	// newParkingProducer writes the parking topic.
	newParkingProducer func(*kafka.Transport) producer
	// groupCommitted reads the group's committed offsets from the broker.
	groupCommitted func(ctx context.Context, parts map[partKey]bool) (map[partKey]int64, error)
	// assigned is the member's assignment when the directory was last
	// read (nil: before the first generation). Owned by the processing
	// goroutine.
	assigned map[partKey]bool
	// now is the clock of ages and stalls: how long a dish has waited for
	// its restaurant, since an event last finished (tests set it before
	// Run).
	now func() time.Time
	// maxTracked bounds the fetched messages tracked (maxTracked; tests
	// lower it).
	maxTracked int64

	started atomic.Bool
	running atomic.Bool

	// ix is the write side: targets, writer, directory, pending dishes,
	// and every write in flight (indexer.go). The processing goroutine is
	// its loop.
	ix    *indexer
	track *tracker
	dead  *dlq
	// parking writes the parking records and their tombstones (nil until
	// Run); kafkaClient reads them back. unparkedParts are the partitions
	// whose parked dishes were read back, owned by the processing
	// goroutine (parking.go).
	parking       *outbox[*parkRecord]
	kafkaClient   *kafka.Client
	unparkedParts map[int]bool
	// modeWake tells the processing goroutine that a new mode is wanted
	// (p.wanted); it applies it between events, then signals applied,
	// which makes the watcher write the heartbeat.
	modeWake, applied chan struct{}

	mu        sync.Mutex   // guards the fields below
	cur       mode         // the mode writes use (ix.targets is cur.targets)
	wanted    *mode        // a mode requested and not applied yet
	writer    *bulk.Writer // for Stats; the indexer writes through it
	counts    map[EventKey]int64
	deadCount map[Reason]int64
	fatalErr  error
	cancelRun context.CancelCauseFunc

	dec           *decoder
	repartitioned atomic.Int64
	// unowned counts messages skipped because their generation had ended
	// (process): their partitions' next owners read them again.
	unowned atomic.Int64
	// grp is this instance in the consumer group (group.go). gen is the
	// generation the loop is in, settled the last one it settled (both
	// loop-owned).
	grp     *member
	commits *committer
	gen     *generation
	settled int64

	fetched, finished, deadLetters atomic.Int64
	// parkedCount, unparkedCount and readBack count the parking records
	// written, their tombstones written, and the records read back.
	parkedCount, unparkedCount, readBack atomic.Int64
	lastProgress                         atomic.Int64 // unix nanoseconds
	migPolled, lastBeat                  atomic.Int64 // unix nanoseconds
	hbIndexReady                         atomic.Bool
}

// New checks the configuration and registers the metrics. It does no
// I/O: Run connects, resolves the alias and loads the map.
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
	p := &Pipeline{
		cfg: cfg, log: cfg.Logger, client: client, admin: bulk.NewAdmin(client), met: m,
		track:         newTracker(),
		modeWake:      make(chan struct{}, 1),
		applied:       make(chan struct{}, 1),
		counts:        make(map[EventKey]int64),
		deadCount:     make(map[Reason]int64),
		unparkedParts: map[int]bool{},
		maxTracked:    maxTracked,
		now:           time.Now,
	}
	p.ix = newIndexer(p.log, p.admin, m, p, newPendingSet(cfg.PendingMax, cfg.PendingMaxAge))
	p.ix.now = func() time.Time { return p.now() }
	p.commits = &committer{log: p.log, track: p.track, gauge: m.committed, every: cfg.CommitInterval}
	p.grp = newMember(cfg, p.log, p.commits.commit)
	p.dec = &decoder{cfg: cfg, log: p.log}
	p.newProducer = func(t *kafka.Transport) producer { return dlqWriter(cfg, t) }
	p.newParkingProducer = func(t *kafka.Transport) producer { return parkingWriter(cfg, t) }
	return p, nil
}

// dlqWriter is the dead-letter writer: acknowledged by every in-sync
// replica, keyed like the source so a restaurant's dead letters stay in
// order.
func dlqWriter(cfg Config, t *kafka.Transport) producer {
	return &kafka.Writer{
		Addr:         kafka.TCP(cfg.Brokers...),
		Topic:        cfg.DLQTopic,
		Balancer:     &kafka.Hash{},
		RequiredAcks: kafka.RequireAll,
		BatchSize:    500,
		BatchTimeout: 5 * time.Millisecond,
		MaxAttempts:  3,
		Transport:    t,
	}
}

// parkingWriter is the parking topic's writer: each record goes to the
// partition its message names (the parked event's partition number),
// acknowledged by every in-sync replica.
func parkingWriter(cfg Config, t *kafka.Transport) producer {
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
// migration phase asks (migration.go).
func (p *Pipeline) Run(ctx context.Context) error {
	if !p.started.CompareAndSwap(false, true) {
		return ErrAlreadyRun
	}
	watch, err := p.enterMode(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	dialer, transport, err := p.cfg.Kafka.KafkaDialer()
	if err != nil {
		return err
	}
	err = ensureRepartitionTopic(ctx, p.cfg, p.log, transport)
	if err == nil {
		err = ensureOwnTopic(ctx, p.cfg, p.log, transport, "parking", p.cfg.ParkingTopic, []kafka.ConfigEntry{
			{ConfigName: "cleanup.policy", ConfigValue: "compact"},
		})
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil // cancelled while starting: a stop, not a failure
		}
		return err
	}
	if p.dec.placement, err = checkPartitions(ctx, p.cfg, p.log, transport); err != nil {
		return err
	}
	lt := p.newLifetimes(ctx)
	defer lt.release()
	w, err := p.startWriter()
	if err != nil {
		return err
	}
	if p.groupCommitted == nil {
		p.groupCommitted = groupOffsets(p.cfg, transport)
	}
	if p.wrapDialer != nil {
		dialer = p.wrapDialer(dialer)
	}
	p.grp.dialer = dialer
	group, err := kafka.NewConsumerGroup(p.grp.config())
	if err != nil {
		return fmt.Errorf("pipeline: consumer group: %w", err)
	}
	prod := p.newProducer(transport)
	p.dead = newDLQ(prod, p.log, p.deadLetterWritten, func(d *deadLetter) bool { return p.track.isDropped(d.ev.entry) })
	p.kafkaClient = &kafka.Client{Addr: kafka.TCP(p.cfg.Brokers...), Timeout: 30 * time.Second, Transport: transport}
	parkProd := p.newParkingProducer(transport)
	p.parking = newOutbox(parkProd, p.log, "parking", p.parkWritten, func(r *parkRecord) bool {
		return !r.tombstone && p.track.isDropped(r.ev.entry)
	})

	p.lastProgress.Store(p.now().UnixNano())
	p.running.Store(true)
	defer p.running.Store(false)
	p.log.Info("consuming", "topics", p.cfg.topics(), "group", p.cfg.Group)
	if p.cfg.DishKey == DishKeyDish {
		p.log.Info("re-keying dish events by restaurant", "from", p.cfg.DishTopic, "to", p.cfg.RepartitionTopic, "group", p.cfg.repartitionGroup())
	}
	var bg sync.WaitGroup
	bg.Go(func() { p.dead.run(lt.work) })
	bg.Go(func() { p.parking.run(lt.work) })
	bg.Go(func() { p.commits.run(lt.commit, p.grp.current.Load) })
	bg.Go(func() { p.progressLoop(lt.work) })
	bg.Go(func() { p.watch(lt.intake, watch) })

	p.consume(lt, dialer, transport, group)
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
	if err := prod.Close(); err != nil {
		p.log.Warn("close dead-letter writer", "error", err)
	}
	if err := parkProd.Close(); err != nil {
		p.log.Warn("close parking writer", "error", err)
	}
	p.publishGauges()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log.Info("stopped", "finished", p.finished.Load(), "pending", p.ix.pend.len(), "error", p.fatalErr)
	return p.fatalErr
}

// enterMode reads the migration state, takes the write mode it asks for
// and writes the first heartbeat; the watcher it returns follows the
// state from there.
func (p *Pipeline) enterMode(ctx context.Context) (*watcher, error) {
	m, key, err := p.initialMode(ctx)
	if err != nil {
		return nil, err
	}
	p.setMode(m)
	p.migPolled.Store(time.Now().UnixNano())
	p.logMode("write mode", m)
	p.beat(ctx)
	return &watcher{key: key, req: m}, nil
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
	bcfg.OnResult = p.onResult
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
func (p *Pipeline) consume(lt *lifetimes, dialer *kafka.Dialer, transport *kafka.Transport, group *kafka.ConsumerGroup) {
	// The repartitioner (repartition.go) stops with intake, and finishes
	// the batch it is writing within the drain.
	var repart sync.WaitGroup
	if p.cfg.DishKey == DishKeyDish {
		rp := newRepartitioner(p.cfg, p.log, dialer, transport, p.met.repartitioned, func(n int) { p.repartitioned.Add(int64(n)) })
		repart.Go(func() { rp.run(lt.intake, lt.work) })
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
	err := p.process(lt.intake, lt.work, msgs)
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
	warn("drain: dead letters still unwritten at the deadline", p.dead.waitEmpty(lt.work))
	warn("drain: parking records still unwritten at the deadline", p.parking.waitEmpty(lt.work))
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

// fetched is a message, decoded, and the consumer-group generation it
// was read in; or, with start set, the start of a generation.
type fetched struct {
	msg   kafka.Message
	gen   int64
	dec   decoded
	start *generation
}

// process is the processing goroutine, the indexer's loop: it waits for
// the first generation of the consumer group and reads the directory,
// then decides events in fetch order, one at a time, and between them
// runs what writer callbacks and tasks posted, the expiry of pending
// dishes, mode switches and the handover's settling. Intake stops when
// stop ends, and while too many events wait behind held restaurants;
// blocking steps run under work.
func (p *Pipeline) process(stop, work context.Context, msgs <-chan fetched) error {
	if err := p.firstGeneration(stop, msgs); err != nil || stop.Err() != nil {
		return err
	}
	p.grp.deciding.Store(true)
	defer p.grp.deciding.Store(false)
	ix := p.ix
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		// A new mode goes before the next event.
		select {
		case <-p.modeWake:
			if err := p.applyWanted(work); err != nil {
				return err
			}
		default:
		}
		in := msgs
		if ix.queuedBehind >= maxQueuedBehind || p.track.size() >= p.maxTracked {
			in = nil
		}
		select {
		case <-stop.Done():
			return nil
		case f, ok := <-in:
			if !ok {
				return nil
			}
			if f.start != nil {
				if err := p.enterGeneration(work, f.start); err != nil {
					return err
				}
				continue
			}
			if p.ended(f.gen) {
				continue
			}
			if err := p.handle(work, f.msg, f.dec); err != nil {
				return err
			}
		case <-ix.inbox.wake:
			if err := ix.poll(work); err != nil {
				return err
			}
		case <-tick.C:
			if p.settled == p.gen.id {
				continue // handed over: nothing new is written until the next generation
			}
			if err := ix.expirePending(work, p.cfg.PendingMaxAge); err != nil {
				return err
			}
		case <-p.modeWake:
			if err := p.applyWanted(work); err != nil {
				return err
			}
		case ask := <-p.grp.settles:
			if err := p.settle(work, ask); err != nil {
				return err
			}
		}
	}
}

// ended reports, and counts, a message of a generation that has ended
// (settled, or followed by the one the loop is in): its partition's next
// owner reads it again from the group's committed offset, and this member
// does not decide it. For a partition it lost, deciding it here, with a
// directory that no longer follows its restaurants, could write a dish at
// the cell its restaurant had just left after the new owner moved the
// restaurant's dishes from there.
func (p *Pipeline) ended(gen int64) bool {
	if p.gen != nil && gen == p.gen.id && gen > p.settled {
		return false
	}
	p.unowned.Add(1)
	return true
}

// firstGeneration waits for the member's first generation, then reads
// the directory. Reading it only then matters when instances come and go:
// until the group has settled, the previous owners of our partitions may
// still be writing, and a directory read before would miss what they
// wrote. What they wrote but had not acknowledged they had not committed
// either, so those events come to us again. Then the parked dishes of the
// assigned partitions are read back (parking.go).
func (p *Pipeline) firstGeneration(ctx context.Context, msgs <-chan fetched) error {
	var gen *generation
	for gen == nil {
		select {
		case <-ctx.Done():
			return nil
		case f, ok := <-msgs:
			if !ok {
				return nil
			}
			gen = f.start // no message comes before its generation's start
		}
	}
	// The assignment before the read: the directory then holds every
	// acknowledged write of the partitions it names.
	p.assigned, p.gen = gen.owned, gen
	if err := p.ix.warm(ctx, &p.ix.targets[0], p.ix.dir); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	p.ix.dirGen = gen.id
	if err := p.unparkOwned(ctx, p.assigned); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// enterGeneration follows the consumer group into gen. The restaurants
// of a partition the member kept had no other writer meanwhile (partition
// N of every event topic is one member's, and both are keyed by
// restaurant), so what it knows of them stands, and a member that only
// lost partitions (the older members when one joins) pauses for nothing
// but the rebalance. The restaurants of a partition it gained are looked
// up in the index as their events come (gained.go). A partition it lost
// is released at once (releaseUnowned). Generations that passed unseen
// (gen more than one past the directory's) may have given a kept
// partition to another member and back: every partition then counts as
// gained. Then the parked dishes of the partitions gained are read back.
func (p *Pipeline) enterGeneration(ctx context.Context, gen *generation) error {
	p.gen = gen
	if err := p.followAssignment(ctx, gen.id, gen.owned); err != nil {
		return err
	}
	return p.unparkOwned(ctx, gen.owned)
}

// followAssignment makes the directory follow the generation's
// assignment: partitions lost are released, those gained are marked cold.
func (p *Pipeline) followAssignment(ctx context.Context, gen int64, owned map[partKey]bool) error {
	p.releaseUnowned(owned)
	gained, lost := partitionChange(p.assigned, owned)
	if gen > p.ix.dirGen+1 {
		gained, _ = partitionChange(nil, owned)
	}
	p.assigned = owned
	if len(gained) == 0 {
		for _, n := range lost {
			delete(p.ix.cold.parts, n)
		}
		p.ix.dirGen = gen
		p.log.Info("consumer group rebalanced: no partition gained; the directory stands", "generation", gen, "partitions", len(owned), "lost", lost)
		return nil
	}
	return p.ix.gain(ctx, gen, gained, lost)
}

// releaseUnowned gives up every partition not in owned (those the group
// gave another member, including any this member decided while it could
// not read its assignment): the events of them waiting here are dropped
// unfinished, and their tracking and figures end. From here on, the
// messages of them kafka-go still returns are skipped (process). Their
// new owner decides their events again from the group's committed
// offset; this member, deciding them too with a directory that no longer
// follows their restaurants, could write a dish at the cell its
// restaurant had just left, after the new owner moved the restaurant's
// dishes from there.
//
// The writes this member had in flight for them landed before it joined
// the generation (the handover, group.go), unless it could not settle in
// time.
func (p *Pipeline) releaseUnowned(owned map[partKey]bool) {
	keep := map[int]bool{}
	for k := range owned {
		keep[k.partition] = true
	}
	lost := func(n int) bool { return !keep[n] }
	queued, pending := p.ix.dropPartitions(lost)
	released := p.track.release(lost)
	if len(released)+queued+pending == 0 {
		return
	}
	for _, k := range released {
		part := strconv.Itoa(k.partition)
		p.met.lag.DeleteLabelValues(k.topic, part)
		p.met.committed.DeleteLabelValues(k.topic, part)
	}
	p.log.Info("partitions assigned to another member: released", "partitions", released, "queued_dropped", queued, "pending_dropped", pending)
}

// partitionChange lists the partition numbers owned now and not before
// (gained), and before and not now (lost).
func partitionChange(before, now map[partKey]bool) (gained, lost []int) {
	nums := func(m map[partKey]bool) map[int]bool {
		out := map[int]bool{}
		for k := range m {
			out[k.partition] = true
		}
		return out
	}
	b, n := nums(before), nums(now)
	for k := range n {
		if !b[k] {
			gained = append(gained, k)
		}
	}
	for k := range b {
		if !n[k] {
			lost = append(lost, k)
		}
	}
	slices.Sort(gained)
	slices.Sort(lost)
	return gained, lost
}
