package benchrun

import (
	"testing"
	"time"
)

func TestParseMachineCPU(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		want    time.Duration
		wantErr bool
	}{
		// user 100, nice 20, system 30, idle 1000, iowait 50, irq 5,
		// softirq 5, steal 40, guest 100, guest_nice 0: busy 200 ticks.
		{"linux", "cpu  100 20 30 1000 50 5 5 40 100 0\ncpu0 50 10 15 500 25 2 3 20 50 0\n", 2 * time.Second, false},
		{"old kernels: 7 times", "cpu 100 0 100 5000 0 0 0\n", 2 * time.Second, false},
		{"not the cpu line", "intr 1 2 3 4 5 6 7 8\n", 0, true},
		{"bad number", "cpu  1 2 x 4 5 6 7 8\n", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseMachineCPU(tt.text)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("ParseMachineCPU = %v, %v, want %v, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestParseLoadAvg(t *testing.T) {
	if got, err := ParseLoadAvg("7.84 7.18 4.64 5/412 21337\n"); err != nil || got != 7.84 {
		t.Errorf("ParseLoadAvg = %v, %v, want 7.84", got, err)
	}
	if _, err := ParseLoadAvg("7.84\n"); err == nil {
		t.Errorf("ParseLoadAvg(short) = nil error")
	}
}

func TestOthers(t *testing.T) {
	if got := others(100*time.Second, 30*time.Second, 50*time.Second); got != 20*time.Second {
		t.Errorf("others = %v, want 20s", got)
	}
	if got := others(100*time.Second, Unknown); got != Unknown {
		t.Errorf("others with an unknown part = %v, want Unknown", got)
	}
	if got := others(10*time.Second, 30*time.Second); got != 0 {
		t.Errorf("others below zero = %v, want 0 (samples a tick apart)", got)
	}
}
