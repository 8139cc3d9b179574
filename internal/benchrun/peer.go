package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"
)

// Deletes says how each side writes a delete event, for the report.
var Deletes = map[string]string{
	"ingest":  "removes the document (version_type=external, so a late replay cannot bring it back); a restaurant's delete removes its dishes",
	"benthos": "indexed as a document marked \"deleted\": true (action: index; its opensearch output panics on a delete of a missing document), no versions",
}

// Peer runs ingest and Benthos side by side: the same produced stream,
// rounds of both tools, the first of a round alternating (peerOrder), each
// from offset 0 in a fresh group into
// a fresh index made the same way (reshard init: 18 shards, no replica on
// a one-node cluster). It writes the report (a table, then one JSON line)
// to out and its progress to log.
func Peer(ctx context.Context, cfg PeerConfig, out, log io.Writer) (*PeerResult, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	b, err := startBench(ctx, cfg.Config, log)
	if err != nil {
		return nil, err
	}
	defer b.cleanup()
	// Benthos is built from the working tree: its module is the harness's
	// own, not the code under test.
	btDir := filepath.Join(b.cfg.Repo, "deploy", "local", "benthos")
	btBuild, err := b.build(ctx, "benthos", btDir, ".")
	if err != nil {
		return nil, err
	}
	topics := eventTopics{restaurants: b.runID + ".restaurants", dishes: b.runID + ".dishes", dlq: b.runID + ".dlq"}
	start, end, produced, err := b.produce(ctx, topics)
	if err != nil {
		return nil, err
	}
	res := &PeerResult{
		Commit: b.commit, Source: b.cfg.Source, Dirty: b.dirty, RunID: b.runID,
		Requested: b.cfg.Events, Events: Events(start, end),
		ProduceSeconds: produced.Seconds(), BenthosBuild: btBuild.Seconds(), Deletes: Deletes,
	}
	for round := 1; round <= cfg.Rounds && ctx.Err() == nil; round++ {
		rd := PeerRound{First: peerOrder(round)[0]}
		for _, tool := range peerOrder(round) {
			if ctx.Err() != nil {
				break
			}
			tr, err := b.peerRun(ctx, tool, round, topics, start, end, filepath.Join(btDir, "peer.yaml"))
			if err != nil {
				return nil, err
			}
			if tool == "ingest" {
				rd.Ingest = tr
			} else {
				rd.Benthos = tr
			}
		}
		res.Rounds = append(res.Rounds, rd)
	}
	res.Summarize()
	res.Checks = PeerChecks(res)
	WritePeer(out, res, b.work)
	if err := json.NewEncoder(out).Encode(res); err != nil {
		return res, err
	}
	return res, nil
}

// peerOrder is the order of the tools in a round: ingest first in odd
// rounds, Benthos in even ones. The node gets faster over its first runs
// (its JIT, its caches), so whichever always went first would always meet
// the colder node.
func peerOrder(round int) []string {
	if round%2 == 0 {
		return []string{"benthos", "ingest"}
	}
	return []string{"ingest", "benthos"}
}

// peerRun runs one tool once: a fresh index, group and dead-letter topic,
// the tool started, its group's offsets followed until all are committed,
// then SIGTERM.
func (b *bench) peerRun(ctx context.Context, tool string, round int, topics eventTopics, start, end Offsets, btConfig string) (ToolRound, error) {
	name := fmt.Sprintf("%s-r%d-%s", b.runID, round, tool)
	index, alias, group := name+"-v1", name, name
	rt := topics
	rt.dlq = fmt.Sprintf("%s.r%d.%s.dlq", b.runID, round, tool)
	b.topics = append(b.topics, rt.dlq)
	if err := b.kafka.CreateTopics(ctx, b.cfg.Partitions, rt.dlq); err != nil {
		return ToolRound{}, err
	}
	if err := b.initIndex(ctx, index, alias); err != nil {
		return ToolRound{}, err
	}
	defer b.dropIndex(context.Background(), index)
	logName := fmt.Sprintf("%s-r%d.log", tool, round)
	nodeCPU, kafkaCPU, mach := startCPU(b.enginePID("opensearch")), startCPU(b.enginePID("kafka")), startMachine()
	epoch := time.Now()
	var child *Child
	var err error
	if tool == "ingest" {
		child, err = b.startIngest(&ingestRun{alias: alias, group: group, topics: rt}, logName, epoch)
	} else {
		child, err = b.startBenthos(btConfig, index, group, rt, logName, epoch)
	}
	if err != nil {
		return ToolRound{}, err
	}
	defer child.Stop(stopGrace)
	b.logf("round %d: %s started (pid %d) into %s, group %s", round, tool, child.Pid(), index, group)
	sctx, stopSampling := context.WithCancel(ctx)
	go child.SampleEvery(sctx, time.Second)

	obs := &ToolObservations{Events: Events(start, end), DoneAt: Unknown}
	stopped := b.followTool(ctx, child, group, index, start, end, epoch, obs)
	stopSampling()
	note := stopped
	if child.Exited() {
		note = tool + " exited: " + child.ExitStatus()
	} else if s, err := child.Sample(); err == nil {
		obs.CPU, obs.PeakRSS = s.CPU, max(s.Mem.HWM, s.Mem.RSS)
	}
	for _, s := range child.Samples() {
		obs.PeakRSS = max(obs.PeakRSS, s.Mem.HWM)
		if obs.CPU < s.CPU {
			obs.CPU = s.CPU
		}
	}
	node, kafka := nodeCPU.since(), kafkaCPU.since()
	machCPU, load := mach.since()
	b.saveSeries(fmt.Sprintf("%s-r%d-series.csv", tool, round), child.Samples(),
		named{"committed", obs.Committed}, named{"writes", obs.Writes}, named{"docs", obs.Docs})
	if _, err := child.Stop(stopGrace); err != nil {
		b.logf("%v", err)
	}
	tr := obs.Round()
	tr.Tool, tr.Round, tr.Index, tr.Note = tool, round, index, note
	tr.NodeCPUSeconds, tr.KafkaCPUSeconds = secs(node), secs(kafka)
	tr.OthersCPUSeconds, tr.Load = secs(others(machCPU, obs.CPU, node, kafka)), load
	fctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := b.search.Refresh(fctx, index); err == nil {
		if st, err := b.search.IndexStats(fctx, index); err == nil {
			tr.Docs = st.Docs
		}
	}
	if dl, err := b.kafka.EndOffsets(fctx, rt.dlq); err == nil {
		tr.DeadLetters = dl.Sum()
	}
	if n, lines := child.Problems(); n > 0 {
		msg := fmt.Sprintf("%d warning/error lines, the first: %s", n, lines[0])
		if tr.Note != "" {
			msg = tr.Note + "; " + msg
		}
		tr.Note = msg
	}
	b.logf("round %d: %s: %d events in %.1f s, %.0f events/s, CPU %.1f s (%.1f µs/event), peak RSS %s",
		round, tool, tr.Events, tr.Seconds, tr.Rate, tr.CPUSeconds, tr.CPUPerEvent, MB(tr.PeakRSS))
	return tr, nil
}

// startBenthos starts the built Benthos with the peer configuration.
func (b *bench) startBenthos(config, index, group string, t eventTopics, logName string, epoch time.Time) (*Child, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	b.groups = append(b.groups, group)
	return StartChild(ChildSpec{
		Name: "benthos",
		Path: b.bin["benthos"],
		Args: []string{"-c", config},
		Env: childEnv(
			"BT_HTTP="+addr,
			"BT_BROKERS="+strings.Join(b.cfg.Brokers, ","),
			"BT_RESTAURANT_TOPIC="+t.restaurants,
			"BT_DISH_TOPIC="+t.dishes,
			"BT_DLQ_TOPIC="+t.dlq,
			"BT_GROUP="+group,
			"BT_INDEX="+index,
			"BT_OPENSEARCH="+b.cfg.OpenSearch,
		),
		LogPath: filepath.Join(b.work, logName),
	}, epoch)
}

// followTool polls a tool's group and index until every offset is
// committed, the tool exits, stalls, times out, or ctx ends; it says
// which of the last four stopped it ("" for the first).
func (b *bench) followTool(ctx context.Context, child *Child, group, index string, start, end Offsets, epoch time.Time, obs *ToolObservations) string {
	tick := time.NewTicker(b.cfg.Poll)
	defer tick.Stop()
	deadline := epoch.Add(b.cfg.Timeout)
	nextReport := epoch.Add(10 * time.Second)
	var seen [2]int64
	lastMove := epoch
	for {
		t := time.Since(epoch)
		if st, err := b.search.IndexStats(ctx, index); err == nil {
			obs.Writes.Add(t, st.Writes)
			obs.Docs.Add(t, st.Docs)
		}
		if committed, err := b.kafka.Committed(ctx, group); err == nil {
			pr := Compare(start, end, committed)
			obs.Committed.Add(t, pr.Done)
			if pr.Complete() {
				obs.DoneAt = t
				return ""
			}
			if time.Now().After(nextReport) {
				nextReport = time.Now().Add(10 * time.Second)
				b.logf("%4.0f s: %d committed, %d behind, %d writes", t.Seconds(), pr.Done, pr.Behind, obs.Writes.Last().V)
			}
		}
		if cur := [2]int64{obs.Committed.Last().V, obs.Writes.Last().V}; cur != seen {
			seen, lastMove = cur, time.Now()
		}
		switch {
		case child.Exited():
			return "exited before every offset was committed: " + child.ExitStatus()
		case time.Since(lastMove) > b.cfg.Stall:
			return fmt.Sprintf("stalled: nothing committed or written for %s", b.cfg.Stall)
		case time.Now().After(deadline):
			return fmt.Sprintf("timed out after %s", b.cfg.Timeout)
		}
		select {
		case <-ctx.Done():
			return "interrupted"
		case <-tick.C:
		}
	}
}
