package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
	Migration schema.Migration
	// Counts are the backfill's copied and stale documents per slice,
	// stored beside the migration (storedMigration).
	Counts      []SliceCounts
	SeqNo       int64
	PrimaryTerm int64
}

// SliceCounts split a backfill slice's checkpointed documents (its
// schema.SliceState.Docs) by outcome: Copied were written to the target;
// Stale were refused because the target already held as new a version
// of the document (a live write came first). Copied + Stale = Docs for a
// slice checkpointed only by jobs that count them.
type SliceCounts struct {
	Copied int64 `json:"copied"`
	Stale  int64 `json:"stale"`
}

// storedMigration is the migration document as stored: schema.Migration,
// the contract with ingest, and beside it what only the job reads.
// schema.SliceState has no room for the counts; ingest ignores the
// field.
type storedMigration struct {
	schema.Migration
	// BackfillCounts are indexed like Migration.Backfill.
	BackfillCounts []SliceCounts `json:"backfill_counts,omitempty"`
}

// fitCounts makes counts match the slices of m: one per slice, and a
// slice whose counts exceed its documents (its checkpoints forgotten by
// a restart) counted afresh.
func fitCounts(m *schema.Migration, counts []SliceCounts) []SliceCounts {
	if len(m.Backfill) == 0 {
		return nil
	}
	if len(counts) != len(m.Backfill) {
		counts = make([]SliceCounts, len(m.Backfill))
	}
	for i, c := range counts {
		if c.Copied+c.Stale > m.Backfill[i].Docs {
			counts[i] = SliceCounts{}
		}
	}
	return counts
}

// stateStore reads and writes an alias's migration document.
type stateStore struct {
	admin *bulk.Admin
	alias string
	now   func() time.Time

	// mu serialises this process's read-change-write cycles (the backfill
	// slices checkpoint concurrently), so that conflicts come only from
	// other processes.
	mu       sync.Mutex
	ensured  bool
	ensureMu sync.Mutex
}

func newStore(admin *bulk.Admin, alias string, now func() time.Time) *stateStore {
	return &stateStore{admin: admin, alias: alias, now: now}
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
	ok, err := s.admin.IndexExists(ctx, schema.MigrationsIndex)
	if err != nil {
		return fmt.Errorf("migrate: %s: %w", schema.MigrationsIndex, err)
	}
	if !ok {
		err := s.admin.CreateIndex(ctx, schema.MigrationsIndex, schema.MigrationsIndexBody())
		if err != nil && !bulk.IsAlreadyExists(err) {
			return fmt.Errorf("migrate: create %s: %w", schema.MigrationsIndex, err)
		}
	}
	// An index that another process (an ingest instance, a second
	// operator) has just created is yellow before its primary has
	// started, and reads fail until then: wait for the primary.
	if err := s.admin.Send(ctx, bulk.Request{Method: http.MethodGet, Path: schema.MigrationsIndexActive}, nil); err != nil {
		return fmt.Errorf("migrate: wait for the primary of %s: %w", schema.MigrationsIndex, err)
	}
	s.ensured = true
	return nil
}

func (s *stateStore) docID() string { return schema.MigrationDocID(s.alias) }

// Load reads the migration document: ErrNoMigration if there is none.
func (s *stateStore) Load(ctx context.Context) (*record, error) {
	d, err := s.admin.GetDoc(ctx, schema.MigrationsIndex, s.docID())
	if bulk.IsNotFound(err) || (err == nil && !d.Found) {
		return nil, fmt.Errorf("migrate: alias %q: %w", s.alias, ErrNoMigration)
	}
	if err != nil {
		return nil, fmt.Errorf("migrate: read the migration of %q: %w", s.alias, err)
	}
	var sm storedMigration
	if err := json.Unmarshal(d.Source, &sm); err != nil {
		return nil, fmt.Errorf("migrate: the migration document of %q: %w", s.alias, err)
	}
	return &record{Migration: sm.Migration, Counts: sm.BackfillCounts, SeqNo: d.SeqNo, PrimaryTerm: d.PrimaryTerm}, nil
}

// writeRequest is the conditional write of m and the backfill's counts
// over rec (nil: a new document that must not exist yet).
func (s *stateStore) writeRequest(rec *record, m *schema.Migration, counts []SliceCounts) (bulk.Request, error) {
	body, err := json.MarshalIndent(storedMigration{Migration: *m, BackfillCounts: counts}, "", "  ")
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
func (s *stateStore) put(ctx context.Context, rec *record, m *schema.Migration, counts []SliceCounts) (*record, error) {
	req, err := s.writeRequest(rec, m, counts)
	if err != nil {
		return nil, err
	}
	var w bulk.DocWrite
	if err := s.admin.Send(ctx, req, &w); err != nil {
		return nil, err
	}
	return &record{Migration: *m, Counts: counts, SeqNo: w.SeqNo, PrimaryTerm: w.PrimaryTerm}, nil
}

// Update applies change to the stored migration and writes it back
// conditionally, re-reading and re-applying on conflict. change sees a
// fresh copy each time; it returns an error to refuse (the error is
// returned as is), or errUnchanged to write nothing. The new record is
// returned.
func (s *stateStore) Update(ctx context.Context, change func(m *schema.Migration) error) (*record, error) {
	return s.UpdateCounted(ctx, func(m *schema.Migration, _ []SliceCounts) error { return change(m) })
}

// UpdateCounted is Update whose change may also set the backfill's
// counts in place: counts has one element per slice of m as loaded, and
// is fitted again to m as changed (fitCounts) before it is written.
func (s *stateStore) UpdateCounted(ctx context.Context, change func(m *schema.Migration, counts []SliceCounts) error) (*record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for range maxConflicts {
		rec, err := s.Load(ctx)
		if err != nil {
			return nil, err
		}
		m := cloneMigration(&rec.Migration)
		counts := fitCounts(m, append([]SliceCounts(nil), rec.Counts...))
		if err := change(m, counts); errors.Is(err, errUnchanged) {
			return rec, nil
		} else if err != nil {
			return nil, err
		}
		m.Updated = s.now().UTC()
		next, err := s.put(ctx, rec, m, fitCounts(m, counts))
		if bulk.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("migrate: write the migration of %q: %w", s.alias, err)
		}
		return next, nil
	}
	return nil, fmt.Errorf("migrate: alias %q: %w (%d attempts)", s.alias, ErrConflict, maxConflicts)
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
	return s.put(ctx, rec, m, nil)
}
