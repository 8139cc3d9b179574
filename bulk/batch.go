package bulk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// batch is what one request carries: the surviving entries after
// coalescing, in the order they were added.
type batch struct {
	entries   []*entry
	hasDelete bool
	// withdrawn are the entries taken off the lane that Config.Withdraw
	// withdrew: they end unsent (worker).
	withdrawn []*entry
}

type docKey struct{ index, routing, id string }

// cutBatch takes the next batch off a lane and marks the lane in flight.
// Within the batch, several operations on one document coalesce into the
// newest: the highest version under external versioning, else the last
// added. Callers hold mu.
func (w *Writer) cutBatch(l *lane) *batch {
	n, size := 0, 0
	for n < len(l.pending) && n < w.cfg.FlushItems && (n == 0 || size+l.pending[n].size <= w.cfg.FlushBytes) {
		size += l.pending[n].size
		n++
	}
	b := &batch{}
	if n == 0 {
		return b
	}
	taken := l.pending[:n:n]
	l.pending = append([]*entry(nil), l.pending[n:]...)
	l.pendingBytes -= size
	l.inflight = true
	// An entry back from a retry still carries the followers coalesced
	// into it before; they move to in flight with it, or end with it when
	// it is withdrawn.
	moved, withdrawn := 0, 0
	for _, e := range taken {
		moved += 1 + len(e.followers)
		l.urgent -= e.urgency()
	}
	if w.cfg.Withdraw != nil {
		kept := make([]*entry, 0, len(taken))
		for _, e := range taken {
			if w.cfg.Withdraw(e.item) {
				b.withdrawn = append(b.withdrawn, e)
				withdrawn += 1 + len(e.followers)
				continue
			}
			kept = append(kept, e)
		}
		taken = kept
	}

	var byDoc map[docKey]int
	if n > 1 {
		byDoc = make(map[docKey]int, n)
	}
	for _, e := range taken {
		if byDoc == nil {
			b.entries = append(b.entries, e)
			break
		}
		k := docKey{e.item.Index, e.item.Routing, e.item.ID}
		i, seen := byDoc[k]
		if !seen {
			byDoc[k] = len(b.entries)
			b.entries = append(b.entries, e)
			continue
		}
		s := b.entries[i]
		if supersedes(e, s) {
			e.followers = append(append(e.followers, s), s.followers...)
			s.followers = nil
			b.entries[i] = e
		} else {
			s.followers = append(append(s.followers, e), e.followers...)
			e.followers = nil
		}
	}
	for _, e := range b.entries {
		b.hasDelete = b.hasDelete || e.item.Action == Delete
	}
	sq := l.shard
	sq.qstats.Queued -= moved
	sq.qstats.InFlight += moved - withdrawn
	w.metrics.queued.WithLabelValues(sq.key).Sub(float64(moved))
	w.metrics.inflight.WithLabelValues(sq.key).Add(float64(moved - withdrawn))
	return b
}

// supersedes reports whether entry e, added after s, replaces it: under
// external versioning a higher version does, and an equal one unless s is
// external_gte and e is not. Applied in order, s with external_gte at v
// and then e with external at v, e is refused (v is not above v): s is
// what the two leave, whatever their actions. Taken for e, s would be
// refused in its place where the shard holds v (a write's copy that a
// delete with external_gte at v was to remove), and answered as e was.
func supersedes(e, s *entry) bool {
	if e.item.external() && s.item.external() {
		if e.item.Version != s.item.Version {
			return e.item.Version > s.item.Version
		}
		return e.item.VersionType == ExternalGTE || s.item.VersionType != ExternalGTE
	}
	return true
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// verdict is what one attempt decided for an entry.
type verdict struct {
	class   Class
	outcome Outcome
	status  int
	err     error
	reason  string // retry reason label
	stored  int64  // Stale: the version the shard holds (Result.Stored)
}

// send writes one batch and settles its entries.
func (w *Writer) send(l *lane, b *batch) {
	if len(b.entries) == 0 {
		w.mu.Lock()
		l.inflight = false
		w.schedule(l)
		w.work.Broadcast()
		w.mu.Unlock()
		return
	}
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	line := make([]byte, 0, 256)
	for _, e := range b.entries {
		line = appendActionLine(line[:0], e.item)
		buf.Write(line)
		if e.item.Action != Delete {
			writeBody(buf, e.item.Body)
		}
	}

	start := time.Now()
	status, body, err := w.post(buf.Bytes())
	w.metrics.latency.Observe(time.Since(start).Seconds())
	w.metrics.bytes.Add(float64(buf.Len()))

	vs := make([]verdict, len(b.entries))
	reqResult := "ok"
	switch {
	case err != nil:
		reqResult = "failed"
		fillAll(vs, verdict{class: ClassRetry, err: &RequestError{Err: err}, reason: "request"})
	case status != http.StatusOK:
		reqResult = "failed"
		ie := requestFailure(status, body)
		if c := Classify(status, ie.Type, Index, false); c == ClassRetry {
			fillAll(vs, verdict{class: ClassRetry, status: status, err: &RequestError{Status: status, Err: ie}, reason: "request"})
		} else {
			for i, e := range b.entries {
				ie2 := *ie
				ie2.Index, ie2.ID = e.item.Index, e.item.ID
				vs[i] = verdict{class: ClassPermanent, outcome: Permanent, status: status, err: &ie2}
			}
		}
	default:
		items, derr := decodeResponse(body, len(b.entries), !b.hasDelete)
		if derr != nil {
			reqResult = "failed"
			fillAll(vs, verdict{class: ClassRetry, status: status, err: &RequestError{Status: status, Err: derr}, reason: "request"})
			break
		}
		var statuses []int
		if items == nil {
			statuses = scanStatuses(body, len(b.entries))
		}
		for i, e := range b.entries {
			if items == nil {
				st := 200
				if statuses != nil {
					st = statuses[i]
				}
				vs[i] = verdict{class: ClassSuccess, outcome: OK, status: st}
				continue
			}
			vs[i] = itemVerdict(e.item, &items[i])
			if vs[i].class == ClassRetry {
				reqResult = "partial"
			}
		}
	}
	w.metrics.requests.WithLabelValues(reqResult).Inc()
	w.settle(l, b, vs, start)
}

func fillAll(vs []verdict, v verdict) {
	for i := range vs {
		vs[i] = v
	}
}

// writeBody appends a source line. Bodies pass through untouched unless
// they hold a newline, which would break NDJSON: those are compacted
// (JSON allows raw newlines only as whitespace between tokens).
func writeBody(buf *bytes.Buffer, body []byte) {
	if bytes.IndexByte(body, '\n') < 0 {
		buf.Write(body)
	} else if err := json.Compact(buf, body); err != nil {
		buf.Write(bytes.ReplaceAll(body, []byte("\n"), []byte(" ")))
	}
	buf.WriteByte('\n')
}

// post sends a bulk body and reads the whole response.
func (w *Writer) post(body []byte) (int, []byte, error) {
	req, err := http.NewRequestWithContext(w.ctx, http.MethodPost, "/_bulk", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	status, data, err := perform(w.client, req)
	var rerr *readError
	if errors.As(err, &rerr) {
		// The connection dropped mid-response: the server may have applied
		// the batch. Resending is safe under external versioning.
		return 0, nil, fmt.Errorf("reading response: %w", rerr.err)
	}
	return status, data, err
}

// itemVerdict applies Classify to one item's response.
func itemVerdict(it *Item, r *itemResp) verdict {
	errType := ""
	if r.Error != nil {
		errType = r.Error.Type
	}
	switch Classify(r.Status, errType, it.Action, it.external()) {
	case ClassSuccess:
		switch {
		case r.Status == 409:
			v := verdict{class: ClassSuccess, outcome: Stale, status: r.Status}
			if r.Error != nil {
				v.stored = storedVersion(r.Error.Reason)
			}
			return v
		case r.Status == 404:
			return verdict{class: ClassSuccess, outcome: NotFound, status: r.Status}
		}
		return verdict{class: ClassSuccess, outcome: OK, status: r.Status}
	case ClassRetry:
		reason := "server_error"
		switch r.Status {
		case 429:
			reason = "rejected"
		case 502, 503, 504:
			reason = "unavailable"
		}
		return verdict{class: ClassRetry, status: r.Status, err: itemError(it, r), reason: reason}
	}
	return verdict{class: ClassPermanent, outcome: Permanent, status: r.Status, err: itemError(it, r)}
}

// storedVersion reads the version a shard holds from the reason of a
// version conflict under external versioning, as OpenSearch words it
// ("[id]: version conflict, current version [7] is higher or equal to the
// one provided [5]"); 0 when the reason says none.
func storedVersion(reason string) int64 {
	const key = "current version ["
	i := strings.Index(reason, key)
	if i < 0 {
		return 0
	}
	rest := reason[i+len(key):]
	j := strings.IndexByte(rest, ']')
	if j < 0 {
		return 0
	}
	v, err := strconv.ParseInt(rest[:j], 10, 64)
	if err != nil || v < 0 {
		return 0
	}
	return v
}

func itemError(it *Item, r *itemResp) *ItemError {
	e := &ItemError{Index: it.Index, ID: it.ID, Status: r.Status}
	if r.Error != nil {
		e.Type, e.Reason = r.Error.Type, r.Error.Reason
		if c := r.Error.CausedBy; c != nil {
			e.CausedByType, e.CausedByReason = c.Type, c.Reason
		}
	} else {
		e.Reason = r.Result
	}
	return e
}

// settle records one attempt's verdicts: finished entries get their
// results, the others go back to the front of their lane, in order, after
// a backoff.
func (w *Writer) settle(l *lane, b *batch, vs []verdict, sent time.Time) {
	now := time.Now()
	w.mu.Lock()
	sq := l.shard
	n := 0
	var done []*entry
	var doneV []verdict
	var retry []*entry
	for i, e := range b.entries {
		n += 1 + len(e.followers)
		e.attempts++
		if e.firstSent.IsZero() {
			e.firstSent = sent
		}
		v := vs[i]
		if v.class == ClassRetry {
			e.lastErr = v.err
			switch {
			case w.aborted:
				v = verdict{outcome: Failed, status: v.status, err: fmt.Errorf("%w before the item was written: %v", ErrClosed, v.err)}
			case w.cfg.RetryMaxElapsed != NoRetryLimit && w.sinceFirst(e.firstSent) > w.cfg.RetryMaxElapsed:
				v = verdict{outcome: Failed, status: v.status, err: fmt.Errorf("%w after %d attempts: %w", ErrRetryBudget, e.attempts, v.err)}
				w.cfg.Logger.Warn("bulk item failed after retries", "shard", sq.key, "index", e.item.Index, "attempts", e.attempts, "error", v.err)
			default:
				retry = append(retry, e)
				w.stats.Retries++
				sq.qstats.Retries++
				w.metrics.retries.WithLabelValues(sq.key, v.reason).Inc()
				continue
			}
		}
		done = append(done, e)
		doneV = append(doneV, v)
	}
	sq.qstats.InFlight -= n
	w.metrics.inflight.WithLabelValues(sq.key).Sub(float64(n))
	w.stats.Requests++
	l.inflight = false
	if len(retry) > 0 {
		requeued := 0
		for _, e := range retry {
			l.pendingBytes += e.size
			requeued += 1 + len(e.followers)
			l.urgent += e.urgency()
		}
		l.pending = append(retry, l.pending...)
		sq.qstats.Queued += requeued
		w.metrics.queued.WithLabelValues(sq.key).Add(float64(requeued))
		l.failures++
		l.notBefore = now.Add(w.backoffDelay(l.failures))
	} else {
		l.failures = 0
	}
	k := 0
	results := w.finishLocked(done, func(e *entry) Result {
		v := doneV[k]
		k++
		return Result{Outcome: v.outcome, Err: v.err, Status: v.status, Stored: v.stored}
	})
	w.schedule(l)
	w.work.Broadcast()
	w.mu.Unlock()
	w.deliver(results)
}

// backoffDelay is the full-jitter wait before attempt n+1 (Backoff.Delay).
func (w *Writer) backoffDelay(n int) time.Duration {
	return (&Backoff{Initial: w.cfg.RetryInitial, Max: w.cfg.RetryMax}).Delay(n)
}

// finishLocked ends entries (and their coalesced followers) with the
// result f gives, releases their budget, wakes blocked Adds and finished
// Flushes, and returns the results to deliver. f is called once per entry,
// in order. Callers hold mu.
func (w *Writer) finishLocked(entries []*entry, f func(*entry) Result) []Result {
	if len(entries) == 0 {
		return nil
	}
	now := time.Now()
	var out []Result
	for _, e := range entries {
		r := f(e)
		r.Item, r.Attempts, r.Latency, r.seq, r.call, r.idx = e.item, e.attempts, now.Sub(e.added), e.seq, e.call, e.idx
		out = append(out, r)
		w.release(e, r)
		for _, fo := range e.followers {
			fr := r
			fr.Item, fr.Coalesced, fr.Latency, fr.seq, fr.call, fr.idx = fo.item, true, now.Sub(fo.added), fo.seq, fo.call, fo.idx
			out = append(out, fr)
			w.release(fo, fr)
		}
		e.followers = nil
	}
	close(w.space)
	w.space = make(chan struct{})
	return out
}

// release returns an entry's budget and counts its result. Callers hold mu.
func (w *Writer) release(e *entry, r Result) {
	sq := w.shards[e.item.shardKey()]
	w.bufItems--
	w.bufBytes -= e.size
	sq.items--
	st, qs := &w.stats, sq.qstats
	label := r.Outcome.String()
	switch r.Outcome {
	case OK:
		st.OK++
		qs.OK++
	case Stale:
		st.Stale++
		qs.Stale++
	case NotFound:
		st.NotFound++
		qs.NotFound++
	case Permanent:
		st.Permanent++
		qs.Permanent++
	case Failed:
		st.Failed++
		qs.Failed++
	}
	if r.Coalesced {
		st.Coalesced++
		qs.Coalesced++
		w.metrics.items.WithLabelValues(sq.key, "coalesced").Inc()
	}
	w.metrics.items.WithLabelValues(sq.key, label).Inc()
}

// deliver hands results to OnResult and to the Do calls waiting for
// them, then counts them towards the Flush calls waiting for them: a
// Flush returns only after the callbacks of all its items have run. It is
// called without mu held.
func (w *Writer) deliver(results []Result) {
	if len(results) == 0 {
		return
	}
	for _, r := range results {
		if w.cfg.OnResult != nil {
			w.cfg.OnResult(r)
		}
		if r.call != nil {
			c, i := r.call, r.idx
			r.call = nil
			c.set(i, r)
		}
	}
	w.mu.Lock()
	w.outstanding -= len(results)
	for _, fw := range w.waiters {
		if fw.remaining == 0 {
			continue
		}
		for _, r := range results {
			if r.seq <= fw.target {
				fw.remaining--
			}
		}
		if fw.remaining == 0 {
			close(fw.done)
		}
	}
	w.mu.Unlock()
}
