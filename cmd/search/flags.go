package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/search"
)

// list is a repeatable flag whose values may also be comma-separated.
type list []string

func (l *list) String() string { return strings.Join(*l, ",") }
func (l *list) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*l = append(*l, p)
		}
	}
	return nil
}

type options struct {
	client               bulk.ClientConfig
	clientFlags          *cli.ClientFlags
	alias, mapFile       string
	lat, lng             float64
	radius, rect         string
	query                string
	allergenFree, diets  list
	cuisines             list
	minPrice, maxPrice   float64
	size                 int
	after                string
	allShards, restaurts bool
	asJSON               bool
	area                 search.Area
	mapHash              string
	// args are the command line, for the next page's hint.
	args []string
}

// The query's own flags (area, text, filters, paging) have no GEOSHARD_*
// variable: a filter set in the environment would shape every search
// without showing on its command line, and a page token belongs to one
// command line. The connection, the alias, the map and the page size
// have one.
func parseFlags(args []string, getenv func(string) string, stdout io.Writer) (*options, error) {
	o := &options{args: args}
	fs := cli.NewFlags("search", help, stdout)
	o.clientFlags = cli.RegisterClientFlags(fs, &o.client, getenv)
	fs.StringVar(&o.alias, "alias", "menu", "alias to search; its write index's map routes the search (GEOSHARD_ALIAS)")
	fs.StringVar(&o.mapFile, "map", "", "optional map `file`: refuse an index built with another map (GEOSHARD_MAP)")
	fs.Float64Var(&o.lat, "lat", 0, "latitude of the centre in degrees, -90 to 90, with --lng and --radius")
	fs.Float64Var(&o.lng, "lng", 0, "longitude of the centre in degrees, -180 to 180")
	fs.StringVar(&o.radius, "radius", "", "`distance` from the centre searched, a number and a unit: 15mi, 25km, 800m (more than 0, at most 20015km)")
	fs.StringVar(&o.rect, "rect", "", "the visible map instead: `south,west,north,east` in degrees")
	fs.StringVar(&o.query, "query", "", "`text` matched on dish and restaurant names")
	fs.Var(&o.allergenFree, "allergen-free", "leave out dishes with this `allergen` (repeatable, or comma-separated; values below)")
	fs.Var(&o.diets, "diet", "keep dishes that suit this `diet` (repeatable: all must hold; values below)")
	fs.Var(&o.cuisines, "cuisine", "keep restaurants of this `cuisine` (repeatable: any may hold; values below)")
	fs.Float64Var(&o.minPrice, "min-price", 0, "lowest dish price in `dollars`")
	fs.Float64Var(&o.maxPrice, "max-price", 0, "highest dish price in `dollars`")
	fs.IntVar(&o.size, "size", 20, "results a page, nearest first, 1 to 100 (GEOSHARD_SEARCH_SIZE)")
	fs.StringVar(&o.after, "after", "", "continue after the page that printed this `token`, with the same area, text and filters")
	fs.BoolVar(&o.allShards, "all-shards", false, "ask every shard, not only those that cover the area (to compare)")
	fs.BoolVar(&o.restaurts, "restaurants", false, "search restaurants (that serve a dish passing the dish filters) instead of dishes")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as JSON")
	if err := cli.Parse(fs, args, getenv); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, cli.Hinted(fs, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	if err := o.clientFlags.Resolve(); err != nil {
		return nil, cli.UsageError{Err: err}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	circle := set["lat"] || set["lng"] || set["radius"]
	switch {
	case circle && o.rect != "":
		return nil, cli.UsageError{Err: errors.New("give --lat, --lng and --radius, or --rect, not both")}
	case circle:
		if !set["lat"] || !set["lng"] || !set["radius"] {
			return nil, cli.UsageError{Err: errors.New("a circle needs --lat, --lng and --radius")}
		}
		if err := inRange("--lat", o.lat, -90, 90); err != nil {
			return nil, err
		}
		if err := inRange("--lng", o.lng, -180, 180); err != nil {
			return nil, err
		}
		r, err := router.ParseDistance(o.radius)
		if errors.Is(err, router.ErrBadRadius) {
			return nil, cli.UsageError{Err: fmt.Errorf("--radius %s: radius out of range: want more than 0 and at most %.0f km (half the Earth's circumference)", o.radius, router.MaxRadiusM/1000)}
		}
		if err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("--radius %s: want a number and a unit, m, km or mi (e.g. 25mi)", o.radius)}
		}
		if _, err := router.Circle(o.lat, o.lng, r); err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("--lat %v --lng %v --radius %s: %s", o.lat, o.lng, o.radius, strings.TrimPrefix(err.Error(), "router: "))}
		}
		o.area = search.Circle(o.lat, o.lng, r)
	case o.rect != "":
		parts := strings.Split(o.rect, ",")
		if len(parts) != 4 {
			return nil, cli.UsageError{Err: fmt.Errorf("--rect %q: want south,west,north,east, 4 numbers; got %d", o.rect, len(parts))}
		}
		var v [4]float64
		for i, p := range parts {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				return nil, cli.UsageError{Err: fmt.Errorf("--rect %q: %q is not a number", o.rect, p)}
			}
			v[i] = f
		}
		for i, name := range []string{"south", "west", "north", "east"} {
			lo, hi := -90.0, 90.0
			if i%2 == 1 {
				lo, hi = -180, 180
			}
			if err := inRange("--rect "+o.rect+": "+name, v[i], lo, hi); err != nil {
				return nil, err
			}
		}
		if v[0] > v[2] {
			return nil, cli.UsageError{Err: fmt.Errorf("--rect %s: south %v is north of north %v", o.rect, v[0], v[2])}
		}
		if _, err := router.Rect(v[0], v[1], v[2], v[3]); err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("--rect %s: %s", o.rect, strings.TrimPrefix(err.Error(), "router: "))}
		}
		o.area = search.Rect(v[0], v[1], v[2], v[3])
	}
	if o.size < 1 || o.size > 100 {
		return nil, cli.UsageError{Err: fmt.Errorf("--size %d: out of range: want 1 to 100", o.size)}
	}
	if o.minPrice < 0 || o.maxPrice < 0 || o.maxPrice > 0 && o.maxPrice < o.minPrice {
		return nil, cli.UsageError{Err: fmt.Errorf("--min-price %v, --max-price %v: want 0 <= min <= max", o.minPrice, o.maxPrice)}
	}
	if o.mapFile != "" {
		data, err := os.ReadFile(o.mapFile)
		if err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("--map: %w", err)}
		}
		m, err := router.Parse(data)
		if err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("--map %s: %s", o.mapFile, strings.TrimPrefix(err.Error(), "router: "))}
		}
		o.mapHash = m.Hash()
	}
	return o, nil
}

// inRange refuses v outside [lo, hi], naming what it is, the range and
// the value.
func inRange(what string, v, lo, hi float64) error {
	if v >= lo && v <= hi {
		return nil
	}
	return cli.UsageError{Err: fmt.Errorf("%s %v: out of range: want %v to %v", what, v, lo, hi)}
}
