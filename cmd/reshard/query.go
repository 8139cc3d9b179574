package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/router"
)

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// writeResult prints a query verb's result: v as JSON with --json, else
// the one line that format makes of args.
func writeResult(w io.Writer, asJSON bool, v any, format string, args ...any) error {
	if asJSON {
		return writeJSON(w, v)
	}
	_, err := fmt.Fprintf(w, format, args...)
	return err
}

func runRoute(args []string, stdout io.Writer) error {
	fs := newFlags("route", "--map F --lat X --lng Y [--json]", stdout)
	mapPath := fs.String("map", "", "map `file` (required)")
	lat := fs.Float64("lat", 0, "latitude in degrees (required)")
	lng := fs.Float64("lng", 0, "longitude in degrees (required)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, "map", "lat", "lng"); err != nil {
		return err
	}
	m, err := readMap(*mapPath)
	if err != nil {
		return err
	}
	cell, err := m.Cell(*lat, *lng)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	s := m.Shard(m.LocateCell(cell))
	out := struct {
		Shard   string `json:"shard"`
		Cell    string `json:"cell"`
		Routing string `json:"routing"`
	}{s.Name, cell.ToToken(), s.Routing}
	return writeResult(stdout, *asJSON, out, "shard %s  cell %s  routing %s\n", out.Shard, out.Cell, out.Routing)
}

func runCover(args []string, stdout io.Writer) error {
	fs := newFlags("cover", "--map F --lat X --lng Y --radius 25mi [--json]", stdout)
	mapPath := fs.String("map", "", "map `file` (required)")
	lat := fs.Float64("lat", 0, "latitude of the centre in degrees (required)")
	lng := fs.Float64("lng", 0, "longitude of the centre in degrees (required)")
	radius := fs.String("radius", "", "radius with a unit: m, km or mi, e.g. 25mi (required)")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, "map", "lat", "lng", "radius"); err != nil {
		return err
	}
	r, err := router.ParseDistance(*radius)
	if err != nil {
		return badInput("--radius: %v", err)
	}
	m, err := readMap(*mapPath)
	if err != nil {
		return err
	}
	cov, err := m.CoverCircle(*lat, *lng, r)
	if err != nil {
		return cli.UsageError{Err: err}
	}
	out := struct {
		Cells   int64    `json:"cells"`
		Shards  []string `json:"shards"`
		Routing string   `json:"routing"`
	}{cov.NumCells, m.Names(cov.Shards), m.Routing(cov.Shards)}
	return writeResult(stdout, *asJSON, out, "cells %d  shards %v  routing %s\n", out.Cells, out.Shards, out.Routing)
}

func runEval(args []string, stdout io.Writer) error {
	fs := newFlags("eval", "--map F --loads F [--queries F] [--json]", stdout)
	mapPath := fs.String("map", "", "map `file` (required)")
	loadsPath := fs.String("loads", "", "document load per cell: CSV `file` with header cell,docs (required)")
	queriesPath := fs.String("queries", "", "search workload: CSV `file` with header lat,lng,radius_m[,weight]; default: derived from the loads")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args, "map", "loads"); err != nil {
		return err
	}
	m, err := readMap(*mapPath)
	if err != nil {
		return err
	}
	loads, err := readLoads(*loadsPath, m.Level())
	if err != nil {
		return err
	}
	work, desc, err := readWorkload(*queriesPath, loads, m.Level())
	if err != nil {
		return err
	}
	met, err := router.Evaluate(m, loads, work)
	if err != nil {
		return err
	}
	out := struct {
		Shards      int     `json:"shards"`
		CV          float64 `json:"cv"`
		MaxOverMean float64 `json:"max_over_mean"`
		Fanout      float64 `json:"fanout"`
		Queries     int     `json:"queries"`
		MapHash     string  `json:"map_hash"`
	}{met.Shards, round(met.CV, 4), round(met.MaxOverMean, 4), round(met.Fanout, 4), met.Queries, m.Hash()}
	return writeResult(stdout, *asJSON, out, "map %s: %d shards  cv %.4f  max/mean %.4f  fan-out %.4f over %s\n",
		m.ShortHash(), out.Shards, out.CV, out.MaxOverMean, out.Fanout, desc)
}
