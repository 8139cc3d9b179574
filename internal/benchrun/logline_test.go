package benchrun

import "testing"

func TestParseLogLine(t *testing.T) {
	tests := []struct {
		name    string
		line    string
		want    LogLine
		problem bool
	}{
		{"text", `time=2026-12-03T12:00:00.000Z level=INFO msg="directory warm" index=menu-v1 restaurants=0`, LogLine{"INFO", "directory warm"}, false},
		{"text, bare message", `time=2026-12-03T12:00:00.000Z level=WARN msg=retrying op=refresh`, LogLine{"WARN", "retrying"}, true},
		{"text, quotes in the message", `time=x level=ERROR msg="bulk \"menu\" failed: a\\b" shard=ares`, LogLine{"ERROR", `bulk "menu" failed: a\b`}, true},
		{"text, a value that ends in a backslash", `time=x level=INFO msg="ends \\" k=v`, LogLine{"INFO", `ends \`}, false},
		{"json", `{"time":"2026-12-03T12:00:00Z","level":"INFO","msg":"directory warm","index":"menu-v1"}`, LogLine{"INFO", "directory warm"}, false},
		{"json, warn", `{"level":"WARN","msg":"slow"}`, LogLine{"WARN", "slow"}, true},
		{"a panic", `panic: runtime error: index out of range [3] with length 3`, LogLine{}, true},
		{"a stack frame", `	/work/main/pipeline/handle.go:212 +0x1c4`, LogLine{}, true},
		{"broken json", `{"level":"INFO"`, LogLine{}, true},
		{"debug", `time=x level=DEBUG msg=fetch`, LogLine{"DEBUG", "fetch"}, false},
		{"benthos, lower case", `level=error msg="Failed to send message to opensearch: routing is required" @service=benthos`, LogLine{"error", "Failed to send message to opensearch: routing is required"}, true},
		{"benthos, info", `level=info msg="Running main config from specified file" @service=benthos`, LogLine{"info", "Running main config from specified file"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ParseLogLine(tt.line)
			if got != tt.want {
				t.Errorf("ParseLogLine(%q) = %+v, want %+v", tt.line, got, tt.want)
			}
			if got.IsProblem() != tt.problem {
				t.Errorf("IsProblem() = %v, want %v", got.IsProblem(), tt.problem)
			}
		})
	}
}
