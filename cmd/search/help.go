package main

import (
	"strings"

	"github.com/geoshard/geoshard/internal/cli"
)

// The values the filters take in the generated menus (internal/datagen,
// which a command may not import; TestHelpListsTheGeneratorsValues keeps
// them equal). The index's own vocabulary is what a search checks
// against; these are what --help can show without a cluster.
var (
	knownAllergens = []string{"milk", "egg", "fish", "shellfish", "tree_nut", "peanut", "wheat", "soy", "sesame"}
	knownDiets     = []string{"vegetarian", "vegan", "gluten_free", "dairy_free", "halal"}
	knownCuisines  = []string{"american", "bbq", "pizza", "italian", "mexican", "chinese", "japanese", "thai", "vietnamese",
		"korean", "indian", "mediterranean", "middle_eastern", "french", "ethiopian", "seafood", "vegan", "breakfast"}
)

var help = cli.Help{
	Usage: "(--lat N --lng N --radius R | --rect S,W,N,E) [flags]",
	About: `search asks the menu index what an application would: the dishes near a
point (or inside the visible map rectangle), nearest restaurant first,
with the sidebar counts of the matching dishes (allergens, diets, price
bands) and of their restaurants' cuisines. It asks only the shards that
cover the area, under the map the alias's index was built with, and says
which. --restaurants lists restaurants instead. A page that has more
after it ends with a token; --after TOKEN with the same flags gives the
next page.`,
	Examples: []string{
		"search --lat 37.7749 --lng -122.4194 --radius 5km --query taco",
		"search --lat 37.7749 --lng -122.4194 --radius 5km --allergen-free peanut --diet vegan   # dishes without peanut that suit a vegan",
		"search --lat 37.7749 --lng -122.4194 --radius 5km --query taco --after eyJ2IjoxLC...   # the next page: the same flags and the token the last page printed",
		"search --rect 37.70,-122.52,37.81,-122.36 --restaurants --cuisine thai --json",
	},
	After: `values (the generated menus'; a search checks them against those its index
holds, and refuses one that no document has, suggesting the nearest):
  --allergen-free  ` + strings.Join(knownAllergens, ", ") + `
  --diet           ` + strings.Join(knownDiets, ", ") + `
  --cuisine        ` + strings.Join(knownCuisines[:9], ", ") + `,
                   ` + strings.Join(knownCuisines[9:], ", ") + `

exit status: 0; 2 for bad flags, values or page tokens; 1 for any other failure.`,
}
