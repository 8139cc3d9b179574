package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/geoshard/geoshard/cmd/internal/cli"
	"github.com/geoshard/geoshard/pipeline"
)

// progressBar draws ingest progress: a bar on a terminal, a line every two
// seconds elsewhere.
type progressBar struct {
	mu       sync.Mutex
	w        io.Writer
	total    int
	terminal bool
	last     time.Time
	drawn    bool
	finished bool // set by finish: later updates are dropped (under --serve the pipeline runs on)
}

func newProgressBar(w io.Writer, total int) *progressBar {
	return &progressBar{w: w, total: total, terminal: cli.IsTerminal(w)}
}

func (b *progressBar) update(p pipeline.Progress) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	if !b.terminal && time.Since(b.last) < 2*time.Second {
		return
	}
	b.last = time.Now()
	b.draw(p.Finished, fmt.Sprintf("%.0f ev/s now", p.EventsPerSec), p.Lag, p.Pending, p.DeadLetters)
}

// draw writes one line: finished of the total, the rate, the events not
// committed yet (fetched or not: the group's lag), the dishes waiting for
// their restaurant and the dead letters.
func (b *progressBar) draw(finished int64, rate string, uncommitted int64, pending int, dead int64) {
	frac := 1.0
	if b.total > 0 {
		frac = min(1, float64(finished)/float64(b.total))
	}
	line := fmt.Sprintf("%s %6.1f%%  %d/%d events  %s  uncommitted %d  pending dishes %d  dead letters %d",
		cli.Bar(frac, 30), 100*frac, finished, b.total, rate, uncommitted, pending, dead)
	if b.terminal {
		fmt.Fprintf(b.w, "\r%s\x1b[K", line)
		b.drawn = true
	} else {
		fmt.Fprintln(b.w, line)
	}
}

// finish draws the final state once, on a terminal over the last line,
// and drops later updates (under --serve the pipeline runs on).
func (b *progressBar) finish(st pipeline.Stats) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finished {
		return
	}
	b.finished = true
	var dead int64
	for _, n := range st.DeadLetters {
		dead += n
	}
	b.draw(st.Finished, "done", st.Lag, st.Pending, dead)
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}
