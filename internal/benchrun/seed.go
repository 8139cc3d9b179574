package benchrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/router"
)

// The seed benchmark runs the system at the size it is built for: an
// index of the planning workload's shape (datagen.World: US restaurants
// with about 85 dishes each), from a million documents to the seed's 55
// million, through three phases on kept engines:
//
//   - load: the world's creation produced to the topics (zstd-compressed),
//     then ingest started on the backlog as a first deployment meets it,
//     and followed as a soak is, to the last committed offset;
//   - live: ingest started again on the same group, changes produced at a
//     stated rate for a stated time while dish searches run, routed and of
//     every shard alternately in blocks; then, once ingest has caught up,
//     the same searches on the quiet index;
//   - reshard: a 24-shard map planned from the live index, and the
//     migration's steps (create, dual writes, backfill, verify --ids,
//     cutover, complete) under the same changes; then the quiet searches
//     on the new map.
//
// After each phase the index is checked against the world: its document
// count in full, and a sample of documents each found once, at its
// version, under its routing. Each phase's report is saved in the run's
// directory with the state: a run that stops continues from its last
// finished phase (the world is rebuilt by applying again the change
// batches that were sent; a batch's count is saved only once the broker
// has acknowledged it, and one sent again is a replay ingest ignores).

// seedIngestFlags are the flags ingest runs with in every phase: the
// world deletes each dish before its restaurant, as
// --source-deletes-dishes says its source does (without it, a dish of a
// re-opened restaurant read before the closure is lost with the old ones:
// docs/ingest.md).
var seedIngestFlags = []string{"--source-deletes-dishes"}

// Seed phases, in order.
const (
	PhaseLoad    = "load"
	PhaseLive    = "live"
	PhaseReshard = "reshard"
)

// SeedPhases lists the phases in order.
var SeedPhases = []string{PhaseLoad, PhaseLive, PhaseReshard}

// Defaults of SeedConfig.
const (
	DefaultSeedDocs       = 1_000_000
	DefaultSeedLiveFor    = 10 * time.Minute
	DefaultSeedChangeRate = 200
	DefaultSeedSearches   = 1000
	DefaultSeedSample     = 20_000
	DefaultSeedShards     = 24
	DefaultSeedPartitions = 12
	DefaultSeedTimeout    = 6 * time.Hour
	// seedBatch is how many changes are produced, acknowledged and
	// counted in the state at a time.
	seedBatch = 500
	// searchBlock is how many searches run of one kind before the other.
	searchBlock = 50
)

// SeedConfig configures Seed.
type SeedConfig struct {
	Config
	// Docs is the world's size in documents.
	Docs int64
	// Dir holds the run's state and reports; a run with the same Dir and
	// Docs continues where the last stopped.
	Dir string
	// Phases are the phases to run, of SeedPhases, in that order; a phase
	// already done is skipped. Live and reshard need load done; reshard
	// runs after live or without it (a size whose changes were measured
	// in an earlier run can be resharded without them).
	Phases []string
	// LiveFor is how long the live phase produces changes, at ChangeRate
	// changes a second (a change is one to five messages; closing a
	// restaurant deletes its dishes too).
	LiveFor    time.Duration
	ChangeRate float64
	// Searches is how many searches of each kind one measurement runs.
	Searches int
	// Sample is how many documents are checked against the world.
	Sample int
	// Shards is the reshard's target shard count.
	Shards int
	// Drop deletes the run's index, topics and group once the reshard is
	// done (the reports stay), freeing the disk for the next size.
	Drop bool
}

// Validate returns every bad field at once.
func (c *SeedConfig) Validate() error {
	c.Events = int(min(c.Docs, 1<<30)) // Config's own check: at least one
	err := c.Config.Validate()
	bad := func(format string, args ...any) { err = errors.Join(err, fmt.Errorf(format, args...)) }
	if verr := (datagen.WorldConfig{Docs: c.Docs}).Validate(); verr != nil {
		bad("-docs %d: want 100 to %d", c.Docs, datagen.MaxWorldDocs)
	}
	if c.Dir == "" {
		bad("-dir: empty")
	}
	if len(c.Phases) == 0 {
		bad("-phases: empty; want some of %s", strings.Join(SeedPhases, ","))
	}
	for _, p := range c.Phases {
		if !slices.Contains(SeedPhases, p) {
			bad("-phases: %q, want some of %s", p, strings.Join(SeedPhases, ","))
		}
	}
	if c.LiveFor < time.Second {
		bad("-live-for %s: want at least 1s", c.LiveFor)
	}
	if c.ChangeRate <= 0 || c.ChangeRate > 100_000 {
		bad("-change-rate %g: want 0 < rate <= 100000 changes/s", c.ChangeRate)
	}
	if c.Searches < searchBlock {
		bad("-searches %d: want at least %d", c.Searches, searchBlock)
	}
	if c.Sample < 1 {
		bad("-sample %d: want at least 1", c.Sample)
	}
	if c.Shards < 12 || c.Shards > 36 {
		bad("-shards %d: want 12 to 36", c.Shards)
	}
	return err
}

// seedState is what a run keeps between phases (state.json in Dir).
type seedState struct {
	Docs int64  `json:"docs"`
	Name string `json:"name"`
	// Produced: the world's creation is in the topics, up to LoadEnd.
	Produced bool    `json:"produced"`
	LoadEnd  Offsets `json:"load_end,omitempty"`
	// Batches is how many change batches the broker acknowledged.
	Batches uint64 `json:"batches"`
	// Index is the alias's index now, Map its map file.
	Index string `json:"index"`
	Map   string `json:"map"`
	// Done are the finished phases, in order.
	Done []string `json:"done"`
}

func (s *seedState) alias() string      { return s.Name }
func (s *seedState) group() string      { return s.Name + "-ingest" }
func (s *seedState) done(p string) bool { return slices.Contains(s.Done, p) }
func (s *seedState) topics() eventTopics {
	return eventTopics{restaurants: s.Name + ".restaurants", dishes: s.Name + ".dishes", dlq: s.Name + ".dlq"}
}

// seedRun is one invocation of Seed.
type seedRun struct {
	*bench
	cfg   SeedConfig
	state *seedState
	world *datagen.World
	mix   datagen.ChangeMix
	out   io.Writer
	// inexact lists the phases whose index differed from the world.
	inexact []string
}

// ready says why phase p cannot run yet: live and reshard need load
// done.
func (st *seedState) ready(p string) error {
	if p != PhaseLoad && !st.done(PhaseLoad) {
		return fmt.Errorf("phase %s needs phase %s first (-phases %s,%s)", p, PhaseLoad, PhaseLoad, p)
	}
	return nil
}

// Seed runs cfg's phases and writes each one's report to out and to
// Dir/PHASE.txt and Dir/PHASE.json.
func Seed(ctx context.Context, cfg SeedConfig, out, log io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	cfg.Keep = true // the phases share the index and topics
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return err
	}
	st, err := loadSeedState(cfg.Dir, cfg.Docs)
	if err != nil {
		return err
	}
	if cfg.Work == "" {
		cfg.Work = filepath.Join(cfg.Dir, "work")
	}
	b, err := startBench(ctx, cfg.Config, log)
	if err != nil {
		return err
	}
	defer b.cleanup()
	r := &seedRun{bench: b, cfg: cfg, state: st, mix: datagen.DefaultChangeMix(), out: out}
	if err := r.watermarksOn(ctx); err != nil {
		return err
	}
	for _, p := range SeedPhases {
		if !slices.Contains(cfg.Phases, p) {
			continue
		}
		if st.done(p) {
			b.logf("phase %s: done in an earlier run (%s)", p, filepath.Join(cfg.Dir, p+".txt"))
			continue
		}
		if err := st.ready(p); err != nil {
			return err
		}
		if err := r.buildWorld(); err != nil {
			return err
		}
		began := time.Now()
		var rep *phaseReport
		switch p {
		case PhaseLoad:
			rep, err = r.load(ctx)
		case PhaseLive:
			rep, err = r.live(ctx)
		case PhaseReshard:
			rep, err = r.reshard(ctx)
		}
		if err != nil {
			return fmt.Errorf("phase %s: %w", p, err)
		}
		rep.Phase, rep.Docs, rep.WallSeconds = p, cfg.Docs, time.Since(began).Seconds()
		rep.Commit, rep.Dirty = b.commit, b.dirty
		if err := r.finish(ctx, rep); err != nil {
			return err
		}
		st.Done = append(st.Done, p)
		if err := st.save(cfg.Dir); err != nil {
			return err
		}
	}
	if cfg.Drop && st.done(PhaseReshard) {
		t := st.topics()
		err := errors.Join(b.search.DeleteIndex(ctx, st.Index),
			b.kafka.DeleteTopics(ctx, t.restaurants, t.dishes, t.dlq, st.group()+".parked"),
			b.kafka.DeleteGroups(ctx, st.group()))
		if err != nil {
			return fmt.Errorf("drop the run's index and topics: %w", err)
		}
		b.logf("dropped %s, its topics and group", st.Index)
	}
	if len(r.inexact) > 0 {
		return fmt.Errorf("the index differed from the world:\n%s", strings.Join(r.inexact, "\n"))
	}
	return nil
}

func loadSeedState(dir string, docs int64) (*seedState, error) {
	raw, err := os.ReadFile(filepath.Join(dir, "state.json"))
	if errors.Is(err, os.ErrNotExist) {
		name := "seed-" + strings.ToLower(docsLabel(docs))
		return &seedState{Docs: docs, Name: name, Index: name + "-v1"}, nil
	}
	if err != nil {
		return nil, err
	}
	var st seedState
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "state.json"), err)
	}
	if st.Docs != docs {
		return nil, fmt.Errorf("%s holds a run of %d documents, not %d: give another -dir", dir, st.Docs, docs)
	}
	return &st, nil
}

func (s *seedState) save(dir string) error {
	raw, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "state.json.tmp")
	if err := os.WriteFile(tmp, raw, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, "state.json"))
}

// docsLabel is 1M, 5M, 55M, 250k...
func docsLabel(n int64) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.FormatInt(n/1_000_000, 10) + "M"
	case n >= 1000 && n%1000 == 0:
		return strconv.FormatInt(n/1000, 10) + "k"
	}
	return strconv.FormatInt(n, 10)
}

// buildWorld makes the world as far as the run has sent it: its creation
// and every acknowledged batch of changes.
func (r *seedRun) buildWorld() error {
	if r.world != nil {
		return nil
	}
	began := time.Now()
	cities, err := datagen.Cities()
	if err != nil {
		return err
	}
	t := r.state.topics()
	w, err := datagen.NewWorld(cities, datagen.WorldConfig{Docs: r.cfg.Docs, RestaurantTopic: t.restaurants, DishTopic: t.dishes})
	if err != nil {
		return err
	}
	if r.state.Produced {
		if err := w.Load(func(datagen.Message) error { return nil }); err != nil {
			return err
		}
		for n := range r.state.Batches {
			if _, err := w.Changes(n, seedBatch, r.mix, nil); err != nil {
				return err
			}
		}
	}
	r.world = w
	r.logf("world: %d restaurants, %d dishes, %d change batches applied, in %.1f s", w.Restaurants(), w.Dishes(), r.state.Batches, time.Since(began).Seconds())
	return nil
}

// watermarksOn turns the node's disk thresholds on (real.sh's nodes start
// with them off): a node short of disk refuses writes instead of filling
// the disk.
func (r *seedRun) watermarksOn(ctx context.Context) error {
	_, err := r.search.doBody(ctx, "PUT", "/_cluster/settings",
		`{"persistent":{"cluster.routing.allocation.disk.threshold_enabled":true}}`)
	if err != nil {
		return fmt.Errorf("turn the disk watermarks on: %w", err)
	}
	return nil
}

// producer sends the world's messages, zstd-compressed, keyed as the
// project's producer keys them (murmur2, as Kafka's Java client).
type producer struct {
	cl  *kgo.Client
	err chan error
}

func (r *seedRun) newProducer() (*producer, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(r.cfg.Brokers...),
		kgo.ProducerBatchCompression(kgo.ZstdCompression()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(200_000),
		kgo.ProducerBatchMaxBytes(1<<20),
		kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)))
	if err != nil {
		return nil, err
	}
	return &producer{cl: cl, err: make(chan error, 1)}, nil
}

func (p *producer) send(ctx context.Context, m datagen.Message) error {
	select {
	case err := <-p.err:
		return err
	default:
	}
	p.cl.Produce(ctx, &kgo.Record{Topic: m.Topic, Key: m.Key, Value: m.Value}, func(_ *kgo.Record, err error) {
		if err != nil {
			select {
			case p.err <- err:
			default:
			}
		}
	})
	return nil
}

// flush waits for every record sent to be acknowledged.
func (p *producer) flush(ctx context.Context) error {
	if err := p.cl.Flush(ctx); err != nil {
		return err
	}
	select {
	case err := <-p.err:
		return err
	default:
		return nil
	}
}

// toolRun is one run of a command: wall and CPU time, peak RSS.
type toolRun struct {
	Wall, CPU float64 // seconds
	PeakRSS   int64   // bytes
}

// tool runs one of the built commands, its output to Dir/LOG.
func (r *seedRun) tool(ctx context.Context, log, name string, args ...string) (toolRun, error) {
	f, err := os.OpenFile(filepath.Join(r.cfg.Dir, log), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return toolRun{}, err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n$ %s %s\n", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, r.bin[name], args...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = r.src, childEnv(), f, f
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return toolRun{}, err
	}
	// The peak RSS is the process's VmHWM, read while it runs: the
	// rusage's maxrss keeps the harness's own RSS at the fork.
	var peak atomic.Int64
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			if m, _, err := ReadProc(cmd.Process.Pid); err == nil {
				peak.Store(max(peak.Load(), m.HWM))
			}
			select {
			case <-stop:
				return
			case <-time.After(200 * time.Millisecond):
			}
		}
	}()
	err = cmd.Wait()
	close(stop)
	<-watched
	tr := toolRun{Wall: time.Since(began).Seconds(), PeakRSS: peak.Load()}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		tr.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	if err != nil {
		return tr, fmt.Errorf("%s %s: %w (log: %s)", name, strings.Join(args, " "), err, f.Name())
	}
	return tr, nil
}

// readMap reads a map file of the run.
func readMap(path string) (*router.Map, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return router.Parse(raw)
}

// sampleRNG draws the documents checked after a phase: the same for a
// phase whatever run makes it.
func sampleRNG(phase string) *rand.Rand {
	var h uint64 = 14695981039346656037
	for i := range len(phase) {
		h = (h ^ uint64(phase[i])) * 1099511628211
	}
	return rand.New(rand.NewPCG(h, 29))
}
