package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/cmd/internal/serve"
	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// now is the clock of the migration verbs; tests fix it so that golden
// output is stable.
var now = time.Now

// migrationFlags are the flags every migration verb takes.
type migrationFlags struct {
	cc          bulk.ClientConfig
	cf          *cli.ClientFlags
	alias       string
	metricsAddr string
	logLevel    string
}

func addMigrationFlags(fs *flag.FlagSet) *migrationFlags {
	f := &migrationFlags{}
	f.cf = cli.RegisterClientFlags(fs, &f.cc, os.Getenv)
	fs.StringVar(&f.alias, "alias", "menu", "alias whose index is migrated (GEOSHARD_ALIAS)")
	fs.StringVar(&f.metricsAddr, "metrics-addr", "", "serve geoshard_migration_phase and geoshard_backfill_docs_total on this `address` at /metrics; empty: off")
	// No GEOSHARD_METRICS_ADDR: ingest reads it, and a reshard run beside
	// an ingest instance would try to take its port.
	fs.StringVar(&f.logLevel, "log-level", "info", "log `level`: debug, info, warn or error (GEOSHARD_LOG_LEVEL)")
	return f
}

// newIndexFlags are the flags of create (and run) that describe the new
// index, and the map read from --map.
type newIndexFlags struct {
	fs                  *flag.FlagSet
	mapPath, target, gc *string
	skipDisk            *bool
	m                   *router.Map
}

func addNewIndexFlags(fs *flag.FlagSet) *newIndexFlags {
	return &newIndexFlags{
		fs:      fs,
		mapPath: fs.String("map", "", "the new map `file` (required)"),
		target:  fs.String("target", "", "name of the new index; default <alias>-v<N>, N the next free"),
		gc:      fs.String("gc-deletes", migrate.DefaultGCDeletes, "index.gc_deletes on both indexes while the migration runs"),
		skipDisk: fs.Bool("skip-disk-check", false, "create the new index even if the data nodes seem short of disk for it (at your own risk: "+
			"a node past its high watermark moves shards away, past flood_stage its indices turn read-only)"),
	}
}

// check requires --map and refuses a --target that OpenSearch would
// refuse as an index name, before anything is recorded.
func (f *newIndexFlags) check() error {
	if err := required(f.fs, "map"); err != nil {
		return err
	}
	if *f.target == "" {
		return nil
	}
	if err := schema.CheckIndexName(*f.target); err != nil {
		return badInput("--target: %v", err)
	}
	return nil
}

// readMap reads --map. The verbs run it after checking their other flags,
// so a mistyped flag is reported before a file is opened.
func (f *newIndexFlags) readMap() (err error) {
	f.m, err = readMap(*f.mapPath)
	return err
}

func (f *newIndexFlags) config() migrate.CreateConfig {
	return migrate.CreateConfig{Map: f.m, Target: *f.target, GCDeletes: *f.gc, SkipDiskCheck: *f.skipDisk}
}

// diskAdvice adds to create's refusal for want of disk the flag that
// overrides it.
func diskAdvice(err error) error {
	if errors.Is(err, migrate.ErrNoDisk) {
		return fmt.Errorf("%w; or, at your own risk, run again with --skip-disk-check", err)
	}
	return err
}

// session is an opened migration: the Migrator, a context cancelled by
// SIGINT or SIGTERM, and what to close.
type session struct {
	m      *migrate.Migrator
	ctx    context.Context
	log    *slog.Logger
	closer []func()
}

func (s *session) close() {
	for i := len(s.closer) - 1; i >= 0; i-- {
		s.closer[i]()
	}
}

// open checks the common flags and connects.
func (f *migrationFlags) open(stderr io.Writer) (*session, error) {
	if err := f.cf.Resolve(); err != nil {
		return nil, cli.UsageError{Err: err}
	}
	if f.alias == "" {
		return nil, badInput("--alias: empty")
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return nil, badInput("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	client, err := bulk.NewClient(f.cc)
	if err != nil {
		return nil, cli.UsageError{Err: err}
	}
	s := &session{log: log}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	s.ctx = ctx
	s.closer = append(s.closer, stop)
	if err := f.cf.CheckEngine(ctx, client, log); err != nil {
		s.close()
		return nil, err
	}
	var reg *prometheus.Registry
	if f.metricsAddr != "" {
		reg = prometheus.NewRegistry()
		stopHTTP, err := serveMetrics(f.metricsAddr, reg, log)
		if err != nil {
			s.close()
			return nil, err
		}
		s.closer = append(s.closer, stopHTTP)
	}
	cfg := migrate.Config{Alias: f.alias, Logger: log, Now: now}
	if reg != nil {
		cfg.Registerer = reg
	}
	if s.m, err = migrate.New(client, cfg); err != nil {
		s.close()
		return nil, err
	}
	// A mistyped alias (or the wrong cluster) is a usage error, not "no
	// migration is recorded".
	if err := s.m.CheckAlias(ctx); err != nil {
		s.close()
		if errors.Is(err, migrate.ErrUnknownAlias) {
			return nil, badInput("--alias %s: no such alias in OpenSearch at %s, and no migration of it is recorded (reshard init creates an alias)",
				f.alias, strings.Join(f.cc.Addresses, ","))
		}
		return nil, err
	}
	return s, nil
}

// serveMetrics serves /metrics until the returned function is called.
func serveMetrics(addr string, reg *prometheus.Registry, log *slog.Logger) (func(), error) {
	stop, _, err := serve.Start(addr, reg, nil, log)
	if err != nil {
		return nil, badInput("%v", err)
	}
	return stop, nil
}

// ackFlags bound a wait for the ingest instances.
func ackFlags(fs *flag.FlagSet) *migrate.AckConfig {
	a := &migrate.AckConfig{}
	fs.DurationVar(&a.Timeout, "ack-timeout", migrate.DefaultAckTimeout, "give up waiting for ingest instances after this long")
	fs.DurationVar(&a.LiveWindow, "live-window", migrate.DefaultLiveWindow, "an ingest instance is live while its heartbeat is at most this old")
	return a
}

// start parses the flags, runs every check (each returns a usage error
// naming the flags it finds wrong) and opens the session: the common
// opening of the migration verbs. The problems of all the checks are
// reported together, in one line.
func (f *migrationFlags) start(fs *flag.FlagSet, args []string, stderr io.Writer, checks ...func() error) (*session, error) {
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	var p problems
	for _, check := range checks {
		if err := check(); err != nil {
			p.add("%v", err)
		}
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return f.open(stderr)
}

func checkAck(a *migrate.AckConfig) error {
	var p problems
	if a.Timeout <= 0 {
		p.add("--ack-timeout %v: want a positive duration", a.Timeout)
	}
	if a.LiveWindow <= 0 {
		p.add("--live-window %v: want a positive duration", a.LiveWindow)
	}
	return p.err()
}

func runCreate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("create", "--map new.json [--target menu-v2] [--gc-deletes 1h] [--replicas N] [--skip-disk-check] [--alias menu] [--opensearch URLs] [--json]", stdout)
	nf := addNewIndexFlags(fs)
	replicas := fs.Int("replicas", -1, "replicas of the new index after cutover; -1: the source's")
	asJSON := fs.Bool("json", false, "print the migration as JSON")
	mf := addMigrationFlags(fs)
	checkReplicas := func() error {
		if *replicas < -1 {
			return badInput("--replicas %d: want -1 (as many as the source) or more", *replicas)
		}
		return nil
	}
	s, err := mf.start(fs, args, stderr, nf.check, checkReplicas, nf.readMap)
	if err != nil {
		return err
	}
	defer s.close()
	cfg := nf.config()
	if *replicas >= 0 {
		cfg.Replicas = replicas
	}
	mig, err := s.m.Create(s.ctx, cfg)
	if err != nil {
		return diskAdvice(err)
	}
	if *asJSON {
		return writeJSON(stdout, mig)
	}
	fmt.Fprintf(stdout, "migration %s of alias %s: phase %s\n", mig.ID, mig.Alias, mig.Phase)
	fmt.Fprintf(stdout, "  source %s  map %s\n  target %s  map %s  (%s; replicas 0 and refresh off until cutover)\n",
		mig.Source.Index, short(mig.Source.MapHash), mig.Target.Index, short(mig.Target.MapHash), plural(int64(cfg.Map.NumShards()), "shard", "shards"))
	_, err = fmt.Fprintf(stdout, "next: reshard dual-writes --alias %s\n", mig.Alias)
	return err
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func runDualWrites(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("dual-writes", "[--ack-timeout 2m] [--live-window 30s] [--alias menu] [--opensearch URLs] [--json]", stdout)
	ack := ackFlags(fs)
	asJSON := fs.Bool("json", false, "print the ingest instances as JSON")
	mf := addMigrationFlags(fs)
	s, err := mf.start(fs, args, stderr, func() error { return checkAck(ack) })
	if err != nil {
		return err
	}
	defer s.close()
	rep, err := s.m.DualWrites(s.ctx, *ack)
	if rep != nil {
		if *asJSON {
			if jerr := writeJSON(stdout, rep); jerr != nil {
				return jerr
			}
		} else {
			writeAckReport(stdout, rep)
		}
	}
	if err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "next: reshard backfill --alias %s\n", mf.alias)
	}
	return nil
}

func runCutover(args []string, stdout, stderr io.Writer) error {
	return runSwitch("cutover", migrate.Forward, args, stdout, stderr)
}

func runRollback(args []string, stdout, stderr io.Writer) error {
	return runSwitch("rollback", migrate.Reverse, args, stdout, stderr)
}

// runSwitch is cutover and rollback: one verb, two directions.
func runSwitch(name string, dir migrate.Direction, args []string, stdout, stderr io.Writer) error {
	fs := newFlags(name, "[--dry-run [--verbose]] [--health-timeout 5m] [--alias menu] [--opensearch URLs]", stdout)
	dry := fs.Bool("dry-run", false, "print the requests the step would send, and change nothing")
	verbose := fs.Bool("verbose", false, "with --dry-run: print the migration state document the step would write in full")
	health := fs.Duration("health-timeout", migrate.DefaultHealthTimeout, "how long to wait for the index to turn green")
	mf := addMigrationFlags(fs)
	s, err := mf.start(fs, args, stderr, func() error {
		if *health <= 0 {
			return badInput("--health-timeout %v: want a positive duration", *health)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer s.close()
	cfg := migrate.SwitchConfig{HealthTimeout: *health}
	if *dry {
		cfg.DryRun, cfg.Verbose = stdout, *verbose
	}
	if dir == migrate.Forward {
		err = s.m.Cutover(s.ctx, cfg)
	} else {
		err = s.m.Rollback(s.ctx, cfg)
	}
	if err != nil || *dry {
		return err
	}
	mig, err := s.m.Load(s.ctx)
	if err != nil {
		return err
	}
	to := mig.Target.Index
	if dir == migrate.Reverse {
		to = mig.Source.Index
	}
	fmt.Fprintf(stdout, "alias %s is on %s; phase %s\n", mig.Alias, to, mig.Phase)
	if dir == migrate.Forward {
		_, err = fmt.Fprintf(stdout, "next: check the searches, then reshard complete --alias %s (the point of no return), or reshard rollback --alias %s\n", mig.Alias, mig.Alias)
	} else {
		_, err = fmt.Fprintf(stdout, "dual writes go on; next: reshard verify, then cutover again, or reshard cancel --alias %s\n", mig.Alias)
	}
	return err
}

func runComplete(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("complete", "[--delete-old] [--ack-timeout 2m] [--alias menu] [--opensearch URLs]", stdout)
	del := fs.Bool("delete-old", false, "delete the old index once no ingest instance writes it")
	ack := ackFlags(fs)
	mf := addMigrationFlags(fs)
	s, err := mf.start(fs, args, stderr, func() error { return checkAck(ack) })
	if err != nil {
		return err
	}
	defer s.close()
	if err := s.m.Complete(s.ctx, migrate.CompleteConfig{DeleteOld: *del, Ack: *ack}); err != nil {
		return err
	}
	mig, err := s.m.Load(s.ctx)
	if err != nil {
		return err
	}
	old := "kept (delete it later with reshard complete --delete-old)"
	if *del {
		old = "deleted"
	}
	_, err = fmt.Fprintf(stdout, "migration %s completed: alias %s on %s; old index %s %s\n", mig.ID, mig.Alias, mig.Target.Index, mig.Source.Index, old)
	return err
}

func runCancel(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("cancel", "[--ack-timeout 2m] [--alias menu] [--opensearch URLs]", stdout)
	ack := ackFlags(fs)
	mf := addMigrationFlags(fs)
	s, err := mf.start(fs, args, stderr, func() error { return checkAck(ack) })
	if err != nil {
		return err
	}
	defer s.close()
	mig, err := s.m.Load(s.ctx)
	if err != nil {
		return err
	}
	existed, err := s.m.IndexExists(s.ctx, mig.Target.Index)
	if err != nil {
		return err
	}
	if err := s.m.Cancel(s.ctx, *ack); err != nil {
		return err
	}
	what := mig.Target.Index + " deleted"
	if !existed {
		what = mig.Target.Index + " was never created"
	}
	_, err = fmt.Fprintf(stdout, "migration %s cancelled: %s; alias %s stays on %s\n", mig.ID, what, mig.Alias, mig.Source.Index)
	return err
}
