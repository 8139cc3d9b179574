package router

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors. Callers test for them with errors.Is; the wrapping error
// says where the problem was.
var (
	// ErrBadCoordinate reports a latitude or longitude that is NaN, infinite
	// or outside [-90, 90] / [-180, 180].
	ErrBadCoordinate = errors.New("coordinate out of range")
	// ErrBadRadius reports a search radius that is not a positive finite
	// distance no larger than half the Earth's circumference.
	ErrBadRadius = errors.New("radius out of range")
	// ErrBadToken reports a string that is not the canonical S2 token of a
	// valid cell.
	ErrBadToken = errors.New("not a valid S2 cell token")
	// ErrInfeasible reports that no split satisfies the planner's balance
	// bound.
	ErrInfeasible = errors.New("no split satisfies the balance bound")
)

// MapError lists every problem found while validating a map. Each problem
// names the offending field or shard.
type MapError struct {
	Problems []string
}

func (e *MapError) Error() string {
	if len(e.Problems) == 1 {
		return "router: invalid map: " + e.Problems[0]
	}
	return fmt.Sprintf("router: invalid map (%d problems):\n  - %s",
		len(e.Problems), strings.Join(e.Problems, "\n  - "))
}

// InputError is a problem in a CSV input (loads or queries), located by line.
type InputError struct {
	Input string // "loads" or "queries"
	Line  int    // 1-based line number in the input
	Err   error
}

func (e *InputError) Error() string {
	return fmt.Sprintf("router: %s line %d: %v", e.Input, e.Line, e.Err)
}

func (e *InputError) Unwrap() error { return e.Err }
