package benchrun

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ParseMachineCPU reads the first line of /proc/stat ("cpu  user nice
// system idle iowait irq softirq steal …", in clock ticks) and returns the
// CPU time every core has spent busy (all but idle and iowait) since
// boot. Beside the CPU of the tool and the engines it tells how much else
// ran on the machine during a measurement.
func ParseMachineCPU(text string) (time.Duration, error) {
	line, _, _ := strings.Cut(text, "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0, fmt.Errorf("benchrun: /proc/stat: want a \"cpu\" line with at least 7 times, got %.60q", line)
	}
	var busy int64
	for i, s := range f[1:] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("benchrun: /proc/stat: bad time %q", s)
		}
		// idle (4th) and iowait (5th) are not busy; guest and guest_nice
		// (9th, 10th) are already counted in user and nice.
		if i == 3 || i == 4 || i >= 8 {
			continue
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / clockTicks, nil
}

// ParseLoadAvg reads the 1-minute load average from /proc/loadavg.
func ParseLoadAvg(text string) (float64, error) {
	f := strings.Fields(text)
	if len(f) < 3 {
		return 0, fmt.Errorf("benchrun: /proc/loadavg: %.40q", text)
	}
	return strconv.ParseFloat(f[0], 64)
}

// machine measures the whole machine over a run: busy CPU, and the load
// average at the end. A machine without /proc gives Unknown.
type machine struct{ start time.Duration }

func startMachine() machine {
	return machine{start: machineCPU()}
}

func machineCPU() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return Unknown
	}
	d, err := ParseMachineCPU(string(b))
	if err != nil {
		return Unknown
	}
	return d
}

// since is the busy CPU since start, and the load average now.
func (m machine) since() (time.Duration, float64) {
	load := float64(Unknown)
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if l, err := ParseLoadAvg(string(b)); err == nil {
			load = l
		}
	}
	end := machineCPU()
	if m.start < 0 || end < 0 {
		return Unknown, load
	}
	return end - m.start, load
}

// others is the machine's busy CPU less the parts measured (the tool and
// the engines): what everything else on the machine used. Unknown where a
// part is unknown.
func others(machine time.Duration, parts ...time.Duration) time.Duration {
	if machine < 0 {
		return Unknown
	}
	for _, p := range parts {
		if p < 0 {
			return Unknown
		}
		machine -= p
	}
	return max(machine, 0)
}
