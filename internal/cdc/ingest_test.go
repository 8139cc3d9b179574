//go:build realcluster

package cdc

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/testenv"
)

var (
	buildOnce sync.Once
	built     string
	buildErr  error
	buildOut  []byte
)

// TestMain removes the ingest binary the tests built.
func TestMain(m *testing.M) {
	code := m.Run()
	if built != "" {
		os.RemoveAll(filepath.Dir(built))
	}
	os.Exit(code)
}

// ingestBinary builds cmd/ingest from this checkout once per test binary.
func ingestBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "geoshard-cdc-ingest-")
		if err != nil {
			buildErr = err
			return
		}
		built = filepath.Join(dir, "ingest")
		cmd := exec.Command("go", "build", "-o", built, "./cmd/ingest")
		cmd.Dir = testenv.Root(t)
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("go build ./cmd/ingest: %v\n%s", buildErr, buildOut)
	}
	return built
}

// ingestProc is cmd/ingest running as a process of its own, as deployed:
// it can be killed.
type ingestProc struct {
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startIngestProc starts the binary with args; its log goes to a file
// whose last lines the test prints if it fails. The test's cleanup stops
// it (SIGTERM, then SIGKILL).
func startIngestProc(t *testing.T, bin string, n int, args ...string) *ingestProc {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "ingest-"+string(rune('a'+n))+".log")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	p := &ingestProc{cmd: exec.Command(bin, args...), log: logPath, done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// Everything comes from the flags: none of the GEOSHARD_* variables
	// of the test's environment (which name the engines for the test,
	// not for ingest) reaches it.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GEOSHARD_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	if err := p.cmd.Start(); err != nil {
		f.Close()
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		if t.Failed() {
			p.tail(t, 40)
		}
	})
	return p
}

// exited is closed when the process has exited.
func (p *ingestProc) exited() <-chan struct{} { return p.done }

// state describes how the process ended, once it has.
func (p *ingestProc) state() string {
	select {
	case <-p.done:
		return p.cmd.ProcessState.String()
	default:
		return "running"
	}
}

// kill sends SIGKILL, as a node that dies or an OOM kill does, and waits
// until the process is gone.
func (p *ingestProc) kill(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("ingest ended %v, not by SIGKILL", p.cmd.ProcessState)
	}
}

// stop sends SIGTERM, lets the process drain, and kills it after 30s.
func (p *ingestProc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail logs the last n lines of the process's log.
func (p *ingestProc) tail(t *testing.T, n int) {
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Logf("ingest log %s: %v", p.log, err)
		return
	}
	lines := bytes.Split(bytes.TrimRight(b, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	t.Logf("last lines of %s (%s):\n%s", p.log, p.state(), bytes.Join(lines, []byte("\n")))
}
