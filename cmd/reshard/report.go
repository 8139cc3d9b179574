package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/router"
)

type planResult struct {
	Strategy router.Strategy
	Map      *router.Map
	Metrics  router.Metrics
}

// planReport is what `reshard plan` prints: the chosen plan, shard by shard,
// and its figures beside those of the other strategy.
type planReport struct {
	Loads    string
	Cells    int
	Docs     int64
	Workload string
	Out      string
	// Note says when the shard count was held to --min-shards or
	// --max-shards rather than what the load asks.
	Note  string
	Plans []planResult // the chosen strategy first
	// Diff compares the chosen map with the live one (--from-index).
	Diff *migrate.Diff
}

type shardJSON struct {
	Name      string  `json:"name"`
	Start     string  `json:"start"`
	Routing   string  `json:"routing"`
	Docs      int64   `json:"docs"`
	PctOfMean float64 `json:"pct_of_mean"`
}

type metricsJSON struct {
	Strategy    router.Strategy `json:"strategy"`
	MapHash     string          `json:"map_hash"`
	Shards      int             `json:"shards"`
	CV          float64         `json:"cv"`
	MaxOverMean float64         `json:"max_over_mean"`
	Fanout      float64         `json:"fanout"`
	ExtraShards float64         `json:"extra_shards_per_search"`
}

func metricsOf(p planResult) metricsJSON {
	return metricsJSON{
		Strategy: p.Strategy, MapHash: p.Map.Hash(), Shards: p.Metrics.Shards,
		CV: round(p.Metrics.CV, 4), MaxOverMean: round(p.Metrics.MaxOverMean, 4),
		Fanout: round(p.Metrics.Fanout, 4), ExtraShards: round(p.Metrics.Fanout-1, 4),
	}
}

func (r *planReport) jsonForm() any {
	chosen := r.Plans[0]
	mean := float64(r.Docs) / float64(chosen.Metrics.Shards)
	shards := make([]shardJSON, chosen.Map.NumShards())
	for i, s := range chosen.Map.Shards() {
		shards[i] = shardJSON{s.Name, s.Start, s.Routing, s.Docs, round(100*float64(s.Docs)/mean, 2)}
	}
	others := make([]metricsJSON, 0, len(r.Plans)-1)
	for _, p := range r.Plans[1:] {
		others = append(others, metricsOf(p))
	}
	return struct {
		Loads    string        `json:"loads"`
		Cells    int           `json:"cells"`
		Docs     int64         `json:"docs"`
		Workload string        `json:"workload"`
		Out      string        `json:"out,omitempty"`
		Plan     metricsJSON   `json:"plan"`
		Shards   []shardJSON   `json:"shards"`
		Compared []metricsJSON `json:"compared"`
		Diff     *migrate.Diff `json:"diff,omitempty"`
	}{r.Loads, r.Cells, r.Docs, r.Workload, r.Out, metricsOf(chosen), shards, others, r.Diff}
}

func (r *planReport) writeText(w io.Writer) {
	chosen := r.Plans[0]
	m := chosen.Map
	fmt.Fprintf(w, "plan: %s, %d shards, level %d, routing_num_shards %d, map %s\n",
		chosen.Strategy, m.NumShards(), m.Level(), m.RoutingNumShards(), m.ShortHash())
	fmt.Fprintf(w, "loads: %s: %s cells, %s docs\n", r.Loads, cli.Commas(int64(r.Cells)), cli.Commas(r.Docs))
	if r.Note != "" {
		fmt.Fprintf(w, "shards: %s\n", r.Note)
	}
	fmt.Fprintf(w, "workload: %s\n\n", r.Workload)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "#\tshard\tstart\trouting\tdocs\t% of mean\t")
	mean := float64(r.Docs) / float64(m.NumShards())
	for i, s := range m.Shards() {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.1f%%\t\n", i, s.Name, s.Start, s.Routing, cli.Commas(s.Docs), 100*float64(s.Docs)/mean)
	}
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(label string, f func(p planResult) string) {
		cells := []string{label}
		for _, p := range r.Plans {
			cells = append(cells, f(p))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	row("", func(p planResult) string { return string(p.Strategy) })
	row("shards", func(p planResult) string { return fmt.Sprint(p.Metrics.Shards) })
	row("cv", func(p planResult) string { return fmt.Sprintf("%.4f", p.Metrics.CV) })
	row("max/mean", func(p planResult) string { return fmt.Sprintf("%.4f", p.Metrics.MaxOverMean) })
	row("fan-out", func(p planResult) string { return fmt.Sprintf("%.4f", p.Metrics.Fanout) })
	row("extra shards/search", func(p planResult) string { return fmt.Sprintf("%.4f", p.Metrics.Fanout-1) })
	tw.Flush()
	if len(r.Plans) == 2 {
		a, b := r.Plans[0].Metrics.Fanout-1, r.Plans[1].Metrics.Fanout-1
		switch {
		case b > 0 && a < b:
			fmt.Fprintf(w, "\n%s asks %.1f%% fewer extra shards per search than %s\n", r.Plans[0].Strategy, 100*(1-a/b), r.Plans[1].Strategy)
		case a > 0 && b < a:
			fmt.Fprintf(w, "\n%s asks %.1f%% fewer extra shards per search than %s\n", r.Plans[1].Strategy, 100*(1-b/a), r.Plans[0].Strategy)
		case a == b:
			fmt.Fprintf(w, "\n%s and %s ask as many extra shards per search\n", r.Plans[0].Strategy, r.Plans[1].Strategy)
		}
	}
	if r.Diff != nil {
		writeDiff(w, r.Diff)
	}
	if r.Out != "" {
		fmt.Fprintf(w, "wrote %s (map %s)\n", r.Out, m.Hash())
	}
}

// writeDiff prints how a planned map differs from the live one.
func writeDiff(w io.Writer, d *migrate.Diff) {
	fmt.Fprintf(w, "\ndiff against the live map %s (%d shards) -> %s (%d shards):\n", d.OldHash[:12], d.OldShards, d.NewHash[:12], d.NewShards)
	list := func(label string, names []string) {
		if len(names) == 0 {
			fmt.Fprintf(w, "  %s: none\n", label)
			return
		}
		fmt.Fprintf(w, "  %s (%d): %s\n", label, len(names), strings.Join(names, ", "))
	}
	list("added", d.Added)
	list("removed", d.Removed)
	list("unchanged", d.Unchanged)
	if len(d.Resized) == 0 {
		fmt.Fprintln(w, "  resized: none")
	} else {
		fmt.Fprintf(w, "  resized (%d):\n", len(d.Resized))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "    shard\told range\tnew range\told docs\tnew docs\t")
		end := func(s string) string {
			if s == "" {
				return "end"
			}
			return s
		}
		for _, c := range d.Resized {
			fmt.Fprintf(tw, "    %s\t%s-%s\t%s-%s\t%s\t%s\t\n", c.Name, c.OldStart, end(c.OldEnd), c.NewStart, end(c.NewEnd), cli.Commas(c.OldDocs), cli.Commas(c.NewDocs))
		}
		tw.Flush()
	}
	pct := 0.0
	if d.Docs > 0 {
		pct = 100 * float64(d.Moved) / float64(d.Docs)
	}
	fmt.Fprintf(w, "  documents that change shard: %s of %s (%.1f%%); every document is copied to the new index\n", cli.Commas(d.Moved), cli.Commas(d.Docs), pct)
}

// round rounds x to digits decimal places, for the JSON reports.
func round(x float64, digits int) float64 {
	p := math.Pow10(digits)
	return math.Round(x*p) / p
}
