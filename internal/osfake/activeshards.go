package osfake

import (
	"context"
	"strconv"
	"time"
)

// wait_for_active_shards on index creation and on writes (index, create,
// delete, update, _bulk): how many copies of each shard must be active
// before the request goes ahead. The emulator's copies are assigned at
// once and stay so (cat.go's assignedReplicas: one per pretend node), so
// a count that is not met now is met later only if number_of_replicas
// changes while the request waits. The wait polls like the health wait
// (cluster.go), in real time and without the lock, and ends at the
// request's timeout as the server's does:
//
//   - creating an index, the count may not exceed the copies (400); the
//     index is created all the same when the count is not met in time,
//     and the answer says so with shards_acknowledged false;
//   - a write whose shard has too few active copies is not applied: at
//     the timeout (default 1m) it fails with 503
//     unavailable_shards_exception, a count above the copies included,
//     and in a _bulk only the items of such shards fail.

// activeShardCount is a parsed wait_for_active_shards (ActiveShardCount).
type activeShardCount struct {
	all bool
	n   int // when !all
}

// defaultActiveShards is the server's default for writes and index
// creation (index.write.wait_for_active_shards: the primary alone).
var defaultActiveShards = activeShardCount{n: 1}

// parseActiveShardCount is ActiveShardCount.parseString: "all" (lower
// case only) or a non-negative int; "" is the default.
func parseActiveShardCount(v string) (activeShardCount, *osError) {
	switch v {
	case "":
		return defaultActiveShards, nil
	case "all":
		return activeShardCount{all: true}, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		e := illegalArgument("cannot parse ActiveShardCount[" + v + "]")
		e.CausedBy = &osError{Type: "number_format_exception", Reason: `For input string: "` + v + `"`}
		return activeShardCount{}, e
	}
	if n < 0 {
		return activeShardCount{}, illegalArgument("shard count cannot be a negative value")
	}
	return activeShardCount{n: n}, nil
}

// String is ActiveShardCount.toString: ALL or the number.
func (c activeShardCount) String() string {
	if c.all {
		return "ALL"
	}
	return strconv.Itoa(c.n)
}

// need is how many active copies of each shard the count asks for, of an
// index whose shards have copies copies.
func (c activeShardCount) need(copies int) int {
	if c.all {
		return copies
	}
	return c.n
}

// metBy reports whether every shard of ix has enough active copies.
func (c activeShardCount) metBy(ix *index) bool {
	return 1+ix.assignedReplicas() >= c.need(1+ix.replicas)
}

// validateFor is ActiveShardCount.validate at index creation: a count
// above the copies of each shard can never be met.
func (c activeShardCount) validateFor(ix *index) *osError {
	if !c.all && c.n > 1+ix.replicas {
		return illegalArgument("invalid wait_for_active_shards[" + c.String() + "]: cannot be greater than number of shard copies [" +
			strconv.Itoa(1+ix.replicas) + "]")
	}
	return nil
}

// unavailable is the failure of a write to shard shardNum of ix whose
// copies did not become active within timeout.
func (c activeShardCount) unavailable(ix *index, shardNum int, timeout time.Duration) *osError {
	return &osError{Status: 503, Type: "unavailable_shards_exception",
		Reason: "[" + ix.name + "][" + strconv.Itoa(shardNum) + "] Not enough active copies to meet shard count of [" + c.String() +
			"] (have " + strconv.Itoa(1+ix.assignedReplicas()) + ", needed " + strconv.Itoa(c.need(1+ix.replicas)) +
			"). Timeout: [" + formatTimeValue(timeout) + "]"}
}

// writeWait is what a write request waits for before it applies its
// items: the count and the request's timeout.
type writeWait struct {
	count   activeShardCount
	timeout time.Duration
}

// parseWriteWait reads wait_for_active_shards and timeout of a write
// request (ReplicationRequest's, default 1m).
func parseWriteWait(q *request) (writeWait, *osError) {
	ww := writeWait{count: defaultActiveShards, timeout: time.Minute}
	var err *osError
	if ww.count, err = parseActiveShardCount(q.param("wait_for_active_shards")); err != nil {
		return ww, err
	}
	if v := q.param("timeout"); v != "" {
		if ww.timeout, err = parseTimeValue("timeout", v); err != nil {
			return ww, err
		}
		ww.timeout = max(ww.timeout, 0)
	}
	return ww, nil
}

// pollUntil calls met, under mu, every 10 ms of real time until it
// returns true or timeout passes, and reports its last answer. It returns
// false at once when ctx ends (the client has gone).
func (s *Server) pollUntil(ctx context.Context, timeout time.Duration, met func() bool) bool {
	deadline := time.Now().Add(timeout)
	for {
		s.mu.Lock()
		ok := met()
		s.mu.Unlock()
		left := time.Until(deadline)
		if ok || left <= 0 {
			return ok
		}
		t := time.NewTimer(min(left, 10*time.Millisecond))
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
}

// writesReady reports whether every existing index that ops write to has
// enough active copies for ww. An index that does not exist yet is
// created with the defaults (a delete fails instead), whose copies are
// all active unless the count asks for more than they are; it is checked
// once created, by apply. Callers hold mu.
func (s *Server) writesReady(ops []op, ww writeWait) bool {
	for i := range ops {
		name := ops[i].index
		if s.indices[name] == nil && !s.aliasExists(name) {
			if ops[i].kind != opDelete && !ww.count.all && ww.count.n > 1+min(defaultNumberOfReplicas, nodes-1) {
				return false
			}
			continue
		}
		if ix, _, err := s.resolveWrite(name, false); err == nil && !ww.count.metBy(ix) {
			return false
		}
	}
	return true
}

// awaitWrites waits, before ops are applied, for their shards' copies as
// ww asks; apply then fails the items whose shards are still short.
func (s *Server) awaitWrites(ctx context.Context, ops []op, ww writeWait) {
	if ww.count == defaultActiveShards || ww.count == (activeShardCount{}) {
		return // the primary is always active
	}
	s.pollUntil(ctx, ww.timeout, func() bool { return s.writesReady(ops, ww) })
}
