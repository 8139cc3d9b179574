package pipeline

import (
	"errors"
	"fmt"

	"github.com/geoshard/geoshard/pipeline/topics"
)

// Sentinel errors.
var (
	// ErrMapMismatch: the map of the index differs from the one the
	// pipeline was told to expect (Config.MapHash). Wrapped in a
	// *MapMismatchError that names both hashes.
	ErrMapMismatch = errors.New("pipeline: map mismatch")
	// ErrWriteFailed: the bulk writer gave up on an item (its retry budget
	// ran out). The pipeline stops without committing past the event, so
	// the next start writes it again.
	ErrWriteFailed = errors.New("pipeline: write failed")
	// ErrIndexUnwritable: an index refused a write for a reason of its
	// own, not the event's: a write block (403 cluster_block_exception,
	// index.blocks.write or read_only) or a missing index (404
	// index_not_found_exception). The event is not dead-lettered (every
	// event would be, and during a migration the other index would keep a
	// change the refused one lacks): the pipeline stops without committing
	// past it, and the next start, once the block is lifted or the
	// migration state says where to write, writes it again.
	ErrIndexUnwritable = errors.New("pipeline: index refuses writes")
	// ErrAlreadyRun: Run was called twice on one Pipeline.
	ErrAlreadyRun = errors.New("pipeline: Run called more than once")
)

// MapMismatchError reports an index whose map is not the expected one.
type MapMismatchError struct {
	Index    string
	Expected string // Config.MapHash
	Actual   string // the hash recorded in the index's _meta
}

func (e *MapMismatchError) Error() string {
	return fmt.Sprintf("pipeline: index %q was built with map %s, but the expected map is %s", e.Index, e.Actual, e.Expected)
}

func (e *MapMismatchError) Unwrap() error { return ErrMapMismatch }

// PartitionMismatchError is the refusal to consume event topics whose
// partition counts differ (topics.MismatchError).
type PartitionMismatchError = topics.MismatchError

// OwnTopicError is the refusal to start when a topic ingest keeps itself
// is missing and cannot be created, or has another partition count than
// the restaurant topic (topics.OwnTopicError).
type OwnTopicError = topics.OwnTopicError

// RepartitionTopicError is the OwnTopicError of the repartition topic.
type RepartitionTopicError = topics.OwnTopicError
