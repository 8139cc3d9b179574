package pipeline

import (
	"context"
	"log/slog"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/segmentio/kafka-go"

	"github.com/geoshard/geoshard/decode"
)

// loop is the processing goroutine, the indexer's loop: it follows the
// consumer group from generation to generation, and takes each decoded
// message in fetch order, tracks it and hands it to the indexer; between
// messages it runs what the indexer's writes and tasks posted, the expiry
// of pending dishes, the write mode's switches and the handover's
// settling. Its fields below the line are its own: no other goroutine
// touches them.
type loop struct {
	cfg     Config
	log     *slog.Logger
	met     *metrics
	ix      *indexer
	track   *tracker
	grp     *member
	modes   *modes
	parking *parker
	out     *outcomes
	dec     *decoder
	// maxTracked bounds the fetched messages tracked (maxTracked; tests
	// lower it).
	maxTracked int64
	// fetched counts the messages taken, unowned those skipped because
	// their generation had ended: their partitions' next owners read them
	// again.
	fetched, unowned atomic.Int64
	// deciding is set while the loop decides events (member.handOver
	// reads it).
	deciding atomic.Bool

	// assigned is the member's assignment when the directory was last
	// read (nil: before the first generation); gen is the generation the
	// loop is in.
	assigned map[partKey]bool
	gen      *generation
}

// process is the processing goroutine, the indexer's loop: it waits for
// the first generation of the consumer group and reads the directory,
// then decides events in fetch order, one at a time, and between them
// runs what writer callbacks and tasks posted, the expiry of pending
// dishes, mode switches and the handover's settling. Intake stops when
// stop ends, and while too many events wait behind held restaurants;
// blocking steps run under work.
func (l *loop) process(stop, work context.Context, msgs <-chan fetched) error {
	if err := l.firstGeneration(stop, msgs); err != nil || stop.Err() != nil {
		return err
	}
	l.deciding.Store(true)
	defer l.deciding.Store(false)
	ix := l.ix
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		// A new mode goes before the next event.
		select {
		case <-l.modes.wake:
			if err := l.modes.apply(work, l.ix); err != nil {
				return err
			}
		default:
		}
		in := msgs
		if ix.queuedBehind >= maxQueuedBehind || l.track.size() >= l.maxTracked {
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
				if err := l.enterGeneration(work, f.start); err != nil {
					return err
				}
				continue
			}
			if l.ended(f.gen) {
				continue
			}
			if err := l.handle(work, f.msg, f.dec); err != nil {
				return err
			}
		case <-ix.inbox.wake:
			if err := ix.poll(work); err != nil {
				return err
			}
		case <-tick.C:
			if l.grp.ended.Load() >= l.gen.id {
				continue // handed over: nothing new is written until the next generation
			}
			if err := ix.expirePending(work, l.cfg.PendingMaxAge); err != nil {
				return err
			}
		case <-l.modes.wake:
			if err := l.modes.apply(work, l.ix); err != nil {
				return err
			}
		case settled := <-l.grp.settles:
			if err := l.settle(work, settled); err != nil {
				return err
			}
		}
	}
}

// ended reports, and counts, a message of a generation that has ended
// (the member ended it, or the loop is in a later one): its partition's next
// owner reads it again from the group's committed offset, and this member
// does not decide it. For a partition it lost, deciding it here, with a
// directory that no longer follows its restaurants, could write a dish at
// the cell its restaurant had just left after the new owner moved the
// restaurant's dishes from there.
func (l *loop) ended(gen int64) bool {
	if l.gen != nil && gen == l.gen.id && gen > l.grp.ended.Load() {
		return false
	}
	l.unowned.Add(1)
	return true
}

// firstGeneration waits for the member's first generation, then reads
// the directory. Reading it only then matters when instances come and go:
// until the group has settled, the previous owners of our partitions may
// still be writing, and a directory read before would miss what they
// wrote. What they wrote but had not acknowledged they had not committed
// either, so those events come to us again. Then the parked dishes of the
// assigned partitions are read back (parking.go).
func (l *loop) firstGeneration(ctx context.Context, msgs <-chan fetched) error {
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
	l.assigned, l.gen = gen.owned, gen
	l.ix.enterGen(gen.id)
	if err := l.ix.warm(ctx, &l.ix.targets[0], l.ix.dir); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	l.ix.dirGen = gen.id
	if err := l.out.learnDeadLetters(ctx, gen); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := l.parking.readBackOwned(ctx, l.assigned, l.decideUnparked); err != nil && ctx.Err() == nil {
		return err
	}
	return nil
}

// enterGeneration follows the consumer group into gen: it keeps what it
// knows of the partitions it kept, marks those it gained cold
// (indexer_gained.go, which says why), releases those it lost
// (releaseUnowned), reads back the parked dishes and the dead letters of
// the partitions gained, and starts over after generations that passed
// unseen (forgetPartitions). After a fence that cut decisions short
// (indexer_fence.go) the restaurants cut are looked up at their next
// event, and the waiting dishes are forgotten and read back from the
// parking topic, as after a restart: a dish taken from the waiting set
// by a cut decision is neither waiting nor written.
func (l *loop) enterGeneration(ctx context.Context, gen *generation) error {
	if l.ix.gen != 0 {
		if err := l.ix.landFenced(ctx); err != nil {
			return err
		}
	}
	l.gen = gen
	if gen.id > l.ix.dirGen+1 {
		l.forgetPartitions(gen.id)
	}
	if l.ix.enterGen(gen.id) {
		dropped := len(l.ix.pend.Purge(func(*event) bool { return true }))
		l.ix.met.pending.Set(float64(l.ix.pend.Len()))
		l.parking.forgetRead()
		l.log.Info("consumer group rebalanced after decisions were cut short: their restaurants are looked up, the waiting dishes read back", "generation", gen.id, "pending_dropped", dropped)
		if err := l.ix.refresh(ctx, l.ix.targets[0].index); err != nil {
			return err
		}
	}
	if err := l.followAssignment(ctx, gen.id, gen.owned); err != nil {
		return err
	}
	if err := l.out.learnDeadLetters(ctx, gen); err != nil {
		return err
	}
	return l.parking.readBackOwned(ctx, gen.owned, l.decideUnparked)
}

// followAssignment makes the directory follow the generation's
// assignment: partitions lost are released, those gained are marked cold.
func (l *loop) followAssignment(ctx context.Context, gen int64, owned map[partKey]bool) error {
	l.releaseUnowned(owned)
	gained, lost := partitionChange(l.assigned, owned)
	l.assigned = owned
	if len(gained) == 0 {
		for _, n := range lost {
			delete(l.ix.cold.parts, n)
		}
		l.ix.dirGen = gen
		l.log.Info("consumer group rebalanced: no partition gained; the directory stands", "generation", gen, "partitions", len(owned), "lost", lost)
		return nil
	}
	return l.ix.gain(ctx, gen, gained, lost)
}

// forgetPartitions starts the member over as at a restart, when gen is
// more than one past the generation it last followed: generations passed
// while it could not hear the group (frozen, or cut off past its
// session), and any partition it owned may have been another member's
// meanwhile, and given back. That member may have decided the dishes
// waiting here, parked others, and dead-lettered events. So every
// partition is released (the waiting dishes dropped: the parking topic's
// records stand for those still waiting), and every partition of gen
// counts as gained: for the directory, the parked dishes read back, and
// the dead letters known.
func (l *loop) forgetPartitions(gen int64) {
	l.log.Info("consumer group generations passed unseen: every partition is started over", "generation", gen, "last_followed", l.ix.dirGen)
	l.releaseUnowned(nil)
	l.assigned = nil
	l.parking.forgetRead()
	l.out.forgetDeadLetterOwners()
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
func (l *loop) releaseUnowned(owned map[partKey]bool) {
	keep := map[int]bool{}
	for k := range owned {
		keep[k.partition] = true
	}
	lost := func(n int) bool { return !keep[n] }
	queued, pending := l.ix.dropPartitions(lost)
	released := l.track.release(lost)
	if len(released)+queued+pending == 0 {
		return
	}
	for _, k := range released {
		part := strconv.Itoa(k.partition)
		l.met.lag.DeleteLabelValues(k.topic, part)
		l.met.committed.DeleteLabelValues(k.topic, part)
	}
	l.log.Info("partitions assigned to another member: released", "partitions", released, "queued_dropped", queued, "pending_dropped", pending)
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

// settle is the processing loop's side of the handover: it lands every
// write in flight and every parking record, then closes settled (the
// member has ended the generation: the loop decides no more of its
// messages).
func (l *loop) settle(ctx context.Context, settled chan struct{}) error {
	if err := l.ix.quiesce(ctx); err != nil {
		return err
	}
	// The handover's commit covers the events dead-lettered here (package
	// deadletter, once.go): every dead letter queued is written first,
	// and with it the tombstones of the parked dishes among them.
	if err := l.out.landDeadLetters(ctx); err != nil {
		return err
	}
	// The next owner of a partition reads its parked dishes: every record
	// and tombstone made here is written first.
	if l.parking.out != nil {
		if err := l.parking.out.WaitEmpty(ctx); err != nil {
			return err
		}
	}
	close(settled)
	return nil
}

// handle processes one fetched message, decoded: it tracks it,
// dead-letters it if it is bad, and hands it to the indexer. It returns
// an error only when the pipeline cannot go on (ctx ended, or a fatal
// failure).
func (l *loop) handle(ctx context.Context, m kafka.Message, d decoded) error {
	k := partKey{topic: m.Topic, partition: m.Partition}
	entry, dropped := l.track.track(k, m.Offset, m.HighWaterMark)
	if len(dropped) > 0 {
		l.redelivered(k, m.Offset, dropped)
	}
	l.fetched.Add(1)
	c := d.change
	ev := &event{part: k, offset: m.Offset, key: m.Key, value: m.Value, ts: m.Time, entry: entry, change: c, members: d.members, origin: d.origin, gen: l.ix.gen}
	if d.reason != "" {
		return l.out.deadLetter(ctx, ev, d.reason, d.detail, resultDeadLetter)
	}
	if d.skip {
		l.out.finish(ev, resultNoop)
		return nil
	}
	ev.rid = c.ID
	if c.Type == decode.TypeDish {
		ev.rid = c.RestaurantID
	}
	return l.ix.submit(ctx, ev)
}

// redelivered forgets the pending dishes a redelivery superseded: they
// come again. The parking record of one that was parked is removed: its
// copy is parked again under the same key if it has to wait again, and
// otherwise the record would outlive it.
func (l *loop) redelivered(k partKey, offset int64, dropped []*trackEntry) {
	gone := make(map[*trackEntry]bool, len(dropped))
	for _, e := range dropped {
		gone[e] = true
	}
	purged := l.ix.pend.Purge(func(ev *event) bool { return gone[ev.entry] })
	for _, ev := range purged {
		l.parking.unpark(ev)
	}
	n := len(purged)
	l.log.Info("redelivery restarts partition tracking", "partition", k.String(), "offset", offset, "dropped", len(dropped), "pending_dropped", n)
}

// decideUnparked hands a dish read back from the parking topic to the
// indexer, as the event it was, its offset already committed.
func (l *loop) decideUnparked(ctx context.Context, u unparked) error {
	d := l.dec.decode(u.msg)
	if d.reason != "" || d.change == nil || d.change.Type != decode.TypeDish || d.change.Op != decode.OpUpsert {
		l.log.Warn("parking record is not a dish upsert; dropped", "topic", l.cfg.ParkingTopic, "source_topic", u.msg.Topic, "partition", u.msg.Partition, "offset", u.msg.Offset, "reason", d.reason)
		return nil
	}
	k := partKey{topic: u.msg.Topic, partition: u.msg.Partition}
	ev := &event{
		part: k, offset: u.msg.Offset, key: u.msg.Key, value: u.msg.Value, ts: u.msg.Time,
		entry: parkedEntry(), change: d.change, members: d.members, origin: d.origin,
		rid: d.change.RestaurantID, parkedAt: u.parkedAt, gen: l.ix.gen,
	}
	return l.ix.submit(ctx, ev)
}

// partKey names a partition of a topic.
type partKey struct {
	topic     string
	partition int
}

// String is the partition's metric label, "topic/partition".
func (k partKey) String() string { return k.topic + "/" + strconv.Itoa(k.partition) }
