package benchrun

import (
	"encoding/json"
	"strconv"
	"strings"
)

// LogLine is what the harness reads from a line a command logged with
// log/slog, in its text or its JSON form.
type LogLine struct {
	Level string // INFO, WARN, ERROR, DEBUG, or "" when the line is not slog's
	Msg   string
}

// ParseLogLine reads the level and message of a slog line:
//
//	time=2026-12-03T12:00:00Z level=INFO msg="directory warm" index=menu-v1
//	{"time":"…","level":"INFO","msg":"directory warm","index":"menu-v1"}
//
// Anything else (a panic, a stack trace) comes back with an empty Level.
func ParseLogLine(line string) LogLine {
	line = strings.TrimSpace(line)
	if strings.HasPrefix(line, "{") {
		var v struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
		}
		if json.Unmarshal([]byte(line), &v) == nil {
			return LogLine{Level: v.Level, Msg: v.Msg}
		}
		return LogLine{}
	}
	var l LogLine
	for rest := line; rest != ""; {
		var key, val string
		key, val, rest = nextPair(rest)
		switch key {
		case "level":
			l.Level = val
		case "msg":
			l.Msg = val
			return l
		case "":
			return l
		}
	}
	return l
}

// nextPair reads one key=value of slog's text form, the value bare or
// quoted as strconv.Quote quotes it.
func nextPair(s string) (key, val, rest string) {
	s = strings.TrimLeft(s, " ")
	eq := strings.IndexByte(s, '=')
	if eq <= 0 || strings.ContainsAny(s[:eq], " \"") {
		return "", "", ""
	}
	key, s = s[:eq], s[eq+1:]
	if strings.HasPrefix(s, `"`) {
		// The shortest quoted prefix that unquotes: a quote after a
		// backslash may close the value (`"a\\"`) or not (`"a\"b"`).
		for i := 1; i < len(s); i++ {
			if s[i] == '"' {
				if v, err := strconv.Unquote(s[:i+1]); err == nil {
					return key, v, s[i+1:]
				}
			}
		}
		return key, s, ""
	}
	if sp := strings.IndexByte(s, ' '); sp >= 0 {
		return key, s[:sp], s[sp+1:]
	}
	return key, s, ""
}

// IsProblem reports whether a line is a warning or an error (in any case:
// Benthos writes level=error), or not a log line at all (a panic and its
// stack): what the report quotes as evidence.
func (l LogLine) IsProblem() bool {
	switch strings.ToUpper(l.Level) {
	case "WARN", "WARNING", "ERROR", "FATAL", "":
		return true
	}
	return false
}
