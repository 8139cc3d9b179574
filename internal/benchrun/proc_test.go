package benchrun

import (
	"strings"
	"testing"
	"time"
)

const statusText = `Name:	ingest
Umask:	0022
State:	S (sleeping)
Pid:	4242
VmPeak:	 1999932 kB
VmSize:	 1934396 kB
VmHWM:	  187412 kB
VmRSS:	  150004 kB
RssAnon:	  140000 kB
Threads:	9
`

func TestParseStatus(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    Memory
		wantErr string
	}{
		{"ingest", statusText, Memory{RSS: 150004 * 1024, HWM: 187412 * 1024}, ""},
		{"a zombie has neither", "Name:\tx\nState:\tZ (zombie)\n", Memory{}, "no VmRSS and VmHWM"},
		{"only one", "VmRSS:\t 10 kB\n", Memory{}, "no VmRSS and VmHWM"},
		{"another unit", "VmHWM:\t 1 MB\nVmRSS:\t 1 kB\n", Memory{}, `VmHWM: want "<n> kB"`},
		{"not a number", "VmHWM:\t x kB\nVmRSS:\t 1 kB\n", Memory{}, "bad number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatus(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseStatus error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("ParseStatus = %+v, %v, want %+v", got, err, tt.want)
			}
		})
	}
}

func TestParseStatCPU(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    time.Duration
		wantErr bool
	}{
		{"ingest", "4242 (ingest) S 1 4242 4242 0 -1 4194560 9020 0 0 0 1234 56 0 0 20 0 9 0 123 1934396 37501 18446744073709551615\n", 12900 * time.Millisecond, false},
		{"a name with spaces and parentheses", "77 (a (b) c) R 1 77 77 0 -1 0 0 0 0 0 100 200 0 0 20 0 1 0 5 0 0\n", 3 * time.Second, false},
		{"no name", "77 R 1", 0, true},
		{"too short", "77 (x) R 1 2 3", 0, true},
		{"bad number", "77 (x) R 1 77 77 0 -1 0 0 0 0 0 ab 200 0 0 20 0 1 0 5 0 0", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseStatCPU(tt.text)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseStatCPU = %v, %v, want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestReadProcSelf(t *testing.T) {
	// The test's own process: a real /proc text, parsed.
	mem, cpu, err := ReadProc(pidSelf())
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	if mem.RSS <= 0 || mem.HWM < mem.RSS || cpu < 0 {
		t.Errorf("ReadProc(self) = %+v, %v: want RSS > 0, HWM ≥ RSS, CPU ≥ 0", mem, cpu)
	}
}

func TestGrowth(t *testing.T) {
	s := func(sec int, mb int64) ProcSample {
		return ProcSample{T: time.Duration(sec) * time.Second, Mem: Memory{RSS: mb << 20}}
	}
	samples := []ProcSample{s(0, 20), s(1, 100), s(2, 104), s(3, 108), s(4, 103)}
	tests := []struct {
		name       string
		from       time.Duration
		base, peak int64
		growth     float64
		ok         bool
	}{
		{"from the second sample", time.Second, 100 << 20, 108 << 20, 0.08, true},
		{"between samples: the next one", 500 * time.Millisecond, 100 << 20, 108 << 20, 0.08, true},
		{"from the start", 0, 20 << 20, 108 << 20, 4.4, true},
		{"after the last", 5 * time.Second, 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, peak, g, ok := Growth(samples, tt.from)
			if base != tt.base || peak != tt.peak || !near(g, tt.growth) || ok != tt.ok {
				t.Errorf("Growth(%v) = %d, %d, %v, %v, want %d, %d, %v, %v", tt.from, base, peak, g, ok, tt.base, tt.peak, tt.growth, tt.ok)
			}
		})
	}
}

func FuzzParseStatCPU(f *testing.F) {
	f.Add("4242 (ingest) S 1 4242 4242 0 -1 4194560 9020 0 0 0 1234 56 0 0 20 0 9 0 123")
	f.Add("1 () x")
	f.Fuzz(func(t *testing.T, s string) {
		if d, err := ParseStatCPU(s); err == nil && d < 0 {
			t.Errorf("ParseStatCPU(%q) = %v, a negative time", s, d)
		}
	})
}
