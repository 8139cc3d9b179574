// Package pending holds the dish events that wait for their restaurant:
// a set bounded by a count and an age, found by restaurant (to release
// them when it arrives), by dish (a delete cancels the upserts it
// supersedes) and by where each was read (a copy read again is known for
// one).
//
// # Boundaries
//
// pending is a data structure of one owner goroutine: no I/O.
//
//	imports: decode
//	never:   pipeline migrate bulk github.com/segmentio/kafka-go net
package pending
