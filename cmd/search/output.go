package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/search"
)

func execute(ctx context.Context, o *options, w, stderr io.Writer) error {
	client, err := bulk.NewClient(o.client)
	if err != nil {
		return err
	}
	// A search prints its result and logs nothing else: only the
	// check's warnings show, on stderr.
	warnings := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := o.clientFlags.CheckEngine(ctx, client, warnings); err != nil {
		return err
	}
	c, err := search.Open(ctx, client, search.Config{Alias: o.alias, MapHash: o.mapHash})
	if err != nil {
		return err
	}
	dq := search.DishQuery{
		Area: o.area, Text: o.query, AllergenFree: o.allergenFree, Diets: o.diets, Cuisines: o.cuisines,
		MinPriceCents: int(o.minPrice*100 + 0.5), MaxPriceCents: int(o.maxPrice*100 + 0.5), Size: o.size, AllShards: o.allShards, After: o.after,
	}
	if len(o.allergenFree)+len(o.diets)+len(o.cuisines) > 0 {
		v, err := c.Vocabulary(ctx)
		if err != nil {
			return err
		}
		if err := usage(v.Check(dq)); err != nil {
			return err
		}
	}
	if o.restaurts {
		res, err := c.Restaurants(ctx, search.RestaurantQuery{Area: o.area, Cuisines: o.cuisines, Serves: dq, Size: o.size, AllShards: o.allShards, After: o.after})
		if err != nil {
			return usage(err)
		}
		if o.asJSON {
			out := map[string]any{
				"shards": res.Shards, "routing": res.Routing, "all_shards": res.AllShards, "total": res.Total,
				"restaurants": res.Restaurants, "facets": map[string]any{"cuisines": res.Cuisines}, "took_ms": res.Took.Milliseconds(),
			}
			if res.Next != "" {
				out["next"] = res.Next
			}
			return writeJSON(w, out)
		}
		writeRouted(w, res.Routed, res.Total, "restaurant", res.Took)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "distance\trestaurant\tcuisines\tid")
		for _, r := range res.Restaurants {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", distance(r.DistanceM), r.Name, strings.Join(r.Cuisines, ", "), r.ID)
		}
		tw.Flush()
		writeFacet(w, "cuisines", res.Cuisines)
		writeNext(w, o.args, res.Next)
		return nil
	}
	res, err := c.Dishes(ctx, dq)
	if err != nil {
		return usage(err)
	}
	if o.asJSON {
		out := map[string]any{
			"shards": res.Shards, "routing": res.Routing, "all_shards": res.AllShards, "total": res.Total, "dishes": res.Dishes,
			"facets": res.Facets, "took_ms": res.Took.Milliseconds(),
		}
		if res.Next != "" {
			out["next"] = res.Next
		}
		return writeJSON(w, out)
	}
	writeRouted(w, res.Routed, res.Total, "dish", res.Took)
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
	writeNext(w, o.args, res.Next)
	return nil
}

// flagOf is the flag that gives each filtered field's values.
var flagOf = map[string]string{"allergens": "--allergen-free", "diets": "--diet", "cuisines": "--cuisine"}

// usage makes the search package's refusals of what the user gave — a
// filter value the index does not hold, a page token of another search —
// usage errors that name the flag.
func usage(err error) error {
	var ue *search.UnknownValueError
	if errors.As(err, &ue) {
		return cli.UsageError{Err: fmt.Errorf("%s %s: %s; %s", flagOf[ue.Field], ue.Value, ue.Phrase(), ue.Hint())}
	}
	var ce *search.CursorError
	if errors.As(err, &ce) {
		return cli.UsageError{Err: fmt.Errorf("--after: %s", ce.Reason)}
	}
	return err
}

// plural is n and the noun, made plural unless n is 1: "1 shard", "2
// shards", "3 dishes".
func plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "sh") || strings.HasSuffix(noun, "s") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func writeRouted(w io.Writer, r search.Routed, total int64, what string, took time.Duration) {
	asked := fmt.Sprintf("%s %v (routing %s)", plural(int64(len(r.Shards)), "shard"), r.Shards, r.Routing)
	if r.AllShards {
		asked = fmt.Sprintf("every shard (%d)", len(r.Shards))
	}
	fmt.Fprintf(w, "%s: %s in %s; asked %s\n\n", r.Index, plural(total, what), took.Round(time.Millisecond), asked)
}

// writeNext prints the command line of the next page: this one with
// --after the token (and without the --after it had).
func writeNext(w io.Writer, args []string, token string) {
	if token == "" {
		return
	}
	line := []string{"search"}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--after" || a == "-after":
			i++
			continue
		case strings.HasPrefix(a, "--after=") || strings.HasPrefix(a, "-after="):
			continue
		}
		line = append(line, shellQuote(a))
	}
	line = append(line, "--after", token)
	fmt.Fprintf(w, "\nnext page: %s\n", strings.Join(line, " "))
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/=+@%") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
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
	sort.Slice(list, func(i, j int) bool { return list[i].v > list[j].v || list[i].v == list[j].v && list[i].k < list[j].k })
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
