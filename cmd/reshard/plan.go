package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"text/tabwriter"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// routingNumShardsFlag is a number, or "default" for OpenSearch's own
// default for the shard count.
type routingNumShardsFlag struct {
	n       int
	opensrc bool
}

func (f *routingNumShardsFlag) String() string {
	if f.opensrc {
		return "default"
	}
	return strconv.Itoa(f.n)
}

func (f *routingNumShardsFlag) Set(s string) error {
	if s == "default" {
		f.opensrc, f.n = true, 0
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return fmt.Errorf("want a positive number, or \"default\" for OpenSearch's default")
	}
	f.n, f.opensrc = n, false
	return nil
}

func runPlan(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("plan", "--loads F | --from-index menu [--queries F] [--shards N | --min-shards A --max-shards B] [--max-imbalance X] [--strategy optimal|greedy] [--out map.json] [--json]", stdout)
	var (
		loadsPath   = fs.String("loads", "", "document load per cell: CSV `file` with header cell,docs (this or --from-index)")
		fromIndex   = fs.String("from-index", "", "count the documents per cell of this live `alias` (or index) instead, and compare the plan with its map (this or --loads)")
		queriesPath = fs.String("queries", "", "search workload: CSV `file` with header lat,lng,radius_m[,weight]; default: derived from the loads")
		shards      = fs.Int("shards", 0, "fixed number of shards; 0 chooses within --min-shards..--max-shards")
		minShards   = fs.Int("min-shards", router.DefaultMinShards, "smallest shard count to choose")
		maxShards   = fs.Int("max-shards", router.DefaultMaxShards, "largest shard count to choose")
		target      = fs.Int64("target-docs-per-shard", router.DefaultTargetDocsPerShard, "choose the fewest shards whose mean load is at most this")
		imbalance   = fs.Float64("max-imbalance", router.DefaultMaxImbalance, "every shard's load within ±this fraction of the mean (optimal)")
		strategy    = fs.String("strategy", string(router.Optimal), "optimal: fewest boundary crossings within the balance bound; greedy: reference bucket filling")
		level       = fs.Int("level", router.DefaultLevel, "S2 level of the map's cells")
		out         = fs.String("out", "", "write the map to this `file`")
		asJSON      = fs.Bool("json", false, "print the report as JSON")
	)
	var rns routingNumShardsFlag
	fs.Var(&rns, "routing-num-shards", "index.number_of_routing_shards: a multiple of the shard count, or \"default\" for OpenSearch's default; 0 = the shard count")
	var cc bulk.ClientConfig
	cf := cli.RegisterClientFlags(fs, &cc, os.Getenv)
	if err := parse(fs, args); err != nil {
		return err
	}
	switch {
	case *loadsPath == "" && *fromIndex == "":
		return badInput("missing --loads or --from-index: give exactly one (see --help)")
	case *loadsPath != "" && *fromIndex != "":
		return badInput("--loads and --from-index both given: give exactly one (see --help)")
	}
	cfg := router.PlanConfig{
		Level: *level, Shards: *shards, MinShards: *minShards, MaxShards: *maxShards,
		TargetDocsPerShard: *target, MaxImbalance: *imbalance, Strategy: router.Strategy(*strategy),
		RoutingNumShards: rns.n,
	}
	if err := cfg.Validate(); err != nil {
		return cli.UsageError{Err: err}
	}
	var loads []router.CellLoad
	var live *router.Map
	var lc *liveCluster // --from-index's cluster
	var index string    // --from-index's write index
	source := *loadsPath
	var err error
	if *fromIndex != "" {
		if err := cf.Resolve(); err != nil {
			return cli.UsageError{Err: err}
		}
		if lc, err = openLive(cf, &cc, stderr); err != nil {
			return err
		}
		defer lc.stop()
		if live, index, loads, err = migrate.LiveLoads(lc.ctx, lc.admin, *fromIndex); err != nil {
			return err
		}
		levelSet := false
		fs.Visit(func(f *flag.Flag) { levelSet = levelSet || f.Name == "level" })
		if levelSet && *level != live.Level() {
			return badInput("--level %d: index %s is at level %d; a migration keeps the level", *level, index, live.Level())
		}
		*level, cfg.Level = live.Level(), live.Level()
		source = fmt.Sprintf("index %s (%s, map %s)", *fromIndex, index, live.ShortHash())
		if len(loads) == 0 {
			return fmt.Errorf("index %s holds no document with a %s", index, schema.FieldGeoCell)
		}
	} else if loads, err = readLoads(*loadsPath, *level); err != nil {
		return err
	}
	work, workDesc, err := readWorkload(*queriesPath, loads, *level)
	if err != nil {
		return err
	}
	var total int64
	for _, l := range loads {
		total += l.Docs
	}
	n := cfg.ShardCount(total)
	if rns.opensrc {
		cfg.RoutingNumShards = router.DefaultRoutingNumShards(n)
	}
	if cfg.RoutingNumShards%n != 0 {
		return badInput("--routing-num-shards %d is not a multiple of %d shards", cfg.RoutingNumShards, n)
	}

	rep := planReport{Loads: source, Cells: len(loads), Docs: total, Workload: workDesc, Out: *out}
	if d := cfg.Defaults(); cfg.Shards == 0 {
		// Say when the count is a bound, not the target's.
		want := (total + d.TargetDocsPerShard - 1) / d.TargetDocsPerShard
		switch {
		case want > int64(d.MaxShards):
			rep.Note = fmt.Sprintf("%s docs would take %d shards at the target of %s per shard; held to --max-shards %d (%s per shard)",
				cli.Commas(total), want, cli.Commas(d.TargetDocsPerShard), d.MaxShards, cli.Commas(total/int64(d.MaxShards)))
		case want < int64(d.MinShards):
			rep.Note = fmt.Sprintf("%s docs would take %d shards at the target of %s per shard; raised to --min-shards %d",
				cli.Commas(total), want, cli.Commas(d.TargetDocsPerShard), d.MinShards)
		}
	}
	for _, s := range []router.Strategy{cfg.Strategy, other(cfg.Strategy)} {
		c := cfg
		c.Strategy = s
		m, err := router.Plan(loads, work, c)
		if err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
		met, err := router.Evaluate(m, loads, work)
		if err != nil {
			return err
		}
		rep.Plans = append(rep.Plans, planResult{Strategy: s, Map: m, Metrics: met})
	}
	chosen := rep.Plans[0].Map
	var verdict *migrate.Verdict
	var disk *diskReport
	if live != nil {
		d := migrate.DiffMaps(live, chosen, loads)
		rep.Diff = &d
		v, err := migrate.Judge(live, chosen, loads, work)
		if err != nil {
			return err
		}
		verdict = &v
		// As create would see it: a copy of the write index, with its
		// replicas. A cluster that will not tell (no monitor privilege)
		// leaves the plan without a verdict on disk; create refuses then.
		disk = &diskReport{Index: index}
		e, err := migrate.EstimateDiskFor(lc.ctx, lc.admin, index, -1, chosen)
		if err != nil {
			disk.Error = err.Error()
		} else {
			disk.Estimate = &e
		}
	}
	if *out != "" {
		b, _ := chosen.MarshalJSON()
		if err := os.WriteFile(*out, b, 0o644); err != nil {
			return fmt.Errorf("--out: %w", err)
		}
	}
	if *asJSON {
		if verdict != nil {
			return writeJSON(stdout, withMembers{rep.jsonForm(), []member{{"verdict", verdict}, {"disk", disk}}})
		}
		return writeJSON(stdout, rep.jsonForm())
	}
	rep.writeText(stdout)
	if verdict != nil {
		// The verdict last: the report's conclusion, as the runbook says.
		writeDisk(stdout, disk)
		writeVerdict(stdout, verdict, workDesc)
	}
	return nil
}

// member is one member of a JSON object, by name.
type member struct {
	name  string
	value any
}

// withMembers is the JSON report with more members after the report's
// own, in order.
type withMembers struct {
	report  any
	members []member
}

func (w withMembers) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(w.report)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, " \n")
	if len(b) < 2 || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("plan report: not a JSON object")
	}
	b = b[:len(b)-1]
	for _, m := range w.members {
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		name, _ := json.Marshal(m.name)
		b = append(append(append(append(b, ','), name...), ':'), v...)
	}
	return append(b, '}'), nil
}

// diskReport is the disk estimate of plan --from-index: the target as
// create would make it, a copy of Index under the chosen map, against
// the data nodes' room; or why there is none.
type diskReport struct {
	Index    string                `json:"source_index"`
	Estimate *migrate.DiskEstimate `json:"estimate,omitempty"`
	Error    string                `json:"error,omitempty"`
}

// writeDisk prints the disk estimate of --from-index and its verdict
// line, "fits: …" or "does not fit: …".
func writeDisk(w io.Writer, d *diskReport) {
	fmt.Fprintf(w, "\ndisk: the new index, a copy of %s, on the data nodes (reshard create checks the same):\n", d.Index)
	if d.Estimate == nil {
		fmt.Fprintf(w, "  not estimated: %s\n", d.Error)
		return
	}
	for _, line := range d.Estimate.Explain() {
		fmt.Fprintf(w, "  %s\n", line)
	}
	fmt.Fprintln(w, d.Estimate.Verdict)
}

// writeVerdict ends the report of --from-index: the live map and the new
// one on the current documents and the workload, what moves, and whether
// that is worth a migration.
func writeVerdict(w io.Writer, v *migrate.Verdict, workload string) {
	pct := 0.0
	if v.Docs > 0 {
		pct = 100 * float64(v.Moved) / float64(v.Docs)
	}
	fmt.Fprintf(w, "\nverdict: the live map and the new one on the index's documents (workload: %s):\n", workload)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "  \tnow\tnew map\t")
	fmt.Fprintf(tw, "  max/mean load\t%.4f\t%.4f\t\n", v.Now.Imbalance, v.Proposed.Imbalance)
	fmt.Fprintf(tw, "  fan-out (shards per search)\t%.4f\t%.4f\t\n", v.Now.Fanout, v.Proposed.Fanout)
	tw.Flush()
	fmt.Fprintf(w, "  documents whose physical shard changes: %s of %s (%.1f%%)\n", cli.Commas(v.Moved), cli.Commas(v.Docs), pct)
	fmt.Fprintf(w, "  worth a migration when max/mean is above %.2f (the GeoshardMapImbalanced alert) and the new map lowers it, or it drops by at least %.2f, or the fan-out drops by at least %.2f\n",
		v.AlertImbalance, v.WorthImbalanceDrop, v.WorthFanoutDrop)
	fmt.Fprintln(w, v.Reason)
}

func other(s router.Strategy) router.Strategy {
	if s == router.Greedy {
		return router.Optimal
	}
	return router.Greedy
}

// liveCluster is plan's connection to the cluster of --from-index: a
// context cancelled by SIGINT or SIGTERM, and the admin calls.
type liveCluster struct {
	ctx   context.Context
	stop  func()
	admin *bulk.Admin
}

// openLive connects to the cluster of --from-index.
func openLive(cf *cli.ClientFlags, cc *bulk.ClientConfig, stderr io.Writer) (*liveCluster, error) {
	client, err := bulk.NewClient(*cc)
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	if err := cf.CheckEngine(ctx, client, warnings(stderr)); err != nil {
		stop()
		return nil, err
	}
	return &liveCluster{ctx: ctx, stop: stop, admin: bulk.NewAdmin(client)}, nil
}
