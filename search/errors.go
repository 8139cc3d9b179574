package search

import (
	"errors"
	"fmt"
	"strings"
)

// ErrAliasNotFound is an alias (or index) that does not exist on the
// cluster.
var ErrAliasNotFound = errors.New("no alias or index of that name")

// CursorError is a page token (DishQuery.After, RestaurantQuery.After)
// refused before any request is sent: not a token at all, or one from a
// search with another kind, area, text or filters. An application shows
// it as the caller's mistake, not the cluster's.
type CursorError struct {
	// Reason says what is wrong with the token.
	Reason string
}

func (e *CursorError) Error() string { return "search: page token: " + e.Reason }

// UnknownValueError is a filter value that no document in the index
// holds (Vocabulary.Check): a misspelt allergen, diet or cuisine, which
// would otherwise filter silently (a diet or cuisine nothing has matches
// nothing; an allergen nothing lists leaves nothing out).
type UnknownValueError struct {
	// Field is the field filtered: "allergens", "diets" or "cuisines".
	Field string
	// Value is the value given.
	Value string
	// Nearest is the known value nearest to Value by edit distance, ""
	// when none is near enough to suggest.
	Nearest string
	// Known are the values the index holds, sorted.
	Known []string
}

// What is how the error speaks of the field: "allergen", "diet" or
// "cuisine".
func (e *UnknownValueError) What() string { return strings.TrimSuffix(e.Field, "s") }

// Phrase says what no document holds: "no dish lists that allergen".
func (e *UnknownValueError) Phrase() string {
	switch e.Field {
	case "allergens":
		return "no dish lists that allergen"
	case "diets":
		return "no dish suits that diet"
	case "cuisines":
		return "no restaurant serves that cuisine"
	}
	return "no document holds that " + e.What()
}

// Hint is the suggestion and the known values: "did you mean peanut?
// known: egg, milk, peanut".
func (e *UnknownValueError) Hint() string {
	var b strings.Builder
	if e.Nearest != "" {
		fmt.Fprintf(&b, "did you mean %s? ", e.Nearest)
	}
	if len(e.Known) == 0 {
		fmt.Fprintf(&b, "the index holds no %s at all", e.Field)
	} else {
		fmt.Fprintf(&b, "known: %s", strings.Join(e.Known, ", "))
	}
	return b.String()
}

func (e *UnknownValueError) Error() string {
	return fmt.Sprintf("search: %s %q: %s; %s", e.What(), e.Value, e.Phrase(), e.Hint())
}
