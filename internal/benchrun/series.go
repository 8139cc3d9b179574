package benchrun

import (
	"encoding/csv"
	"io"
	"strconv"
)

// WriteSeries writes named series as CSV in long form (series, seconds,
// value), for a plot or a closer look at a run than the report gives.
func WriteSeries(w io.Writer, names []string, series []Series) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"series", "seconds", "value"}); err != nil {
		return err
	}
	for i, s := range series {
		for _, p := range s {
			if err := cw.Write([]string{names[i], strconv.FormatFloat(p.T.Seconds(), 'f', 3, 64), strconv.FormatInt(p.V, 10)}); err != nil {
				return err
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// ProcSeries turns /proc samples into series: RSS and VmHWM in bytes, CPU
// in milliseconds.
func ProcSeries(samples []ProcSample) (rss, hwm, cpuMillis Series) {
	for _, s := range samples {
		rss.Add(s.T, s.Mem.RSS)
		hwm.Add(s.T, s.Mem.HWM)
		cpuMillis.Add(s.T, s.CPU.Milliseconds())
	}
	return rss, hwm, cpuMillis
}
