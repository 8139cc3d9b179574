package pipeline

import (
	"context"
	"time"
)

// The rejoin handover.
//
// kafka-go tells a member of a rebalance only once the new generation has
// begun, and by then the partitions' new owners have begun too. A member
// still deciding the events it fetched before (kafka-go keeps them queued,
// as does the pipeline between fetch and loop), or whose writes are still
// in flight, writes beside the new owner with a directory that no longer
// follows those restaurants: a dish lands where its restaurant has just
// moved away from, after the new owner moved the restaurant's dishes from
// there, and stays.
//
// kafka-go gives one moment between two generations: it builds the
// JoinGroup request, the balancer's user data included, after the old
// generation's fetchers have stopped and before the member joins the next
// one, and the group's next generation cannot form without that join.
// There (beforeJoin) the member asks its processing loop to stop deciding
// and to settle everything in flight (quiesce), and joins only then. The
// loop decides nothing more until the new generation has begun and its
// assignment is read (handOver): the events of a partition lost are then
// left to its new owner (releaseUnowned), and those of a partition kept are
// decided, as kafka-go delivers them again from the committed offset in
// any case.
//
// The wait is bounded by half the rebalance timeout, the time the
// coordinator gives members to join: a loop that cannot settle in time (a
// shard that does not answer) is joined without, and the new owner may
// then see its last writes land late.

// joinAsk is one join's request to the processing loop.
type joinAsk struct {
	base int64         // the generation count when the join was asked
	done chan struct{} // closed once the loop has settled
}

// beforeJoin runs on kafka-go's consumer-group goroutine before each
// JoinGroup, and returns once the processing loop has settled what it
// had in flight, or after half the rebalance timeout.
func (p *Pipeline) beforeJoin() {
	if !p.deciding.Load() {
		return // the loop has not begun deciding, or has stopped
	}
	ask := joinAsk{base: p.sampleReader(p.groupReader), done: make(chan struct{})}
	start := time.Now()
	wait := time.NewTimer(p.cfg.Kafka.RebalanceTimeout / 2)
	defer wait.Stop()
	select {
	case p.joins <- ask:
	case <-wait.C:
		p.log.Warn("joining the consumer group unsettled: the processing loop did not answer", "waited", time.Since(start).Round(time.Millisecond))
		return
	}
	select {
	case <-ask.done:
		p.log.Debug("joining the consumer group: nothing in flight", "settled_in", time.Since(start).Round(time.Millisecond))
	case <-wait.C:
		p.log.Warn("joining the consumer group with writes still in flight", "waited", time.Since(start).Round(time.Millisecond))
	}
}

// handOver is the processing loop's side of a join: it settles what is
// in flight, lets the join go on, and then decides nothing until the
// reader has begun a generation after ask's and the assignment can be
// read, which it then enters. An assignment that cannot be read for a
// second after that (or a pipeline that cannot ask) enters the generation
// without one, which reads the whole directory again.
func (p *Pipeline) handOver(stop, work context.Context, r consumer, ask joinAsk) error {
	start := time.Now()
	if err := p.ix.quiesce(work); err != nil {
		return err
	}
	// The next owner of a partition reads its parked dishes: every record
	// and tombstone made here is written first.
	if p.parking != nil {
		if err := p.parking.waitEmpty(work); err != nil {
			return err
		}
	}
	close(ask.done)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	var begun time.Time // when the reader's new generation was first seen
	for {
		select {
		case <-stop.Done():
			return nil
		case again := <-p.joins:
			close(again.done) // a join tried again: nothing was decided since
		case <-p.ix.inbox.wake:
			if err := p.ix.poll(work); err != nil {
				return err
			}
		case <-tick.C:
		}
		gen := p.sampleReader(r)
		if gen <= ask.base {
			continue
		}
		if begun.IsZero() {
			begun = time.Now()
		}
		owned := p.assignment(work)
		if owned == nil && p.describeGroup != nil && time.Since(begun) < time.Second {
			continue
		}
		p.log.Info("consumer group rejoined: what was in flight landed before the join", "paused", time.Since(start).Round(time.Millisecond), "generation", gen)
		if gen <= p.ix.dirGen {
			return nil
		}
		return p.enterGeneration(work, gen, owned)
	}
}
