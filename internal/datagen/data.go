package datagen

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

//go:embed data/cities.csv
var citiesCSV []byte

// citiesHeader is the exact header ReadCities requires, in column order.
var citiesHeader = []string{"name", "country", "lat", "lng", "population"}

// City is one populated place from the GeoNames extract.
//
// Invariants for every City returned by ReadCities: Name is non-empty,
// Country is a two-letter upper-case ISO 3166-1 alpha-2 code, Lat is in
// [-90, 90], Lng is in [-180, 180] and Population is >= 0.
type City struct {
	Name       string
	Country    string
	Lat, Lng   float64
	Population int64
}

// Cities parses the embedded GeoNames extract (data/cities.csv): 24,323
// cities with population >= 15,000, largest first. Each call returns a fresh
// slice that the caller may modify.
func Cities() ([]City, error) {
	return ReadCities(bytes.NewReader(citiesCSV))
}

// ReadCities parses CSV with the header "name,country,lat,lng,population".
// Rows keep their input order. Errors name the 1-based line number (the
// header is line 1) and the offending column, for example
//
//	datagen: cities line 17: bad lat "x"
func ReadCities(r io.Reader) ([]City, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1 // checked below so the error names the line
	cr.ReuseRecord = true

	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, errors.New("datagen: cities: empty input, want header " + strings.Join(citiesHeader, ","))
	}
	if err != nil {
		return nil, fmt.Errorf("datagen: cities: %w", err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff") // tolerate a UTF-8 BOM
	}
	if !slices.Equal(header, citiesHeader) {
		return nil, fmt.Errorf("datagen: cities line 1: header %q, want %q",
			strings.Join(header, ","), strings.Join(citiesHeader, ","))
	}

	var cities []City
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return cities, nil
		}
		if err != nil {
			// csv.ParseError already carries the line number.
			return nil, fmt.Errorf("datagen: cities: %w", err)
		}
		line, _ := cr.FieldPos(0)
		c, err := parseCity(rec)
		if err != nil {
			return nil, fmt.Errorf("datagen: cities line %d: %w", line, err)
		}
		cities = append(cities, c)
	}
}

// parseCity converts one record; errors name the column but not the line.
func parseCity(rec []string) (City, error) {
	if len(rec) != len(citiesHeader) {
		return City{}, fmt.Errorf("%d columns, want %d", len(rec), len(citiesHeader))
	}
	c := City{Name: rec[0], Country: rec[1]}
	if c.Name == "" {
		return City{}, errors.New("empty name")
	}
	if !isCountryCode(c.Country) {
		return City{}, fmt.Errorf("bad country %q, want two upper-case letters", c.Country)
	}
	var err error
	if c.Lat, err = parseCoord(rec[2], 90); err != nil {
		return City{}, fmt.Errorf("bad lat %q: %w", rec[2], err)
	}
	if c.Lng, err = parseCoord(rec[3], 180); err != nil {
		return City{}, fmt.Errorf("bad lng %q: %w", rec[3], err)
	}
	c.Population, err = strconv.ParseInt(rec[4], 10, 64)
	if err != nil {
		return City{}, fmt.Errorf("bad population %q: %w", rec[4], errors.Unwrap(err))
	}
	if c.Population < 0 {
		return City{}, fmt.Errorf("bad population %q: negative", rec[4])
	}
	return c, nil
}

// parseCoord parses a decimal degree value that must lie in [-limit, limit].
func parseCoord(s string, limit float64) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, errors.Unwrap(err) // drop strconv's repetition of the input
	}
	if math.IsNaN(v) || v < -limit || v > limit {
		return 0, fmt.Errorf("out of range [-%g, %g]", limit, limit)
	}
	return v, nil
}

// isCountryCode reports whether s looks like an ISO 3166-1 alpha-2 code.
func isCountryCode(s string) bool {
	return len(s) == 2 && 'A' <= s[0] && s[0] <= 'Z' && 'A' <= s[1] && s[1] <= 'Z'
}
