package migrate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/geoshard/geoshard/schema"
)

// Several backfill processes (workers: the pods of an Indexed Job, or one
// process's slice copiers) share a migration's slices through leases in
// the stored state. Each slice records its Owner, LeaseUntil and Claim
// (schema.SliceState). A worker claims an unfinished slice whose lease is
// empty or expired with a conditional write of the migration document:
// two workers that read the same version both write over it, one wins,
// the other gets 409, re-reads, and finds the slice taken. The holder
// pushes LeaseUntil out with every checkpoint (and with a renewal when a
// page takes long), and releases the lease with the slice's last
// checkpoint or when it stops cleanly. A worker that dies simply stops
// renewing: once its lease has expired another worker claims the slice
// and resumes it from its checkpoint, After.
//
// Only the holder of the current claim moves a checkpoint: every
// checkpoint, renewal and release is a conditional write that first checks
// that the stored slice still carries this worker's name and claim
// number. The number matters when one name claims twice (two copiers of a
// process, or a restarted pod that kept its hostname): the later claim
// has another number.
//
// The frozen worker. A holds slice 3 (claim 7, checkpoint "d:100") and
// freezes (a long GC pause, SIGSTOP, a partitioned node) with a page it
// read in flight. Its lease expires; B claims slice 3 (claim 8), resumes
// after "d:100", and checkpoints "d:300". A wakes:
//
//   - its writes in flight land in the target. They are copies with
//     external versions: a document B (or ingest) has written since at a
//     newer version refuses A's older copy (stale), one at the same
//     version is the same document, and one deleted since refuses it by
//     its tombstone for index.gc_deletes (1h; a freeze longer than that
//     is the same hazard as a single job's page in flight that long).
//   - its checkpoint "d:200" is a conditional write over what it read:
//     the document now says owner B, claim 8, so the write is refused
//     (ErrLeaseLost) — or, if A's read predates B's claim, A's write meets
//     409, re-reads, and is refused then. A stops copying slice 3 at once
//     and goes back to claiming; the stored checkpoint stays "d:300". Had
//     A's checkpoint landed before B's claim, B's claim would have re-read
//     it and resumed after "d:200": either way the stored checkpoint only
//     moves forward, and only its holder moves it.
//   - its renewal timer, if it fires first, is refused the same way and
//     cancels the slice's copy.
//
// Expiry is judged by the clock of the worker that claims (Config.Now)
// against the LeaseUntil the holder wrote by its own: clocks that differ
// by more than a fraction of the lease make takeovers early or late, never
// unsafe, because safety rests on the conditional writes alone.

// Defaults and bounds of BackfillConfig.Lease.
const (
	DefaultLease = 30 * time.Second
	MinLease     = time.Second
	MaxLease     = time.Hour
)

// DefaultWorker is BackfillConfig.Worker's default: the host name and the
// process id, e.g. "reshard-backfill-2-1".
func DefaultWorker() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "reshard"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// lease is a claim a worker won: the slice, and the owner and claim
// number the stored slice carries while the worker holds it.
type lease struct {
	Slice int
	Owner string
	Claim int64
}

// holds reports whether the stored slice s is still under this lease.
func (l lease) holds(s schema.SliceState) bool { return s.Owner == l.Owner && s.Claim == l.Claim }

// leaser claims, renews and releases one worker's leases.
type leaser struct {
	store  *stateStore
	alias  string
	worker string
	ttl    time.Duration
	now    func() time.Time
}

// claimed is the outcome of a claim.
type claimed struct {
	// ok: the worker won Lease on State, the slice as stored by the claim
	// (its checkpoint is where the copy resumes).
	ok    bool
	lease lease
	state schema.SliceState
	// from is the owner whose expired lease was taken over; empty when
	// the slice was free.
	from string
	// done: the backfill is over, every slice done (another worker may
	// have moved the migration on).
	done bool
	// rec is the migration as the claim wrote or read it.
	rec *record
}

// claim takes the first unfinished slice that no worker holds a live
// lease on and skip does not exclude (the slices this process copies
// already). It refuses when the migration has left phase backfilling for
// anything but the phases a finished backfill leads to.
func (l *leaser) claim(ctx context.Context, skip func(slice int) bool) (*claimed, error) {
	var c claimed
	rec, err := l.store.UpdateContended(ctx, func(x *schema.Migration) error {
		c = claimed{}
		t := rule(StepBackfill)
		switch {
		case x.Phase == t.running:
		case t.accepts(x.Phase) && !t.starts(x.Phase):
			c.done = true
			return errUnchanged
		default:
			return t.refuse(l.alias, x.Phase, true)
		}
		now := l.now()
		done := true
		for i, s := range x.Backfill {
			if s.Done {
				continue
			}
			done = false
			if s.Leased(now) || skip(i) {
				continue
			}
			c.ok, c.from = true, s.Owner
			s.Owner, s.LeaseUntil, s.Claim = l.worker, now.Add(l.ttl).UTC(), s.Claim+1
			x.Backfill[i] = s
			c.lease, c.state = lease{Slice: i, Owner: s.Owner, Claim: s.Claim}, s
			return nil
		}
		c.done = done
		return errUnchanged
	})
	if err != nil {
		return nil, err
	}
	c.rec = rec
	return &c, nil
}

// lost is the error of a write under a lease that another claim has
// replaced (or that was released: a restart forgot the checkpoints).
func (l *leaser) lost(h lease, cur schema.SliceState) error {
	return &LeaseLostError{Slice: h.Slice, Worker: h.Owner, Owner: cur.Owner, Claim: cur.Claim}
}

// holder checks, inside a change, that x still has slice h.Slice under h,
// in phase backfilling. The lease is checked first: once another worker
// has finished the slice (and perhaps the backfill, moving the phase on),
// the holder has lost it, which only ends its slice.
func (l *leaser) holder(x *schema.Migration, h lease) (*schema.SliceState, error) {
	if h.Slice >= len(x.Backfill) {
		return nil, fmt.Errorf("migrate: backfill: the migration has %d slices, not %d", len(x.Backfill), h.Slice+1)
	}
	cur := &x.Backfill[h.Slice]
	if !h.holds(*cur) {
		return nil, l.lost(h, *cur)
	}
	if t := rule(StepBackfill); x.Phase != t.running {
		return nil, t.refuse(l.alias, x.Phase, true)
	}
	return cur, nil
}

// checkpoint stores st, the slice's progress, under h, and renews the
// lease; the slice's last checkpoint (st.Done) releases it. Refused with
// a LeaseLostError when another claim holds the slice, and with an error
// when st would move the checkpoint back.
func (l *leaser) checkpoint(ctx context.Context, h lease, st schema.SliceState) (*record, error) {
	return l.store.UpdateContended(ctx, func(x *schema.Migration) error {
		cur, err := l.holder(x, h)
		if err != nil {
			return err
		}
		if st.After < cur.After || st.Docs < cur.Docs {
			return fmt.Errorf("migrate: backfill: slice %d: checkpoint %q (%d documents) is behind the stored %q (%d)", h.Slice, st.After, st.Docs, cur.After, cur.Docs)
		}
		st.Owner, st.Claim, st.LeaseUntil = h.Owner, h.Claim, l.now().Add(l.ttl).UTC()
		if st.Done {
			st.Owner, st.LeaseUntil = "", time.Time{}
		}
		*cur = st
		return nil
	})
}

// renew pushes h's expiry out. A lease that has expired but that no one
// has claimed since is still the worker's, and renewed: nobody can have
// written the slice meanwhile.
func (l *leaser) renew(ctx context.Context, h lease) (*record, error) {
	return l.store.UpdateContended(ctx, func(x *schema.Migration) error {
		cur, err := l.holder(x, h)
		if err != nil {
			return err
		}
		cur.LeaseUntil = l.now().Add(l.ttl).UTC()
		return nil
	})
}

// release gives h up, so that another worker may claim the slice at
// once. A lease already lost, or a migration that has left phase
// backfilling, leaves nothing to release.
func (l *leaser) release(ctx context.Context, h lease) error {
	_, err := l.store.UpdateContended(ctx, func(x *schema.Migration) error {
		cur, err := l.holder(x, h)
		if err != nil {
			return errUnchanged
		}
		cur.Owner, cur.LeaseUntil = "", time.Time{}
		return nil
	})
	return err
}

// isLeaseLost reports a write refused because another claim holds the
// slice.
func isLeaseLost(err error) bool { return errors.Is(err, ErrLeaseLost) }
