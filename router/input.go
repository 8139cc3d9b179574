package router

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/golang/geo/s2"
)

// CellLoad is the document load of one cell: how many documents live there
// (one per restaurant, one per dish).
type CellLoad struct {
	Cell s2.CellID
	Docs int64
}

// Query is one search of a workload: a circle and how often it is asked.
type Query struct {
	Lat, Lng float64
	RadiusM  float64
	// Weight is the relative frequency of the search; 0 reads as 1.
	Weight float64
}

func (q Query) weight() float64 {
	if q.Weight == 0 {
		return 1
	}
	return q.Weight
}

// ReadLoads reads a load file: CSV with the header "cell,docs", one row per
// cell, the cell a canonical S2 token at the given level and docs a
// non-negative integer. Rows may come in any order; a cell may appear once.
// Errors are *InputError values that name the line.
func ReadLoads(r io.Reader, level int) ([]CellLoad, error) {
	var out []CellLoad
	seen := make(map[s2.CellID]int)
	err := readCSV(r, "loads", []string{"cell", "docs"}, func(line int, rec []string) error {
		id, err := ParseCellAt(rec[0], level)
		if err != nil {
			return fmt.Errorf("cell %v", err)
		}
		docs, err := strconv.ParseInt(rec[1], 10, 64)
		if err != nil || docs < 0 {
			return fmt.Errorf("docs %q: want a non-negative integer", rec[1])
		}
		if first, dup := seen[id]; dup {
			return fmt.Errorf("cell %q already given on line %d", rec[0], first)
		}
		seen[id] = line
		out = append(out, CellLoad{Cell: id, Docs: docs})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, &InputError{Input: "loads", Line: 1, Err: errors.New("no cells after the header")}
	}
	return out, nil
}

// ReadQueries reads a search workload: CSV with the header
// "lat,lng,radius_m" and optionally a fourth column "weight".
func ReadQueries(r io.Reader) ([]Query, error) {
	var out []Query
	err := readCSV(r, "queries", []string{"lat", "lng", "radius_m", "weight?"}, func(line int, rec []string) error {
		var v [4]float64
		v[3] = 1
		for k, f := range rec {
			x, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("column %d %q: want a finite number", k+1, f)
			}
			v[k] = x
		}
		if err := CheckLatLng(v[0], v[1]); err != nil {
			return err
		}
		if !(v[2] > 0 && v[2] <= MaxRadiusM) {
			return fmt.Errorf("radius_m %v: %w", v[2], ErrBadRadius)
		}
		if !(v[3] > 0) {
			return fmt.Errorf("weight %v: want a positive number", v[3])
		}
		out = append(out, Query{Lat: v[0], Lng: v[1], RadiusM: v[2], Weight: v[3]})
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, &InputError{Input: "queries", Line: 1, Err: errors.New("no queries after the header")}
	}
	return out, nil
}

// readCSV checks the header against want (a trailing "?" marks an optional
// column) and calls row for every record with its 1-based line number.
func readCSV(r io.Reader, input string, want []string, row func(line int, rec []string) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	required := 0
	for _, w := range want {
		if !strings.HasSuffix(w, "?") {
			required++
		}
	}
	header, err := cr.Read()
	if err == io.EOF {
		return &InputError{Input: input, Line: 1, Err: errors.New("empty input, want a header line")}
	}
	if err != nil {
		return csvError(input, err)
	}
	cols := len(header)
	okHeader := cols >= required && cols <= len(want)
	for k := 0; okHeader && k < cols; k++ {
		okHeader = strings.TrimSpace(strings.ToLower(header[k])) == strings.TrimSuffix(want[k], "?")
	}
	if !okHeader {
		return &InputError{Input: input, Line: 1, Err: fmt.Errorf("header %q, want %q", strings.Join(header, ","),
			strings.ReplaceAll(strings.Join(want, ","), "?", ""))}
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return csvError(input, err)
		}
		line, _ := cr.FieldPos(0)
		if len(rec) != cols {
			return &InputError{Input: input, Line: line, Err: fmt.Errorf("%d fields, want %d", len(rec), cols)}
		}
		if err := row(line, rec); err != nil {
			return &InputError{Input: input, Line: line, Err: err}
		}
	}
}

func csvError(input string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &InputError{Input: input, Line: pe.Line, Err: pe.Err}
	}
	return fmt.Errorf("router: read %s: %w", input, err)
}

// ParseDistance parses a distance with a unit, "500m", "10km", "25mi" (also
// with a space, "25 mi"), into metres. A bare number is an error: the unit is
// too easy to get wrong.
func ParseDistance(s string) (float64, error) {
	t := strings.TrimSpace(strings.ToLower(s))
	units := []struct {
		suffix string
		metres float64
	}{{"km", 1000}, {"mi", 1609.344}, {"m", 1}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(t, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("router: distance %q: %q is not a number", s, num)
			}
			m := v * u.metres
			if !(m > 0 && m <= MaxRadiusM) {
				return 0, fmt.Errorf("router: distance %q: %w (want more than 0 and at most %.0f km, half the Earth's circumference)", s, ErrBadRadius, MaxRadiusM/1000)
			}
			return m, nil
		}
	}
	return 0, fmt.Errorf("router: distance %q: want a number and a unit, m, km or mi (e.g. 25mi)", s)
}

// WriteLoads writes loads in the format ReadLoads reads: the header
// "cell,docs", then one "<token>,<docs>" line per load in slice order.
func WriteLoads(w io.Writer, loads []CellLoad) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	bw.WriteString("cell,docs\n")
	var buf []byte
	for _, l := range loads {
		buf = append(buf[:0], l.Cell.ToToken()...)
		buf = append(buf, ',')
		buf = strconv.AppendInt(buf, l.Docs, 10)
		buf = append(buf, '\n')
		bw.Write(buf) // a write error sticks and Flush reports it
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("router: write loads: %w", err)
	}
	return nil
}

// WriteQueries writes a workload in the format ReadQueries reads: the
// header "lat,lng,radius_m", then one line per query with lat and lng to 5
// decimals (about 1 m) and radius_m to 1 decimal. Weights other than 1 add a
// fourth column, "weight", to every line.
func WriteQueries(w io.Writer, qs []Query) error {
	weighted := false
	for _, q := range qs {
		weighted = weighted || q.weight() != 1
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if weighted {
		bw.WriteString("lat,lng,radius_m,weight\n")
	} else {
		bw.WriteString("lat,lng,radius_m\n")
	}
	var buf []byte
	for _, q := range qs {
		buf = appendFixed(buf[:0], q.Lat, 5)
		buf = append(buf, ',')
		buf = appendFixed(buf, q.Lng, 5)
		buf = append(buf, ',')
		buf = appendFixed(buf, q.RadiusM, 1)
		if weighted {
			buf = append(buf, ',')
			buf = strconv.AppendFloat(buf, q.weight(), 'g', -1, 64)
		}
		buf = append(buf, '\n')
		bw.Write(buf)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("router: write queries: %w", err)
	}
	return nil
}

// appendFixed appends v with prec decimals, never as "-0.000".
func appendFixed(buf []byte, v float64, prec int) []byte {
	p := math.Pow10(prec)
	v = math.Round(v*p) / p
	if v == 0 {
		v = 0 // turn -0 into 0
	}
	return strconv.AppendFloat(buf, v, 'f', prec, 64)
}
