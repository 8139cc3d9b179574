package migrate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/schema"
)

// The state of a migration is one document in schema.MigrationsIndex,
// _id schema.MigrationDocID(alias). Every change is a read, a change of
// the read value and a conditional write (if_seq_no, if_primary_term): if
// someone else wrote in between, the write fails with 409 and the change
// is applied again to what they wrote, re-checking its precondition (a
// step that requires phase backfilling stops if another operator has
// cancelled meanwhile). Nothing is inferred from messages or logs: the
// document is the truth, for this job, a second operator and every
// ingest instance.

// record is a migration document with its concurrency token.
type record struct {
	Migration   schema.Migration
	SeqNo       int64
	PrimaryTerm int64
}

// stateStore reads and writes an alias's migration document.
type stateStore struct {
	admin *bulk.Admin
	alias string
	now   func() time.Time
	// retry is the policy of requests made outside a step (one carried by
	// the context wins: it names the step).
	retry retryPolicy

	// mu serialises this process's read-change-write cycles (the backfill
	// slices checkpoint concurrently), so that conflicts come only from
	// other processes.
	mu       sync.Mutex
	ensured  bool
	ensureMu sync.Mutex

	// beforePut, if set, runs in every Update between the change and its
	// write: tests hold two writers there to make them race.
	beforePut func()
}

func newStore(admin *bulk.Admin, alias string, now func() time.Time) *stateStore {
	return &stateStore{admin: admin, alias: alias, now: now, retry: defaultPolicy}
}

// maxConflicts bounds the re-reads of one change.
const maxConflicts = 10

// errUnchanged, returned by an Update function, leaves the document as it
// is.
var errUnchanged = errors.New("unchanged")

// ensureIndex creates schema.MigrationsIndex if it is missing, and waits
// for its primary.
func (s *stateStore) ensureIndex(ctx context.Context) error {
	s.ensureMu.Lock()
	defer s.ensureMu.Unlock()
	if s.ensured {
		return nil
	}
	var ok bool
	err := s.do(ctx, "check "+schema.MigrationsIndex, func() (err error) {
		ok, err = s.admin.IndexExists(ctx, schema.MigrationsIndex)
		return err
	})
	if err != nil {
		return fmt.Errorf("migrate: %s: %w", schema.MigrationsIndex, err)
	}
	if !ok {
		// A retried create whose first answer was lost finds the index
		// there: resource_already_exists, as when another process made it.
		err := s.do(ctx, "create "+schema.MigrationsIndex, func() error {
			return s.admin.CreateIndex(ctx, schema.MigrationsIndex, schema.MigrationsIndexBody())
		})
		if err != nil && !bulk.IsAlreadyExists(err) {
			return fmt.Errorf("migrate: create %s: %w", schema.MigrationsIndex, err)
		}
	}
	// An index that another process (an ingest instance, a second
	// operator) has just created is yellow before its primary has
	// started, and reads fail until then: wait for the primary.
	err = s.do(ctx, "wait for "+schema.MigrationsIndex, func() error {
		return s.admin.Send(ctx, bulk.Request{Method: http.MethodGet, Path: schema.MigrationsIndexActive}, nil)
	})
	if err != nil {
		return fmt.Errorf("migrate: wait for the primary of %s: %w", schema.MigrationsIndex, err)
	}
	s.ensured = true
	return nil
}

func (s *stateStore) docID() string { return schema.MigrationDocID(s.alias) }

// do runs one request of the store, retrying transient failures under
// ctx's retry policy (the store's own outside a step).
func (s *stateStore) do(ctx context.Context, op string, f func() error) error {
	return retryWith(ctx, policyFrom(ctx, s.retry), op, f)
}

// Load reads the migration document: ErrNoMigration if there is none.
func (s *stateStore) Load(ctx context.Context) (*record, error) {
	var d *bulk.Doc
	err := s.do(ctx, "read the migration", func() (err error) {
		d, err = s.admin.GetDoc(ctx, schema.MigrationsIndex, s.docID())
		return err
	})
	if bulk.IsNotFound(err) || (err == nil && !d.Found) {
		return nil, fmt.Errorf("migrate: alias %q: %w", s.alias, ErrNoMigration)
	}
	if err != nil {
		return nil, fmt.Errorf("migrate: read the migration of %q: %w", s.alias, err)
	}
	// A document of an earlier layout kept the backfill's copied and stale
	// counts in a top-level backfill_counts, which is ignored: its slices
	// have no Copied and Stale, so its split reads as unknown.
	var m schema.Migration
	if err := json.Unmarshal(d.Source, &m); err != nil {
		return nil, fmt.Errorf("migrate: the migration document of %q: %w", s.alias, err)
	}
	return &record{Migration: m, SeqNo: d.SeqNo, PrimaryTerm: d.PrimaryTerm}, nil
}

// writeRequest is the conditional write of m over rec (nil: a new
// document that must not exist yet).
func (s *stateStore) writeRequest(rec *record, m *schema.Migration) (bulk.Request, error) {
	body, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return bulk.Request{}, err
	}
	opt := bulk.DocOptions{Create: rec == nil}
	if rec != nil {
		opt.IfSeqNo, opt.IfPrimaryTerm = &rec.SeqNo, &rec.PrimaryTerm
	}
	return bulk.IndexDocRequest(schema.MigrationsIndex, s.docID(), body, opt), nil
}

// put writes m conditionally over rec. A conflict is returned as is
// (bulk.IsConflict). Callers hold mu.
//
// A write that failed transiently is sent again as it was. The failed
// attempt may have been applied all the same, its answer lost (the
// connection reset after the node wrote): the next attempt then gets a
// version conflict against our own write. So a conflict after such a
// failure re-reads the document, and if it is what this write stores, the
// write is done: its record is returned, not the conflict (which Update
// would re-apply its change on, and a phase move re-applied to the moved
// phase would read as a refusal).
func (s *stateStore) put(ctx context.Context, rec *record, m *schema.Migration) (*record, error) {
	req, err := s.writeRequest(rec, m)
	if err != nil {
		return nil, err
	}
	var w bulk.DocWrite
	unknown := false // an attempt failed in a way that may have been applied
	err = s.do(ctx, "write the migration", func() error {
		err := s.admin.Send(ctx, req, &w)
		if bulk.Transient(err) {
			unknown = true
		}
		return err
	})
	if bulk.IsConflict(err) && unknown {
		if cur, lerr := s.Load(ctx); lerr == nil && sameMigration(&cur.Migration, m) {
			return cur, nil
		}
	}
	if err != nil {
		return nil, err
	}
	return &record{Migration: *m, SeqNo: w.SeqNo, PrimaryTerm: w.PrimaryTerm}, nil
}

// sameMigration reports whether stored (as read back) is the document
// written from m: both as they read from JSON, which is all a stored
// document keeps (m.Updated, set at each write to the clock's time, tells
// this write from others).
func sameMigration(stored, m *schema.Migration) bool {
	a, err := json.Marshal(stored)
	if err != nil {
		return false
	}
	b, err := json.Marshal(m)
	if err != nil {
		return false
	}
	var rt schema.Migration
	if json.Unmarshal(b, &rt) != nil {
		return false
	}
	if b, err = json.Marshal(&rt); err != nil {
		return false
	}
	return bytes.Equal(a, b)
}

// Update applies change to the stored migration and writes it back
// conditionally, re-reading and re-applying on conflict. change sees a
// fresh copy each time; it returns an error to refuse (the error is
// returned as is), or errUnchanged to write nothing. The new record is
// returned.
func (s *stateStore) Update(ctx context.Context, change func(m *schema.Migration) error) (*record, error) {
	return s.update(ctx, maxConflicts, change)
}

// UpdateContended is Update for the changes several backfill workers make
// to the one document all the time (claims, checkpoints, renewals): a
// conflict is their normal lot, not a second operator, so it is
// re-applied after a short random pause until ctx ends, never given up
// after maxConflicts.
func (s *stateStore) UpdateContended(ctx context.Context, change func(m *schema.Migration) error) (*record, error) {
	return s.update(ctx, 0, change)
}

// maxContendedPause bounds the random pause between two attempts of a
// contended change.
const maxContendedPause = 100 * time.Millisecond

// update is Update with at most attempts attempts, or with no bound
// (attempts 0) and a pause between them.
func (s *stateStore) update(ctx context.Context, attempts int, change func(m *schema.Migration) error) (*record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n := 1; attempts == 0 || n <= attempts; n++ {
		rec, err := s.Load(ctx)
		if err != nil {
			return nil, err
		}
		m := cloneMigration(&rec.Migration)
		if err := change(m); errors.Is(err, errUnchanged) {
			return rec, nil
		} else if err != nil {
			return nil, err
		}
		m.Updated = s.now().UTC()
		if s.beforePut != nil {
			s.beforePut()
		}
		next, err := s.put(ctx, rec, m)
		if bulk.IsConflict(err) {
			if attempts == 0 {
				// Spread the contenders out: the pause grows with the
				// conflicts met, up to maxContendedPause.
				d := time.Duration(rand.Int64N(int64(min(time.Duration(n)*5*time.Millisecond, maxContendedPause)) + 1))
				if err := sleep(ctx, d); err != nil {
					return nil, err
				}
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("migrate: write the migration of %q: %w", s.alias, err)
		}
		return next, nil
	}
	return nil, fmt.Errorf("migrate: alias %q: %w (%d attempts)", s.alias, ErrConflict, attempts)
}

// cloneMigration deep-copies the slices a change may modify.
func cloneMigration(m *schema.Migration) *schema.Migration {
	c := *m
	c.Backfill = append([]schema.SliceState(nil), m.Backfill...)
	if m.Verification != nil {
		v := *m.Verification
		v.Shards = append([]schema.ShardReport(nil), m.Verification.Shards...)
		c.Verification = &v
	}
	return &c
}

// setPhase is an Update that moves the migration from one of the phases
// in from to phase to, for step. It is a no-op when the migration is
// already in phase to. Any other phase is refused with the step's
// PhaseError, marked Changed: a step checks the phase it loaded before it
// moves it, so the phase changed in between.
func (s *stateStore) setPhase(ctx context.Context, step Step, to schema.Phase, from ...schema.Phase) (*record, error) {
	return s.Update(ctx, func(m *schema.Migration) error {
		if m.Phase == to {
			return errUnchanged
		}
		if isOneOf(m.Phase, from) {
			m.Phase = to
			return nil
		}
		return rule(step).refuse(s.alias, m.Phase, true)
	})
}

// advance moves the migration along step's row of the transition table:
// from one of its phases to the phase it leaves.
func (s *stateStore) advance(ctx context.Context, step Step) (*record, error) {
	t := rule(step)
	return s.setPhase(ctx, step, t.to, t.from...)
}

// Insert writes m as a new migration document: over nothing (rec nil;
// fails with a conflict if one appeared meanwhile) or conditionally over
// the finished migration rec.
func (s *stateStore) Insert(ctx context.Context, rec *record, m *schema.Migration) (*record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m.Updated = s.now().UTC()
	return s.put(ctx, rec, m)
}
