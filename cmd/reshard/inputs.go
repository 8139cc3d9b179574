package main

import (
	"fmt"
	"os"

	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/router"
)

func readMap(path string) (*router.Map, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, badInput("--map: %v", err)
	}
	m, err := router.Parse(data)
	if err != nil {
		return nil, badInput("--map %s: %v", path, err)
	}
	return m, nil
}

func readLoads(path string, level int) ([]router.CellLoad, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, badInput("--loads: %v", err)
	}
	defer f.Close()
	loads, err := router.ReadLoads(f, level)
	if err != nil {
		return nil, badInput("--loads %s: %v", path, err)
	}
	return loads, nil
}

// readWorkload covers the queries in path, or derives a workload from the
// loads when path is empty. It returns a description for reports.
func readWorkload(path string, loads []router.CellLoad, level int) (*router.Workload, string, error) {
	if path == "" {
		w, err := router.DeriveWorkload(loads, level, router.DefaultDerivedCentres)
		if err != nil {
			return nil, "", err
		}
		return w, fmt.Sprintf("derived from the loads: %s searches (%s centres × 5 radii, repeats merged)", cli.Commas(int64(w.Len())), cli.Commas(router.DefaultDerivedCentres)), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, "", badInput("--queries: %v", err)
	}
	defer f.Close()
	qs, err := router.ReadQueries(f)
	if err != nil {
		return nil, "", badInput("--queries %s: %v", path, err)
	}
	w, err := router.NewWorkload(qs, level)
	if err != nil {
		return nil, "", badInput("--queries %s: %v", path, err)
	}
	return w, fmt.Sprintf("%s: %s searches", path, cli.Commas(int64(w.Len()))), nil
}
