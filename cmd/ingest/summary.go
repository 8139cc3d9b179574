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
	"github.com/geoshard/geoshard/decode"
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

// summary is what the embedded run reports, gathered first and written
// after, so that its layout is tested with fixed figures
// (testdata/summary.golden).
type summary struct {
	produced    int
	kinds       map[string]int
	tl          timeline
	latency     bool          // the end-to-end histogram had samples
	p50, p99    time.Duration // from an event's Kafka timestamp to its writes acknowledged
	shards      []shardDocs
	dead        map[decode.Reason]int64
	restaurants []searchRow
	dishes      []searchRow
}

// shardDocs is one shard's row of the documents table.
type shardDocs struct {
	name, routing string
	docs          int64
}

// searchRow is one search asked both ways: through the map's routing and
// of every shard.
type searchRow struct {
	name          string
	routed        []string // the shards the routing asked
	allShards     int      // the shards the search of every shard asked
	routedN, allN int64    // restaurants or dishes found each way
	nearest       string   // dishes only: the nearest dish found, "-" if none
	same          bool     // the same hits and counts both ways
}

// gatherSummary counts the documents per shard and runs the demo searches.
func gatherSummary(ctx context.Context, s *stack, p *pipeline.Pipeline, reg *prometheus.Registry,
	kinds map[string]int, produced int) (*summary, error) {
	sum := &summary{produced: produced, kinds: kinds, dead: p.Stats().DeadLetters}
	sum.p50, sum.p99, sum.latency = quantiles(reg, "geoshard_ingest_end_to_end_seconds")
	for i := 0; i < s.m.NumShards(); i++ {
		n, err := s.client.Count(ctx, embeddedIndex, nil, bulk.SearchParams{Preference: "_shards:" + strconv.Itoa(i)})
		if err != nil {
			return nil, err
		}
		sh := s.m.Shard(i)
		sum.shards = append(sum.shards, shardDocs{sh.Name, sh.Routing, n})
	}
	for _, d := range demoSearches {
		cov, err := s.m.CoverCircle(d.lat, d.lng, d.radiusMi*1609.344)
		if err != nil {
			return nil, err
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
			return nil, err
		}
		all, err := s.client.Search(ctx, embeddedIndex, body, bulk.SearchParams{})
		if err != nil {
			return nil, err
		}
		sum.restaurants = append(sum.restaurants, searchRow{name: d.name, routed: s.m.Names(cov.Shards),
			allShards: all.Shards, routedN: routed.Total, allN: all.Total, same: routed.Total == all.Total})
	}
	rows, err := gatherDishSearches(ctx, s)
	if err != nil {
		return nil, err
	}
	sum.dishes = rows
	return sum, nil
}

// phase is one stretch of the run's timeline.
type phase struct {
	what string
	took time.Duration
}

// phaseList is the run's stretches in order, end to end: their sum is the
// whole run.
type phaseList []phase

func (ps phaseList) whole() time.Duration {
	var d time.Duration
	for _, p := range ps {
		d += p.took
	}
	return d
}

// phases cuts the timeline into consecutive stretches. Each point is
// rounded to the millisecond from the start before they are subtracted,
// so that the stretches as printed add up exactly to the whole run.
func (sum *summary) phases() phaseList {
	tl := sum.tl
	at := func(t time.Time) time.Duration { return t.Sub(tl.start).Round(time.Millisecond) }
	indexed := int64(sum.produced) - tl.waiting
	ps := phaseList{
		{"start-up: broker, emulator, map planned from the city data, index", at(tl.stackUp)},
		{fmt.Sprintf("%d events produced, before ingest started", sum.produced), at(tl.consuming) - at(tl.stackUp)},
		{"ingest joined its group and read its directory", at(tl.first) - at(tl.consuming)},
		{fmt.Sprintf("%d events indexed or dead-lettered%s", indexed, rate(indexed, at(tl.settled)-at(tl.first))),
			at(tl.settled) - at(tl.first)},
	}
	last := "the last commits"
	if tl.waiting > 0 {
		last = fmt.Sprintf("the pending wait of the dishes whose restaurant never came (%d)", tl.waiting)
	}
	return append(ps,
		phase{last, at(tl.done) - at(tl.settled)},
		phase{"the summary's counts and searches", at(tl.summarized) - at(tl.done)})
}

// rate is " (N events/s)" when d is long enough to measure one.
func rate(n int64, d time.Duration) string {
	if d < time.Millisecond {
		return ""
	}
	return fmt.Sprintf(" (%.0f events/s)", float64(n)/d.Seconds())
}

// write prints the summary. Every line is within 100 columns unless wide,
// which adds each dish search's nearest dish.
func (sum *summary) write(w io.Writer, wide bool) error {
	if len(sum.kinds) > 0 {
		names := make([]string, 0, len(sum.kinds))
		for k := range sum.kinds {
			names = append(names, k)
		}
		sort.Strings(names)
		fmt.Fprintf(w, "\nproduced, by kind (%d events):\n", sum.produced)
		line := " "
		for _, k := range names {
			item := fmt.Sprintf(" %s %d", k, sum.kinds[k])
			if len(line)+len(item) > 100 {
				fmt.Fprintln(w, line)
				line = " "
			}
			line += item
		}
		fmt.Fprintln(w, line)
	}

	fmt.Fprintln(w, "\ndocuments per shard:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\tshard\trouting\tdocuments\t")
	var total int64
	for i, sh := range sum.shards {
		total += sh.docs
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t\n", i, sh.name, sh.routing, sh.docs)
	}
	fmt.Fprintf(tw, "\tall\t\t%d\t\n", total)
	tw.Flush()

	fmt.Fprintln(w, "\ndead letters by reason:")
	if len(sum.dead) == 0 {
		fmt.Fprintln(w, "  none")
	}
	reasons := make([]decode.Reason, 0, len(sum.dead))
	for r := range sum.dead {
		reasons = append(reasons, r)
	}
	sort.Slice(reasons, func(i, j int) bool { return reasons[i] < reasons[j] })
	for _, r := range reasons {
		fmt.Fprintf(w, "  %-22s %d\n", r, sum.dead[r])
	}

	fmt.Fprintln(w, "\nrestaurants near a point, asked through the map's routing and of every shard:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "search\tshards asked: routed/all\thits (routed)\thits (all)\tsame\t")
	for _, r := range sum.restaurants {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t\n", r.name, r.shardsAsked(), r.routedN, r.allN, yes(r.same))
	}
	tw.Flush()

	fmt.Fprintln(w, "\ndishes near a point (package search), routed and of every shard:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := "search\tshards asked: routed/all\tdishes (routed)\tdishes (all)\tsame\t"
	if wide {
		head = "search\tshards asked: routed/all\tdishes (routed)\tdishes (all)\tnearest dish (routed)\tsame\t"
	}
	fmt.Fprintln(tw, head)
	for _, r := range sum.dishes {
		nearest := ""
		if wide {
			nearest = r.nearest + "\t"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s%s\t\n", r.name, r.shardsAsked(), r.routedN, r.allN, nearest, yes(r.same))
	}
	tw.Flush()
	fmt.Fprintln(w, "  (same: the same dishes, total and facet counts both ways; --wide adds the nearest dish)")

	if sum.latency {
		fmt.Fprintf(w, "\nfrom an event's Kafka timestamp to its writes acknowledged: p50 %s, p99 %s\n", sum.p50, sum.p99)
		fmt.Fprintln(w, "  (every event was produced before ingest started: how long the backlog took to drain)")
	}

	fmt.Fprintln(w, "\ntimings, on one clock from the start of the command (start-up included):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	ps := sum.phases()
	for _, p := range ps {
		fmt.Fprintf(tw, "  %s\t%8s\n", p.what, seconds(p.took))
	}
	fmt.Fprintf(tw, "  the whole run, to this summary\t%8s\n", seconds(ps.whole()))
	return tw.Flush()
}

// seconds prints d in seconds with three decimals, so that the column
// aligns and adds up.
func seconds(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// shardsAsked is "3/18 [orion pluto quill]": the shards the routing
// asked, of those the search of every shard asked, and their names.
func (r searchRow) shardsAsked() string {
	return fmt.Sprintf("%d/%d %v", len(r.routed), r.allShards, r.routed)
}

func yes(same bool) string {
	if same {
		return "yes"
	}
	return "NO"
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

// gatherDishSearches runs the dish searches through the search package,
// routed and of every shard, and compares the dishes and the counts.
func gatherDishSearches(ctx context.Context, s *stack) ([]searchRow, error) {
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{s.osURL}})
	if err != nil {
		return nil, err
	}
	c, err := search.Open(ctx, client, search.Config{Alias: embeddedIndex})
	if err != nil {
		return nil, err
	}
	var rows []searchRow
	for _, d := range dishSearches {
		q := d.q
		q.Area, q.Size = search.Circle(d.at.lat, d.at.lng, d.at.radiusMi*1609.344), 100
		routed, err := c.Dishes(ctx, q)
		if err != nil {
			return nil, err
		}
		q.AllShards = true
		all, err := c.Dishes(ctx, q)
		if err != nil {
			return nil, err
		}
		nearest := "-"
		if len(routed.Dishes) > 0 {
			n := routed.Dishes[0]
			nearest = fmt.Sprintf("%s, %s (%.1f km)", n.Name, n.Restaurant, n.DistanceM/1000)
		}
		rows = append(rows, searchRow{name: d.name, routed: routed.Shards, allShards: len(all.Shards),
			routedN: routed.Total, allN: all.Total, nearest: nearest, same: sameDishes(routed, all)})
	}
	return rows, nil
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
