package benchrun

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// ChildSpec says how to start a command under test.
type ChildSpec struct {
	Name    string   // what the report calls it: ingest, benthos
	Path    string   // the binary
	Args    []string // its arguments
	Env     []string // its whole environment
	Dir     string   // its working directory; "" the harness's
	LogPath string   // where its stdout and stderr go
	// WarmMsg is the log message that ends its warm-up ("" none).
	WarmMsg string
}

// maxProblemLines is how many warning, error and non-log lines a child
// keeps for the report; the rest are only counted (and in its log file).
const maxProblemLines = 20

// Child is a command under test, running as a child process in a process
// group of its own (so a Ctrl-C reaches only the harness, which stops it),
// killed if the harness dies.
type Child struct {
	spec  ChildSpec
	epoch time.Time
	cmd   *exec.Cmd
	done  chan struct{} // closed once it has exited and its output is read
	state *os.ProcessState
	err   error // from Wait

	mu       sync.Mutex
	warmAt   time.Duration
	problems int
	lines    []string
	samples  []ProcSample
}

// StartChild starts spec. Times it records are since epoch.
func StartChild(spec ChildSpec, epoch time.Time) (*Child, error) {
	logf, err := os.Create(spec.LogPath)
	if err != nil {
		return nil, fmt.Errorf("benchrun: %s log: %w", spec.Name, err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env, cmd.Dir = spec.Env, spec.Dir
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		pr.Close()
		pw.Close()
		return nil, fmt.Errorf("benchrun: start %s: %w", spec.Name, err)
	}
	pw.Close()
	c := &Child{spec: spec, epoch: epoch, cmd: cmd, done: make(chan struct{}), warmAt: Unknown}
	go func() {
		// Every read of the pipe ends before Wait, as exec requires.
		c.readLog(pr, logf)
		pr.Close()
		logf.Close()
		c.err = cmd.Wait()
		c.state = cmd.ProcessState
		close(c.done)
	}()
	return c, nil
}

// readLog copies the child's output to its log file, noting the end of
// its warm-up and the lines that are warnings, errors or not log lines.
func (c *Child) readLog(r io.Reader, w io.Writer) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		line := sc.Text()
		fmt.Fprintln(w, line)
		if line == "" {
			continue
		}
		l := ParseLogLine(line)
		c.mu.Lock()
		if c.spec.WarmMsg != "" && l.Msg == c.spec.WarmMsg && c.warmAt < 0 {
			c.warmAt = time.Since(c.epoch)
		}
		if l.IsProblem() {
			c.problems++
			if len(c.lines) < maxProblemLines {
				c.lines = append(c.lines, line)
			}
		}
		c.mu.Unlock()
	}
	// A read error (or a line over 4 MiB) ends the copy; drain the rest so
	// the child never blocks on a full pipe.
	_, _ = io.Copy(w, r)
}

// Pid is the child's process id.
func (c *Child) Pid() int { return c.cmd.Process.Pid }

// Done is closed once the child has exited.
func (c *Child) Done() <-chan struct{} { return c.done }

// Exited reports whether the child has exited.
func (c *Child) Exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// ExitStatus describes how it exited ("" while it runs).
func (c *Child) ExitStatus() string {
	if !c.Exited() {
		return ""
	}
	if c.state == nil {
		return fmt.Sprint(c.err)
	}
	return c.state.String()
}

// WarmAt is when it logged WarmMsg, or Unknown.
func (c *Child) WarmAt() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.warmAt
}

// Problems is the number of warning, error and non-log lines, and the
// first few of them.
func (c *Child) Problems() (int, []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.problems, append([]string(nil), c.lines...)
}

// Sample reads the child's /proc now and keeps the reading.
func (c *Child) Sample() (ProcSample, error) {
	mem, cpu, err := ReadProc(c.Pid())
	if err != nil {
		return ProcSample{}, err
	}
	s := ProcSample{T: time.Since(c.epoch), Mem: mem, CPU: cpu}
	c.mu.Lock()
	c.samples = append(c.samples, s)
	c.mu.Unlock()
	return s, nil
}

// SampleEvery samples the child every interval until it exits or ctx ends.
func (c *Child) SampleEvery(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := c.Sample(); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-c.done:
			return
		case <-t.C:
		}
	}
}

// Samples are the readings so far.
func (c *Child) Samples() []ProcSample {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ProcSample(nil), c.samples...)
}

// Stop sends SIGTERM and waits up to grace for the child to exit, then
// kills it. It returns how long the child took to exit.
func (c *Child) Stop(grace time.Duration) (time.Duration, error) {
	start := time.Now()
	if c.Exited() {
		return 0, nil
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return 0, fmt.Errorf("benchrun: SIGTERM %s: %w", c.spec.Name, err)
	}
	select {
	case <-c.done:
		return time.Since(start), nil
	case <-time.After(grace):
	}
	_ = c.cmd.Process.Kill()
	<-c.done
	return time.Since(start), fmt.Errorf("benchrun: %s did not exit within %s of SIGTERM; killed", c.spec.Name, grace)
}
