package search

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/realenv"
)

// TestVocabulary: the vocabulary is every value the index holds, and
// Check refuses a value outside it with the nearest one suggested.
func TestVocabulary(t *testing.T) {
	realenv.Parallel(t)
	f := newFixture(t)
	ctx := context.Background()
	c, err := Open(ctx, f.client, Config{Alias: f.alias})
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.Vocabulary(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := Vocabulary{
		Allergens: []string{"egg", "fish", "milk", "peanut", "shellfish", "wheat"},
		Diets:     []string{"gluten_free", "vegan", "vegetarian"},
		Cuisines:  []string{"italian", "mexican", "pizza", "thai", "vegan"},
	}
	if !slices.Equal(v.Allergens, want.Allergens) || !slices.Equal(v.Diets, want.Diets) || !slices.Equal(v.Cuisines, want.Cuisines) {
		t.Errorf("Vocabulary = %+v, want %+v", *v, want)
	}
	for _, tc := range []struct {
		name           string
		q              DishQuery
		field, nearest string // field "": accepted
		msg            string
	}{
		{"known", DishQuery{AllergenFree: []string{"peanut", "milk"}, Diets: []string{"vegan"}, Cuisines: []string{"thai"}}, "", "", ""},
		{"peanutt", DishQuery{AllergenFree: []string{"milk", "peanutt"}}, "allergens", "peanut",
			`search: allergen "peanutt": no dish lists that allergen; did you mean peanut? known: egg, fish, milk, peanut, shellfish, wheat`},
		{"keto", DishQuery{Diets: []string{"keto"}}, "diets", "",
			`search: diet "keto": no dish suits that diet; known: gluten_free, vegan, vegetarian`},
		{"vegna swapped", DishQuery{Diets: []string{"vegna"}}, "diets", "vegan", "did you mean vegan?"},
		{"Thai in capitals", DishQuery{Cuisines: []string{"Thai"}}, "cuisines", "thai", "no restaurant serves that cuisine; did you mean thai?"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := v.Check(tc.q)
			var ue *UnknownValueError
			switch {
			case tc.field == "" && err != nil:
				t.Errorf("Check = %v, want nil", err)
			case tc.field != "" && (!errors.As(err, &ue) || ue.Field != tc.field || ue.Nearest != tc.nearest || !strings.Contains(err.Error(), tc.msg)):
				t.Errorf("Check = %v, want an *UnknownValueError of %s suggesting %q and saying %q", err, tc.field, tc.nearest, tc.msg)
			}
		})
	}
	if err := v.CheckRestaurants(RestaurantQuery{Cuisines: []string{"thia"}}); err == nil || !strings.Contains(err.Error(), "did you mean thai?") {
		t.Errorf("CheckRestaurants(thia) = %v, want thai suggested", err)
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"peanut", "peanut", 0}, {"peanutt", "peanut", 1}, {"", "egg", 3},
		{"vegna", "vegan", 1}, {"kitten", "sitting", 3}, {"keto", "vegan", 4}, {"glutenfree", "gluten_free", 1},
		{"café", "cafe", 1},
	} {
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := EditDistance(tc.b, tc.a); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.b, tc.a, got, tc.want)
		}
	}
}

func TestNearest(t *testing.T) {
	known := []string{"egg", "milk", "peanut", "sesame", "soy", "tree_nut"}
	for _, tc := range []struct{ s, want string }{
		{"peanutt", "peanut"}, {"PEANUT", "peanut"}, {"eggs", "egg"}, {"treenut", "tree_nut"},
		{"gluten", ""}, {"x", ""}, {"so", "soy"},
	} {
		if got := Nearest(tc.s, known); got != tc.want {
			t.Errorf("Nearest(%q) = %q, want %q", tc.s, got, tc.want)
		}
	}
}

// TestAliasDoesNotExist: an alias that is neither an alias nor an index
// says so, once.
func TestAliasDoesNotExist(t *testing.T) {
	realenv.Parallel(t)
	f := newEmptyFixture(t)
	_, err := Open(context.Background(), f.client, Config{Alias: "nope-" + f.alias})
	if !errors.Is(err, ErrAliasNotFound) || strings.Count(err.Error(), "search:") != 1 || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("Open(nope) = %v, want ErrAliasNotFound saying it does not exist, prefixed once", err)
	}
}
