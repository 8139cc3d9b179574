// Command gendata regenerates geoshard's synthetic fixtures: the US
// planning and held-out cell loads, the held-out query workload, the world
// cell loads and a README describing them, and the change-event examples
// and sample under events/.
//
// Usage, from the module root:
//
//	go run ./internal/datagen/cmd/gendata -out testdata
//
// It prints one line per file written.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/geoshard/geoshard/internal/datagen"
)

func main() {
	out := flag.String("out", "testdata", "output `directory` (created if missing)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: gendata [-out dir]\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*out); err != nil {
		fmt.Fprintln(os.Stderr, "gendata:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	cities, err := datagen.Cities()
	if err != nil {
		return err
	}
	files, err := datagen.BuildFixtures(cities)
	if err != nil {
		return err
	}
	events, err := datagen.EventFixtures(cities)
	if err != nil {
		return err
	}
	files = append(files, events...)
	if err := datagen.WriteFixtures(dir, files); err != nil {
		return err
	}
	for _, f := range files {
		f.Name = filepath.Join(dir, filepath.FromSlash(f.Name))
		fmt.Println(f.Summary())
	}
	return nil
}
