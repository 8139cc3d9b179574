// Command search asks the menu index what an application would: dishes
// (or restaurants) near a point or inside the visible map rectangle,
// routed to the geoshards that cover the area, with the sidebar counts,
// a page at a time.
//
//	search --opensearch https://search:9200 --lat 37.77 --lng -122.42 --radius 15mi --diet vegan
//	search --rect 37.70,-122.52,37.81,-122.36 --query pizza --allergen-free milk --json
//	search --lat 40.71 --lng -74.0 --radius 5mi --restaurants --cuisine thai
//
// --help says what each flag does, the values the filters take and the
// GEOSHARD_* variable a flag is read from. Exit status: 0, 2 for bad
// flags, filter values or page tokens, 1 for any other failure.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/geoshard/geoshard/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, getenv, stdout)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err == nil {
		err = execute(ctx, o, stdout, stderr)
	}
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "search: %s\n", message(err))
	var ue cli.UsageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// message is err without the package's own "search: ", which the
// command's name prints already.
func message(err error) string {
	return strings.TrimPrefix(err.Error(), "search: ")
}
