package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// stopGrace is how long a tool has to exit after SIGTERM before it is
// killed; ingest's own drain timeout is 20 s.
const stopGrace = time.Minute

// Soak runs the soak: one ingest run, at its defaults, over the whole
// produced stream in a fresh index and group, measured from outside. It
// writes the report (a table, then one JSON line) to out and its progress
// to log. A goal missed is a FAIL line of the report, not an error; the
// error is for a run that could not be made (bad flags, engines that do
// not answer, a build that fails).
func Soak(ctx context.Context, cfg SoakConfig, out, log io.Writer) (*SoakResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b, err := startBench(ctx, cfg.Config, log)
	if err != nil {
		return nil, err
	}
	defer b.cleanup()
	topics := eventTopics{restaurants: b.runID + ".restaurants", dishes: b.runID + ".dishes", dlq: b.runID + ".dlq"}
	start, end, produced, err := b.produce(ctx, topics)
	if err != nil {
		return nil, err
	}
	index, alias := b.runID+"-v1", b.runID
	if err := b.initIndex(ctx, index, alias); err != nil {
		return nil, err
	}
	return b.soakIngest(ctx, cfg, soakInput{topics: topics, group: b.runID + "-ingest", index: index, alias: alias, start: start, end: end, produced: produced}, out)
}

// soakInput is what a soak's ingest reads and writes: the events between
// start and end of topics, read in group, written to index under alias.
type soakInput struct {
	topics       eventTopics
	group        string
	index, alias string
	start, end   Offsets
	produced     time.Duration
	flags        []string // more flags for ingest
}

// soakIngest starts ingest on a run whose events are in the topics and
// follows it until every offset up to end is committed, then reports.
func (b *bench) soakIngest(ctx context.Context, cfg SoakConfig, s soakInput, out io.Writer) (*SoakResult, error) {
	topics, index, alias, start, end, produced := s.topics, s.index, s.alias, s.start, s.end, s.produced
	before, err := b.search.IndexStats(ctx, index)
	if err != nil {
		return nil, err
	}

	obs := &SoakObservations{Events: Events(start, end), WarmAt: Unknown, DoneAt: Unknown, OpenSearchCPU: Unknown, KafkaCPU: Unknown}
	nodePID := b.enginePID("opensearch")
	osCPU, kafkaCPU, mach := startCPU(nodePID), startCPU(b.enginePID("kafka")), startMachine()
	run := &ingestRun{alias: alias, group: s.group, topics: topics, pprof: cfg.HeapProfiles, flags: s.flags}
	epoch := time.Now()
	child, err := b.startIngest(run, "ingest.log", epoch)
	if err != nil {
		return nil, err
	}
	defer child.Stop(stopGrace) // on an early return; a second Stop is a no-op
	b.logf("ingest started (pid %d, group %s, alias %s, metrics %s); following it", child.Pid(), run.group, alias, run.metricsAddr)
	sctx, stopSampling := context.WithCancel(ctx)
	go child.SampleEvery(sctx, time.Second)

	var heaps *heapProfiles
	if cfg.HeapProfiles {
		heaps = &heapProfiles{dir: b.work, addr: run.metricsAddr, total: obs.Events, at: []float64{0.25, 0.5, 0.75}}
	}
	stopped := b.followSoak(ctx, child, run, index, nodePID, start, end, epoch, obs, heaps)
	if heaps != nil && !child.Exited() {
		heaps.save(ctx, b, "end")
	}
	stopSampling()
	exitedEarly := child.Exited()
	_, _ = child.Sample()
	obs.Proc, obs.WarmAt = child.Samples(), child.WarmAt()
	obs.OpenSearchCPU, obs.KafkaCPU = osCPU.since(), kafkaCPU.since()
	machCPU, load := mach.since()
	obs.RefreshBefore = before.Refresh
	fctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if after, err := b.search.IndexStats(fctx, index); err == nil {
		obs.RefreshAfter = after.Refresh
	} else {
		b.logf("index stats at the end: %v", err)
		obs.RefreshAfter = before.Refresh
	}
	if !exitedEarly {
		if ms, err := scrape(fctx, http.DefaultClient, run.metricsAddr); err == nil {
			obs.Results = map[string]int64{}
			for k, v := range ms.SumBy(metricEvents, "result") {
				obs.Results[k] = int64(v)
			}
			obs.RefreshMetrics = ms.Matching("geoshard_", "refresh")
		}
	}

	r := obs.Result()
	r.Commit, r.Source, r.Dirty, r.RunID = b.commit, b.cfg.Source, b.dirty, b.runID
	r.Requested, r.ProduceSeconds = b.cfg.Events, produced.Seconds()
	r.ExitedEarly, r.Stopped = exitedEarly, stopped
	if heaps != nil {
		r.HeapProfiles = heaps.saved
	}
	ingestCPU := time.Duration(Unknown)
	if n := len(obs.Proc); n > 0 {
		ingestCPU = obs.Proc[n-1].CPU
	}
	r.OthersCPU, r.Load = secs(others(machCPU, ingestCPU, obs.OpenSearchCPU, obs.KafkaCPU)), load
	if !exitedEarly {
		took, err := child.Stop(stopGrace)
		r.StopSeconds = took.Seconds()
		if err != nil {
			b.logf("%v", err)
		}
	}
	r.ExitStatus = child.ExitStatus()
	r.Problems, r.ProblemLog = child.Problems()
	if err := b.search.Refresh(fctx, index); err == nil {
		if st, err := b.search.IndexStats(fctx, index); err == nil {
			r.Docs = st.Docs
		}
	}
	r.Checks = SoakChecks(r)
	b.saveSeries("soak-series.csv", obs.Proc, named{"finished", obs.Finished}, named{"committed", obs.Committed}, named{"writes", obs.Writes},
		named{"docs", obs.Docs}, named{"bulk_items", obs.BulkItems}, named{"heap_inuse", obs.HeapInuse}, named{"directory", obs.Directory},
		named{"node_cpu_ms", obs.NodeCPU}, named{"machine_cpu_ms", obs.MachineCPU})
	WriteSoak(out, r, b.work)
	if err := json.NewEncoder(out).Encode(r); err != nil {
		return r, err
	}
	return r, nil
}

// followSoak polls the run until every offset is committed, ingest exits,
// it stalls, it times out or ctx ends, and says which of the last four
// stopped it ("" for the first). Ingest's events counter is read every
// 100 ms until the first window is well past, so that the window's rate
// is not a matter of the poll interval; then everything at Poll.
func (b *bench) followSoak(ctx context.Context, child *Child, run *ingestRun, index string, nodePID int, start, end Offsets, epoch time.Time, obs *SoakObservations, heaps *heapProfiles) string {
	hc := &http.Client{Timeout: 5 * time.Second}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := epoch.Add(b.cfg.Timeout)
	var lastMetrics, lastPoll time.Time
	nextReport := epoch.Add(10 * time.Second)
	var seen [3]int64
	lastMove := epoch
	for {
		now := time.Now()
		t := now.Sub(epoch)
		if obs.Finished.Last().V < 2*SoakFirstWindow || now.Sub(lastMetrics) >= b.cfg.Poll {
			if ms, err := scrape(ctx, hc, run.metricsAddr); err == nil {
				ev, _ := ms.Sum(metricEvents)
				items, _ := ms.Sum(metricBulkItems)
				heap, _ := ms.Sum(metricHeapInuse)
				dir, _ := ms.Sum(metricDirectory)
				obs.Finished.Add(t, int64(ev))
				obs.BulkItems.Add(t, int64(items))
				obs.HeapInuse.Add(t, int64(heap))
				obs.Directory.Add(t, int64(dir))
				lastMetrics = now
				heaps.due(ctx, b, int64(ev))
			}
		}
		if now.Sub(lastPoll) >= b.cfg.Poll {
			lastPoll = now
			if nodePID != 0 {
				if c, err := ReadCPU(nodePID); err == nil {
					obs.NodeCPU.Add(t, c.Milliseconds())
				}
			}
			if c := machineCPU(); c >= 0 {
				obs.MachineCPU.Add(t, c.Milliseconds())
			}
			if st, err := b.search.IndexStats(ctx, index); err == nil {
				obs.Writes.Add(t, st.Writes)
				obs.Docs.Add(t, st.Docs)
			}
			committed, err := b.kafka.Committed(ctx, run.group)
			if err == nil {
				pr := Compare(start, end, committed)
				obs.Committed.Add(t, pr.Done)
				if pr.Complete() {
					obs.DoneAt = t
					b.logf("every offset committed at %.1f s", t.Seconds())
					return ""
				}
				if now.After(nextReport) {
					nextReport = now.Add(10 * time.Second)
					var rss int64
					if ss := child.Samples(); len(ss) > 0 {
						rss = ss[len(ss)-1].Mem.RSS
					}
					b.logf("%4.0f s: %d events finished, %d committed, %d behind; RSS %s", t.Seconds(), obs.Finished.Last().V, pr.Done, pr.Behind, MB(rss))
				}
			}
			cur := [3]int64{obs.Finished.Last().V, obs.Committed.Last().V, obs.Writes.Last().V}
			if cur != seen {
				seen, lastMove = cur, time.Now()
			}
		}
		switch {
		case child.Exited():
			return "ingest exited: " + child.ExitStatus()
		case time.Since(lastMove) > b.cfg.Stall:
			return fmt.Sprintf("stalled: nothing finished, committed or written for %s", b.cfg.Stall)
		case now.After(deadline):
			return fmt.Sprintf("timed out after %s", b.cfg.Timeout)
		}
		select {
		case <-ctx.Done():
			return "interrupted"
		case <-tick.C:
		}
	}
}

// heapProfiles saves ingest's heap at fractions of the events finished.
type heapProfiles struct {
	dir, addr string
	total     int64
	at        []float64 // the fractions still to save, ascending
	saved     []string  // the files written
}

// due saves a profile for every fraction that finished has passed; a nil
// heapProfiles saves nothing.
func (h *heapProfiles) due(ctx context.Context, b *bench, finished int64) {
	if h == nil {
		return
	}
	for len(h.at) > 0 && float64(finished) >= h.at[0]*float64(h.total) {
		h.save(ctx, b, fmt.Sprintf("%02.0f", h.at[0]*100))
		h.at = h.at[1:]
	}
}

func (h *heapProfiles) save(ctx context.Context, b *bench, name string) {
	path := filepath.Join(h.dir, "heap-"+name+".pb.gz")
	if err := saveHeap(ctx, http.DefaultClient, h.addr, path); err != nil {
		b.logf("heap profile %s: %v", name, err)
		return
	}
	h.saved = append(h.saved, path)
	b.logf("heap profile %s saved: %s", name, path)
}

// named is a series and its name in a CSV file.
type named struct {
	name string
	s    Series
}

// saveSeries writes a run's samples to a CSV file in the scratch
// directory.
func (b *bench) saveSeries(file string, proc []ProcSample, series ...named) {
	rss, hwm, cpu := ProcSeries(proc)
	series = append(series, named{"rss", rss}, named{"hwm", hwm}, named{"cpu_ms", cpu})
	var names []string
	var ss []Series
	for _, n := range series {
		names, ss = append(names, n.name), append(ss, n.s)
	}
	f, err := os.Create(filepath.Join(b.work, file))
	if err == nil {
		err = WriteSeries(f, names, ss)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		b.logf("series: %v", err)
	}
}
