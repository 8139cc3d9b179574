package benchrun

import (
	"fmt"
	"io"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Commas writes n with thousands separators: 1234567 → "1,234,567".
func Commas(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// perSec formats an events/s figure, "–" for none.
func perSec(x float64) string {
	if math.IsNaN(x) || x <= 0 {
		return "–"
	}
	return Commas(int64(math.Round(x)))
}

// seconds formats a time in seconds, "never" for Unknown.
func seconds(s float64) string {
	if s < 0 {
		return "never"
	}
	return fmt.Sprintf("%.1f s", s)
}

func source(commit, src string, dirty []string) string {
	short := commit
	if len(short) > 12 {
		short = short[:12]
	}
	switch {
	case src == SourceHead:
		return short + " (git archive of HEAD)"
	case len(dirty) > 0:
		return fmt.Sprintf("%s (working tree, %d files changed: %s)", short, len(dirty), strings.Join(dirty, " "))
	}
	return short + " (working tree, clean)"
}

func writeChecks(w io.Writer, cs []Check) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range cs {
		verdict := "FAIL"
		if c.Pass {
			verdict = "PASS"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", verdict, c.Goal, c.Got)
	}
	tw.Flush()
}

// WriteSoak writes a soak's report as a table.
func WriteSoak(w io.Writer, r *SoakResult, work string) {
	fmt.Fprintf(w, "\nsoak: ingest at its defaults, commit %s\nrun %s; logs in %s\n\n", source(r.Commit, r.Source, r.Dirty), r.RunID, work)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t"+format+"\n", append([]any{k}, args...)...) }
	produced := fmt.Sprintf("%s events", Commas(r.Events))
	if r.Events < int64(r.Requested) {
		produced += fmt.Sprintf(" (%s asked for: the producer sizes its stream by a number of restaurants)", Commas(int64(r.Requested)))
	}
	row("stream", "%s, produced in %.1f s (%s events/s)", produced, r.ProduceSeconds, perSec(float64(r.Events)/r.ProduceSeconds))
	row("start-up", "first event finished %s after the start; directory warm at %s", seconds(r.StartupSeconds), seconds(r.WarmSeconds))
	row(fmt.Sprintf("first %s events", Commas(SoakFirstWindow)), "%s events/s", perSec(r.FirstRate))
	row("whole run", "%s events/s (first event finished to %.0f%% of them; to the last of the %s: %s events/s)", perSec(r.WholeRate), SoakWholeFraction*100, Commas(r.Finished), perSec(r.LastRate))
	var tenths []string
	for _, x := range r.Segments {
		tenths = append(tenths, perSec(x))
	}
	row("by tenth of the events", "%s", strings.Join(tenths, " · "))
	row("every offset committed", "%s after the start (%s events/s from the start)", seconds(r.DoneSeconds), perSec(r.CommittedRate))
	row("last write", "index writes last moved at %s; docs count at %s; ingest's bulk items at %s", seconds(r.LastWrite), seconds(r.LastDocsChange), seconds(r.LastBulkItem))
	row("commit catch-up", "%s from the last write to every offset committed", seconds(r.CatchUpSeconds))
	row("events by result", "%s", byResult(r.Results))
	rm := "none named *refresh*"
	if len(r.RefreshMetrics) > 0 {
		rm = byResultF(r.RefreshMetrics)
	}
	row("index refreshes", "%s during the run (external %s); ingest's own metrics: %s", Commas(r.Refreshes.Total), Commas(r.Refreshes.External), rm)
	row("RSS", "%s when warm; %s at %s (the baseline: warm and the first window through); peak after it %s; peak (VmHWM) %s; at the end %s",
		MB(r.WarmRSS), MB(r.BaselineRSS), seconds(r.BaselineSeconds), MB(r.PeakAfterBaseline), MB(r.PeakHWM), MB(r.EndRSS))
	row("RSS, second half", "%s once half the events had finished (%s); peak after it %s: %+.0f%%", MB(r.HalfRSS), seconds(r.HalfSeconds), MB(r.HalfPeak), r.HalfGrowth*100)
	row("Go heap in use", "%s at the baseline; peak after it %s; at the end %s (%s restaurants in the directory)", MB(r.HeapBaseline), MB(r.HeapPeak), MB(r.HeapEnd), Commas(r.Directory))
	if len(r.HeapProfiles) > 0 {
		row("heap profiles", "%s (go tool pprof -base one -sample_index inuse_space the next)", strings.Join(r.HeapProfiles, " "))
	}
	cpu := fmt.Sprintf("ingest %.1f s", r.IngestCPU)
	if r.Events > 0 && r.IngestCPU >= 0 {
		cpu += fmt.Sprintf(" (%.1f µs/event)", r.IngestCPU/float64(r.Events)*1e6)
	}
	row("CPU", "%s; OpenSearch node %s; Kafka broker %s", cpu, cpuOf(r.OpenSearchCPU), cpuOf(r.KafkaCPU))
	row("the machine", "%s of CPU used by everything else meanwhile; load average %.1f at the end", cpuOf(r.OthersCPU), r.Load)
	f, wh := r.Cores.First, r.Cores.Whole
	row("cores busy", "first window / whole run: ingest %s / %s, OpenSearch %s / %s, the machine %s / %s (of %d)",
		cores(f.Ingest), cores(wh.Ingest), cores(f.Node), cores(wh.Node), cores(f.Machine), cores(wh.Machine), runtime.NumCPU())
	stop := r.Stopped
	if stop == "" {
		stop = fmt.Sprintf("every offset committed; SIGTERM, exited in %.1f s", r.StopSeconds)
	}
	row("end", "%s: %s", stop, r.ExitStatus)
	row("docs in the index", "%s", Commas(r.Docs))
	row("ingest log", "%d warning, error or other lines", r.Problems)
	tw.Flush()
	for _, l := range r.ProblemLog {
		fmt.Fprintf(w, "    %s\n", l)
	}
	fmt.Fprintln(w)
	writeChecks(w, r.Checks)
	fmt.Fprintln(w)
}

// cores formats a number of cores, "–" for Unknown.
func cores(c float64) string {
	if c < 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f", c)
}

// num formats seconds with one decimal, "–" for Unknown.
func num(s float64) string {
	if s < 0 {
		return "–"
	}
	return fmt.Sprintf("%.1f", s)
}

func cpuOf(s float64) string {
	if s < 0 {
		return "not measured (no PID file under the real directory)"
	}
	return fmt.Sprintf("%.1f s", s)
}

func byResult(m map[string]int64) string {
	if len(m) == 0 {
		return "–"
	}
	f := map[string]float64{}
	for k, v := range m {
		f[k] = float64(v)
	}
	return byResultF(f)
}

func byResultF(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s", k, Commas(int64(math.Round(m[k])))))
	}
	return strings.Join(parts, ", ")
}

// WritePeer writes a peer run's report as tables.
func WritePeer(w io.Writer, r *PeerResult, work string) {
	fmt.Fprintf(w, "\npeer: ingest at commit %s beside Benthos v4.27.0\nrun %s; logs in %s\n", source(r.Commit, r.Source, r.Dirty), r.RunID, work)
	fmt.Fprintf(w, "stream: %s events (%s asked for), produced in %.1f s; Benthos built in %.1f s\n", Commas(r.Events), Commas(int64(r.Requested)), r.ProduceSeconds, r.BenthosBuild)
	fmt.Fprintf(w, "deletes: ingest %s;\n         Benthos %s\n", r.Deletes["ingest"], r.Deletes["benthos"])
	fmt.Fprintf(w, "events/s: events over the time from the first poll of the group's offsets (at the start) to the poll that saw all committed;\n")
	fmt.Fprintf(w, "by writes: over the time until the index's write counts last moved (Benthos commits every 5 s)\n\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\ttool\tevents/s\tby writes\tseconds\tCPU s\tCPU µs/event\tpeak RSS\tnode CPU s\tKafka CPU s\tothers' CPU s\tload\tdocs\tdead letters\t")
	for _, rd := range r.Rounds {
		for _, t := range []ToolRound{rd.Ingest, rd.Benthos} {
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.1f\t%.1f\t%s\t%s\t%s\t%s\t%.1f\t%s\t%s\t\n", t.Round, t.Tool, perSec(t.Rate), perSec(t.WritesRate), seconds(t.Seconds),
				t.CPUSeconds, t.CPUPerEvent, MB(t.PeakRSS), num(t.NodeCPUSeconds), num(t.KafkaCPUSeconds), num(t.OthersCPUSeconds), t.Load, Commas(t.Docs), Commas(t.DeadLetters))
		}
	}
	tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "round\tfirst\tevents/s ingest/Benthos\tby writes\tCPU per event ingest/Benthos\t")
	for i, rd := range r.Rounds {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t\n", i+1, rd.First, times(rd.RateRatio), times(rd.WritesRateRatio), times(rd.CPURatio))
	}
	m := r.Median
	fmt.Fprintf(tw, "median\t\t%s\t%s\t%s\t\n", times(m.RateRatio), times(m.WritesRateRatio), times(m.CPURatio))
	tw.Flush()
	fmt.Fprintf(w, "\nmedians: ingest %s events/s, %.1f CPU s, %.1f µs/event, peak RSS %s; Benthos %s events/s, %.1f CPU s, %.1f µs/event, peak RSS %s\n",
		perSec(float64(m.IngestRate)), m.IngestCPU, m.IngestCPUPerEvent, mbNum(m.IngestRSS),
		perSec(float64(m.BenthosRate)), m.BenthosCPU, m.BenthosCPUPerEvent, mbNum(m.BenthosRSS))
	for _, rd := range r.Rounds {
		for _, t := range []ToolRound{rd.Ingest, rd.Benthos} {
			if t.Note != "" {
				fmt.Fprintf(w, "  round %d %s: %s\n", t.Round, t.Tool, t.Note)
			}
		}
	}
	fmt.Fprintln(w)
	writeChecks(w, r.Checks)
	fmt.Fprintln(w)
}

func times(x Num) string {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return "–"
	}
	return fmt.Sprintf("%.2f×", f)
}

func mbNum(x Num) string {
	if math.IsNaN(float64(x)) {
		return "–"
	}
	return MB(int64(x))
}
