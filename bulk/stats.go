package bulk

// Stats is a snapshot of a writer's counters. Taking it changes nothing.
type Stats struct {
	// Added is the number of items accepted.
	Added int64
	// Outcomes so far. Coalesced items are also counted under their outcome.
	OK, Stale, NotFound, Permanent, Failed int64
	// Coalesced counts items superseded by a newer version in the same batch.
	Coalesced int64
	// Retries counts item attempts that were resent.
	Retries int64
	// Requests counts bulk requests answered or failed.
	Requests int64
	// Shards holds the same figures per shard key, plus what is queued and
	// in flight now.
	Shards map[string]*ShardStats
}

// ShardStats are one shard key's counters.
type ShardStats struct {
	Queued, InFlight                       int
	OK, Stale, NotFound, Permanent, Failed int64
	Coalesced, Retries                     int64
}

// Stats returns a snapshot of the counters.
func (w *Writer) Stats() Stats {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.stats
	s.Shards = make(map[string]*ShardStats, len(w.stats.Shards))
	for k, v := range w.stats.Shards {
		c := *v
		s.Shards[k] = &c
	}
	return s
}

// Finished is the number of items with an outcome.
func (s Stats) Finished() int64 { return s.OK + s.Stale + s.NotFound + s.Permanent + s.Failed }
