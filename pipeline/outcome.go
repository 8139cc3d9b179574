package pipeline

import (
	"context"
	"errors"
	"fmt"

	"github.com/geoshard/geoshard/bulk"
)

// onResult is the bulk writer's callback, called from its workers.
//
// An index that refuses a write for a reason of its own (a write block, a
// missing index) does not make the event bad: the write counts as failed,
// not rejected, so the event is neither dead-lettered nor finished, and
// the pipeline stops (ErrIndexUnwritable). With two targets this keeps
// one index from silently lacking a change the other has.
func (p *Pipeline) onResult(r bulk.Result) {
	if r.Outcome == bulk.Permanent && indexRefused(r.Err) {
		err := fmt.Errorf("%w: %s %s/%s (routing %s): %w", ErrIndexUnwritable, r.Item.Action, r.Item.Index, r.Item.ID, r.Item.Routing, r.Err)
		r.Outcome, r.Err = bulk.Failed, err
		p.fail(err)
	}
	p.ix.result(r)
	if r.Outcome == bulk.Failed && errors.Is(r.Err, bulk.ErrRetryBudget) {
		p.fail(fmt.Errorf("%w: %s %s/%s (routing %s): %w", ErrWriteFailed, r.Item.Action, r.Item.Index, r.Item.ID, r.Item.Routing, r.Err))
	}
}

// indexRefused reports an item error that is about the index, not the
// document: 403 cluster_block_exception (index.blocks.write, read_only;
// the disk flood-stage block is a 429, which the writer retries) or 404
// index_not_found_exception.
func indexRefused(err error) bool {
	var ie *bulk.ItemError
	if !errors.As(err, &ie) {
		return false
	}
	return (ie.Status == 403 && ie.Type == "cluster_block_exception") ||
		(ie.Status == 404 && ie.Type == "index_not_found_exception")
}

// rejected dead-letters an event the index rejected a write of.
func (p *Pipeline) rejected(ev *event, err error) {
	p.dead.enqueue(&deadLetter{ev: ev, reason: ReasonRejected, detail: err.Error(), result: resultDeadLetter})
}

func resultOf(r bulk.Result) string {
	switch {
	case r.Coalesced:
		return resultCoalesced
	case r.Outcome == bulk.Stale:
		return resultStale
	case r.Outcome == bulk.NotFound:
		return resultNotFound
	}
	return resultWritten
}

// finish records an event as finished, so its offset may be committed,
// and counts it. It reports false for an event a redelivery superseded.
func (p *Pipeline) finish(ev *event, result string) bool {
	if !p.track.finish(ev.entry) {
		return false
	}
	p.unpark(ev)
	typ, op := ev.labels()
	p.met.events.WithLabelValues(typ, op, result).Inc()
	now := p.now()
	switch result {
	case resultWritten, resultStale, resultNotFound, resultCoalesced:
		if !ev.ts.IsZero() {
			p.met.endToEnd.Observe(now.Sub(ev.ts).Seconds())
		}
	}
	p.mu.Lock()
	p.counts[EventKey{Type: typ, Op: op, Result: result}]++
	p.mu.Unlock()
	p.finished.Add(1)
	p.lastProgress.Store(now.UnixNano())
	return true
}

// deadLetterWritten finishes an event whose dead letter is acknowledged.
func (p *Pipeline) deadLetterWritten(d *deadLetter) {
	if !p.finish(d.ev, d.result) {
		return
	}
	p.deadLetters.Add(1)
	p.met.deadLetters.WithLabelValues(string(d.reason)).Inc()
	p.mu.Lock()
	p.deadCount[d.reason]++
	p.mu.Unlock()
}

// committedOffsets reads the group's committed offsets of parts.
func (p *Pipeline) committedOffsets(ctx context.Context, parts map[partKey]bool) (map[partKey]int64, error) {
	if p.groupCommitted == nil {
		return nil, nil
	}
	return p.groupCommitted(ctx, parts)
}
