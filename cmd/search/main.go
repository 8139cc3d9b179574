// Command search asks the menu index what an application would: dishes
// (or restaurants) near a point or inside the visible map rectangle,
// routed to the geoshards that cover the area, with the sidebar counts.
//
//	search --opensearch https://search:9200 --lat 37.77 --lng -122.42 --radius 15mi --diet vegan
//	search --rect 37.70,-122.52,37.81,-122.36 --query pizza --allergen-free milk --json
//	search --lat 40.71 --lng -74.0 --radius 5mi --restaurants --cuisine thai
//
// Every flag has a GEOSHARD_* environment variable (shown in --help),
// parsed as the flag is. Exit status: 0, 2 for bad flags, 1 for any other
// failure.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/cmd/internal/cli"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/search"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

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
	alias, mapFile       string
	lat, lng             float64
	radius, rect         string
	query                string
	allergenFree, diets  list
	cuisines             list
	minPrice, maxPrice   float64
	size                 int
	allShards, restaurts bool
	asJSON               bool
	area                 search.Area
	mapHash              string
}

func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("search", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cf := cli.RegisterClientFlags(fs, &o.client, getenv)
	fs.StringVar(&o.alias, "alias", "menu", "alias to search; its write index's map routes the search (GEOSHARD_ALIAS)")
	fs.StringVar(&o.mapFile, "map", "", "optional map `file`: refuse an index built with another map (GEOSHARD_MAP)")
	fs.Float64Var(&o.lat, "lat", 0, "latitude of the centre, with --lng and --radius")
	fs.Float64Var(&o.lng, "lng", 0, "longitude of the centre")
	fs.StringVar(&o.radius, "radius", "", "search radius, a number and a unit: 15mi, 25km, 800m")
	fs.StringVar(&o.rect, "rect", "", "the visible map instead: `south,west,north,east` in degrees")
	fs.StringVar(&o.query, "query", "", "text matched on dish and restaurant names")
	fs.Var(&o.allergenFree, "allergen-free", "leave out dishes with this `allergen` (repeatable, or comma-separated)")
	fs.Var(&o.diets, "diet", "keep dishes that suit this `diet` (repeatable: all must hold)")
	fs.Var(&o.cuisines, "cuisine", "keep restaurants of this `cuisine` (repeatable: any may hold)")
	fs.Float64Var(&o.minPrice, "min-price", 0, "lowest dish price in dollars")
	fs.Float64Var(&o.maxPrice, "max-price", 0, "highest dish price in dollars")
	fs.IntVar(&o.size, "size", 20, "results, nearest first (at most 100)")
	fs.BoolVar(&o.allShards, "all-shards", false, "ask every shard, not only those that cover the area (to compare)")
	fs.BoolVar(&o.restaurts, "restaurants", false, "search restaurants (that serve a dish passing the dish filters) instead of dishes")
	fs.BoolVar(&o.asJSON, "json", false, "print the result as JSON")
	if err := cli.Parse(fs, args, getenv); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, cli.UsageError{Err: fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	if err := cf.Resolve(); err != nil {
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
		r, err := router.ParseDistance(o.radius)
		if err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("--radius: %w", err)}
		}
		if _, err := router.Circle(o.lat, o.lng, r); err != nil {
			return nil, cli.UsageError{Err: err}
		}
		o.area = search.Circle(o.lat, o.lng, r)
	case o.rect != "":
		parts := strings.Split(o.rect, ",")
		if len(parts) != 4 {
			return nil, cli.UsageError{Err: fmt.Errorf("--rect %q: want south,west,north,east", o.rect)}
		}
		var v [4]float64
		for i, p := range parts {
			f, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
			if err != nil {
				return nil, cli.UsageError{Err: fmt.Errorf("--rect %q: %q is not a number", o.rect, p)}
			}
			v[i] = f
		}
		if _, err := router.Rect(v[0], v[1], v[2], v[3]); err != nil {
			return nil, cli.UsageError{Err: fmt.Errorf("--rect: %w", err)}
		}
		o.area = search.Rect(v[0], v[1], v[2], v[3])
	}
	if o.size < 1 || o.size > 100 {
		return nil, cli.UsageError{Err: fmt.Errorf("--size %d: want 1 to 100", o.size)}
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
			return nil, cli.UsageError{Err: fmt.Errorf("--map %s: %w", o.mapFile, err)}
		}
		o.mapHash = m.Hash()
	}
	return o, nil
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "search: %v\n", err)
		return 2
	}
	if err := execute(ctx, o, stdout); err != nil {
		fmt.Fprintf(stderr, "search: %v\n", err)
		return 1
	}
	return 0
}

func execute(ctx context.Context, o *options, w io.Writer) error {
	client, err := bulk.NewClient(o.client)
	if err != nil {
		return err
	}
	c, err := search.Open(ctx, client, search.Config{Alias: o.alias, MapHash: o.mapHash})
	if err != nil {
		return err
	}
	dq := search.DishQuery{
		Area: o.area, Text: o.query, AllergenFree: o.allergenFree, Diets: o.diets, Cuisines: o.cuisines,
		MinPriceCents: int(o.minPrice*100 + 0.5), MaxPriceCents: int(o.maxPrice*100 + 0.5), Size: o.size, AllShards: o.allShards,
	}
	if o.restaurts {
		res, err := c.Restaurants(ctx, search.RestaurantQuery{Area: o.area, Cuisines: o.cuisines, Serves: dq, Size: o.size, AllShards: o.allShards})
		if err != nil {
			return err
		}
		if o.asJSON {
			return writeJSON(w, map[string]any{
				"shards": res.Shards, "routing": res.Routing, "all_shards": res.AllShards, "total": res.Total,
				"restaurants": res.Restaurants, "facets": map[string]any{"cuisines": res.Cuisines}, "took_ms": res.Took.Milliseconds(),
			})
		}
		writeRouted(w, res.Routed, res.Total, "restaurants", res.Took)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "distance\trestaurant\tcuisines\tid")
		for _, r := range res.Restaurants {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", distance(r.DistanceM), r.Name, strings.Join(r.Cuisines, ", "), r.ID)
		}
		tw.Flush()
		writeFacet(w, "cuisines", res.Cuisines)
		return nil
	}
	res, err := c.Dishes(ctx, dq)
	if err != nil {
		return err
	}
	if o.asJSON {
		return writeJSON(w, map[string]any{
			"shards": res.Shards, "routing": res.Routing, "all_shards": res.AllShards, "total": res.Total, "dishes": res.Dishes,
			"facets": res.Facets, "took_ms": res.Took.Milliseconds(),
		})
	}
	writeRouted(w, res.Routed, res.Total, "dishes", res.Took)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "distance\tdish\tprice\trestaurant\tallergens\tdiets")
	for _, d := range res.Dishes {
		fmt.Fprintf(tw, "%s\t%s\t$%.2f\t%s\t%s\t%s\n", distance(d.DistanceM), d.Name, float64(d.PriceCents)/100, d.Restaurant,
			orDash(strings.Join(d.Allergens, ", ")), orDash(strings.Join(d.Diets, ", ")))
	}
	tw.Flush()
	writeFacet(w, "allergens", res.Facets.Allergens)
	writeFacet(w, "diets", res.Facets.Diets)
	writeFacet(w, "cuisines (restaurants)", res.Facets.Cuisines)
	bands := make([]string, 0, len(search.PriceBands))
	for _, b := range search.PriceBands {
		bands = append(bands, fmt.Sprintf("%s %d", b.Key, res.Facets.PriceBands[b.Key]))
	}
	fmt.Fprintf(w, "price: %s\n", strings.Join(bands, "  "))
	return nil
}

func writeRouted(w io.Writer, r search.Routed, total int64, what string, took time.Duration) {
	asked := fmt.Sprintf("%d shards %v (routing %s)", len(r.Shards), r.Shards, r.Routing)
	if r.AllShards {
		asked = fmt.Sprintf("every shard (%d)", len(r.Shards))
	}
	fmt.Fprintf(w, "%s: %d %s in %s; asked %s\n\n", r.Index, total, what, took.Round(time.Millisecond), asked)
}

// writeFacet prints a facet's counts, largest first.
func writeFacet(w io.Writer, name string, counts map[string]int64) {
	type kv struct {
		k string
		v int64
	}
	var list []kv
	for k, v := range counts {
		list = append(list, kv{k, v})
	}
	for i := 1; i < len(list); i++ {
		for j := i; j > 0 && (list[j].v > list[j-1].v || list[j].v == list[j-1].v && list[j].k < list[j-1].k); j-- {
			list[j], list[j-1] = list[j-1], list[j]
		}
	}
	parts := make([]string, len(list))
	for i, e := range list {
		parts[i] = fmt.Sprintf("%s %d", e.k, e.v)
	}
	fmt.Fprintf(w, "%s: %s\n", name, orDash(strings.Join(parts, "  ")))
}

func distance(m float64) string {
	switch {
	case m < 0:
		return "-"
	case m < 1000:
		return fmt.Sprintf("%.0f m", m)
	}
	return fmt.Sprintf("%.1f km", m/1000)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
