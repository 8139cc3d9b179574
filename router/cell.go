package router

import (
	"fmt"

	"github.com/golang/geo/s2"
)

// DefaultLevel is the S2 level of a geoshard cell: about 81 km², so a
// 15-mile search covers a few dozen cells.
const DefaultLevel = 10

// ParseToken parses the canonical S2 token of a valid cell. Unlike
// s2.CellIDFromToken it returns an error, and it rejects tokens that are not
// in canonical form (upper case, trailing zeros), so that one cell has one
// spelling in a map file and in its hash.
func ParseToken(tok string) (s2.CellID, error) {
	if len(tok) == 0 || len(tok) > 16 {
		return 0, fmt.Errorf("%q: %w", tok, ErrBadToken)
	}
	id := s2.CellIDFromToken(tok)
	if !id.IsValid() {
		return 0, fmt.Errorf("%q: %w", tok, ErrBadToken)
	}
	if canon := id.ToToken(); canon != tok {
		return 0, fmt.Errorf("%q: %w (write it as %q)", tok, ErrBadToken, canon)
	}
	return id, nil
}

// ParseCellAt parses the token of a cell that must be at the given level.
func ParseCellAt(tok string, level int) (s2.CellID, error) {
	id, err := ParseToken(tok)
	if err != nil {
		return 0, err
	}
	if id.Level() != level {
		return 0, fmt.Errorf("%q is at level %d, want level %d", tok, id.Level(), level)
	}
	return id, nil
}

// curve positions: a level-L cell's position along the Hilbert curve over all
// six faces is a dense integer in [0, 6·4^L). Positions are what the planner
// works with; they convert to and from cell IDs with two shifts.

func posShift(level int) uint { return uint(2*(s2.MaxLevel-level) + 1) }

// cellPos returns the curve position of the level-L cell that contains id
// (id at level L or finer).
func cellPos(id s2.CellID, level int) uint64 { return uint64(id) >> posShift(level) }

// posCell returns the level-L cell at curve position p.
func posCell(p uint64, level int) s2.CellID {
	sh := posShift(level)
	return s2.CellID(p<<sh | 1<<(sh-1))
}

// numPos is the number of level-L cells on the sphere.
func numPos(level int) uint64 { return 6 << (2 * uint(level)) }

// firstCell is the first level-L cell of face 0: the start of every map.
func firstCell(level int) s2.CellID { return s2.CellIDFromFace(0).ChildBeginAtLevel(level) }
