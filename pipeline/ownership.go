package pipeline

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"time"

	"github.com/segmentio/kafka-go"
)

// kafka-go does not tell a member which partitions the group assigned
// it. To keep its per-partition figures (lag, committed offset) to the
// partitions it owns, each instance puts a token of its own in the
// group-protocol user data (copartitioned.UserData), and after every new
// generation asks the coordinator (DescribeGroups) for the assignment of
// the member that carries its token. The partitions it no longer owns
// leave Stats, Ready's lag and the metrics. The processing loop reads
// the same assignment at each generation it sees, and releases the
// partitions lost (Pipeline.releaseUnowned); this loop covers the figures
// when that read failed.

// newToken is a random member token.
func newToken() []byte {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return []byte(hex.EncodeToString(b))
}

// ownership follows this member's assignment.
type ownership struct {
	// gen is the generation count the assignment was last read at.
	gen      int64
	describe func(ctx context.Context) (map[partKey]bool, bool, error)
}

// groupDescriber reads this member's assignment with a DescribeGroups
// request. ok is false while the group is not stable or the member is not
// in it yet.
func (p *Pipeline) groupDescriber(t *kafka.Transport) func(context.Context) (map[partKey]bool, bool, error) {
	client := &kafka.Client{Addr: kafka.TCP(p.cfg.Brokers...), Timeout: 10 * time.Second, Transport: t}
	return func(ctx context.Context) (map[partKey]bool, bool, error) {
		resp, err := client.DescribeGroups(ctx, &kafka.DescribeGroupsRequest{GroupIDs: []string{p.cfg.Group}})
		if err != nil {
			return nil, false, err
		}
		if len(resp.Groups) != 1 {
			return nil, false, fmt.Errorf("describe group %s: %d groups in the answer", p.cfg.Group, len(resp.Groups))
		}
		g := resp.Groups[0]
		if g.Error != nil {
			return nil, false, g.Error
		}
		if g.GroupState != "Stable" {
			return nil, false, nil
		}
		for _, m := range g.Members {
			if !bytes.Equal(m.MemberMetadata.UserData, p.token) {
				continue
			}
			owned := map[partKey]bool{}
			for _, tp := range m.MemberAssignments.Topics {
				for _, id := range tp.Partitions {
					owned[partKey{tp.Topic, id}] = true
				}
			}
			return owned, true, nil
		}
		return nil, false, nil
	}
}

// followOwnership reads the assignment once after each new generation and
// drops the figures of the partitions lost. It runs on the progress loop.
func (p *Pipeline) followOwnership(ctx context.Context, o *ownership) {
	gen := p.rebalances.Load()
	if gen == o.gen || o.describe == nil {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	owned, ok, err := o.describe(cctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Debug("reading the group's assignment failed; will retry", "error", err)
		}
		return
	}
	if !ok {
		return // not settled yet: asked again at the next tick
	}
	o.gen = gen
	for _, k := range p.track.retain(owned) {
		part := strconv.Itoa(k.partition)
		p.met.lag.DeleteLabelValues(k.topic, part)
		p.met.committed.DeleteLabelValues(k.topic, part)
		p.log.Info("partition assigned to another member", "partition", k.String())
	}
}
