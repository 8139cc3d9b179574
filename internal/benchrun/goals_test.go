package benchrun

import (
	"strings"
	"testing"
)

func TestSoakChecks(t *testing.T) {
	good := func() *SoakResult {
		return &SoakResult{
			Completed: true, FirstRate: 20_000, WholeRate: 19_000, CatchUpSeconds: 1.5,
			BaselineRSS: 100 << 20, PeakAfterBaseline: 105 << 20, RSSGrowth: 0.05, BaselineSeconds: 2,
		}
	}
	tests := []struct {
		name   string
		change func(*SoakResult)
		pass   [4]bool
		got    [4]string // a part of each Got
	}{
		{"all met", func(*SoakResult) {}, [4]bool{true, true, true, true}, [4]string{"ran to the end", "0.95×", "1.5 s", "+5%"}},
		{"exited early", func(r *SoakResult) { r.Completed, r.ExitedEarly, r.ExitStatus = false, true, "exit status 1" },
			[4]bool{false, true, false, true}, [4]string{"exit status 1", "0.95×", "never all committed", "+5%"}},
		{"stalled", func(r *SoakResult) { r.Completed, r.Stopped = false, "stalled: nothing for 10m0s" },
			[4]bool{false, true, false, true}, [4]string{"stalled", "", "not measured", ""}},
		{"slowed down", func(r *SoakResult) { r.WholeRate = 17_000 }, [4]bool{true, false, true, true}, [4]string{"", "0.85×", "", ""}},
		{"exactly 0.9×", func(r *SoakResult) { r.WholeRate = 18_000 }, [4]bool{true, true, true, true}, [4]string{"", "0.90×", "", ""}},
		{"slow commits", func(r *SoakResult) { r.CatchUpSeconds = 300.4 }, [4]bool{true, true, false, true}, [4]string{"", "", "300.4 s", ""}},
		{"exactly 10 s", func(r *SoakResult) { r.CatchUpSeconds = 10 }, [4]bool{true, true, true, true}, [4]string{"", "", "10.0 s", ""}},
		{"growth", func(r *SoakResult) { r.RSSGrowth = 2.7 }, [4]bool{true, true, true, false}, [4]string{"", "", "", "+270%"}},
		{"no window", func(r *SoakResult) { r.FirstRate = 0 }, [4]bool{true, false, true, true}, [4]string{"", "not measured", "", ""}},
		{"no RSS after the warm", func(r *SoakResult) { r.BaselineRSS = 0 }, [4]bool{true, true, true, false}, [4]string{"", "", "", "not measured"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := good()
			tt.change(r)
			cs := SoakChecks(r)
			if len(cs) != 4 {
				t.Fatalf("SoakChecks: %d checks, want 4", len(cs))
			}
			for i, c := range cs {
				if c.Pass != tt.pass[i] || !strings.Contains(c.Got, tt.got[i]) {
					t.Errorf("check %d (%s) = %v, %q; want %v and %q in it", i, c.Goal, c.Pass, c.Got, tt.pass[i], tt.got[i])
				}
			}
		})
	}
}
