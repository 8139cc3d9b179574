package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/pipeline/health"
	"github.com/geoshard/geoshard/schema"
)

// EventKey is one (type, op, result) series of finished events.
type EventKey struct {
	Type, Op, Result string
}

// WarmProgress is how far the directory warm-up has got.
type WarmProgress struct {
	// Pages and Restaurants read so far; Total is the number of restaurant
	// documents the index reported on the first page.
	Pages, Restaurants, Total int64
	// Done is set once the whole index has been read.
	Done bool
	// Reads counts the directory's reads from the index: one at start, and
	// one at each new consumer-group generation whose assignment could not
	// be read.
	Reads int64
	// Lookups counts the restaurants of partitions gained at a later
	// generation that were looked up in the index, one search per batch.
	Lookups int64
}

// TargetInfo names an index written to and the hash of its map.
type TargetInfo struct {
	Index, MapHash string
	// Role is "source" or "target" during the dual writes of a migration,
	// "" otherwise.
	Role string
}

// MigrationStats is the reshard migration state the pipeline applies.
type MigrationStats struct {
	// ID and Phase are the migration and phase whose writes are performed
	// now; both are empty without a migration.
	ID    string
	Phase schema.Phase
	// Targets are the indexes written to, the primary first (as
	// Stats.Targets).
	Targets []TargetInfo
	// Polled is when the migration state was last read; Heartbeat when
	// this instance's heartbeat was last written (zero: never).
	Polled, Heartbeat time.Time
}

// Stats is a snapshot of the pipeline's counters. Taking it changes
// nothing.
type Stats struct {
	// Events counts finished events by type, op and result.
	Events map[EventKey]int64
	// DeadLetters counts events written to the dead-letter topic, by
	// reason.
	DeadLetters map[decode.Reason]int64
	// Fetched and Finished count messages fetched and events finished.
	Fetched, Finished int64
	// Pending is the number of dish events waiting for their restaurant.
	Pending int
	// Directory is the number of live restaurants known.
	Directory int64
	// Moves counts restaurants moved to another geoshard.
	Moves int64
	// Refreshes counts the index refreshes the pipeline asked for (each
	// shared by the moves, deletes and lookups waiting at that moment).
	Refreshes int64
	// Parked counts the dishes parked to wait for their restaurant,
	// Unparked the tombstones that ended their records, and ReadBack the
	// records read back at a generation (parking.go).
	Parked, Unparked, ReadBack int64
	// Repartitioned counts dish events re-keyed into the repartition
	// topic, under DishKeyDish; Misplaced, restaurant events in another
	// partition than the restaurant topic's placement gives their key
	// (placement/placement.go: each stops ingest).
	Repartitioned, Misplaced int64
	// Tracked is the number of fetched messages the offset tracker holds
	// (over every partition: unfinished, or finished behind one that is
	// not), TrackedPeak the most it has held; the loop takes no new event
	// while it holds its bound, 2,000,000.
	Tracked, TrackedPeak int64
	// Unowned counts messages left unprocessed because their consumer-group
	// generation had ended by the time the loop took them: their
	// partition's next owner (this instance, for a partition it kept)
	// reads them again from the committed offset.
	Unowned int64
	// Warm is the directory warm-up's progress.
	Warm WarmProgress
	// Partitions describes each partition, by "topic/partition".
	Partitions map[string]PartitionStats
	// Lag is the sum of the partitions' lag.
	Lag int64
	// Targets are the indexes written to, the primary first: the alias's
	// write index, or during a migration's dual writes the side its phase
	// makes primary.
	Targets []TargetInfo
	// Migration is the migration state applied.
	Migration MigrationStats
	// Bulk is the bulk writer's snapshot (zero before Run).
	Bulk bulk.Stats
	// Health is what the instance is doing: starting, consuming, or what
	// it waits for.
	Health health.Health
	// OldestPending is when the dish that has waited longest for its
	// restaurant arrived (zero: none waits).
	OldestPending time.Time
}

// Progress is the summary passed to Config.OnProgress.
type Progress struct {
	// Events fetched, Finished, and DeadLetters written, since start.
	Events, Finished, DeadLetters int64
	// Pending dishes waiting for their restaurant.
	Pending int
	// Lag summed over the partitions.
	Lag int64
	// EventsPerSec is the rate of finished events since the last report.
	EventsPerSec float64
}

// Stats returns a snapshot of the counters.
func (p *Pipeline) Stats() Stats {
	s := Stats{
		Fetched:       p.loop.fetched.Load(),
		Finished:      p.out.finished.Load(),
		Pending:       p.ix.pend.Len(),
		Directory:     p.ix.dir.Len(),
		Moves:         p.ix.moves.Load(),
		Refreshes:     p.ix.refresher.sent.Load(),
		Parked:        p.parking.parked.Load(),
		Unparked:      p.parking.unparked.Load(),
		ReadBack:      p.parking.readBack.Load(),
		Repartitioned: p.repartitioned.Load(),
		Misplaced:     p.dec.misplaced.Load(),
		Unowned:       p.loop.unowned.Load(),
		Tracked:       p.track.size(),
		Health:        p.Health(),
		OldestPending: p.ix.pend.Oldest(),
		TrackedPeak:   p.track.peak.Load(),
		Partitions:    byName(p.track.snapshot()),
		Warm: WarmProgress{
			Pages: p.ix.warmStats.pages.Load(), Restaurants: p.ix.warmStats.seen.Load(), Total: p.ix.warmStats.total.Load(), Done: p.ix.warmStats.done.Load(),
			Reads:   p.ix.warmStats.reads.Load(),
			Lookups: p.ix.lookups.Load(),
		},
	}
	for _, ps := range s.Partitions {
		s.Lag += ps.Lag
	}
	p.out.mu.Lock()
	s.Events = make(map[EventKey]int64, len(p.out.counts))
	for k, v := range p.out.counts {
		s.Events[k] = v
	}
	s.DeadLetters = make(map[decode.Reason]int64, len(p.out.deadCount))
	for k, v := range p.out.deadCount {
		s.DeadLetters[k] = v
	}
	p.out.mu.Unlock()
	if cur := p.modes.current(); len(cur.targets) > 0 {
		s.Targets = cur.info()
		s.Migration = MigrationStats{ID: cur.migID, Phase: cur.phase, Targets: cur.info()}
	}
	p.mu.Lock()
	w := p.writer
	p.mu.Unlock()
	s.Migration.Polled, s.Migration.Heartbeat = unixNanoTime(p.modes.polled.Load()), unixNanoTime(p.modes.lastBeat.Load())
	if w != nil && p.started.Load() {
		s.Bulk = w.Stats()
	}
	return s
}

func unixNanoTime(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

// Health is what the instance is doing: starting, consuming, or what it
// waits for. It is Stats().Health without the rest of the snapshot.
func (p *Pipeline) Health() health.Health { return p.health.State(p.running.Load()) }

// Ready reports whether the pipeline is serving, and if not, why: it is
// ready once the directory is warm and the consumer has joined its group
// or fetched, and stops being ready when no event has finished for
// StallTimeout while there is lag.
//
// Waiting for an engine comes first: "cannot reach the Kafka brokers …
// (to join the consumer group); nothing is read until they answer; for
// 35s, since …: dial tcp …: connection refused".
func (p *Pipeline) Ready() (bool, string) {
	if h := p.Health(); h.Waiting != "" {
		return false, h.Waiting
	}
	if !p.ix.warmStats.done.Load() {
		switch {
		case !p.started.Load():
			return false, "not started"
		case p.grp.generations.Load() == 0:
			return false, "waiting to join the consumer group"
		}
		return false, fmt.Sprintf("warming the restaurant directory: %d pages, %d of %d restaurants",
			p.ix.warmStats.pages.Load(), p.ix.warmStats.seen.Load(), p.ix.warmStats.total.Load())
	}
	if !p.running.Load() {
		return false, "not running"
	}
	if p.loop.fetched.Load() == 0 && p.grp.generations.Load() == 0 {
		return false, "waiting to join the consumer group"
	}
	if lag := p.track.totalLag(); lag > 0 {
		idle := p.now().Sub(time.Unix(0, p.out.lastProgress.Load()))
		if idle > p.cfg.StallTimeout {
			return false, fmt.Sprintf("stalled: no event finished for %v with a lag of %d", idle.Round(time.Second), lag)
		}
	}
	return true, "ok"
}

// progressLoop publishes the gauges and calls OnProgress, every 200ms,
// until ctx ends.
func (p *Pipeline) progressLoop(ctx context.Context) {
	const every = 200 * time.Millisecond
	tick := time.NewTicker(every)
	defer tick.Stop()
	last, lastAt := p.out.finished.Load(), time.Now()
	lines := newProgressLines(p, p.cfg.ProgressInterval)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		p.publishGauges()
		lines.tick(time.Now())
		if p.cfg.OnProgress == nil {
			continue
		}
		now, fin := time.Now(), p.out.finished.Load()
		rate := float64(fin-last) / now.Sub(lastAt).Seconds()
		last, lastAt = fin, now
		p.cfg.OnProgress(Progress{
			Events: p.loop.fetched.Load(), Finished: fin, DeadLetters: p.out.deadLetters.Load(),
			Pending: p.ix.pend.Len(), Lag: p.track.totalLag(), EventsPerSec: rate,
		})
	}
}

// publishGauges sets the gauges from the current state.
func (p *Pipeline) publishGauges() {
	p.met.pending.Set(float64(p.ix.pend.Len()))
	p.met.directory.Set(float64(p.ix.dir.Len()))
	p.met.lastProgress.Set(float64(p.out.lastProgress.Load()) / 1e9)
	for k, ps := range p.track.snapshot() {
		topic, part := k.topic, strconv.Itoa(k.partition)
		p.met.lag.WithLabelValues(topic, part).Set(float64(ps.Lag))
		if ps.Committed >= 0 {
			p.met.committed.WithLabelValues(topic, part).Set(float64(ps.Committed))
		}
	}
}

// byName keys partition stats by "topic/partition", as Stats shows them.
func byName(parts map[partKey]PartitionStats) map[string]PartitionStats {
	out := make(map[string]PartitionStats, len(parts))
	for k, ps := range parts {
		out[k.String()] = ps
	}
	return out
}
