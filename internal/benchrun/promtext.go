package benchrun

import (
	"fmt"
	"strconv"
	"strings"
)

// A Metric is one sample of the Prometheus text exposition format.
type Metric struct {
	Name   string
	Labels map[string]string
	Value  float64
}

// Metrics are the samples of one scrape.
type Metrics []Metric

// ParseMetrics reads the Prometheus text exposition format (version
// 0.0.4): one sample a line, `name{label="value",...} value [timestamp]`;
// comments and blank lines are skipped.
func ParseMetrics(text string) (Metrics, error) {
	var out Metrics
	for n, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		m, err := parseSample(line)
		if err != nil {
			return nil, fmt.Errorf("benchrun: metrics line %d: %w", n+1, err)
		}
		out = append(out, m)
	}
	return out, nil
}

func parseSample(line string) (Metric, error) {
	var m Metric
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return m, fmt.Errorf("no value in %q", line)
	}
	m.Name, line = line[:i], line[i:]
	if line[0] == '{' {
		labels, rest, err := parseLabels(line[1:])
		if err != nil {
			return m, fmt.Errorf("%s: %w", m.Name, err)
		}
		m.Labels, line = labels, rest
	}
	f := strings.Fields(line)
	if len(f) < 1 || len(f) > 2 {
		return m, fmt.Errorf("%s: want a value and an optional timestamp, got %q", m.Name, line)
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return m, fmt.Errorf("%s: bad value %q", m.Name, f[0])
	}
	m.Value = v
	return m, nil
}

// parseLabels reads `a="x",b="y"}` and returns what follows the brace.
func parseLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " ,")
		if s == "" {
			return nil, "", fmt.Errorf("labels not closed")
		}
		if s[0] == '}' {
			return labels, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return nil, "", fmt.Errorf("bad label in %q", s)
		}
		name := strings.TrimSpace(s[:eq])
		s = s[eq+2:]
		var b strings.Builder
		closed := false
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			if c == '"' {
				s, closed = s[i+1:], true
				break
			}
			b.WriteByte(c)
		}
		if !closed {
			return nil, "", fmt.Errorf("label %s: value not closed", name)
		}
		labels[name] = b.String()
	}
}

// Sum is the sum of the samples named name; found is false when there are
// none.
func (ms Metrics) Sum(name string) (sum float64, found bool) {
	for _, m := range ms {
		if m.Name == name {
			sum += m.Value
			found = true
		}
	}
	return sum, found
}

// SumBy sums the samples named name by the value of one label.
func (ms Metrics) SumBy(name, label string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		if m.Name == name {
			out[m.Labels[label]] += m.Value
		}
	}
	return out
}

// Matching sums, per name, the counters and gauges whose name has prefix
// and contains part: how a metric another version of the command may add
// is found without naming it (a refresh counter, say). Histogram buckets
// and sums and summary quantiles are left out; their _count is kept.
func (ms Metrics) Matching(prefix, part string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range ms {
		if strings.HasSuffix(m.Name, "_bucket") || strings.HasSuffix(m.Name, "_sum") || m.Labels["quantile"] != "" {
			continue
		}
		if strings.HasPrefix(m.Name, prefix) && strings.Contains(m.Name, part) {
			out[m.Name] += m.Value
		}
	}
	return out
}
