package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

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
	return &progressBar{w: w, total: total, terminal: isTerminal(w)}
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
	done := int(p.Finished)
	frac := 1.0
	if b.total > 0 {
		frac = min(1, float64(done)/float64(b.total))
	}
	const width = 30
	filled := int(frac * width)
	line := fmt.Sprintf("[%s%s] %6.1f%%  %d/%d events  %.0f ev/s  lag %d  pending dishes %d  dead letters %d",
		strings.Repeat("#", filled), strings.Repeat(".", width-filled), 100*frac, done, b.total, p.EventsPerSec, p.Lag, p.Pending, p.DeadLetters)
	if b.terminal {
		fmt.Fprintf(b.w, "\r%s\x1b[K", line)
		b.drawn = true
	} else {
		fmt.Fprintln(b.w, line)
	}
}

func (b *progressBar) finish() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.finished = true
	if b.drawn {
		fmt.Fprintln(b.w)
	}
}
