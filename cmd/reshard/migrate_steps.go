package main

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode"

	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/schema"
)

// backfillFlags are the flags of backfill (and run).
func backfillFlags(fs *flag.FlagSet) *migrate.BackfillConfig {
	c := &migrate.BackfillConfig{}
	fs.IntVar(&c.Slices, "slices", 0, "source shards copied at once; 0: all of them (one slice per source shard; more is refused)")
	fs.IntVar(&c.Page, "page", migrate.DefaultPage, "documents per page: read, written and checkpointed together (1 to 10000)")
	fs.Float64Var(&c.MaxDocsPerSecond, "max-docs-per-second", 0, "limit the copy to this many documents per second, all slices together; 0: no limit")
	fs.StringVar(&c.Worker, "worker-id", "", "this process's `name` in the slices' leases, which reshard status shows; empty: host name and process id. Workers sharing a backfill need distinct names; in a Kubernetes Job, the pod's (GEOSHARD_WORKER_ID)")
	fs.DurationVar(&c.Lease, "lease", migrate.DefaultLease, "how long a slice's lease lasts unless renewed: the slices of a worker that dies are taken over by another after this long (1s to 1h)")
	return c
}

func checkBackfill(c *migrate.BackfillConfig) error {
	var p problems
	if c.Slices < 0 {
		p.add("--slices %d: want 0 (one slice per source shard, all at once) up to the number of source shards", c.Slices)
	}
	if c.Page < 1 || c.Page > migrate.MaxPage {
		p.add("--page %d: want 1 to %d", c.Page, migrate.MaxPage)
	}
	if c.MaxDocsPerSecond < 0 {
		p.add("--max-docs-per-second %v: want 0 (no limit) or more", c.MaxDocsPerSecond)
	}
	if c.Lease < migrate.MinLease || c.Lease > migrate.MaxLease {
		p.add("--lease %v: want 1s to 1h (a few times longer than a page takes to copy)", c.Lease)
	}
	if len(c.Worker) > 253 || strings.ContainsFunc(c.Worker, unicode.IsSpace) {
		p.add("--worker-id %q: want a name of at most 253 bytes without spaces, e.g. the pod's", c.Worker)
	}
	return p.err()
}

// verifyFlags are the flags of verify (and run).
func verifyFlags(fs *flag.FlagSet) *migrate.VerifyConfig {
	c := &migrate.VerifyConfig{}
	fs.BoolVar(&c.IDs, "ids", false, "also compare the document ids of every range (slower); lists up to --max-ids missing, extra and duplicated ids per shard, and finds duplicates (an id on two or more shards of one index)")
	fs.IntVar(&c.Attempts, "attempts", 0, fmt.Sprintf("check a shard that differs up to this many times (live writes can be caught half-way); 0 for the default, %d, or %d with --ids, whose differences are each read again instead", migrate.DefaultAttempts, migrate.DefaultIDAttempts))
	fs.DurationVar(&c.Pause, "pause", migrate.DefaultPause, "pause between attempts")
	fs.IntVar(&c.MaxIDs, "max-ids", migrate.DefaultMaxIDs, "longest list of missing (or extra, or duplicated) ids per shard; counts stay exact")
	fs.IntVar(&c.MaxSuspects, "max-suspects", migrate.DefaultMaxSuspects, "with --ids, how many differences are read again before they are reported; those past it are reported unconfirmed")
	fs.DurationVar(&c.Settle, "settle", migrate.DefaultSettle, "with --ids, how long a difference may wait for the ingest instances to finish the changes they had in flight when it was seen, before it is reported")
	return c
}

func checkVerify(c *migrate.VerifyConfig) error {
	var p problems
	if c.Attempts < 0 {
		p.add("--attempts %d: want 0 (the default) or more", c.Attempts)
	}
	if c.Pause < 0 {
		p.add("--pause %v: want 0 (no pause) or more", c.Pause)
	}
	if c.MaxIDs < 1 {
		p.add("--max-ids %d: want 1 or more", c.MaxIDs)
	}
	if c.MaxSuspects < 1 {
		p.add("--max-suspects %d: want 1 or more", c.MaxSuspects)
	}
	if c.Settle <= 0 {
		p.add("--settle %v: want more than 0", c.Settle)
	}
	if err := p.err(); err != nil {
		return err
	}
	if c.Pause == 0 {
		c.Pause = -1 // VerifyConfig reads 0 as the default; -1 is no pause
	}
	return nil
}

func runBackfill(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("backfill", "[--slices N] [--max-docs-per-second R] [--page 1000] [--worker-id NAME] [--lease 30s] [--restart] [--alias menu] [--opensearch URLs] [--json]", stdout)
	cfg := backfillFlags(fs)
	restart := fs.Bool("restart", false, "forget the checkpoints and copy everything again (after a verification found documents missing)")
	ack := ackFlags(fs)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	mf := addMigrationFlags(fs)
	s, err := mf.start(fs, args, stderr, func() error { return checkBackfill(cfg) }, func() error { return checkAck(ack) })
	if err != nil {
		return err
	}
	defer s.close()
	cfg.Restart, cfg.Ack = *restart, *ack
	bar := newProgress(stdout, s.log)
	cfg.Progress = bar.update
	if bar.terminal {
		cfg.ProgressInterval = 250 * time.Millisecond
	}
	rep, err := s.m.Backfill(s.ctx, *cfg)
	bar.finish()
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, rep)
	}
	return writeBackfillReport(stdout, rep, mf.alias)
}

// writeBackfillReport prints what a backfill did, in the words of status
// and the log.
func writeBackfillReport(w io.Writer, rep *migrate.BackfillReport, alias string) error {
	if rep.Already {
		_, err := fmt.Fprintf(w, "backfill already done: %s\nnext: reshard verify --alias %s\n", checkpointed(rep.Totals), alias)
		return err
	}
	_, err := fmt.Fprintf(w, "backfill done: %s\nthis run: read %s, copied %s, %s stale, in %v\n(%s)\nnext: reshard verify --alias %s\n",
		checkpointed(rep.Totals), cli.Commas(rep.Read), cli.Commas(rep.Copied), cli.Commas(rep.Stale), rep.Elapsed.Round(time.Millisecond),
		backfillWords, alias)
	return err
}

func runVerify(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", "[--ids] [--attempts 5] [--alias menu] [--opensearch URLs] [--json]", stdout)
	cfg := verifyFlags(fs)
	asJSON := fs.Bool("json", false, `print [{"shard":…,"source":…,"target":…,"out_of_range":…,"missing":…,"extra":…,"source_duplicates":…,"target_duplicates":…,"ok":…,"missing_ids":[…],"extra_ids":[…],"duplicates":[…]}, …] (the lists only on shards with any, at most --max-ids long, as the text)`)
	mf := addMigrationFlags(fs)
	s, err := mf.start(fs, args, stderr, func() error { return checkVerify(cfg) })
	if err != nil {
		return err
	}
	defer s.close()
	ver, err := s.m.Verify(s.ctx, *cfg)
	if ver != nil {
		var werr error
		if *asJSON {
			werr = writeVerificationJSON(stdout, ver)
		} else {
			werr = writeVerification(stdout, ver)
		}
		if werr != nil {
			return werr
		}
	}
	if err == nil && !*asJSON {
		fmt.Fprintf(stdout, "next: reshard cutover --dry-run --alias %s, then reshard cutover --alias %s\n", mf.alias, mf.alias)
	}
	return err
}

func runRepair(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("repair", "[--dry-run] [--alias menu] [--opensearch URLs]", stdout)
	dry := fs.Bool("dry-run", false, "print what would be copied and deleted (the requests), and change nothing")
	mf := addMigrationFlags(fs)
	s, err := mf.start(fs, args, stderr)
	if err != nil {
		return err
	}
	defer s.close()
	var cfg migrate.RepairConfig
	if *dry {
		cfg.DryRun = stdout
	}
	rep, err := s.m.Repair(s.ctx, cfg)
	if err != nil {
		return err
	}
	verb := "copied"
	if *dry {
		verb = "would copy"
	}
	del := "deleted"
	if *dry {
		del = "would delete"
	}
	fmt.Fprintf(stdout, "repair: %s %s (%d already as new on the target, %d refused by a delete's tombstone), %s %s (%d left: changed since read)\n",
		verb, plural(int64(rep.Copied), "document", "documents"), rep.Stale, rep.Blocked, del, plural(int64(rep.Deleted), "extra copy", "extra copies"), rep.Changed)
	if rep.Superseded+rep.Kept+len(rep.Ties) > 0 {
		fmt.Fprintf(stdout, "repair: %s %s of duplicates, at their ids' newest versions (%d left: as new since read)\n",
			del, plural(int64(rep.Superseded), "superseded copy", "superseded copies"), rep.Kept)
	}
	if len(rep.Ties) > 0 {
		fmt.Fprintf(stdout, "left the duplicates of %s whose copies are tied at the newest version: which is current cannot be told; delete the wrong copy by hand (DELETE /<index>/_doc/<id>?routing=<its routing>)\n", idCount(int64(len(rep.Ties))))
		for _, d := range rep.Ties {
			fmt.Fprintf(stdout, "  %s %s\n", d.Side, d)
		}
	}
	if rep.Unlisted > 0 {
		were := plural(int64(rep.Unlisted), "more difference was", "more differences were")
		fmt.Fprintf(stdout, "%s counted but not listed (--max-ids); the next verify --ids lists them\n", were)
	}
	if *dry {
		return nil
	}
	_, err = fmt.Fprintf(stdout, "next: reshard verify --ids --alias %s\n", mf.alias)
	return err
}

func runRun(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", "--map new.json [create, backfill, verify and cutover flags] [--alias menu] [--opensearch URLs]", stdout)
	nf := addNewIndexFlags(fs)
	bf := backfillFlags(fs)
	vf := verifyFlags(fs)
	ack := ackFlags(fs)
	health := fs.Duration("health-timeout", migrate.DefaultHealthTimeout, "how long to wait for the new index to turn green at cutover")
	mf := addMigrationFlags(fs)
	s, err := mf.start(fs, args, stderr, nf.check,
		func() error { return checkBackfill(bf) },
		func() error { return checkVerify(vf) },
		func() error { return checkAck(ack) },
		nf.readMap)
	if err != nil {
		return err
	}
	defer s.close()
	bar := newProgress(stdout, s.log)
	bf.Progress = bar.update
	verified := false
	cfg := migrate.RunConfig{
		Create: nf.config(),
		Ack:    *ack, Backfill: *bf, Verify: *vf,
		Switch: migrate.SwitchConfig{HealthTimeout: *health},
		OnStep: func(step migrate.Step, from schema.Phase) {
			bar.finish()
			verified = verified || step == migrate.StepVerify
			fmt.Fprintf(stdout, "== %s (from phase %s)\n", step, from)
		},
	}
	mig, err := s.m.Run(s.ctx, cfg)
	bar.finish()
	if verified {
		// The verification this run made, passed or not.
		if cur, lerr := s.m.Load(s.ctx); lerr == nil && cur.Verification != nil {
			writeVerification(stdout, cur.Verification)
		}
	}
	if err != nil {
		return diskAdvice(err)
	}
	_, err = fmt.Fprintf(stdout, "migration %s: phase %s; alias %s\nnext: check the searches, then reshard complete --alias %s (the point of no return), or reshard rollback --alias %s\n",
		mig.ID, mig.Phase, mig.Alias, mig.Alias, mig.Alias)
	return err
}

func runStatus(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("status", "[--live-window 30s] [--alias menu] [--opensearch URLs] [--json]", stdout)
	window := fs.Duration("live-window", migrate.DefaultLiveWindow, "an ingest instance is live while its heartbeat is at most this old")
	asJSON := fs.Bool("json", false, "print the migration and the instances as JSON")
	mf := addMigrationFlags(fs)
	s, err := mf.start(fs, args, stderr, func() error {
		if *window <= 0 {
			return badInput("--live-window %v: want a positive duration", *window)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer s.close()
	st, err := s.m.Status(s.ctx, *window)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(stdout, st)
	}
	return writeStatus(stdout, st)
}
