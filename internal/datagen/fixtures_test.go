package datagen

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/router"
)

// testdataDir is the module's testdata directory, relative to this package.
const testdataDir = "../../testdata"

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testdataDir, filepath.FromSlash(name)))
	if err != nil {
		t.Fatalf("read fixture: %v (regenerate with go generate ./internal/datagen)", err)
	}
	return data
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := range min(len(g), len(w)) {
		if g[i] != w[i] {
			return "line " + strconv.Itoa(i+1) + ": generated " + strconv.Quote(g[i]) + ", committed " + strconv.Quote(w[i])
		}
	}
	return "generated " + strconv.Itoa(len(g)) + " lines, committed " + strconv.Itoa(len(w))
}

func TestFixtures(t *testing.T) {
	cities := mustCities(t)
	us, err := usFixtures(cities)
	if err != nil {
		t.Fatalf("usFixtures() error: %v", err)
	}
	for _, f := range us {
		t.Run(f.Name, func(t *testing.T) {
			committed := readFixture(t, f.Name)
			if !bytes.Equal(f.Data, committed) {
				t.Errorf("generated %s (%d bytes) != committed (%d bytes): %s; regenerate with go generate ./internal/datagen",
					f.Name, len(f.Data), len(committed), firstDiff(f.Data, committed))
			}
		})
	}

	// The world loads take too long to regenerate under -race; check that
	// the committed file is well formed and plausible instead.
	world := Fixture{Name: FixtureWorldLoads, Data: readFixture(t, FixtureWorldLoads), Restaurants: DefaultWorld().Restaurants}
	t.Run(FixtureWorldLoads, func(t *testing.T) {
		loads, err := router.ReadLoads(bytes.NewReader(world.Data), router.DefaultLevel)
		if err != nil {
			t.Fatalf("router.ReadLoads(%s, %d) error: %v", FixtureWorldLoads, router.DefaultLevel, err)
		}
		for i, l := range loads {
			if i > 0 && loads[i-1].Cell >= l.Cell {
				t.Fatalf("%s row %d: cell %v after %v, want strictly ascending", FixtureWorldLoads, i+1, l.Cell, loads[i-1].Cell)
			}
		}
		world.Rows, world.Docs, world.MaxCellDocs = len(loads), TotalDocs(loads), maxDocs(loads)
		if perRestaurant := float64(world.Docs) / float64(world.Restaurants); perRestaurant < 83 || perRestaurant > 89 {
			t.Errorf("%s has %.2f docs per restaurant, want 86 ± 3", FixtureWorldLoads, perRestaurant)
		}
		if world.Rows < 10_000 {
			t.Errorf("%s has %d cells, want >= 10,000", FixtureWorldLoads, world.Rows)
		}
		if len(world.Data) > 4<<20 {
			t.Errorf("%s is %d bytes, want <= 4 MiB", FixtureWorldLoads, len(world.Data))
		}
	})

	t.Run(FixtureReadme, func(t *testing.T) {
		readme, err := readmeFixture(cities, append(us, world))
		if err != nil {
			t.Fatalf("readmeFixture() error: %v", err)
		}
		committed := readFixture(t, FixtureReadme)
		if !bytes.Equal(readme.Data, committed) {
			t.Errorf("generated %s != committed: %s; regenerate with go generate ./internal/datagen",
				FixtureReadme, firstDiff(readme.Data, committed))
		}
		if !strings.Contains(string(committed), Attribution) {
			t.Errorf("%s lacks the GeoNames attribution %q", FixtureReadme, Attribution)
		}
	})
}

func TestDataReadmeAttribution(t *testing.T) {
	data, err := os.ReadFile("data/README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), Attribution) {
		t.Errorf("data/README.md lacks the GeoNames attribution %q", Attribution)
	}
}

func TestGroupDigits(t *testing.T) {
	tests := []struct {
		in   any
		want string
	}{
		{0, "0"}, {999, "999"}, {1000, "1,000"}, {-1234567, "-1,234,567"}, {int64(55884144), "55,884,144"},
	}
	for _, tc := range tests {
		if got := groupDigits(tc.in); got != tc.want {
			t.Errorf("groupDigits(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
