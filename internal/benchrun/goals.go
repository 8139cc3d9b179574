package benchrun

import (
	"fmt"
	"math"
	"time"
)

// The goals the runs are reported against.
const (
	// SoakMinRateRatio: the whole run's events/s over the first window's.
	SoakMinRateRatio = 0.9
	// SoakFirstWindow is the first window's size, in events.
	SoakFirstWindow = 20_000
	// SoakWholeFraction is how much of the run the whole-run rate spans:
	// from the first event finished to 99% of them, leaving out the
	// stragglers (dishes waiting for a restaurant that never comes finish
	// only when their wait expires, which the catch-up goal measures).
	SoakWholeFraction = 0.99
	// SoakMaxCatchUp: from the last write to every offset committed.
	SoakMaxCatchUp = 10 * time.Second
	// SoakMaxRSSGrowth: RSS growth after the warm, over its RSS then.
	SoakMaxRSSGrowth = 0.10

	// PeerMinRateRatio: ingest's events/s over Benthos's, medians.
	PeerMinRateRatio = 2.5
	// PeerMaxCPURatio: ingest's CPU per event over Benthos's, medians.
	PeerMaxCPURatio = 0.3
)

// Check is one goal and how a run did against it.
type Check struct {
	Goal string `json:"goal"`
	Got  string `json:"got"`
	Pass bool   `json:"pass"`
}

// SoakChecks checks a soak against its four goals. A figure the run could
// not measure fails its goal, saying why.
func SoakChecks(r *SoakResult) []Check {
	var cs []Check
	switch {
	case r.ExitedEarly:
		cs = append(cs, Check{"ingest runs to the end (no exit before every offset is committed)", "exited early: " + r.ExitStatus, false})
	case !r.Completed:
		cs = append(cs, Check{"ingest runs to the end (no exit before every offset is committed)", "still running, but not every offset was committed: " + r.Stopped, false})
	default:
		cs = append(cs, Check{"ingest runs to the end (no exit before every offset is committed)", "ran to the end", true})
	}

	ratio := Ratio(r.WholeRate, r.FirstRate)
	c := Check{Goal: fmt.Sprintf("whole-run events/s ≥ %.1f× the first %d events'", SoakMinRateRatio, SoakFirstWindow)}
	if r.FirstRate <= 0 || r.WholeRate <= 0 {
		c.Got = "not measured (the run did not get that far)"
	} else {
		c.Got = fmt.Sprintf("%.0f vs %.0f events/s: %.2f×", r.WholeRate, r.FirstRate, ratio)
		c.Pass = ratio >= SoakMinRateRatio
	}
	cs = append(cs, c)

	c = Check{Goal: fmt.Sprintf("commit catch-up ≤ %s after the last write", SoakMaxCatchUp)}
	if !r.Completed || r.CatchUpSeconds < 0 {
		c.Got = "not measured: the offsets were never all committed"
	} else {
		c.Got = fmt.Sprintf("%.1f s", r.CatchUpSeconds)
		c.Pass = r.CatchUpSeconds <= SoakMaxCatchUp.Seconds()
	}
	cs = append(cs, c)

	c = Check{Goal: fmt.Sprintf("RSS flat within %.0f%% after the warm", SoakMaxRSSGrowth*100)}
	if r.BaselineRSS <= 0 {
		c.Got = "not measured: no RSS sample after the warm"
	} else {
		c.Got = fmt.Sprintf("%s at %.1f s, peak %s after it: %+.0f%%", MB(r.BaselineRSS), r.BaselineSeconds, MB(r.PeakAfterBaseline), r.RSSGrowth*100)
		c.Pass = r.RSSGrowth <= SoakMaxRSSGrowth
	}
	cs = append(cs, c)
	return cs
}

// PeerChecks checks the medians of a peer run against its goals.
func PeerChecks(r *PeerResult) []Check {
	var cs []Check
	incomplete := 0
	for _, rd := range r.Rounds {
		for _, t := range []ToolRound{rd.Ingest, rd.Benthos} {
			if !t.Completed {
				incomplete++
			}
		}
	}
	cs = append(cs, Check{"every run of both tools committed every offset", fmt.Sprintf("%d of %d runs did not", incomplete, 2*len(r.Rounds)), incomplete == 0})
	c := Check{Goal: fmt.Sprintf("ingest ≥ %.1f× Benthos's events/s (median of the rounds' ratios)", PeerMinRateRatio)}
	if math.IsNaN(float64(r.Median.RateRatio)) {
		c.Got = "not measured"
	} else {
		c.Got = fmt.Sprintf("%.2f×", r.Median.RateRatio)
		c.Pass = float64(r.Median.RateRatio) >= PeerMinRateRatio
	}
	cs = append(cs, c)
	c = Check{Goal: fmt.Sprintf("ingest's CPU per event ≤ %.1f× Benthos's (median of the rounds' ratios)", PeerMaxCPURatio)}
	if math.IsNaN(float64(r.Median.CPURatio)) {
		c.Got = "not measured"
	} else {
		c.Got = fmt.Sprintf("%.2f×", r.Median.CPURatio)
		c.Pass = float64(r.Median.CPURatio) <= PeerMaxCPURatio
	}
	cs = append(cs, c)
	return cs
}

// MB formats bytes as MiB, one decimal.
func MB(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/(1<<20)) }
