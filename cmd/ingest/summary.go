package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/pipeline"
	"github.com/geoshard/geoshard/search"
	"github.com/prometheus/client_golang/prometheus"
)

// demoSearch is one routed search of the summary.
type demoSearch struct {
	name     string
	lat, lng float64
	radiusMi float64
}

var demoSearches = []demoSearch{
	{"San Francisco 15 mi", 37.7749, -122.4194, 15},
	{"New York 15 mi", 40.7128, -74.0060, 15},
	{"New York 50 mi", 40.7128, -74.0060, 50},
}

func writeSummary(ctx context.Context, w io.Writer, s *stack, p *pipeline.Pipeline, reg *prometheus.Registry,
	kinds map[string]int, produced int, tl timeline) error {
	st := p.Stats()
	ms := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	fmt.Fprintf(w, "\n%d events produced before ingest started; ingest joined its group and read its directory in %s;\n",
		produced, ms(tl.first.Sub(tl.consuming)))
	indexed := int64(produced) - tl.waiting
	if d := tl.settled.Sub(tl.first); d > 0 {
		fmt.Fprintf(w, "it indexed or dead-lettered %d of them in the next %s (%.0f events/s)", indexed, ms(d), float64(indexed)/d.Seconds())
	} else {
		fmt.Fprintf(w, "it indexed or dead-lettered %d of them at once", indexed)
	}
	if tl.waiting > 0 {
		fmt.Fprintf(w, "; the last %d, dishes whose restaurant never came, were dead-lettered after the pending wait (%s in all)", tl.waiting, ms(tl.done.Sub(tl.first)))
	}
	fmt.Fprintf(w, ". The whole run took %s.\n", ms(tl.done.Sub(tl.start)))
	if p50, p99, ok := quantiles(reg, "geoshard_ingest_end_to_end_seconds"); ok {
		fmt.Fprintf(w, "time from an event's Kafka timestamp to its writes acknowledged: p50 %s, p99 %s (how long the pre-produced backlog took to drain, not a live latency)\n", p50, p99)
	}
	if len(kinds) > 0 {
		names := make([]string, 0, len(kinds))
		for k := range kinds {
			names = append(names, k)
		}
		sort.Strings(names)
		fmt.Fprint(w, "produced:")
		for _, k := range names {
			fmt.Fprintf(w, " %s %d", k, kinds[k])
		}
		fmt.Fprintln(w)
	}

	fmt.Fprintln(w, "\ndocuments per shard:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\tshard\trouting\tdocuments\t")
	var total int64
	for i := 0; i < s.m.NumShards(); i++ {
		n, err := s.client.Count(ctx, embeddedIndex, nil, bulk.SearchParams{Preference: "_shards:" + strconv.Itoa(i)})
		if err != nil {
			return err
		}
		total += n
		sh := s.m.Shard(i)
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t\n", i, sh.Name, sh.Routing, n)
	}
	fmt.Fprintf(tw, "\tall\t\t%d\t\n", total)
	tw.Flush()

	fmt.Fprintln(w, "\ndead letters by reason:")
	if len(st.DeadLetters) == 0 {
		fmt.Fprintln(w, "  none")
	}
	reasons := make([]pipeline.Reason, 0, len(st.DeadLetters))
	for r := range st.DeadLetters {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool { return reasons[i] < reasons[j] })
	for _, r := range reasons {
		fmt.Fprintf(w, "  %-22s %d\n", r, st.DeadLetters[r])
	}

	fmt.Fprintln(w, "\nrestaurants near a point, asked through the map's routing and of every shard:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "search\tshards asked (routed)\tall shards\thits (routed)\thits (all)\tsame\t")
	for _, d := range demoSearches {
		cov, err := s.m.CoverCircle(d.lat, d.lng, d.radiusMi*1609.344)
		if err != nil {
			return err
		}
		body, _ := json.Marshal(map[string]any{
			"size": 0, "track_total_hits": true,
			"query": map[string]any{"bool": map[string]any{"filter": []any{
				map[string]any{"term": map[string]any{"relation": "restaurant"}},
				map[string]any{"geo_distance": map[string]any{"distance": fmt.Sprintf("%gmi", d.radiusMi),
					"location": map[string]any{"lat": d.lat, "lon": d.lng}}},
			}}},
		})
		routed, err := s.client.Search(ctx, embeddedIndex, body, bulk.SearchParams{Routing: s.m.Routing(cov.Shards)})
		if err != nil {
			return err
		}
		all, err := s.client.Search(ctx, embeddedIndex, body, bulk.SearchParams{})
		if err != nil {
			return err
		}
		same := "yes"
		if routed.Total != all.Total {
			same = "NO"
		}
		fmt.Fprintf(tw, "%s\t%d %v\t%d\t%d\t%d\t%s\t\n", d.name, routed.Shards, s.m.Names(cov.Shards), all.Shards, routed.Total, all.Total, same)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return writeDishSearches(ctx, w, s)
}

// dishSearches are the demo's dish searches: a plain one and one with the
// sidebar's filters, in each city.
var dishSearches = []struct {
	name string
	at   demoSearch
	q    search.DishQuery
}{
	{"San Francisco 15 mi", demoSearches[0], search.DishQuery{}},
	{"San Francisco 15 mi, vegan", demoSearches[0], search.DishQuery{Diets: []string{"vegan"}}},
	{"New York 15 mi, peanut-free", demoSearches[1], search.DishQuery{AllergenFree: []string{"peanut"}}},
	{"New York 50 mi, under $15", demoSearches[2], search.DishQuery{MaxPriceCents: 1500}},
}

// writeDishSearches runs the dish searches through the search package,
// routed and of every shard, and compares the dishes and the counts.
func writeDishSearches(ctx context.Context, w io.Writer, s *stack) error {
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{s.osURL}})
	if err != nil {
		return err
	}
	c, err := search.Open(ctx, client, search.Config{Alias: embeddedIndex})
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\ndishes near a point (package search: has_parent on the restaurant's location), routed and of every shard:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "search\tshards asked (routed)\tall shards\tdishes (routed)\tdishes (all)\tnearest\tsame dishes and counts\t")
	for _, d := range dishSearches {
		q := d.q
		q.Area, q.Size = search.Circle(d.at.lat, d.at.lng, d.at.radiusMi*1609.344), 100
		routed, err := c.Dishes(ctx, q)
		if err != nil {
			return err
		}
		q.AllShards = true
		all, err := c.Dishes(ctx, q)
		if err != nil {
			return err
		}
		same := "yes"
		if !sameDishes(routed, all) {
			same = "NO"
		}
		nearest := "-"
		if len(routed.Dishes) > 0 {
			n := routed.Dishes[0]
			nearest = fmt.Sprintf("%s, %s (%.1f km)", n.Name, n.Restaurant, n.DistanceM/1000)
		}
		fmt.Fprintf(tw, "%s\t%d %v\t%d\t%d\t%d\t%s\t%s\t\n", d.name, len(routed.Shards), routed.Shards, len(all.Shards), routed.Total, all.Total, nearest, same)
	}
	return tw.Flush()
}

// sameDishes reports whether two searches found the same total, the same
// page of dishes and the same facet counts.
func sameDishes(a, b *search.DishResult) bool {
	if a.Total != b.Total || len(a.Dishes) != len(b.Dishes) {
		return false
	}
	for i := range a.Dishes {
		if a.Dishes[i].ID != b.Dishes[i].ID {
			return false
		}
	}
	eq := func(x, y map[string]int64) bool {
		if len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if y[k] != v {
				return false
			}
		}
		return true
	}
	return eq(a.Facets.Allergens, b.Facets.Allergens) && eq(a.Facets.Diets, b.Facets.Diets) &&
		eq(a.Facets.Cuisines, b.Facets.Cuisines) && eq(a.Facets.PriceBands, b.Facets.PriceBands)
}

// quantiles estimates the median and 99th percentile of a histogram in the
// registry by linear interpolation within buckets.
func quantiles(reg *prometheus.Registry, name string) (p50, p99 time.Duration, ok bool) {
	mfs, err := reg.Gather()
	if err != nil {
		return 0, 0, false
	}
	for _, mf := range mfs {
		if mf.GetName() != name || len(mf.GetMetric()) == 0 {
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		total := float64(h.GetSampleCount())
		if total == 0 {
			return 0, 0, false
		}
		q := func(f float64) time.Duration {
			target := f * total
			var prevCount, prevBound float64
			for _, b := range h.GetBucket() {
				c := float64(b.GetCumulativeCount())
				if c >= target {
					bound := b.GetUpperBound()
					if math.IsInf(bound, 1) {
						bound = prevBound
					}
					frac := 0.0
					if c > prevCount {
						frac = (target - prevCount) / (c - prevCount)
					}
					return time.Duration((prevBound + frac*(bound-prevBound)) * float64(time.Second)).Round(time.Millisecond)
				}
				prevCount, prevBound = c, b.GetUpperBound()
			}
			return time.Duration(prevBound * float64(time.Second))
		}
		return q(0.5), q(0.99), true
	}
	return 0, 0, false
}
