package osfake

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Scalar conversions: JSON values read as numbers, keywords, booleans and
// dates, the way the server coerces them for comparison.

// --- scalar conversions ------------------------------------------------------

// num is a JSON number: exact when it is an integer, else a float.
type num struct {
	f     float64
	i     int64
	isInt bool
}

func intNum(i int64) num { return num{f: float64(i), i: i, isInt: true} }

func boolNum(b bool) num {
	if b {
		return intNum(1)
	}
	return intNum(0)
}

func (n num) truncate() num {
	if n.isInt || math.IsInf(n.f, 0) || math.IsNaN(n.f) || math.Abs(n.f) >= 1<<63 {
		return n
	}
	return intNum(int64(n.f))
}

// key is the canonical text of a number, equal for equal values.
func (n num) key() string {
	if n.isInt {
		return strconv.FormatInt(n.i, 10)
	}
	if n.f == math.Trunc(n.f) && math.Abs(n.f) < 1<<63 {
		return strconv.FormatInt(int64(n.f), 10)
	}
	return strconv.FormatFloat(n.f, 'g', -1, 64)
}

func cmpNum(a, b num) int {
	if a.isInt && b.isInt {
		return cmp.Compare(a.i, b.i)
	}
	// Not cmp.Compare: that orders NaN before every number, where the
	// comparison here leaves it equal to all.
	switch {
	case a.f < b.f:
		return -1
	case a.f > b.f:
		return 1
	}
	return 0
}

func toNum(v any) (num, bool) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = strings.TrimSpace(x)
	case float64:
		return num{f: x}, true
	case int:
		return intNum(int64(x)), true
	case int64:
		return intNum(x), true
	default:
		return num{}, false
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return intNum(i), true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return num{}, false
	}
	return num{f: f}, true
}

func toKeyword(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	case float64, int, int64:
		return fmt.Sprint(x), true
	}
	return "", false
}

func toBool(v any) (bool, bool) {
	switch x := v.(type) {
	case bool:
		return x, true
	case string:
		switch x {
		case "true":
			return true, true
		case "false", "":
			return false, true
		}
	}
	return false, false
}

// --- dates ---------------------------------------------------------------------

// dateLayouts are the strict_date_optional_time forms the emulator reads,
// finest first, with the precision each leaves unspecified.
var dateLayouts = []struct {
	layout string
	unit   time.Duration // 0: a calendar month or year, see parseDate
}{
	{"2006-01-02T15:04:05.999999999Z07:00", time.Second},
	{"2006-01-02T15:04Z07:00", time.Minute},
	{"2006-01-02T15:04:05.999999999", time.Second},
	{"2006-01-02T15:04", time.Minute},
	{"2006-01-02T15", time.Hour},
	{"2006-01-02", 24 * time.Hour},
	{"2006-01", 0},
	{"2006", 0},
}

// parseDate reads a date (an ISO-8601 string in UTC unless it has a zone,
// or epoch milliseconds) as the first and last millisecond it denotes:
// "2024-01-01" is the whole day, which is how the server rounds date
// bounds and terms. Date math ("now-1d") is not emulated.
func parseDate(v any) (lo, hi int64, ok bool) {
	if n, isNum := v.(json.Number); isNum {
		x, ok := toNum(n)
		x = x.truncate()
		return x.i, x.i, ok && x.isInt
	}
	s, isStr := v.(string)
	if !isStr {
		return 0, 0, false
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil && len(s) > 4 {
		return i, i, true
	}
	for _, l := range dateLayouts {
		t, err := time.Parse(l.layout, s)
		if err != nil {
			continue
		}
		lo = t.UnixMilli()
		switch {
		case l.unit == time.Second && strings.Contains(s, "."):
			return lo, lo, true
		case l.unit > 0:
			return lo, lo + l.unit.Milliseconds() - 1, true
		case l.layout == "2006-01":
			return lo, t.AddDate(0, 1, 0).UnixMilli() - 1, true
		default:
			return lo, t.AddDate(1, 0, 0).UnixMilli() - 1, true
		}
	}
	return 0, 0, false
}
