package benchrun

import "sort"

// Offsets are offsets per topic and partition: a consumer group's
// committed offsets (the next offset it will read), or the start or end
// offsets of topics.
type Offsets map[string]map[int32]int64

// Set records off for topic and partition p.
func (o Offsets) Set(topic string, p int32, off int64) {
	ps, ok := o[topic]
	if !ok {
		ps = map[int32]int64{}
		o[topic] = ps
	}
	ps[p] = off
}

// Get returns the offset of topic and partition p, and whether it is set.
func (o Offsets) Get(topic string, p int32) (int64, bool) {
	off, ok := o[topic][p]
	return off, ok
}

// Sum is the sum of every non-negative offset.
func (o Offsets) Sum() int64 {
	var n int64
	for _, ps := range o {
		for _, off := range ps {
			if off > 0 {
				n += off
			}
		}
	}
	return n
}

// Partitions is the number of partitions recorded.
func (o Offsets) Partitions() int {
	n := 0
	for _, ps := range o {
		n += len(ps)
	}
	return n
}

// Topics returns the topics recorded, sorted.
func (o Offsets) Topics() []string {
	ts := make([]string, 0, len(o))
	for t := range o {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return ts
}

// Progress is how far a group's committed offsets are behind the end
// offsets of the topics it consumes.
type Progress struct {
	// Behind is the sum over every partition of end of end − committed; a
	// partition without a commit counts from start (0 where start does
	// not name it), and a commit past the end counts as caught up.
	Behind int64
	// Done is the events consumed and committed: the sum of
	// min(committed, end) − start.
	Done int64
	// Partitions is the number of partitions in end; Caught how many of
	// them are committed up to their end.
	Partitions, Caught int
}

// Complete reports whether every partition is committed up to its end.
func (p Progress) Complete() bool { return p.Caught == p.Partitions }

// Compare measures committed against end. Only the partitions of end
// count: a commit on another topic (a repartition topic, say) is ignored.
// start may be nil for topics that begin at 0.
func Compare(start, end, committed Offsets) Progress {
	var pr Progress
	for topic, ps := range end {
		for p, e := range ps {
			pr.Partitions++
			s, _ := start.Get(topic, p)
			c, ok := committed.Get(topic, p)
			if !ok || c < s {
				c = s
			}
			if c >= e {
				pr.Caught++
				c = e
			}
			pr.Behind += e - c
			pr.Done += c - s
		}
	}
	return pr
}

// Events is the number of messages between start and end.
func Events(start, end Offsets) int64 {
	var n int64
	for topic, ps := range end {
		for p, e := range ps {
			s, _ := start.Get(topic, p)
			if e > s {
				n += e - s
			}
		}
	}
	return n
}
