package pipeline

import (
	"time"

	"github.com/geoshard/geoshard/decode"
)

// progressLines logs, every Config.ProgressInterval, what the instance
// has done since the last line, so that an operator reading the log of a
// deployment sees it work, or sees what it waits for:
//
//	msg=progress events_per_second=2104 finished=1284117 lag=312 pending_dishes=18 dead_letters=41 state=consuming
//
// events_per_second is the events finished per second since the last
// line; finished counts every event finished since start (indexed,
// deleted, skipped as stale or dead-lettered); lag is the messages not
// yet committed behind each partition's end, summed; pending_dishes are
// dish events waiting for their restaurant; dead_letters counts the
// events written to the dead-letter topic since start.
//
// While dishes wait, a second line, every interval, says how many, how
// long the oldest has waited, and when it is dead-lettered if its
// restaurant does not come. The progress line is left out while nothing
// happens: no event finished, the lag, the waiting dishes and the dead
// letters unchanged, and no engine awaited.
type progressLines struct {
	p     *Pipeline
	every time.Duration
	next  time.Time
	last  progressMark
}

// progressMark is what the last line said.
type progressMark struct {
	at                           time.Time
	fetched, finished, dead, lag int64
	pending                      int
	waiting                      bool
}

func newProgressLines(p *Pipeline, every time.Duration) *progressLines {
	now := time.Now()
	return &progressLines{p: p, every: every, next: now.Add(every), last: progressMark{at: now}}
}

// tick logs a line if one is due and something happened.
func (l *progressLines) tick(now time.Time) {
	if l.every <= 0 || now.Before(l.next) {
		return
	}
	l.next = now.Add(l.every)
	p := l.p
	cur := progressMark{
		at:       now,
		fetched:  p.loop.fetched.Load(),
		finished: p.out.finished.Load(),
		dead:     p.out.deadLetters.Load(),
		lag:      p.track.totalLag(),
		pending:  p.ix.pend.Len(),
	}
	h := p.Health()
	cur.waiting = h.Waiting != ""
	idle := cur.fetched == l.last.fetched && cur.finished == l.last.finished && cur.dead == l.last.dead &&
		cur.lag == l.last.lag && cur.pending == l.last.pending && !cur.waiting && !l.last.waiting
	if !idle {
		rate := 0.0
		if d := now.Sub(l.last.at).Seconds(); d > 0 {
			rate = float64(cur.finished-l.last.finished) / d
		}
		args := []any{"events_per_second", int64(rate + 0.5), "finished", cur.finished, "lag", cur.lag,
			"pending_dishes", cur.pending, "dead_letters", cur.dead, "state", h.State}
		if cur.waiting {
			args = append(args, "waiting", h.Waiting)
		}
		p.log.Info("progress", args...)
	}
	// Dishes that wait are said every interval, idle or not: it is what
	// an operator sees nothing else of until they are dead-lettered.
	if cur.pending > 0 {
		if oldest := p.ix.pend.Oldest(); !oldest.IsZero() {
			age := max(0, p.now().Sub(oldest))
			p.log.Info("dishes wait for their restaurant, parked with their offsets committed",
				"pending_dishes", cur.pending, "oldest_waited", age.Round(time.Second),
				"oldest_dead_lettered_in", max(0, p.cfg.PendingMaxAge-age).Round(time.Second),
				"then", decode.ReasonUnknownRestaurant, "pending_age", p.cfg.PendingMaxAge)
		}
	}
	l.last = cur
}
