package benchrun

import (
	"math"
	"strings"
	"testing"
)

const metricsText = `# HELP geoshard_ingest_events_total Events finished, by type, op and result.
# TYPE geoshard_ingest_events_total counter
geoshard_ingest_events_total{op="upsert",result="written",type="dish"} 41200
geoshard_ingest_events_total{op="upsert",result="stale",type="dish"} 12
geoshard_ingest_events_total{op="delete",result="written",type="restaurant"} 3.5e+02
geoshard_bulk_items_total{result="ok",shard="ares"} 100 1712345678000
geoshard_ingest_refreshes_total{reason="move"} 7
geoshard_refresh_seconds_bucket{le="+Inf"} 9
geoshard_refresh_seconds_sum 1.5
geoshard_refresh_seconds_count 9
go_goroutines 31
weird{msg="a \"quoted\", comma } and \\ slash"} +Inf
`

func TestParseMetrics(t *testing.T) {
	ms, err := ParseMetrics(metricsText)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 10 {
		t.Fatalf("ParseMetrics: %d samples, want 10", len(ms))
	}
	if got, ok := ms.Sum("geoshard_ingest_events_total"); !ok || got != 41562 {
		t.Errorf("Sum(events) = %v, %v, want 41562, true", got, ok)
	}
	if _, ok := ms.Sum("absent_total"); ok {
		t.Errorf("Sum(absent_total) found")
	}
	by := ms.SumBy("geoshard_ingest_events_total", "result")
	if by["written"] != 41550 || by["stale"] != 12 || len(by) != 2 {
		t.Errorf("SumBy(result) = %v, want written 41550, stale 12", by)
	}
	if got, _ := ms.Sum("geoshard_bulk_items_total"); got != 100 {
		t.Errorf("a sample with a timestamp: %v, want 100", got)
	}
	last := ms[len(ms)-1]
	if want := `a "quoted", comma } and \ slash`; last.Labels["msg"] != want || !math.IsInf(last.Value, 1) {
		t.Errorf("escaped label = %q, %v, want %q, +Inf", last.Labels["msg"], last.Value, want)
	}
	m := ms.Matching("geoshard_", "refresh")
	if len(m) != 2 || m["geoshard_ingest_refreshes_total"] != 7 || m["geoshard_refresh_seconds_count"] != 9 {
		t.Errorf("Matching(refresh) = %v, want the counter and the histogram's count only", m)
	}
}

func TestParseMetricsErrors(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"no value", "lonely\n", "no value"},
		{"bad value", "x{a=\"b\"} twelve\n", "bad value"},
		{"labels not closed", "x{a=\"b\"\n", "not closed"},
		{"label unquoted", "x{a=b} 1\n", "bad label"},
		{"too many fields", "x 1 2 3\n", "optional timestamp"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseMetrics(tt.text)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "line 1") {
				t.Errorf("ParseMetrics(%q) error = %v, want line 1 and %q", tt.text, err, tt.want)
			}
		})
	}
}

func FuzzParseMetrics(f *testing.F) {
	f.Add(metricsText)
	f.Add("x{a=\"\\\"} 1")
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseMetrics(s)
		if err == nil {
			_, _ = ms.Sum("x")
		}
	})
}
