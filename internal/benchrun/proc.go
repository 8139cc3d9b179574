package benchrun

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of the CPU times in
// /proc/<pid>/stat: 100 on every Linux architecture Go supports (it is a
// fixed ABI value, not CONFIG_HZ), which is also what prometheus/procfs
// assumes.
const clockTicks = 100

// Memory is what /proc/<pid>/status says of a process's memory, in bytes.
type Memory struct {
	RSS int64 // VmRSS: resident now
	HWM int64 // VmHWM: the peak resident set so far
}

// ParseStatus reads VmRSS and VmHWM from the text of /proc/<pid>/status.
// Both must be present (they are absent for a zombie or a kernel thread).
func ParseStatus(text string) (Memory, error) {
	var m Memory
	var seen int
	for _, line := range strings.Split(text, "\n") {
		key, rest, ok := strings.Cut(line, ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return Memory{}, fmt.Errorf("benchrun: /proc status: %s: want \"<n> kB\", got %q", key, strings.TrimSpace(rest))
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || kb < 0 {
			return Memory{}, fmt.Errorf("benchrun: /proc status: %s: bad number %q", key, f[0])
		}
		if key == "VmRSS" {
			m.RSS = kb * 1024
			seen |= 1
		} else {
			m.HWM = kb * 1024
			seen |= 2
		}
	}
	if seen != 3 {
		return Memory{}, fmt.Errorf("benchrun: /proc status: no VmRSS and VmHWM (an exited process?)")
	}
	return m, nil
}

// ParseStatCPU is the CPU time a process has used, user and system
// (utime + stime, fields 14 and 15), from the text of /proc/<pid>/stat.
// The command name (field 2) is in parentheses and may itself hold spaces
// and parentheses, so the fields are counted from the last ')'.
func ParseStatCPU(text string) (time.Duration, error) {
	i := strings.LastIndexByte(text, ')')
	if i < 0 {
		return 0, fmt.Errorf("benchrun: /proc stat: no command name in %.40q", text)
	}
	f := strings.Fields(text[i+1:])
	// f[0] is field 3 (state), so utime (14) is f[11] and stime (15) f[12].
	if len(f) < 13 {
		return 0, fmt.Errorf("benchrun: /proc stat: %d fields after the command name, want at least 13", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("benchrun: /proc stat: bad CPU time %q", s)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}

// ProcSample is one reading of a process.
type ProcSample struct {
	T   time.Duration // since the run began
	Mem Memory
	CPU time.Duration // user + system so far
}

// ReadProc reads a process's memory and CPU time from /proc.
func ReadProc(pid int) (Memory, time.Duration, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, 0, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Memory{}, 0, err
	}
	m, err := ParseStatus(string(status))
	if err != nil {
		return Memory{}, 0, err
	}
	cpu, err := ParseStatCPU(string(stat))
	return m, cpu, err
}

// ReadCPU reads only a process's CPU time.
func ReadCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return ParseStatCPU(string(stat))
}

// Growth is how much RSS grew after from: base is the first sample at or
// after from, peak the largest RSS from then on, and growth (peak−base)/
// base. ok is false when no sample is that late.
func Growth(samples []ProcSample, from time.Duration) (base, peak int64, growth float64, ok bool) {
	for _, s := range samples {
		if s.T < from {
			continue
		}
		if !ok {
			base, peak, ok = s.Mem.RSS, s.Mem.RSS, true
		}
		peak = max(peak, s.Mem.RSS)
	}
	if !ok || base <= 0 {
		return base, peak, 0, ok
	}
	return base, peak, float64(peak-base) / float64(base), true
}
