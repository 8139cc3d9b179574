package main

import (
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/geoshard/geoshard/internal/cli"
	"github.com/geoshard/geoshard/migrate"
	"github.com/geoshard/geoshard/schema"
)

// writeAckReport prints the ingest instances of a wait.
func writeAckReport(w io.Writer, rep *migrate.AckReport) {
	if rep.Live() == 0 {
		fmt.Fprintf(w, "no live ingest instance (%s, none recent): nothing to wait for; instances that start now read the phase before writing\n",
			plural(int64(len(rep.Instances)), "heartbeat", "heartbeats"))
	}
	if len(rep.Instances) > 0 {
		writeInstances(w, rep.Instances, time.Time{})
	}
	if lag := rep.Laggards(); len(lag) > 0 {
		fmt.Fprintf(w, "not acknowledged by: %s\n", strings.Join(lag, ", "))
	} else if rep.Live() > 0 {
		fmt.Fprintf(w, "every live ingest instance (%d) applied %s after %v\n", rep.Live(), rep.What, rep.Waited.Round(time.Millisecond))
	}
}

// writeInstances lists instances; an instance not acked whose heartbeat
// predates changed (the phase's last change) has not read the state since,
// and shows "not yet" rather than "no".
func writeInstances(w io.Writer, ins []migrate.Instance, changed time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  instance\tlive\tmigration\tapplied\tacked\theartbeat\tstate")
	for _, in := range ins {
		acked := yesNo(in.Acked)
		if !in.Acked && in.Live && in.At.Before(changed) {
			acked = "not yet"
		}
		// The state last: its text (a waiting instance's last error) is
		// as long as it is, and leaves the columns before it aligned.
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", in.Instance, yesNo(in.Live), orDash(in.MigrationID), orDash(string(in.Applied)),
			acked, in.At.UTC().Format(time.RFC3339), orDash(in.Condition))
	}
	tw.Flush()
}

// writeStale says how many heartbeats status left out as stale.
func writeStale(w io.Writer, n int) {
	if n > 0 {
		fmt.Fprintf(w, "  (%d more not heard from for over %v: stopped instances, not shown)\n", n, migrate.StaleAfter)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// verificationRow is one shard of `verify --json`: exactly these keys,
// and the lists when the shard has any: the missing and extra ids (with
// --ids, at most --max-ids of each, as the text lists them; missing and
// extra stay the exact counts) and the duplicates.
type verificationRow struct {
	Shard            string             `json:"shard"`
	Source           int64              `json:"source"`
	Target           int64              `json:"target"`
	OutOfRange       int64              `json:"out_of_range"`
	Missing          int64              `json:"missing"`
	Extra            int64              `json:"extra"`
	SourceDuplicates int64              `json:"source_duplicates"`
	TargetDuplicates int64              `json:"target_duplicates"`
	OK               bool               `json:"ok"`
	MissingIDs       []string           `json:"missing_ids,omitempty"`
	ExtraIDs         []string           `json:"extra_ids,omitempty"`
	Duplicates       []schema.Duplicate `json:"duplicates,omitempty"`
	ResolvedInFlight int64              `json:"resolved_in_flight,omitempty"`
}

func writeVerificationJSON(w io.Writer, v *schema.Verification) error {
	rows := make([]verificationRow, len(v.Shards))
	for i, r := range v.Shards {
		rows[i] = verificationRow{r.Shard, r.Source, r.Target, r.OutOfRange, r.Missing, r.Extra, r.SourceDuplicates, r.TargetDuplicates, r.OK,
			r.MissingIDs, r.ExtraIDs, r.Duplicates, r.ResolvedInFlight}
	}
	return writeJSON(w, rows)
}

// writeVerification prints a verification table with totals, the missing
// and extra ids, and the duplicates.
func writeVerification(w io.Writer, v *schema.Verification) error {
	how := "counts"
	if v.IDs {
		how = "counts and ids"
	}
	verdict := "passed"
	if !v.OK {
		verdict = "FAILED"
	}
	fmt.Fprintf(w, "verification (%s) at %s: %s\n", how, v.At.UTC().Format(time.RFC3339), verdict)
	// Duplicates are found by ids only: without, their columns say "-".
	dups := func(n int64) string {
		if !v.IDs {
			return "-"
		}
		return cli.Commas(n)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "shard\tsource\ttarget\tout_of_range\tmissing\textra\tdup_source\tdup_target\tok\t")
	var t verificationRow
	for _, r := range v.Shards {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.Shard, cli.Commas(r.Source), cli.Commas(r.Target), cli.Commas(r.OutOfRange),
			cli.Commas(r.Missing), cli.Commas(r.Extra), dups(r.SourceDuplicates), dups(r.TargetDuplicates), okMark(r.OK))
		t.Source += r.Source
		t.Target += r.Target
		t.OutOfRange += r.OutOfRange
		t.Missing += r.Missing
		t.Extra += r.Extra
	}
	// A duplicate counts on every shard with a copy, in the total once.
	fmt.Fprintf(tw, "total\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", cli.Commas(t.Source), cli.Commas(t.Target), cli.Commas(t.OutOfRange),
		cli.Commas(t.Missing), cli.Commas(t.Extra), dups(v.SourceDuplicates), dups(v.TargetDuplicates), okMark(v.OK))
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, r := range v.Shards {
		if len(r.MissingIDs) > 0 {
			fmt.Fprintf(w, "%s: missing %s\n", r.Shard, idList(r.MissingIDs, r.Missing))
		}
		if len(r.ExtraIDs) > 0 {
			fmt.Fprintf(w, "%s: extra %s\n", r.Shard, idList(r.ExtraIDs, r.Extra))
		}
	}
	writeDuplicates(w, v)
	if v.ResolvedInFlight > 0 {
		fmt.Fprintf(w, "resolved in flight: %s differences seen were changes the ingest instances had in flight, and were gone once they finished (not counted above)\n", cli.Commas(v.ResolvedInFlight))
	}
	if !v.IDs && !v.OK {
		fmt.Fprintln(w, "(missing and extra are count differences, and a document stored on two shards counts twice; verify --ids names the documents and tells duplicates apart)")
	}
	return nil
}

// writeDuplicates lists each duplicate once (a shard's row lists those
// with a copy on it) and says what repair does about them.
func writeDuplicates(w io.Writer, v *schema.Verification) {
	if v.SourceDuplicates+v.TargetDuplicates == 0 {
		return
	}
	fmt.Fprintf(w, "duplicates: %s the source holds on two or more of its shards, %s the target (shards named by each index's map); the copy with the highest version is current, the others are superseded\n",
		idCount(v.SourceDuplicates), idCount(v.TargetDuplicates))
	seen := map[string]bool{}
	var listed [2]int64
	superseded, ties := 0, 0
	for _, r := range v.Shards {
		for _, d := range r.Duplicates {
			k := d.Side + " " + d.ID
			if seen[k] {
				continue
			}
			seen[k] = true
			if d.Side == schema.DuplicateInSource {
				listed[0]++
			} else {
				listed[1]++
			}
			if d.Tie() {
				ties++
			}
			for _, c := range d.Copies {
				if c.Status == schema.CopySuperseded {
					superseded++
				}
			}
			fmt.Fprintf(w, "  %s %s\n", d.Side, d)
		}
	}
	if more := v.SourceDuplicates - listed[0] + v.TargetDuplicates - listed[1]; more > 0 {
		fmt.Fprintf(w, "  and %s more (--max-ids per shard)\n", cli.Commas(more))
	}
	fmt.Fprintf(w, "an index holding superseded copies fails verification: reshard repair deletes them (%d listed), each at its id's newest version", superseded)
	if ties > 0 {
		fmt.Fprintf(w, "; it leaves copies tied at the newest version (%s): delete the wrong copy by hand, with its routing", idCount(int64(ties)))
	}
	fmt.Fprintln(w)
}

// idCount is "1 id" or "n ids".
func idCount(n int64) string {
	if n == 1 {
		return "1 id"
	}
	return cli.Commas(n) + " ids"
}

func okMark(ok bool) string {
	if ok {
		return "ok"
	}
	return "DIFF"
}

func idList(ids []string, n int64) string {
	s := strings.Join(ids, ", ")
	if more := n - int64(len(ids)); more > 0 {
		s += fmt.Sprintf(" and %s more", cli.Commas(more))
	}
	return s
}

// writeStatus prints a migration: phase, sides, backfill, instances and
// the last verification.
func writeStatus(w io.Writer, st *migrate.Status) error {
	m := st.Migration
	if m == nil {
		fmt.Fprintf(w, "no migration is recorded for alias %s\n", st.Alias)
		if len(st.Instances) == 0 {
			fmt.Fprintln(w, "ingest instances: no heartbeat")
		} else {
			fmt.Fprintln(w, "ingest instances (acked: writing with no migration):")
			writeInstances(w, st.Instances, time.Time{})
		}
		writeStale(w, st.Stale)
		return writeNext(w, st)
	}
	fmt.Fprintf(w, "migration %s of alias %s: phase %s (updated %s)\n", m.ID, m.Alias, m.Phase, m.Updated.UTC().Format(time.RFC3339))
	fmt.Fprintf(w, "  source %s  map %s\n  target %s  map %s\n", m.Source.Index, short(m.Source.MapHash), m.Target.Index, short(m.Target.MapHash))
	if t := st.Backfill; t != nil {
		fmt.Fprintf(w, "backfill: %s; %d of %d slices done\n", checkpointed(*t), t.SlicesDone, t.Slices)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  slice\tsource shard\tcheckpointed\tafter\tdone\towner\tlease")
		at := now()
		for _, s := range m.Backfill {
			fmt.Fprintf(tw, "  %d\t%d\t%s\t%s\t%s\t%s\t%s\n", s.Slice, s.SourceShard, cli.Commas(s.Docs), orDash(s.After), yesNo(s.Done),
				orDash(s.Owner), leaseState(s, at))
		}
		tw.Flush()
		fmt.Fprintln(w, "  ("+backfillWords+")")
	}
	if len(st.Instances) == 0 {
		fmt.Fprintln(w, "ingest instances: no heartbeat")
	} else {
		fmt.Fprintf(w, "ingest instances (acked: applied phase %s of this migration):\n", m.Phase)
		writeInstances(w, st.Instances, m.Updated)
	}
	writeStale(w, st.Stale)
	if m.Verification == nil {
		fmt.Fprintln(w, "verification: none yet")
	} else if err := writeVerification(w, m.Verification); err != nil {
		return err
	}
	return writeNext(w, st)
}

// leaseState says until when a slice's lease holds, or since when it has
// expired (its owner died or froze; another worker takes it over).
func leaseState(s schema.SliceState, at time.Time) string {
	switch {
	case s.Owner == "":
		return "-"
	case s.Leased(at):
		return "until " + s.LeaseUntil.UTC().Format(time.RFC3339)
	}
	return "expired " + s.LeaseUntil.UTC().Format(time.RFC3339)
}

// backfillWords defines the words of a backfill's figures, as its
// report, its log and status use them.
const backfillWords = "checkpointed: written, acknowledged and recorded in its slice's checkpoint; copied: written to the target; " +
	"stale: refused, as the target already held as new a version from a live write"

// checkpointed states a backfill's figures over the migration:
// "38,844 documents checkpointed: 38,498 copied, 346 already newer in the
// target (stale)".
func checkpointed(t migrate.BackfillTotals) string {
	s := plural(t.Checkpointed, "document", "documents") + " checkpointed"
	if t.Counted && t.Checkpointed > 0 {
		s += fmt.Sprintf(": %s copied, %s already newer in the target (stale)", cli.Commas(t.Copied), cli.Commas(t.Stale))
	}
	return s
}

// plural is "1 shard" or "2 shards", with thousands separators.
func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return cli.Commas(n) + " " + many
}

// writeNext names the verbs that go on from the migration's phase, the
// one run would take first.
func writeNext(w io.Writer, st *migrate.Status) error {
	if len(st.Next) == 0 {
		return nil
	}
	others := ""
	if len(st.Next) > 1 {
		rest := make([]string, len(st.Next)-1)
		for i, s := range st.Next[1:] {
			rest[i] = string(s)
		}
		others = " (or " + strings.Join(rest, ", ") + ")"
	}
	_, err := fmt.Fprintf(w, "next: reshard %s%s --alias %s\n", st.Next[0], others, st.Alias)
	return err
}

// progress shows a backfill's progress: a bar redrawn in place when w is
// a terminal, structured log records otherwise.
type progress struct {
	mu       sync.Mutex
	w        io.Writer
	log      *slog.Logger
	terminal bool
	drawn    bool
}

func newProgress(w io.Writer, log *slog.Logger) *progress {
	return &progress{w: w, log: log, terminal: cli.IsTerminal(w)}
}

func (p *progress) update(bp migrate.BackfillProgress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	done := 0
	for _, s := range bp.Slices {
		if s.Done {
			done++
		}
	}
	if !p.terminal {
		p.log.Info("backfill progress", migrate.ProgressAttrs(bp)...)
		return
	}
	frac := 1.0
	if bp.Total > 0 {
		frac = min(1, float64(bp.Docs)/float64(bp.Total))
	}
	// A rate and a time left only once measured.
	rate, eta := "-", "-"
	if bp.Rate > 0 {
		rate = cli.Commas(int64(bp.Rate))
	}
	if bp.ETA > 0 {
		eta = bp.ETA.Round(time.Second).String()
	}
	fmt.Fprintf(p.w, "\r%s %5.1f%%  %s/%s checkpointed  %s docs/s  ETA %s  slices %d/%d\x1b[K",
		cli.Bar(frac, 30), 100*frac, cli.Commas(bp.Docs), cli.Commas(bp.Total),
		rate, eta, done, len(bp.Slices))
	p.drawn = true
}

// finish ends the bar's line.
func (p *progress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
}
