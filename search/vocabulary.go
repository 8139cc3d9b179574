package search

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// vocabularyFields are the keyword fields a search filters by exact
// value: a dish's allergens and diets, a restaurant's cuisines.
var vocabularyFields = []string{"allergens", "diets", "cuisines"}

// vocabularySize bounds the values read of each field: far more than a
// menu's vocabulary holds (the generator knows 9 allergens, 5 diets and
// 18 cuisines), so the terms aggregation returns every one.
const vocabularySize = 1000

// Vocabulary is the values the index holds of each filtered field, each
// list sorted. An application reads it once in a while (it changes only
// as the menus do) and checks each query's filters with Check before it
// searches, so that a misspelt value is refused rather than matching
// nothing, or leaving nothing out, without a word.
type Vocabulary struct {
	Allergens []string `json:"allergens"`
	Diets     []string `json:"diets"`
	Cuisines  []string `json:"cuisines"`
}

// Vocabulary reads the values of the filtered fields from every shard
// of the alias's index.
func (c *Client) Vocabulary(ctx context.Context) (*Vocabulary, error) {
	_, routed, err := c.route(ctx, Area{}, true)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(vocabularyBody())
	if err != nil {
		return nil, err
	}
	var resp searchResponse
	if err := c.post(ctx, routed, body, &resp); err != nil {
		return nil, fmt.Errorf("search: vocabulary: %w", err)
	}
	v := &Vocabulary{}
	for _, f := range []struct {
		name string
		to   *[]string
	}{{"allergens", &v.Allergens}, {"diets", &v.Diets}, {"cuisines", &v.Cuisines}} {
		counts, err := resp.termsCounts(f.name)
		if err != nil {
			return nil, fmt.Errorf("search: vocabulary: %w", err)
		}
		*f.to = []string{}
		for k := range counts {
			*f.to = append(*f.to, k)
		}
		slices.Sort(*f.to)
	}
	return v, nil
}

// Check refuses the first value of q's allergen, diet or cuisine
// filters that the vocabulary does not hold, as an *UnknownValueError
// that suggests the nearest value it does.
func (v *Vocabulary) Check(q DishQuery) error {
	for _, f := range []struct {
		field        string
		given, known []string
	}{{"allergens", q.AllergenFree, v.Allergens}, {"diets", q.Diets, v.Diets}, {"cuisines", q.Cuisines, v.Cuisines}} {
		for _, g := range f.given {
			if !slices.Contains(f.known, g) {
				return &UnknownValueError{Field: f.field, Value: g, Nearest: Nearest(g, f.known), Known: f.known}
			}
		}
	}
	return nil
}

// CheckRestaurants is Check for a restaurant search: its cuisines, and
// the filters of the dishes it must serve.
func (v *Vocabulary) CheckRestaurants(q RestaurantQuery) error {
	s := q.Serves
	s.Cuisines = q.Cuisines
	return v.Check(s)
}

// Nearest returns the value of known nearest to s by edit distance
// (ignoring case), or "" when none is near enough to be a misspelling of
// it: at most a third of the longer word's letters changed, and never
// more than 3. Ties go to the first in known.
func Nearest(s string, known []string) string {
	best, bestD := "", -1
	ls := strings.ToLower(s)
	for _, k := range known {
		d := EditDistance(ls, strings.ToLower(k))
		limit := min(3, max(1, max(len([]rune(ls)), len([]rune(k)))/3))
		if d <= limit && (bestD < 0 || d < bestD) {
			best, bestD = k, d
		}
	}
	return best
}

// EditDistance is the optimal string alignment distance between a and b:
// the fewest insertions, deletions, substitutions and swaps of adjacent
// letters that turn one into the other ("peanutt" is 1 from "peanut",
// "vegna" 1 from "vegan").
func EditDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// d[i][j] is the distance of x[:i] and y[:j]; three rows suffice.
	prev2 := make([]int, len(y)+1)
	prev := make([]int, len(y)+1)
	cur := make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}
