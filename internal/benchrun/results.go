package benchrun

import (
	"encoding/json"
	"math"
	"time"
)

// Unknown marks a time or figure a run could not measure, in the results'
// seconds fields.
const Unknown = -1

// secs is d in seconds, or Unknown for a negative d.
func secs(d time.Duration) float64 {
	if d < 0 {
		return Unknown
	}
	return d.Seconds()
}

// RefreshStats are an index's refresh counts (primaries), from
// _stats/refresh.
type RefreshStats struct {
	Total    int64 `json:"total"`
	External int64 `json:"external_total"`
}

// SoakObservations is what a soak saw, sampled over the run; times are
// since ingest was started, and a time that never came is negative.
type SoakObservations struct {
	Events    int64  // messages in the event topics
	Finished  Series // ingest's events finished (geoshard_ingest_events_total)
	Committed Series // events committed by the group (Progress.Done)
	Writes    Series // the index's index_total + delete_total (primaries)
	Docs      Series // the index's docs.count (primaries)
	BulkItems Series // ingest's bulk items finished (geoshard_bulk_items_total)
	HeapInuse Series // ingest's Go heap in use (go_memstats_heap_inuse_bytes)
	Directory Series // restaurants in ingest's directory (geoshard_ingest_directory_restaurants)
	// NodeCPU and MachineCPU are the OpenSearch node's CPU and the whole
	// machine's busy CPU, in milliseconds (empty where unknown).
	NodeCPU, MachineCPU Series
	Proc                []ProcSample

	WarmAt time.Duration // when ingest logged "directory warm"
	DoneAt time.Duration // the first poll that saw every offset committed

	RefreshBefore, RefreshAfter RefreshStats
	// RefreshMetrics are ingest's own metrics with "refresh" in their
	// name, at the end (none, if it has none).
	RefreshMetrics map[string]float64
	Results        map[string]int64 // events finished by result, at the end

	OpenSearchCPU, KafkaCPU time.Duration // during the run; negative: unknown
}

// SoakResult is a soak's report.
type SoakResult struct {
	Commit    string   `json:"commit"`
	Source    string   `json:"source"`
	Dirty     []string `json:"dirty,omitempty"`
	RunID     string   `json:"run_id"`
	Requested int      `json:"events_requested"`
	Events    int64    `json:"events"`
	// ProduceSeconds is the producer's wall time for the stream.
	ProduceSeconds float64 `json:"produce_seconds"`

	StartupSeconds float64            `json:"startup_seconds"`
	WarmSeconds    float64            `json:"warm_seconds"`
	FirstEvents    int64              `json:"first_window_events"`
	FirstRate      float64            `json:"first_window_events_per_s"`
	WholeRate      float64            `json:"whole_run_events_per_s"`
	LastRate       float64            `json:"to_last_event_events_per_s"`
	CommittedRate  float64            `json:"committed_events_per_s"`
	Segments       []float64          `json:"events_per_s_by_tenth"`
	Finished       int64              `json:"events_finished"`
	Results        map[string]int64   `json:"events_by_result"`
	DoneSeconds    float64            `json:"all_committed_seconds"`
	LastWrite      float64            `json:"last_write_seconds"`
	LastDocsChange float64            `json:"last_docs_change_seconds"`
	LastBulkItem   float64            `json:"last_bulk_item_seconds"`
	CatchUpSeconds float64            `json:"commit_catch_up_seconds"`
	Docs           int64              `json:"docs"`
	Refreshes      RefreshStats       `json:"refreshes"`
	RefreshMetrics map[string]float64 `json:"ingest_refresh_metrics"`

	WarmRSS           int64   `json:"warm_rss_bytes"`
	BaselineSeconds   float64 `json:"rss_baseline_seconds"`
	BaselineRSS       int64   `json:"rss_baseline_bytes"`
	PeakAfterBaseline int64   `json:"rss_peak_after_baseline_bytes"`
	RSSGrowth         float64 `json:"rss_growth"`
	// HalfRSS is RSS once half the events have finished, HalfPeak the
	// largest after it, HalfGrowth their ratio less 1: whether RSS still
	// grows in the run's second half, once the ramp-up is over.
	HalfSeconds float64 `json:"rss_half_seconds"`
	HalfRSS     int64   `json:"rss_half_bytes"`
	HalfPeak    int64   `json:"rss_half_peak_bytes"`
	HalfGrowth  float64 `json:"rss_half_growth"`
	PeakHWM     int64   `json:"peak_rss_bytes"`
	EndRSS      int64   `json:"end_rss_bytes"`
	// The Go heap in use at the RSS baseline, at its peak after it, and
	// at the end: whether RSS grew with live data or with the collector's
	// headroom. Directory is the restaurants ingest knew at the end.
	HeapBaseline int64 `json:"heap_inuse_baseline_bytes"`
	HeapPeak     int64 `json:"heap_inuse_peak_bytes"`
	HeapEnd      int64 `json:"heap_inuse_end_bytes"`
	Directory    int64 `json:"directory_restaurants"`
	// HeapProfiles are the heap profiles saved (-heap-profiles).
	HeapProfiles []string `json:"heap_profiles,omitempty"`

	IngestCPU     float64 `json:"ingest_cpu_seconds"`
	OpenSearchCPU float64 `json:"opensearch_cpu_seconds"`
	KafkaCPU      float64 `json:"kafka_cpu_seconds"`
	// OthersCPU is what else the machine ran meanwhile (its busy CPU less
	// ingest's and the engines'), Load its 1-minute load average at the
	// end: how quiet the measurement was.
	OthersCPU float64 `json:"others_cpu_seconds"`
	Load      float64 `json:"load_average"`
	// Cores are the cores kept busy, on average, over the first window
	// and over the whole run (to 99% of the events), by ingest, the node
	// and the whole machine; Unknown where not measured.
	Cores struct {
		First CoreUse `json:"first_window"`
		Whole CoreUse `json:"whole_run"`
	} `json:"cores"`

	Completed   bool     `json:"completed"`
	ExitedEarly bool     `json:"exited_early"`
	ExitStatus  string   `json:"exit_status"`
	Stopped     string   `json:"stopped"`
	StopSeconds float64  `json:"stop_seconds"`
	Problems    int      `json:"log_problems"`
	ProblemLog  []string `json:"log_problem_lines,omitempty"`

	Checks []Check `json:"checks"`
}

// CoreUse is how many cores each party kept busy over a span.
type CoreUse struct {
	Ingest  float64 `json:"ingest"`
	Node    float64 `json:"opensearch"`
	Machine float64 `json:"machine"`
}

// Result computes the soak's figures from what it saw. The RSS baseline is
// taken once the directory is warm and the first window is through: on a
// fresh index the warm ends at once, before the first fetch has filled the
// pipeline's buffers, and growth from there would be the buffers, not a
// leak.
func (o *SoakObservations) Result() *SoakResult {
	r := &SoakResult{
		Events:         o.Events,
		StartupSeconds: Unknown,
		WarmSeconds:    secs(o.WarmAt),
		DoneSeconds:    secs(o.DoneAt),
		LastWrite:      Unknown,
		LastDocsChange: Unknown,
		LastBulkItem:   Unknown,
		CatchUpSeconds: Unknown,
		Results:        o.Results,
		RefreshMetrics: o.RefreshMetrics,
		Refreshes: RefreshStats{
			Total:    o.RefreshAfter.Total - o.RefreshBefore.Total,
			External: o.RefreshAfter.External - o.RefreshBefore.External,
		},
		BaselineSeconds: Unknown,
		IngestCPU:       Unknown,
		OpenSearchCPU:   secs(o.OpenSearchCPU),
		KafkaCPU:        secs(o.KafkaCPU),
		Completed:       o.DoneAt >= 0,
	}
	if a, ok := o.Finished.Start(); ok && o.Finished.Last().V > a.V {
		r.StartupSeconds = a.T.Seconds()
	}
	r.Finished = o.Finished.Last().V
	var firstEnd Point
	var ok bool
	if r.FirstRate, firstEnd, ok = o.Finished.Window(SoakFirstWindow); ok {
		r.FirstEvents = SoakFirstWindow
	}
	r.WholeRate = o.Finished.Upto(SoakWholeFraction)
	_, _, ingestCPU := ProcSeries(o.Proc)
	cores := func(a, b time.Duration) CoreUse {
		c := CoreUse{Unknown, Unknown, Unknown}
		for _, x := range []struct {
			s   Series
			dst *float64
		}{{ingestCPU, &c.Ingest}, {o.NodeCPU, &c.Node}, {o.MachineCPU, &c.Machine}} {
			if v, ok := x.s.Cores(a, b); ok {
				*x.dst = v
			}
		}
		return c
	}
	if a, ok := o.Finished.Start(); ok {
		r.Cores.First = cores(a.T, firstEnd.T)
		if b, ok := o.Finished.Reach(a.V + int64(math.Ceil(SoakWholeFraction*float64(o.Finished.Last().V-a.V)))); ok {
			r.Cores.Whole = cores(a.T, b.T)
		}
	} else {
		r.Cores.First, r.Cores.Whole = cores(0, 0), cores(0, 0)
	}
	r.LastRate = o.Finished.Whole()
	r.Segments = o.Finished.Segments(10)
	if o.DoneAt > 0 {
		r.CommittedRate = float64(o.Events) / o.DoneAt.Seconds()
	}
	if p, ok := o.Writes.Settled(); ok {
		r.LastWrite = p.T.Seconds()
		if o.DoneAt >= 0 {
			r.CatchUpSeconds = math.Max(0, (o.DoneAt - p.T).Seconds())
		}
	}
	if p, ok := o.Docs.Settled(); ok {
		r.LastDocsChange = p.T.Seconds()
	}
	r.Docs = o.Docs.Last().V
	r.HeapEnd, r.Directory = o.HeapInuse.Last().V, o.Directory.Last().V
	if p, ok := o.BulkItems.Settled(); ok {
		r.LastBulkItem = p.T.Seconds()
	}

	if n := len(o.Proc); n > 0 {
		last := o.Proc[n-1]
		r.EndRSS, r.IngestCPU = last.Mem.RSS, last.CPU.Seconds()
		for _, s := range o.Proc {
			r.PeakHWM = max(r.PeakHWM, s.Mem.HWM, s.Mem.RSS)
		}
	}
	r.HalfSeconds = Unknown
	if a, ok := o.Finished.Start(); ok {
		if h, ok := o.Finished.Reach(a.V + (o.Finished.Last().V-a.V+1)/2); ok && o.Finished.Last().V > a.V {
			if base, peak, g, ok := Growth(o.Proc, h.T); ok {
				r.HalfSeconds, r.HalfRSS, r.HalfPeak, r.HalfGrowth = h.T.Seconds(), base, peak, g
			}
		}
	}
	if o.WarmAt >= 0 {
		for _, s := range o.Proc {
			if s.T >= o.WarmAt {
				r.WarmRSS = s.Mem.RSS
				break
			}
		}
		from := max(o.WarmAt, firstEnd.T)
		if p, ok := o.HeapInuse.At(from); ok {
			r.HeapBaseline = p.V
		}
		if p, ok := o.HeapInuse.MaxFrom(from); ok {
			r.HeapPeak = p.V
		}
		if base, peak, g, ok := Growth(o.Proc, from); ok {
			r.BaselineRSS, r.PeakAfterBaseline, r.RSSGrowth = base, peak, g
			for _, s := range o.Proc {
				if s.T >= from {
					r.BaselineSeconds = s.T.Seconds()
					break
				}
			}
		}
	}
	return r
}

// ToolObservations is what one tool's run in a peer round saw; times are
// since the first poll of the group's offsets, right after the tool was
// started.
type ToolObservations struct {
	Events    int64
	Committed Series // events committed by the group
	DoneAt    time.Duration
	Writes    Series // the index's index_total + delete_total
	Docs      Series // the index's docs.count
	CPU       time.Duration
	PeakRSS   int64
}

// ToolRound is one tool's figures in one round.
type ToolRound struct {
	Tool      string  `json:"tool"`
	Round     int     `json:"round"`
	Index     string  `json:"index"`
	Events    int64   `json:"events"`
	Completed bool    `json:"completed"`
	Seconds   float64 `json:"seconds"`
	Rate      float64 `json:"events_per_s"`
	// WritesSeconds is when the index's write counts last moved: the
	// cross-check of the committed offsets (Benthos commits every 5 s).
	WritesSeconds float64 `json:"last_write_seconds"`
	WritesRate    float64 `json:"events_per_s_by_writes"`
	CPUSeconds    float64 `json:"cpu_seconds"`
	CPUPerEvent   float64 `json:"cpu_us_per_event"`
	// NodeCPUSeconds and KafkaCPUSeconds are the engines' CPU over the
	// same run; OthersCPUSeconds what else the machine ran (its busy CPU
	// less the tool's and the engines'), and Load its 1-minute load
	// average at the end.
	NodeCPUSeconds   float64 `json:"opensearch_cpu_seconds"`
	KafkaCPUSeconds  float64 `json:"kafka_cpu_seconds"`
	OthersCPUSeconds float64 `json:"others_cpu_seconds"`
	Load             float64 `json:"load_average"`
	PeakRSS          int64   `json:"peak_rss_bytes"`
	Docs             int64   `json:"docs"`
	DeadLetters      int64   `json:"dead_letters"`
	Note             string  `json:"note,omitempty"`
}

// Round computes a tool's figures from what it saw.
func (o *ToolObservations) Round() ToolRound {
	t := ToolRound{
		Events:        o.Events,
		Completed:     o.DoneAt >= 0,
		Seconds:       secs(o.DoneAt),
		WritesSeconds: Unknown,
		CPUSeconds:    o.CPU.Seconds(),
		PeakRSS:       o.PeakRSS,
		Docs:          o.Docs.Last().V,
	}
	if o.DoneAt > 0 {
		t.Rate = float64(o.Events) / o.DoneAt.Seconds()
	}
	if p, ok := o.Writes.Settled(); ok && p.V > 0 {
		t.WritesSeconds = p.T.Seconds()
		if p.T > 0 {
			t.WritesRate = float64(o.Events) / p.T.Seconds()
		}
	}
	if o.Events > 0 {
		t.CPUPerEvent = o.CPU.Seconds() / float64(o.Events) * 1e6
	}
	return t
}

// PeerRound is one round: ingest, then Benthos, and their ratios.
type PeerRound struct {
	// First is the tool that ran first in the round (peerOrder).
	First   string    `json:"first"`
	Ingest  ToolRound `json:"ingest"`
	Benthos ToolRound `json:"benthos"`
	// RateRatio is ingest's events/s over Benthos's; CPURatio ingest's
	// CPU per event over Benthos's; WritesRateRatio the events/s by the
	// index's writes, over each other.
	RateRatio       Num `json:"rate_ratio"`
	CPURatio        Num `json:"cpu_per_event_ratio"`
	WritesRateRatio Num `json:"writes_rate_ratio"`
}

// PeerMedians are the medians over the rounds; NaN (null in JSON) where
// no round completed.
type PeerMedians struct {
	IngestRate         Num `json:"ingest_events_per_s"`
	BenthosRate        Num `json:"benthos_events_per_s"`
	IngestCPU          Num `json:"ingest_cpu_seconds"`
	BenthosCPU         Num `json:"benthos_cpu_seconds"`
	IngestCPUPerEvent  Num `json:"ingest_cpu_us_per_event"`
	BenthosCPUPerEvent Num `json:"benthos_cpu_us_per_event"`
	IngestRSS          Num `json:"ingest_peak_rss_bytes"`
	BenthosRSS         Num `json:"benthos_peak_rss_bytes"`
	RateRatio          Num `json:"rate_ratio"`
	CPURatio           Num `json:"cpu_per_event_ratio"`
	WritesRateRatio    Num `json:"writes_rate_ratio"`
}

// Num is a figure that may be NaN (not measured), written to JSON as null.
type Num float64

// MarshalJSON writes n, or null for NaN and the infinities.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return json.Marshal(f)
}

// PeerResult is a peer run's report.
type PeerResult struct {
	Commit         string            `json:"commit"`
	Source         string            `json:"source"`
	Dirty          []string          `json:"dirty,omitempty"`
	RunID          string            `json:"run_id"`
	Requested      int               `json:"events_requested"`
	Events         int64             `json:"events"`
	ProduceSeconds float64           `json:"produce_seconds"`
	BenthosBuild   float64           `json:"benthos_build_seconds"`
	Deletes        map[string]string `json:"deletes"`
	Rounds         []PeerRound       `json:"rounds"`
	Median         PeerMedians       `json:"median"`
	Checks         []Check           `json:"checks"`
}

// Summarize fills in every round's ratios and the medians. A ratio of a
// round in which either tool did not complete is NaN and left out of the
// median.
func (r *PeerResult) Summarize() {
	var ir, br, ic, bc, ie, be, im, bm, rr, cr, wr []float64
	for i := range r.Rounds {
		rd := &r.Rounds[i]
		nan := Num(math.NaN())
		rd.RateRatio, rd.CPURatio, rd.WritesRateRatio = nan, nan, nan
		if rd.Ingest.Completed && rd.Benthos.Completed {
			rd.RateRatio = Num(Ratio(rd.Ingest.Rate, rd.Benthos.Rate))
			rd.CPURatio = Num(Ratio(rd.Ingest.CPUPerEvent, rd.Benthos.CPUPerEvent))
			rd.WritesRateRatio = Num(Ratio(rd.Ingest.WritesRate, rd.Benthos.WritesRate))
			rr, cr, wr = appendNum(rr, rd.RateRatio), appendNum(cr, rd.CPURatio), appendNum(wr, rd.WritesRateRatio)
		}
		if rd.Ingest.Completed {
			ir, ic, ie = append(ir, rd.Ingest.Rate), append(ic, rd.Ingest.CPUSeconds), append(ie, rd.Ingest.CPUPerEvent)
		}
		if rd.Benthos.Completed {
			br, bc, be = append(br, rd.Benthos.Rate), append(bc, rd.Benthos.CPUSeconds), append(be, rd.Benthos.CPUPerEvent)
		}
		im, bm = append(im, float64(rd.Ingest.PeakRSS)), append(bm, float64(rd.Benthos.PeakRSS))
	}
	r.Median = PeerMedians{
		IngestRate: Num(Median(ir)), BenthosRate: Num(Median(br)),
		IngestCPU: Num(Median(ic)), BenthosCPU: Num(Median(bc)),
		IngestCPUPerEvent: Num(Median(ie)), BenthosCPUPerEvent: Num(Median(be)),
		IngestRSS: Num(Median(im)), BenthosRSS: Num(Median(bm)),
		RateRatio: Num(Median(rr)), CPURatio: Num(Median(cr)), WritesRateRatio: Num(Median(wr)),
	}
}

// appendNum appends x unless it is NaN or infinite.
func appendNum(xs []float64, x Num) []float64 {
	f := float64(x)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return xs
	}
	return append(xs, f)
}
