package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

// committer commits the offsets the tracker has finished, through a
// consumer-group generation.
type committer struct {
	log   *slog.Logger
	track *tracker
	gauge *prometheus.GaugeVec // the committed offset, by topic and partition
	every time.Duration
	// passed, if set, is told each commit that succeeded.
	passed func([]commitPoint)
}

// run commits every c.every through the latest generation until ctx
// ends.
func (c *committer) run(ctx context.Context, latest func() *generation) {
	tick := time.NewTicker(c.every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			_ = c.commit(ctx, latest()) // a refused commit is logged; the next tick tries again
		}
	}
}

// commit commits, through gen, every partition of gen's whose commit
// point moved. The coordinator refuses a commit through a generation that
// has ended, and gen names only its own partitions, so a partition this
// member lost is never committed behind its new owner. A refused commit
// is tried again at the next tick, through the next generation.
func (c *committer) commit(ctx context.Context, gen *generation) error {
	if gen == nil || gen.group == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	due := c.track.due()
	offsets := map[string]map[int]int64{}
	mine := due[:0]
	for _, cp := range due {
		if !gen.owned[cp.key] {
			continue
		}
		mine = append(mine, cp)
		if offsets[cp.key.topic] == nil {
			offsets[cp.key.topic] = map[int]int64{}
		}
		offsets[cp.key.topic][cp.key.partition] = cp.offset
	}
	if len(mine) == 0 {
		return nil
	}
	if err := gen.group.CommitOffsets(offsets); err != nil {
		level := slog.LevelWarn
		if errors.Is(err, kafka.RebalanceInProgress) || errors.Is(err, kafka.IllegalGeneration) || errors.Is(err, kafka.UnknownMemberId) {
			level = slog.LevelDebug // the generation has ended: the next one commits
		}
		c.log.Log(ctx, level, "commit failed; will retry", "generation", gen.id, "partitions", len(mine), "error", err)
		return err
	}
	c.track.committed(mine)
	if c.passed != nil {
		c.passed(mine)
	}
	for _, cp := range mine {
		if c.track.owns(cp.key) {
			c.gauge.WithLabelValues(cp.key.topic, strconv.Itoa(cp.key.partition)).Set(float64(cp.offset))
		}
	}
	return nil
}

// groupOffsets reads the group's committed offsets with an OffsetFetch
// request.
func groupOffsets(cfg Config, t *kafka.Transport) func(context.Context, map[partKey]bool) (map[partKey]int64, error) {
	client := &kafka.Client{Addr: kafka.TCP(cfg.Brokers...), Timeout: 10 * time.Second, Transport: t}
	return func(ctx context.Context, parts map[partKey]bool) (map[partKey]int64, error) {
		topics := map[string][]int{}
		for k := range parts {
			topics[k.topic] = append(topics[k.topic], k.partition)
		}
		resp, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: cfg.Group, Topics: topics})
		if err != nil {
			return nil, err
		}
		if resp.Error != nil {
			return nil, resp.Error
		}
		out := map[partKey]int64{}
		for topic, ps := range resp.Topics {
			for _, x := range ps {
				if x.Error == nil && x.CommittedOffset >= 0 {
					out[partKey{topic, x.Partition}] = x.CommittedOffset
				}
			}
		}
		return out, nil
	}
}
