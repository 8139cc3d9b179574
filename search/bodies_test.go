package search

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/name, or rewrites it under -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./search -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s changed; if that is meant, go test ./search -run %s -update\ngot:\n%s\nwant:\n%s", path, t.Name(), got, want)
	}
}

func indented(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestRequestBodies pins every request body a search sends: a change to
// one fails here until its golden file is rewritten with -update, so
// that the diff of a change shows what OpenSearch is asked.
func TestRequestBodies(t *testing.T) {
	circle := Circle(37.7749, -122.4194, 5000)
	rect := Rect(37.70, -122.52, 37.81, -122.36)
	filtered := DishQuery{Area: circle, Text: "taco", AllergenFree: []string{"peanut", "milk"}, Diets: []string{"vegan"},
		Cuisines: []string{"mexican"}, MinPriceCents: 500, MaxPriceCents: 2000, Size: 10}
	after := []json.RawMessage{json.RawMessage(`1523.873`), json.RawMessage(`"restaurant:r17"`)}
	// A page of 20 asks 21 restaurants: the one more says whether any
	// follow.
	for _, tc := range []struct {
		name string
		body map[string]any
	}{
		{"dishes-facets", facetsBody(DishQuery{Area: circle})},
		{"dishes-facets-filtered", facetsBody(filtered)},
		{"dishes-nearest", nearestBody(DishQuery{Area: circle}, 21, nil)},
		{"dishes-nearest-filtered", nearestBody(filtered, 11, nil)},
		{"dishes-nearest-rect", nearestBody(DishQuery{Area: rect, Diets: []string{"vegan"}}, 21, nil)},
		{"dishes-nearest-no-area", nearestBody(DishQuery{Text: "pizza"}, 21, nil)},
		{"dishes-nearest-after", nearestBody(filtered, 11, after)},
		{"dishes-of", dishesOfBody(DishQuery{Area: circle}, []string{"r17", "r3"}, nil, 400)},
		{"dishes-of-filtered", dishesOfBody(filtered, []string{"r17", "r3"}, nil, 400)},
		{"dishes-of-after", dishesOfBody(filtered, []string{"r17", "r3"}, &partial{restaurantID: "r17", dish: "dish:r17-d4"}, 400)},
		{"restaurants", restaurantsBody(RestaurantQuery{Area: circle}, 21, nil)},
		{"restaurants-filtered", restaurantsBody(RestaurantQuery{Area: rect, Cuisines: []string{"thai"}, Text: "kitchen",
			Serves: DishQuery{AllergenFree: []string{"peanut"}, Diets: []string{"vegan"}, Text: "curry"}}, 21, nil)},
		{"restaurants-after", restaurantsBody(RestaurantQuery{Area: circle}, 21, after)},
		{"vocabulary", vocabularyBody()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, filepath.Join("bodies", tc.name+".json"), indented(t, tc.body))
		})
	}
}
