package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/geoshard/geoshard/internal/cli"
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
	b.draw(p.Finished, fmt.Sprintf("%.0f ev/s", p.EventsPerSec), p.Lag, p.Pending, p.DeadLetters)
}

// progressLegend says what each word of the progress line counts; it is
// printed once above it, and docs/ingest.md ("The embedded run")
// repeats it.
const progressLegend = `progress: finished/produced events (finished: indexed or dead-lettered); ev/s, finished a second;
lag, events after the group's committed offsets, finished or not (commits follow each second);
waiting, dishes parked until their restaurant comes; dead, events sent to the dead-letter topic`

// barWidth is the bar's cells: with the figures beside it, a line of a
// million events stays within 100 columns.
const barWidth = 16

// legend prints the legend of the progress line.
func (b *progressBar) legend() {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintln(b.w, progressLegend)
}

// draw writes one line: finished of the total, the rate, the group's lag,
// the waiting dishes and the dead letters (progressLegend).
func (b *progressBar) draw(finished int64, rate string, lag int64, waiting int, dead int64) {
	line := progressLine(finished, b.total, rate, lag, waiting, dead)
	if b.terminal {
		fmt.Fprintf(b.w, "\r%s\x1b[K", line)
		b.drawn = true
	} else {
		fmt.Fprintln(b.w, line)
	}
}

// progressLine is the text of one progress line.
func progressLine(finished int64, total int, rate string, lag int64, waiting int, dead int64) string {
	frac := 1.0
	if total > 0 {
		frac = min(1, float64(finished)/float64(total))
	}
	return fmt.Sprintf("%s %5.1f%%  %d/%d  %s  lag %d  waiting %d  dead %d",
		cli.Bar(frac, barWidth), 100*frac, finished, total, rate, lag, waiting, dead)
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
