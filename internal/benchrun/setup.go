package benchrun

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// bench is one run of a benchmark: its configuration, the engines, the
// built commands and what it created, to be removed at the end.
type bench struct {
	cfg    Config
	log    io.Writer // progress, for the operator
	kafka  *Kafka
	search *Search
	src    string // the tree the commands are built from
	work   string
	bin    map[string]string // command name → binary
	runID  string
	commit string
	dirty  []string

	indexes, topics, groups []string
}

// startBench makes a run's bench and builds the commands under test
// (ingest, reshard, produce); the caller defers its cleanup.
func startBench(ctx context.Context, cfg Config, log io.Writer) (*bench, error) {
	b, err := newBench(ctx, cfg, log)
	if err != nil {
		return nil, err
	}
	if err := b.buildCommands(ctx); err != nil {
		b.cleanup()
		return nil, err
	}
	return b, nil
}

// newBench checks the engines answer and prepares the scratch directory
// and the source tree.
func newBench(ctx context.Context, cfg Config, log io.Writer) (*bench, error) {
	b := &bench{cfg: cfg, log: log, search: NewSearch(cfg.OpenSearch), bin: map[string]string{}}
	repo, err := filepath.Abs(cfg.Repo)
	if err != nil {
		return nil, err
	}
	b.cfg.Repo = repo
	if mod, err := os.ReadFile(filepath.Join(repo, "go.mod")); err != nil || !bytes.HasPrefix(mod, []byte("module github.com/geoshard/geoshard\n")) {
		return nil, fmt.Errorf("benchrun: %s is not the geoshard module's root (run from the repository's top, or give -repo)", repo)
	}
	v, err := b.search.Version(ctx)
	if err != nil {
		return nil, fmt.Errorf("benchrun: OpenSearch at %s does not answer: %w", cfg.OpenSearch, err)
	}
	b.logf("opensearch %s at %s, kafka at %s", v, cfg.OpenSearch, strings.Join(cfg.Brokers, ","))
	if b.kafka, err = DialKafka(cfg.Brokers); err != nil {
		return nil, err
	}
	b.runID = newRunID()
	if cfg.Work == "" {
		if b.work, err = os.MkdirTemp("", "geoshard-"+b.runID+"-"); err != nil {
			return nil, err
		}
	} else {
		b.work = filepath.Join(cfg.Work, b.runID)
		if err := os.MkdirAll(b.work, 0o755); err != nil {
			return nil, err
		}
	}
	b.logf("run %s; binaries and logs in %s", b.runID, b.work)
	if err := b.prepareSource(ctx); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "benchrun: "+format+"\n", args...)
}

// newRunID names a run: reuse-safe names for its indexes, topics and
// groups, lower case as index names must be.
func newRunID() string {
	var r [3]byte
	_, _ = rand.Read(r[:])
	return "bench-" + time.Now().UTC().Format("0102t1504") + "-" + hex.EncodeToString(r[:])
}

// prepareSource records the commit and chooses the tree to build from: the
// working tree, or with -src head a `git archive` of HEAD in the scratch
// directory, so that edits not yet committed do not enter the measurement.
func (b *bench) prepareSource(ctx context.Context) error {
	out, err := b.git(ctx, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	b.commit = strings.TrimSpace(out)
	b.src = b.cfg.Repo
	if b.cfg.Source == SourceHead {
		dir := filepath.Join(b.work, "src")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		tar := filepath.Join(b.work, "src.tar")
		if _, err := b.git(ctx, "archive", "-o", tar, "HEAD"); err != nil {
			return err
		}
		if err := run(ctx, "", nil, "tar", "-x", "-f", tar, "-C", dir); err != nil {
			return err
		}
		b.src = dir
		b.logf("building from commit %s (git archive)", b.commit)
		return nil
	}
	status, err := b.git(ctx, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return err
	}
	b.dirty = changedSources(status)
	if len(b.dirty) > 0 {
		b.logf("building from the working tree at %s, with %d files changed since: %s", b.commit, len(b.dirty), strings.Join(b.dirty, " "))
	} else {
		b.logf("building from the working tree at %s (clean)", b.commit)
	}
	return nil
}

// changedSources lists, from `git status --porcelain`, the files that
// enter a build and differ from the commit: Go files, go.mod and go.sum,
// changed or untracked (an untracked Go file is built all the same).
func changedSources(status string) []string {
	var out []string
	for _, line := range strings.Split(status, "\n") {
		if len(line) < 4 {
			continue
		}
		path := line[3:]
		if _, to, ok := strings.Cut(path, " -> "); ok {
			path = to // a rename
		}
		base := filepath.Base(path)
		if strings.HasSuffix(base, ".go") || base == "go.mod" || base == "go.sum" {
			out = append(out, path)
		}
	}
	return out
}

func (b *bench) git(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", b.cfg.Repo}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("benchrun: git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

// run runs a short command, its output folded into the error on failure.
func run(ctx context.Context, dir string, env []string, name string, args ...string) error {
	_, err := output(ctx, dir, env, name, args...)
	return err
}

func output(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("benchrun: %s %s: %w\n%s", name, strings.Join(args, " "), err, tail(string(out), 2000))
	}
	return string(out), nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// build builds a command of the source tree (pkg such as ./cmd/ingest)
// into the scratch directory, once, and returns how long it took.
func (b *bench) build(ctx context.Context, name, dir, pkg string) (time.Duration, error) {
	out := filepath.Join(b.work, name)
	start := time.Now()
	if err := run(ctx, dir, os.Environ(), "go", "build", "-o", out, pkg); err != nil {
		return 0, err
	}
	b.bin[name] = out
	d := time.Since(start)
	b.logf("built %s in %.1f s", name, d.Seconds())
	return d, nil
}

// buildCommands builds ingest, reshard and produce from the source tree.
func (b *bench) buildCommands(ctx context.Context) error {
	for _, c := range []struct{ name, pkg string }{
		{"ingest", "./cmd/ingest"},
		{"reshard", "./cmd/reshard"},
		{"produce", "./internal/datagen/cmd/produce"},
	} {
		if _, err := b.build(ctx, c.name, b.src, c.pkg); err != nil {
			return err
		}
	}
	return nil
}

// eventTopics names a run's event topics.
type eventTopics struct{ restaurants, dishes, dlq string }

// produce creates the run's topics and fills them with the stream, with
// the project's producer, and returns its start and end offsets and how
// long the producer took.
func (b *bench) produce(ctx context.Context, t eventTopics) (start, end Offsets, took time.Duration, err error) {
	b.topics = append(b.topics, t.restaurants, t.dishes, t.dlq)
	b.logf("producing %d events (seed %d, %d partitions) to %s and %s", b.cfg.Events, b.cfg.Seed, b.cfg.Partitions, t.restaurants, t.dishes)
	began := time.Now()
	out, err := output(ctx, b.src, childEnv(), b.bin["produce"],
		"-events", strconv.Itoa(b.cfg.Events), "-partitions", strconv.Itoa(b.cfg.Partitions),
		"-seed", strconv.FormatUint(b.cfg.Seed, 10), "-brokers", strings.Join(b.cfg.Brokers, ","),
		"-restaurant-topic", t.restaurants, "-dish-topic", t.dishes, "-dlq-topic", t.dlq)
	if err != nil {
		return nil, nil, 0, err
	}
	took = time.Since(began)
	if start, err = b.kafka.StartOffsets(ctx, t.restaurants, t.dishes); err != nil {
		return nil, nil, 0, err
	}
	if end, err = b.kafka.EndOffsets(ctx, t.restaurants, t.dishes); err != nil {
		return nil, nil, 0, err
	}
	n := Events(start, end)
	b.logf("%s: %d events in %.1f s (%.0f events/s)", strings.TrimSpace(out), n, took.Seconds(), float64(n)/took.Seconds())
	if n < int64(b.cfg.Events) {
		b.logf("note: the producer made %d events where %d were asked for (it sizes its stream by a number of restaurants)", n, b.cfg.Events)
	}
	return start, end, took, nil
}

// initIndex creates a fresh index and its alias with `reshard init`, as an
// operator's first install does: 18 shards from testdata/maps/us-18.json,
// no replica on a one-node cluster.
func (b *bench) initIndex(ctx context.Context, index, alias string) error {
	b.indexes = append(b.indexes, index)
	return run(ctx, b.src, childEnv(), b.bin["reshard"], "init",
		"--map", filepath.Join(b.src, "testdata", "maps", "us-18.json"),
		"--index", index, "--alias", alias, "--opensearch", b.cfg.OpenSearch)
}

// dropIndex deletes an index of the run now (it is also in the cleanup
// list, where deleting it again is harmless).
func (b *bench) dropIndex(ctx context.Context, index string) {
	if b.cfg.Keep {
		return
	}
	if err := b.search.DeleteIndex(ctx, index); err != nil {
		b.logf("cleanup: %v", err)
	}
}

// cleanup removes what the run created, unless -keep: its indexes,
// topics and groups, and the binaries and source tree of its scratch
// directory (the logs and series stay).
func (b *bench) cleanup() {
	if b.kafka == nil {
		return
	}
	defer b.kafka.Close()
	if !b.cfg.Keep {
		for _, bin := range b.bin {
			_ = os.Remove(bin)
		}
		_ = os.RemoveAll(filepath.Join(b.work, "src"))
		_ = os.Remove(filepath.Join(b.work, "src.tar"))
	}
	if b.cfg.Keep {
		b.logf("kept indexes %v, topics %v, groups %v", b.indexes, b.topics, b.groups)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	for _, ix := range b.indexes {
		errs = append(errs, b.search.DeleteIndex(ctx, ix))
	}
	errs = append(errs, b.kafka.DeleteGroups(ctx, b.groups...), b.kafka.DeleteTopics(ctx, b.topics...))
	if err := errors.Join(errs...); err != nil {
		b.logf("cleanup: %v", err)
		return
	}
	b.logf("removed %d indexes, %d topics and %d groups of run %s", len(b.indexes), len(b.topics), len(b.groups), b.runID)
}

// childEnv is the harness's environment without any GEOSHARD_* or BT_*
// variable, so that the commands run at their defaults and with only the
// settings the harness gives them, plus extra.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GEOSHARD_") || strings.HasPrefix(kv, "BT_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// freeAddr is a loopback address with a port free just now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// enginePID is the process id in real.sh's PID file for name (opensearch
// or kafka), if that process runs and is the one real.sh started (its
// command line names the run directory, as real.sh itself checks); 0
// otherwise.
func (b *bench) enginePID(name string) int {
	if b.cfg.RealDir == "" {
		return 0
	}
	data, err := os.ReadFile(filepath.Join(b.cfg.RealDir, name+".pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return 0
	}
	abs, _ := filepath.Abs(b.cfg.RealDir)
	for _, dir := range []string{b.cfg.RealDir, abs} {
		if bytes.Contains(cmdline, []byte(filepath.Join(dir, name))) {
			return pid
		}
	}
	return 0
}

// cpuMeter reads the CPU time of a process at two points; an unknown
// process gives Unknown.
type cpuMeter struct {
	pid   int
	start time.Duration
}

func startCPU(pid int) cpuMeter {
	if pid == 0 {
		return cpuMeter{}
	}
	c, err := ReadCPU(pid)
	if err != nil {
		return cpuMeter{}
	}
	return cpuMeter{pid: pid, start: c}
}

// since is the CPU used since start, or Unknown.
func (m cpuMeter) since() time.Duration {
	if m.pid == 0 {
		return Unknown
	}
	c, err := ReadCPU(m.pid)
	if err != nil {
		return Unknown
	}
	return c - m.start
}
