package benchrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/datagen"
	"github.com/geoshard/geoshard/schema"
	"github.com/geoshard/geoshard/search"
)

// phaseReport is one phase's figures.
type phaseReport struct {
	Phase       string   `json:"phase"`
	Docs        int64    `json:"docs"`
	Commit      string   `json:"commit"`
	Dirty       []string `json:"dirty,omitempty"`
	WallSeconds float64  `json:"wall_seconds"`

	// Load is the load phase's soak of ingest over the backlog.
	Load *SoakResult `json:"load,omitempty"`
	// Changes is the live or reshard phase's change traffic and ingest.
	Changes *changeFigures `json:"changes,omitempty"`
	// Steps are the reshard's steps, by name.
	Steps map[string]toolRun `json:"steps,omitempty"`
	// BackfillDocsPerSecond is the source's documents over the backfill
	// step's wall time.
	BackfillDocsPerSecond float64 `json:"backfill_docs_per_s,omitempty"`
	// VerifyFailed is the last verify's error when it failed after two
	// repairs (the migration was then cancelled).
	VerifyFailed string `json:"verify_failed,omitempty"`
	// Searches are the search measurements of the phase.
	Searches []searchFigures `json:"searches,omitempty"`
	Disk     diskFigures     `json:"disk"`
	Check    exactCheck      `json:"check"`
}

// changeFigures is the change traffic of a phase and what ingest spent on
// it, from its warm to its catch-up.
type changeFigures struct {
	Changes        int64            `json:"changes"`
	ByKind         map[string]int64 `json:"changes_by_kind"`
	Messages       int64            `json:"messages"`
	Seconds        float64          `json:"produce_seconds"`
	MessagesPerSec float64          `json:"messages_per_s"`
	WarmSeconds    float64          `json:"warm_seconds"`
	CatchUpSeconds float64          `json:"catch_up_seconds"`
	IngestCPUus    float64          `json:"ingest_cpu_us_per_event"`
	NodeCPUus      float64          `json:"node_cpu_us_per_event"`
	PeakRSS        int64            `json:"ingest_peak_rss_bytes"`
	EndRSS         int64            `json:"ingest_end_rss_bytes"`
	Directory      int64            `json:"directory_restaurants"`
}

// searchFigures is one routed-against-every-shard measurement.
type searchFigures struct {
	Name         string  `json:"name"`
	MapShards    int     `json:"map_shards"`
	Searches     int     `json:"searches_each"`
	RoutedP50    float64 `json:"routed_p50_ms"`
	RoutedP99    float64 `json:"routed_p99_ms"`
	AllP50       float64 `json:"all_p50_ms"`
	AllP99       float64 `json:"all_p99_ms"`
	RoutedCPU    float64 `json:"routed_node_cpu_ms_per_search"`
	AllCPU       float64 `json:"all_node_cpu_ms_per_search"`
	RoutedShards float64 `json:"routed_shards_per_search"`
	AllShards    float64 `json:"all_shards_per_search"`
	CPURatio     float64 `json:"cpu_all_over_routed"`
	// IdleCPU is the node's CPU per second of wall time with no search
	// (refreshes, merges, the collector), read just before a quiet
	// measurement; the Net figures take it off each side for its wall
	// time.
	IdleCPU       float64 `json:"idle_node_cpu_ms_per_s,omitempty"`
	RoutedNetCPU  float64 `json:"routed_net_node_cpu_ms_per_search,omitempty"`
	AllNetCPU     float64 `json:"all_net_node_cpu_ms_per_search,omitempty"`
	NetCPURatio   float64 `json:"net_cpu_all_over_routed,omitempty"`
	MergesAwaited float64 `json:"merges_awaited_seconds,omitempty"`
}

// diskFigures are the sizes after a phase.
type diskFigures struct {
	IndexBytes      int64   `json:"index_store_bytes"`
	Merges          int64   `json:"merges_total"`
	MergeSeconds    float64 `json:"merges_seconds"`
	MergedBytes     int64   `json:"merges_bytes"`
	TopicBytes      int64   `json:"topic_bytes"`
	NodeFreeBytes   int64   `json:"node_free_bytes"`
	NodeTotalBytes  int64   `json:"node_total_bytes"`
	IndexSegments   int64   `json:"index_segments"`
	IndexDocsCount  int64   `json:"index_docs_count"`
	IndexDocsDelete int64   `json:"index_docs_deleted"`
}

// exactCheck is the index held against the world.
type exactCheck struct {
	Count    int64    `json:"count"`
	Want     int64    `json:"want"`
	Sampled  int      `json:"sampled"`
	Wrong    int      `json:"wrong"`
	Examples []string `json:"examples,omitempty"`
	OK       bool     `json:"ok"`
}

// ---- load

func (r *seedRun) load(ctx context.Context) (*phaseReport, error) {
	st, t := r.state, r.state.topics()
	if !st.Produced {
		_ = r.kafka.DeleteTopics(ctx, t.restaurants, t.dishes, t.dlq) // a run stopped while producing
		if err := r.kafka.CreateTopics(ctx, r.cfg.Partitions, t.restaurants, t.dishes, t.dlq); err != nil {
			return nil, err
		}
		p, err := r.newProducer()
		if err != nil {
			return nil, err
		}
		began := time.Now()
		var n int64
		err = r.world.Load(func(m datagen.Message) error {
			n++
			if n%5_000_000 == 0 {
				r.logf("produced %d of the world's %d creations", n, r.world.Restaurants()+r.world.Dishes())
			}
			return p.send(ctx, m)
		})
		if err == nil {
			err = p.flush(ctx)
		}
		p.cl.Close()
		if err != nil {
			return nil, fmt.Errorf("produce the world: %w", err)
		}
		if st.LoadEnd, err = r.kafka.EndOffsets(ctx, t.restaurants, t.dishes); err != nil {
			return nil, err
		}
		r.logf("produced %d messages in %.0f s (%.0f/s, zstd)", n, time.Since(began).Seconds(), float64(n)/time.Since(began).Seconds())
		st.Produced = true
		if err := st.save(r.cfg.Dir); err != nil {
			return nil, err
		}
	}
	if st.Map == "" {
		st.Map = filepath.Join(r.cfg.Dir, "map-18.json")
		raw, err := os.ReadFile(filepath.Join(r.src, "testdata", "maps", "us-18.json"))
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(st.Map, raw, 0o644); err != nil {
			return nil, err
		}
	}
	if _, err := r.search.IndexStats(ctx, st.Index); err != nil {
		if _, err := r.tool(ctx, "load-init.log", "reshard", "init", "--map", st.Map, "--index", st.Index,
			"--alias", st.alias(), "--opensearch", r.cfg.OpenSearch); err != nil {
			return nil, err
		}
	}
	start, err := r.resumeFrom(ctx)
	if err != nil {
		return nil, err
	}
	f, err := os.Create(filepath.Join(r.cfg.Dir, "load-soak.txt"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res, err := r.soakIngest(ctx, SoakConfig{Config: r.cfg.Config}, soakInput{
		topics: t, group: st.group(), index: st.Index, alias: st.alias(), start: start, end: st.LoadEnd, flags: seedIngestFlags,
	}, f)
	if err != nil {
		return nil, err
	}
	if !res.Completed {
		return nil, fmt.Errorf("ingest did not finish the backlog: %s (%s)", res.Stopped, f.Name())
	}
	rep := &phaseReport{Load: res}
	if rep.Searches, err = r.quietSearches(ctx, "after the load", r.workloads()); err != nil {
		return nil, err
	}
	return rep, nil
}

// resumeFrom is where the group stands in the event topics: its committed
// offsets, and the topics' start where it has none.
func (r *seedRun) resumeFrom(ctx context.Context) (Offsets, error) {
	t := r.state.topics()
	start, err := r.kafka.StartOffsets(ctx, t.restaurants, t.dishes)
	if err != nil {
		return nil, err
	}
	// A fresh broker creates its offsets topic on the first group
	// request: the coordinator is unavailable for a few seconds.
	var committed Offsets
	for try := 0; ; try++ {
		if committed, err = r.kafka.Committed(ctx, r.state.group()); err == nil {
			break
		}
		if try == 60 || !strings.Contains(err.Error(), "COORDINATOR") {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	for topic, ps := range start {
		for p := range ps {
			if off, ok := committed.Get(topic, p); ok {
				start.Set(topic, p, off)
			}
		}
	}
	return start, nil
}

// ---- live

func (r *seedRun) live(ctx context.Context) (*phaseReport, error) {
	probes := r.workloads()
	ing, err := r.startIngestAndWarm(ctx, "live")
	if err != nil {
		return nil, err
	}
	defer ing.stop()
	ch := r.startChanges(ctx, r.cfg.LiveFor)
	s, err := r.measureSearch(ctx, searchKinds[0].name+", during the changes", probes[0], 0, ch.finished)
	if err != nil {
		ch.cancel()
		<-ch.done
		return nil, err
	}
	rep := &phaseReport{Searches: []searchFigures{s}}
	<-ch.done
	if ch.err != nil {
		return nil, ch.err
	}
	if rep.Changes, err = r.catchUp(ctx, ing, ch); err != nil {
		return nil, err
	}
	quiet, err := r.quietSearches(ctx, "after the changes", probes)
	if err != nil {
		return nil, err
	}
	rep.Searches = append(rep.Searches, quiet...)
	return rep, nil
}

// ingestRunning is ingest started for a phase.
type ingestRunning struct {
	child   *Child
	warm    time.Duration
	epoch   time.Time
	node    cpuMeter
	stopped func()
}

func (i *ingestRunning) stop() {
	if i.stopped != nil {
		i.stopped()
		i.stopped = nil
	}
}

// startIngestAndWarm starts ingest on the run's group and waits until its
// directory is warm.
func (r *seedRun) startIngestAndWarm(ctx context.Context, phase string) (*ingestRunning, error) {
	st := r.state
	run := &ingestRun{alias: st.alias(), group: st.group(), topics: st.topics(), flags: seedIngestFlags}
	epoch := time.Now()
	child, err := r.startIngest(run, phase+"-ingest.log", epoch)
	if err != nil {
		return nil, err
	}
	sctx, stopSampling := context.WithCancel(ctx)
	go child.SampleEvery(sctx, time.Second)
	ing := &ingestRunning{child: child, epoch: epoch, stopped: func() {
		stopSampling()
		if _, err := child.Stop(stopGrace); err != nil {
			r.logf("stop ingest: %v", err)
		}
	}}
	for child.WarmAt() < 0 {
		if child.Exited() {
			ing.stop()
			return nil, fmt.Errorf("ingest exited before its directory was warm: %s (log %s)", child.ExitStatus(), filepath.Join(r.work, phase+"-ingest.log"))
		}
		select {
		case <-ctx.Done():
			ing.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	ing.warm = child.WarmAt()
	ing.node = startCPU(r.enginePID("opensearch"))
	r.logf("%s: ingest warm in %.1f s", phase, ing.warm.Seconds())
	return ing, nil
}

// changeRun is the change producer of a phase.
type changeRun struct {
	cancel   context.CancelFunc
	done     chan struct{}
	err      error
	began    time.Time
	took     time.Duration
	changes  int64
	messages int64
	byKind   map[string]int64
}

func (c *changeRun) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// startChanges produces batches of changes at the configured rate for
// up to d (or until cancelled), counting each acknowledged batch in the
// state. Only its goroutine touches the world until done closes.
func (r *seedRun) startChanges(ctx context.Context, d time.Duration) *changeRun {
	cctx, cancel := context.WithCancel(ctx)
	c := &changeRun{cancel: cancel, done: make(chan struct{}), began: time.Now(), byKind: map[string]int64{}}
	go func() {
		defer close(c.done)
		defer cancel()
		p, err := r.newProducer()
		if err != nil {
			c.err = err
			return
		}
		defer p.cl.Close()
		every := time.Duration(float64(seedBatch) / r.cfg.ChangeRate * float64(time.Second))
		next := time.Now()
		for time.Since(c.began) < d {
			select {
			case <-cctx.Done():
				c.took = time.Since(c.began)
				return
			case <-time.After(time.Until(next)):
			}
			next = next.Add(every)
			counts, err := r.world.Changes(r.state.Batches, seedBatch, r.mix, func(m datagen.Message) error { return p.send(cctx, m) })
			if err == nil {
				err = p.flush(cctx)
			}
			if err != nil {
				if cctx.Err() == nil {
					c.err = fmt.Errorf("produce changes: %w", err)
				}
				// The batch may be half-sent: the world has it whole, so
				// the state must count it (a resumed run rebuilds it and
				// sends it again; what was sent twice is a replay).
				r.state.Batches++
				_ = r.state.save(r.cfg.Dir)
				c.took = time.Since(c.began)
				return
			}
			r.state.Batches++
			if err := r.state.save(r.cfg.Dir); err != nil {
				c.err = err
				return
			}
			c.changes += seedBatch
			c.messages += counts.Messages
			for k, v := range counts.ByKind {
				c.byKind[k] += v
			}
		}
		c.took = time.Since(c.began)
	}()
	return c
}

// catchUp waits until ingest has committed every change, then stops it
// and reports the change traffic's figures.
func (r *seedRun) catchUp(ctx context.Context, ing *ingestRunning, ch *changeRun) (*changeFigures, error) {
	t := r.state.topics()
	end, err := r.kafka.EndOffsets(ctx, t.restaurants, t.dishes)
	if err != nil {
		return nil, err
	}
	stopAt := time.Now()
	for {
		committed, err := r.kafka.Committed(ctx, r.state.group())
		if err != nil {
			return nil, err
		}
		if Compare(end, end, committed).Complete() {
			break
		}
		if ing.child.Exited() {
			return nil, fmt.Errorf("ingest exited: %s", ing.child.ExitStatus())
		}
		if time.Since(stopAt) > r.cfg.Stall {
			return nil, fmt.Errorf("ingest did not commit the changes within %s", r.cfg.Stall)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(r.cfg.Poll):
		}
	}
	f := &changeFigures{
		Changes: ch.changes, ByKind: ch.byKind, Messages: ch.messages, Seconds: ch.took.Seconds(),
		WarmSeconds: ing.warm.Seconds(), CatchUpSeconds: time.Since(stopAt).Seconds(),
	}
	if ch.took > 0 {
		f.MessagesPerSec = float64(ch.messages) / ch.took.Seconds()
	}
	node := ing.node.since()
	_, _ = ing.child.Sample()
	samples := ing.child.Samples()
	ing.stop()
	var warmCPU time.Duration
	for _, s := range samples {
		if s.T <= ing.warm {
			warmCPU = s.CPU
		}
		if s.T >= ing.warm {
			f.PeakRSS = max(f.PeakRSS, s.Mem.RSS)
		}
	}
	if n := len(samples); n > 0 && ch.messages > 0 {
		last := samples[n-1]
		f.EndRSS = last.Mem.RSS
		f.IngestCPUus = float64((last.CPU - warmCPU).Microseconds()) / float64(ch.messages)
	}
	if node >= 0 && ch.messages > 0 {
		f.NodeCPUus = float64(node.Microseconds()) / float64(ch.messages)
	}
	return f, nil
}

// ---- reshard

func (r *seedRun) reshard(ctx context.Context) (*phaseReport, error) {
	st := r.state
	probes := r.workloads()
	ing, err := r.startIngestAndWarm(ctx, "reshard")
	if err != nil {
		return nil, err
	}
	defer ing.stop()
	osFlags := []string{"--opensearch", r.cfg.OpenSearch}
	alias := []string{"--alias", st.alias()}
	target := filepath.Join(r.cfg.Dir, fmt.Sprintf("map-%d.json", r.cfg.Shards))
	rep := &phaseReport{Steps: map[string]toolRun{}}
	// step runs a reshard verb, its figures kept under label.
	step := func(label, verb string, args ...string) error {
		tr, err := r.tool(ctx, "reshard-steps.log", "reshard", append(append([]string{verb}, args...), osFlags...)...)
		rep.Steps[label] = tr
		r.logf("reshard %s: %.1f s, CPU %.1f s, peak RSS %s", label, tr.Wall, tr.CPU, MB(tr.PeakRSS))
		return err
	}
	source, err := r.search.IndexStats(ctx, st.Index)
	if err != nil {
		return nil, err
	}
	marker := filepath.Join(r.cfg.Dir, "reshard.started")
	_, statErr := os.Stat(marker)
	resumed := statErr == nil
	if !resumed {
		if err := step("plan", "plan", "--from-index", st.alias(), "--shards", strconv.Itoa(r.cfg.Shards), "--out", target); err != nil {
			return nil, err
		}
	}
	ch := r.startChanges(ctx, 24*time.Hour)
	stopChanges := func() error {
		ch.cancel()
		<-ch.done
		return ch.err
	}
	var verifyErr error
	if resumed {
		err = step("run", "run", append([]string{"--map", target, "--ids"}, alias...)...)
	} else {
		if err = writeFile(marker, ""); err == nil {
			err = step("create", "create", append([]string{"--map", target}, alias...)...)
		}
		for _, s := range []string{"dual-writes", "backfill"} {
			if err == nil {
				err = step(s, s, alias...)
			}
		}
		if err == nil {
			// As an operator does: verify, and where it fails repair
			// what it listed and verify again, twice at most.
			verifyErr = step("verify", "verify", append([]string{"--ids"}, alias...)...)
			for round := 2; verifyErr != nil && ctx.Err() == nil && round <= 3; round++ {
				if err = step(fmt.Sprintf("repair %d", round-1), "repair", alias...); err != nil {
					break
				}
				verifyErr = step(fmt.Sprintf("verify %d", round), "verify", append([]string{"--ids"}, alias...)...)
			}
		}
		if err == nil && verifyErr == nil {
			err = step("cutover", "cutover", alias...)
		}
	}
	if err != nil {
		_ = stopChanges()
		return nil, err
	}
	if verifyErr != nil {
		// The target is not the source: cancel the migration (its
		// figures stand), and check the source against the world.
		rep.VerifyFailed = verifyErr.Error()
		r.inexact = append(r.inexact, "phase reshard: verify failed after two repairs: "+verifyErr.Error())
		if err := stopChanges(); err != nil {
			return nil, err
		}
		if rep.Changes, err = r.catchUp(ctx, ing, ch); err != nil {
			return nil, err
		}
		if b, ok := rep.Steps["backfill"]; ok && b.Wall > 0 {
			rep.BackfillDocsPerSecond = float64(source.Docs) / b.Wall
		}
		if err := step("cancel", "cancel", alias...); err != nil {
			return nil, err
		}
		return rep, nil
	}
	if b, ok := rep.Steps["backfill"]; ok && b.Wall > 0 {
		rep.BackfillDocsPerSecond = float64(source.Docs) / b.Wall
	}
	if err := stopChanges(); err != nil {
		return nil, err
	}
	if rep.Changes, err = r.catchUp(ctx, ing, ch); err != nil {
		return nil, err
	}
	// Complete needs no ingest: every instance stopped, there is none to
	// acknowledge.
	if err := step("complete", "complete", alias...); err != nil {
		return nil, err
	}
	old := st.Index
	if st.Index, err = r.aliasIndex(ctx, st.alias()); err != nil {
		return nil, err
	}
	st.Map = target
	if err := st.save(r.cfg.Dir); err != nil {
		return nil, err
	}
	if old != st.Index {
		if err := r.search.DeleteIndex(ctx, old); err != nil {
			r.logf("delete the old index %s: %v", old, err)
		}
	}
	if rep.Searches, err = r.quietSearches(ctx, fmt.Sprintf("on the %d-shard map", r.cfg.Shards), probes); err != nil {
		return nil, err
	}
	return rep, nil
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }

// aliasIndex is the index an alias points to.
func (r *seedRun) aliasIndex(ctx context.Context, alias string) (string, error) {
	body, err := r.search.do(ctx, http.MethodGet, "/_alias/"+url.PathEscape(alias), http.StatusOK)
	if err != nil {
		return "", err
	}
	var v map[string]json.RawMessage
	if err := json.Unmarshal(body, &v); err != nil {
		return "", err
	}
	if len(v) != 1 {
		return "", fmt.Errorf("alias %s names %d indexes", alias, len(v))
	}
	for k := range v {
		return k, nil
	}
	return "", nil
}

// ---- searches

// probe is one dish search: a circle around a restaurant.
type probe struct{ lat, lng, radiusM float64 }

// searchKinds are the quiet measurements' workloads: "near here" (1 to
// 5 miles) and wide (5 to 50 miles), each around restaurants drawn at
// random, so placed like the population.
var searchKinds = []struct {
	name     string
	min, max float64 // miles
}{{"near, 1-5 mi", 1, 5}, {"wide, 5-50 mi", 5, 50}}

// probes draws searches of minMi to maxMi miles around the world's
// restaurants. Only the goroutine that changes the world may call it
// while changes run: draw before.
func (r *seedRun) probes(minMi, maxMi float64) []probe {
	rng := rand.New(rand.NewPCG(7, uint64(maxMi)))
	n := max(r.cfg.Searches, 1000) * 4
	out := make([]probe, 0, n)
	for len(out) < n {
		loc := r.world.RestaurantLocation(rng.IntN(r.world.Restaurants()))
		out = append(out, probe{loc.Lat, loc.Lon, (minMi + (maxMi-minMi)*rng.Float64()) * 1609.344})
	}
	return out
}

// workloads draws the probes of every search kind.
func (r *seedRun) workloads() [][]probe {
	out := make([][]probe, len(searchKinds))
	for i, k := range searchKinds {
		out[i] = r.probes(k.min, k.max)
	}
	return out
}

// quietSearches measures every search kind on the quiet index.
func (r *seedRun) quietSearches(ctx context.Context, when string, probes [][]probe) ([]searchFigures, error) {
	var out []searchFigures
	for i, k := range searchKinds {
		s, err := r.measureSearch(ctx, k.name+", quiet, "+when, probes[i], r.cfg.Searches, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// quietSearchBudget bounds one quiet measurement's searches: at the
// largest sizes a wide search takes seconds, and n of each would take an
// hour.
const quietSearchBudget = 4 * time.Minute

// measureSearch runs dish searches routed and of every shard, alternately
// in blocks, n of each, or (n 0) until stop reports true; the node's CPU
// is read from /proc around each block.
func (r *seedRun) measureSearch(ctx context.Context, name string, probes []probe, n int, stop func() bool) (searchFigures, error) {
	client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{r.cfg.OpenSearch}, RequestTimeout: 2 * time.Minute})
	if err != nil {
		return searchFigures{}, err
	}
	c, err := search.Open(ctx, client, search.Config{Alias: r.state.alias()})
	if err != nil {
		return searchFigures{}, err
	}
	pid := r.enginePID("opensearch")
	if pid == 0 {
		return searchFigures{}, errors.New("no node PID under -real-dir: the node's CPU cannot be read")
	}
	type side struct {
		lat    []time.Duration
		cpu    time.Duration
		wall   time.Duration
		shards int
	}
	var routed, every side
	i := 0
	runBlock := func(s *side, from int, all bool) error {
		before, _ := ReadCPU(pid)
		began := time.Now()
		defer func() { s.wall += time.Since(began) }()
		for k := range searchBlock {
			p := probes[(from+k)%len(probes)]
			t0 := time.Now()
			res, err := c.Dishes(ctx, search.DishQuery{Area: search.Circle(p.lat, p.lng, p.radiusM), AllShards: all})
			if err != nil {
				return err
			}
			s.lat = append(s.lat, time.Since(t0))
			s.shards += len(res.Shards)
		}
		after, _ := ReadCPU(pid)
		s.cpu += after - before
		return nil
	}
	var idle float64 // node CPU ms per s with no search
	var merges time.Duration
	if n > 0 {
		if merges, err = r.awaitMerges(ctx); err != nil {
			return searchFigures{}, err
		}
		before, _ := ReadCPU(pid)
		began := time.Now()
		select {
		case <-ctx.Done():
			return searchFigures{}, ctx.Err()
		case <-time.After(10 * time.Second):
		}
		after, _ := ReadCPU(pid)
		idle = float64((after - before).Microseconds()) / 1000 / time.Since(began).Seconds()
	}
	for k := range searchBlock { // warm both paths' caches
		p := probes[k]
		for _, all := range []bool{false, true} {
			if _, err := c.Dishes(ctx, search.DishQuery{Area: search.Circle(p.lat, p.lng, p.radiusM), AllShards: all}); err != nil {
				return searchFigures{}, err
			}
		}
	}
	began := time.Now()
	for {
		if n > 0 && (len(routed.lat) >= n || time.Since(began) > quietSearchBudget) {
			break
		}
		if n == 0 && len(routed.lat) > 0 && stop() {
			break
		}
		if err := runBlock(&routed, i, false); err != nil {
			return searchFigures{}, err
		}
		if err := runBlock(&every, i, true); err != nil {
			return searchFigures{}, err
		}
		i += searchBlock
	}
	m, err := readMap(r.state.Map)
	if err != nil {
		return searchFigures{}, err
	}
	k := float64(len(routed.lat))
	f := searchFigures{
		Name: name, MapShards: m.NumShards(), Searches: len(routed.lat),
		RoutedP50: pct(routed.lat, 0.5), RoutedP99: pct(routed.lat, 0.99), AllP50: pct(every.lat, 0.5), AllP99: pct(every.lat, 0.99),
		RoutedCPU: float64(routed.cpu.Microseconds()) / 1000 / k, AllCPU: float64(every.cpu.Microseconds()) / 1000 / k,
		RoutedShards: float64(routed.shards) / k, AllShards: float64(every.shards) / k,
	}
	if routed.cpu > 0 {
		f.CPURatio = float64(every.cpu) / float64(routed.cpu)
	}
	if n > 0 {
		f.IdleCPU, f.MergesAwaited = idle, merges.Seconds()
		f.RoutedNetCPU = f.RoutedCPU - idle*routed.wall.Seconds()/k
		f.AllNetCPU = f.AllCPU - idle*every.wall.Seconds()/k
		if f.RoutedNetCPU > 0 {
			f.NetCPURatio = f.AllNetCPU / f.RoutedNetCPU
		}
	}
	r.logf("search %s: routed p50 %.1f ms, %.2f ms node CPU, %.1f shards; every shard p50 %.1f ms, %.2f ms CPU; CPU every/routed %.2f (net of the idle %.1f ms/s: %.2f)",
		name, f.RoutedP50, f.RoutedCPU, f.RoutedShards, f.AllP50, f.AllCPU, f.CPURatio, f.IdleCPU, f.NetCPURatio)
	return f, nil
}

// awaitMerges waits, up to ten minutes, until the alias's index runs no
// merge, so that a quiet measurement is not a load's tail of merges.
func (r *seedRun) awaitMerges(ctx context.Context) (time.Duration, error) {
	began := time.Now()
	for time.Since(began) < 10*time.Minute {
		body, err := r.search.do(ctx, http.MethodGet, "/"+url.PathEscape(r.state.alias())+"/_stats/merge", http.StatusOK)
		if err != nil {
			return 0, err
		}
		var v struct {
			All struct {
				Total struct {
					Merges struct {
						Current int64 `json:"current"`
					} `json:"merges"`
				} `json:"total"`
			} `json:"_all"`
		}
		if err := json.Unmarshal(body, &v); err != nil {
			return 0, err
		}
		if v.All.Total.Merges.Current == 0 {
			return time.Since(began), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(time.Second):
		}
	}
	r.logf("merges still running after 10 minutes; measuring anyway")
	return time.Since(began), nil
}

func pct(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[min(len(s)-1, int(p*float64(len(s))))].Microseconds()) / 1000
}

// ---- after a phase

// finish checks the index against the world, reads the sizes and saves
// and prints the report.
func (r *seedRun) finish(ctx context.Context, rep *phaseReport) error {
	var err error
	if rep.Check, err = r.checkExact(ctx, rep.Phase); err != nil {
		return err
	}
	rep.Disk = r.disk(ctx)
	raw, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(r.cfg.Dir, rep.Phase+".json"), raw, 0o644); err != nil {
		return err
	}
	var sb strings.Builder
	writeSeedPhase(&sb, rep)
	if err := os.WriteFile(filepath.Join(r.cfg.Dir, rep.Phase+".txt"), []byte(sb.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprint(r.out, sb.String())
	if !rep.Check.OK {
		// The next phases still run (their figures stand on their own);
		// Seed fails at the end.
		r.inexact = append(r.inexact, fmt.Sprintf("phase %s: %d of %d sampled documents wrong, %d documents where %d live (%s)",
			rep.Phase, rep.Check.Wrong, rep.Check.Sampled, rep.Check.Count, rep.Check.Want, strings.Join(rep.Check.Examples, "; ")))
	}
	return nil
}

// checkExact compares the index with the world: the document count in
// full (waited for until it stops changing: dishes that came before their
// restaurant are written once it is there), then a sample of documents,
// each found exactly once, live ones at their version under their
// routing, deleted ones nowhere.
func (r *seedRun) checkExact(ctx context.Context, phase string) (exactCheck, error) {
	rs, ds := r.world.LiveDocs()
	c := exactCheck{Want: rs + ds}
	alias := r.state.alias()
	var last int64 = -1
	lastChange := time.Now()
	for {
		if err := r.search.Refresh(ctx, alias); err != nil {
			return c, err
		}
		n, err := r.count(ctx, alias)
		if err != nil {
			return c, err
		}
		c.Count = n
		if n != last {
			last, lastChange = n, time.Now()
		}
		if n == c.Want || time.Since(lastChange) > 30*time.Second {
			break
		}
		time.Sleep(2 * time.Second)
	}
	m, err := readMap(r.state.Map)
	if err != nil {
		return c, err
	}
	docs := r.world.Sample(sampleRNG(phase), r.cfg.Sample)
	c.Sampled = len(docs)
	wrong := func(format string, args ...any) {
		c.Wrong++
		if len(c.Examples) < 10 {
			c.Examples = append(c.Examples, fmt.Sprintf(format, args...))
		}
	}
	for from := 0; from < len(docs); from += 1000 {
		part := docs[from:min(from+1000, len(docs))]
		ids := make([]string, len(part))
		for i, d := range part {
			ids[i] = schema.RestaurantID(d.ID)
			if d.Dish {
				ids[i] = schema.DishID(d.ID)
			}
		}
		hits, err := r.idHits(ctx, alias, ids)
		if err != nil {
			return c, err
		}
		for i, d := range part {
			got := hits[ids[i]]
			switch {
			case !d.Live && len(got) > 0:
				wrong("%s: deleted, found %d times", ids[i], len(got))
			case !d.Live:
			case len(got) != 1:
				wrong("%s: live at version %d, found %d times", ids[i], d.Version, len(got))
			default:
				shard, err := m.Locate(d.Location.Lat, d.Location.Lon)
				if err != nil {
					return c, err
				}
				h := got[0]
				if h.Version != d.Version || h.Routing != m.Shard(shard).Routing || (d.Dish && h.Source.RestaurantID != d.Restaurant) {
					wrong("%s: version %d, routing %q, restaurant %q; want %d, %q, %q", ids[i], h.Version, h.Routing, h.Source.RestaurantID, d.Version, m.Shard(shard).Routing, d.Restaurant)
				}
			}
		}
	}
	c.OK = c.Wrong == 0 && c.Count == c.Want
	return c, nil
}

type idHit struct {
	ID      string `json:"_id"`
	Version int64  `json:"_version"`
	Routing string `json:"_routing"`
	Source  struct {
		RestaurantID string `json:"restaurant_id"`
	} `json:"_source"`
}

// idHits finds every copy of ids in the alias's index.
func (r *seedRun) idHits(ctx context.Context, alias string, ids []string) (map[string][]idHit, error) {
	q, err := json.Marshal(map[string]any{
		"size": 2 * len(ids), "version": true, "_source": []string{schema.FieldRestaurantID},
		"query": map[string]any{"ids": map[string]any{"values": ids}},
	})
	if err != nil {
		return nil, err
	}
	body, err := r.search.doBody(ctx, http.MethodPost, "/"+url.PathEscape(alias)+"/_search", string(q))
	if err != nil {
		return nil, err
	}
	var v struct {
		Hits struct {
			Hits []idHit `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return nil, err
	}
	out := map[string][]idHit{}
	for _, h := range v.Hits.Hits {
		out[h.ID] = append(out[h.ID], h)
	}
	return out, nil
}

func (r *seedRun) count(ctx context.Context, alias string) (int64, error) {
	body, err := r.search.do(ctx, http.MethodGet, "/"+url.PathEscape(alias)+"/_count", http.StatusOK)
	if err != nil {
		return 0, err
	}
	var v struct {
		Count int64 `json:"count"`
	}
	err = json.Unmarshal(body, &v)
	return v.Count, err
}

// disk reads the index's store and merges, the node's disk and the run's
// topics' size on the broker's disk.
func (r *seedRun) disk(ctx context.Context) diskFigures {
	var d diskFigures
	if body, err := r.search.do(ctx, http.MethodGet, "/"+url.PathEscape(r.state.Index)+"/_stats/store,merge,docs,segments", http.StatusOK); err == nil {
		var v struct {
			All struct {
				Total struct {
					Store struct {
						Size int64 `json:"size_in_bytes"`
					} `json:"store"`
					Merges struct {
						Total     int64 `json:"total"`
						TimeMS    int64 `json:"total_time_in_millis"`
						SizeBytes int64 `json:"total_size_in_bytes"`
					} `json:"merges"`
					Docs struct {
						Count   int64 `json:"count"`
						Deleted int64 `json:"deleted"`
					} `json:"docs"`
					Segments struct {
						Count int64 `json:"count"`
					} `json:"segments"`
				} `json:"total"`
			} `json:"_all"`
		}
		if json.Unmarshal(body, &v) == nil {
			t := v.All.Total
			d.IndexBytes, d.Merges, d.MergeSeconds, d.MergedBytes = t.Store.Size, t.Merges.Total, float64(t.Merges.TimeMS)/1000, t.Merges.SizeBytes
			d.IndexDocsCount, d.IndexDocsDelete, d.IndexSegments = t.Docs.Count, t.Docs.Deleted, t.Segments.Count
		}
	} else {
		r.logf("index stats: %v", err)
	}
	if client, err := bulk.NewClient(bulk.ClientConfig{Addresses: []string{r.cfg.OpenSearch}}); err == nil {
		if nodes, err := bulk.NewAdmin(client).NodesFS(ctx); err == nil {
			for _, n := range nodes {
				d.NodeFreeBytes += n.AvailableBytes
				d.NodeTotalBytes += n.TotalBytes
			}
		} else {
			r.logf("node disk: %v", err)
		}
	}
	dirs, _ := filepath.Glob(filepath.Join(r.cfg.RealDir, "kafka", "data", r.state.Name+".*"))
	for _, dir := range dirs {
		_ = filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
			// Blocks, not sizes: a segment's index files are preallocated
			// sparse files of 10 MB.
			if st, ok := fi.Sys().(*syscall.Stat_t); err == nil && !fi.IsDir() && ok {
				d.TopicBytes += st.Blocks * 512
			}
			return nil
		})
	}
	return d
}

// writeSeedPhase prints a phase's report for a reader.
func writeSeedPhase(w *strings.Builder, r *phaseReport) {
	fmt.Fprintf(w, "seed %s, phase %s: %.0f s (commit %s)\n", docsLabel(r.Docs), r.Phase, r.WallSeconds, short(r.Commit))
	if l := r.Load; l != nil {
		fmt.Fprintf(w, "  load: %s events in %.0f s: %s events/s whole run; by tenth %s\n", Commas(l.Events), l.DoneSeconds, perSec(l.WholeRate), tenths(l.Segments))
		fmt.Fprintf(w, "        ingest CPU %.1f µs/event, node %.1f µs/event; directory warm %.1f s; RSS peak %s, end %s\n",
			1e6*l.IngestCPU/float64(max(l.Events, 1)), 1e6*l.OpenSearchCPU/float64(max(l.Events, 1)), l.WarmSeconds, MB(l.PeakHWM), MB(l.EndRSS))
	}
	if c := r.Changes; c != nil {
		fmt.Fprintf(w, "  changes: %s changes, %s messages in %.0f s (%.0f messages/s); ingest warm %.1f s, caught up %.1f s after the last\n",
			Commas(c.Changes), Commas(c.Messages), c.Seconds, c.MessagesPerSec, c.WarmSeconds, c.CatchUpSeconds)
		fmt.Fprintf(w, "        ingest CPU %.1f µs/event, node %.1f µs/event (searches included); RSS peak %s, end %s; by kind %v\n",
			c.IngestCPUus, c.NodeCPUus, MB(c.PeakRSS), MB(c.EndRSS), c.ByKind)
	}
	for _, name := range []string{"plan", "create", "dual-writes", "backfill", "verify", "repair 1", "verify 2", "repair 2", "verify 3", "cutover", "run", "complete", "cancel"} {
		if s, ok := r.Steps[name]; ok {
			fmt.Fprintf(w, "  reshard %-11s %7.1f s, CPU %6.1f s, peak RSS %s\n", name, s.Wall, s.CPU, MB(s.PeakRSS))
		}
	}
	if r.VerifyFailed != "" {
		fmt.Fprintf(w, "  VERIFY FAILED after two repairs (migration cancelled): %.400s\n", r.VerifyFailed)
	}
	if r.BackfillDocsPerSecond > 0 {
		fmt.Fprintf(w, "  backfill: %.0f docs/s\n", r.BackfillDocsPerSecond)
	}
	for _, s := range r.Searches {
		fmt.Fprintf(w, "  search %s (%d shards, %d each): routed p50 %.1f p99 %.1f ms, %.2f ms node CPU, %.2f shards; every shard p50 %.1f p99 %.1f ms, %.2f ms CPU; CPU every/routed %.2f×\n",
			s.Name, s.MapShards, s.Searches, s.RoutedP50, s.RoutedP99, s.RoutedCPU, s.RoutedShards, s.AllP50, s.AllP99, s.AllCPU, s.CPURatio)
		if s.IdleCPU > 0 || s.NetCPURatio > 0 {
			fmt.Fprintf(w, "        idle node %.1f ms CPU/s (merges awaited %.0f s); net of it: routed %.2f, every shard %.2f ms CPU/search, %.2f×\n",
				s.IdleCPU, s.MergesAwaited, s.RoutedNetCPU, s.AllNetCPU, s.NetCPURatio)
		}
	}
	d := r.Disk
	fmt.Fprintf(w, "  disk: index %s (%d segments, %s docs, %s deleted), topics %s, node free %s of %s; merges %d (%.0f s, %s)\n",
		MB(d.IndexBytes), d.IndexSegments, Commas(d.IndexDocsCount), Commas(d.IndexDocsDelete), MB(d.TopicBytes), MB(d.NodeFreeBytes), MB(d.NodeTotalBytes), d.Merges, d.MergeSeconds, MB(d.MergedBytes))
	verdict := "exact"
	if !r.Check.OK {
		verdict = "WRONG"
	}
	fmt.Fprintf(w, "  check: %s documents, want %s; %d sampled, %d wrong: %s\n", Commas(r.Check.Count), Commas(r.Check.Want), r.Check.Sampled, r.Check.Wrong, verdict)
}

func tenths(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 0, 64)
	}
	return strings.Join(parts, " ")
}

func short(commit string) string { return commit[:min(len(commit), 10)] }
