package search

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// A page token continues a nearest-first listing where the last page
// ended. It is opaque to the application: base64url of a small JSON
// object holding the sort values search_after resumes from and a digest
// of the query it belongs to, so a token given to another search is
// refused (CursorError) rather than resuming somewhere meaningless.
//
// The listings are totally ordered, so a page neither repeats nor skips
// a result of the one before (as long as the index does not change
// between them: search_after without a point in time sees each page's
// own refresh). Restaurants sort by distance from the area's centre and
// then by doc_id, which is unique; without an area, by doc_id alone.
// Dishes sort by their restaurant's place in that order and then by
// their own doc_id. A dish page may end inside a restaurant's dishes:
// its token then resumes the restaurants after the one before it (After)
// and skips that restaurant's dishes up to the last one listed (Rest,
// Dish).
type cursor struct {
	// V is the token's format, 1.
	V int `json:"v"`
	// Kind is "dishes" or "restaurants".
	Kind string `json:"k"`
	// Query is the digest of the query's identity (queryDigest).
	Query string `json:"q"`
	// After are the sort values of the last restaurant listed in full,
	// as the server rendered them; none: from the start.
	After []json.RawMessage `json:"a,omitempty"`
	// Rest is the _id of a restaurant whose dishes were listed in part,
	// the first restaurant after After; Dish is the doc_id of its last
	// dish listed.
	Rest string `json:"r,omitempty"`
	Dish string `json:"d,omitempty"`
}

const cursorVersion = 1

func (c cursor) token() string {
	b, _ := json.Marshal(c) // strings and raw JSON values only: cannot fail
	return base64.RawURLEncoding.EncodeToString(b)
}

// decodeCursor reads a token for a search of kind whose digest is
// digest.
func decodeCursor(token, kind, digest string) (cursor, error) {
	var c cursor
	b, err := base64.RawURLEncoding.DecodeString(strings.TrimSpace(token))
	if err != nil || json.Unmarshal(b, &c) != nil || c.V != cursorVersion || c.Query == "" {
		return cursor{}, &CursorError{Reason: "not a token this search wrote (copy the whole \"next\" value)"}
	}
	if c.Kind != kind {
		return cursor{}, &CursorError{Reason: fmt.Sprintf("the token continues a search of %s, not of %s", c.Kind, kind)}
	}
	if c.Query != digest {
		return cursor{}, &CursorError{Reason: fmt.Sprintf("the token continues another search of %s (its area, text or filters differ); repeat that search's flags, or drop the token to start again", kind)}
	}
	for _, v := range c.After {
		var x any
		if json.Unmarshal(v, &x) != nil {
			return cursor{}, &CursorError{Reason: "not a token this search wrote (copy the whole \"next\" value)"}
		}
		switch x.(type) {
		case map[string]any, []any:
			return cursor{}, &CursorError{Reason: "not a token this search wrote (copy the whole \"next\" value)"}
		}
	}
	return c, nil
}

// identity is what a query's results depend on: the area, the text and
// the filters, lists as sets. The size and the shards asked do not
// change the order, so a page may differ from the last in either.
type identity struct {
	Area         string    `json:"area,omitempty"`
	Text         string    `json:"text,omitempty"`
	AllergenFree []string  `json:"allergen_free,omitempty"`
	Diets        []string  `json:"diets,omitempty"`
	Cuisines     []string  `json:"cuisines,omitempty"`
	MinPrice     int       `json:"min_price,omitempty"`
	MaxPrice     int       `json:"max_price,omitempty"`
	Serves       *identity `json:"serves,omitempty"`
}

func (a Area) identity() string {
	switch a.kind {
	case 'c':
		return fmt.Sprintf("circle %g,%g %gm", a.lat, a.lng, a.radiusM)
	case 'r':
		return fmt.Sprintf("rect %g,%g,%g,%g", a.south, a.west, a.north, a.east)
	}
	return ""
}

func set(v []string) []string {
	if len(v) == 0 {
		return nil
	}
	s := slices.Clone(v)
	slices.Sort(s)
	return slices.Compact(s)
}

func (q DishQuery) identity() identity {
	return identity{Area: q.Area.identity(), Text: strings.TrimSpace(q.Text), AllergenFree: set(q.AllergenFree), Diets: set(q.Diets),
		Cuisines: set(q.Cuisines), MinPrice: q.MinPriceCents, MaxPrice: q.MaxPriceCents}
}

func (q RestaurantQuery) identity() identity {
	id := identity{Area: q.Area.identity(), Text: strings.TrimSpace(q.Text), Cuisines: set(q.Cuisines)}
	if q.Serves.servesFilter() {
		s := q.Serves
		s.Area, s.Cuisines = Area{}, nil // ignored by the search
		sid := s.identity()
		id.Serves = &sid
	}
	return id
}

func digest(kind string, id identity) string {
	b, _ := json.Marshal(id)
	sum := sha256.Sum256(append([]byte(kind+"\n"), b...))
	return hex.EncodeToString(sum[:8])
}

const (
	kindDishes      = "dishes"
	kindRestaurants = "restaurants"
)
