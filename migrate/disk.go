package migrate

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// The disk check: whether the cluster has room for the target index
// before create makes it. Estimating is a pure function of figures read
// elsewhere (diskread.go), so that every case is a table row.

// DiskHeadroom is the share added to the target's size for what a
// migration writes beyond the copied data. During the backfill every
// live change is written twice, and each update or delete leaves the
// replaced document in its segment until a merge removes it; the backfill
// loads with refresh off, in bulk, so the target starts with more, smaller
// segments than the settled source; and a merge needs room for the merged
// segment before it deletes the segments it merged (up to the tiered
// merge policy's 5 GB segment, per shard merging). 20% covers a merge of
// a fifth of a shard at once beside the tombstones of a day of changes;
// it is a margin, not a measurement: a cluster that has exactly the
// estimate free ends the migration near its watermark.
const DiskHeadroom = 0.20

// NodeDisk is one data node's disk as the watermarks see it.
type NodeDisk struct {
	Name string `json:"name"`
	// TotalBytes and AvailableBytes are _nodes/stats/fs' fs.total figures;
	// available is what the watermarks are measured against.
	TotalBytes     int64 `json:"total_bytes"`
	AvailableBytes int64 `json:"available_bytes"`
}

// Watermark is a disk watermark setting, as OpenSearch reads it: a share
// of the disk used ("90%", or the ratio "0.9"), or an amount that must
// stay free ("50gb"). Exactly one of Percent and Bytes applies.
type Watermark struct {
	// Setting is the value as set, e.g. "90%".
	Setting string `json:"setting"`
	// Percent is the share of the disk that may be used, 0 to 100, when
	// IsBytes is false.
	Percent float64 `json:"percent,omitempty"`
	// Bytes is what must stay free, when IsBytes is true.
	Bytes   int64 `json:"bytes,omitempty"`
	IsBytes bool  `json:"is_bytes"`
}

// ParseWatermark reads a watermark the way DiskThresholdSettings does: a
// ratio first (a percentage, or a fraction from 0 to 1), else a byte size
// (a number with a unit b, kb, mb, gb, tb or pb, or k, m, g, t, p).
func ParseWatermark(s string) (Watermark, error) {
	v := strings.TrimSpace(s)
	if num, ok := strings.CutSuffix(v, "%"); ok {
		p, err := strconv.ParseFloat(num, 64)
		if err != nil || p < 0 || p > 100 {
			return Watermark{}, fmt.Errorf("watermark %q: want a percentage from 0%% to 100%%", s)
		}
		return Watermark{Setting: s, Percent: p}, nil
	}
	if r, err := strconv.ParseFloat(v, 64); err == nil {
		if r < 0 || r > 1 {
			return Watermark{}, fmt.Errorf("watermark %q: a ratio is from 0 to 1", s)
		}
		return Watermark{Setting: s, Percent: r * 100}, nil
	}
	lower := strings.ToLower(v)
	units := []struct {
		suffix string
		shift  uint
	}{{"kb", 10}, {"mb", 20}, {"gb", 30}, {"tb", 40}, {"pb", 50}, {"k", 10}, {"m", 20}, {"g", 30}, {"t", 40}, {"p", 50}, {"b", 0}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(lower, u.suffix); ok {
			n, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || n < 0 {
				break
			}
			return Watermark{Setting: s, Bytes: int64(math.Ceil(n * float64(int64(1)<<u.shift))), IsBytes: true}, nil
		}
	}
	return Watermark{}, fmt.Errorf("watermark %q: want a percentage (90%%), a ratio (0.9) or a byte size (50gb)", s)
}

// Reserve is what the watermark keeps free on a disk of total bytes.
func (w Watermark) Reserve(total int64) int64 {
	if w.IsBytes {
		return w.Bytes
	}
	return int64(math.Ceil(float64(total) * (100 - w.Percent) / 100))
}

func (w Watermark) String() string { return w.Setting }

// DiskSettings are the cluster's disk allocation settings.
type DiskSettings struct {
	// Enabled is cluster.routing.allocation.disk.threshold_enabled: when
	// false no watermark applies, and a disk can fill up.
	Enabled bool `json:"threshold_enabled"`
	// High is the watermark past which a node's shards are moved away and
	// no shard is allocated to it; FloodStage the one past which its
	// indices are made read-only. The check keeps High free. (On a single
	// data node OpenSearch allocates past High unless
	// watermark.enable_for_single_data_node, but FloodStage still blocks
	// writes: High is then the margin before it. The low watermark is not
	// weighed: it stops replicas, which cutover adds, from going to a node
	// past it, so a target that leaves a node between low and high can
	// keep the cutover from turning green; the runbook says so.)
	High       Watermark `json:"high"`
	FloodStage Watermark `json:"flood_stage"`
}

// DiskInput is what EstimateDisk weighs.
type DiskInput struct {
	// SourcePrimaryBytes is the source index's primary store size.
	SourcePrimaryBytes int64
	// Replicas is the target's number_of_replicas after cutover.
	Replicas int
	// ShardDocs are the target map's planned documents per shard; only
	// their proportions count. Empty, or all zero, spreads the data
	// evenly over Shards.
	ShardDocs []int64
	// Shards is the target's shard count.
	Shards int
	// Nodes are the data nodes.
	Nodes    []NodeDisk
	Settings DiskSettings
}

// NodeRoom is what one node can take.
type NodeRoom struct {
	NodeDisk
	// KeptBytes is what the high watermark keeps free on it (0 when the
	// thresholds are off).
	KeptBytes int64 `json:"kept_free_bytes"`
	// UsableBytes is available less kept, never below 0 (a node past its
	// high watermark takes nothing).
	UsableBytes int64 `json:"usable_bytes"`
}

// DiskEstimate is the target's need against the cluster's room, and the
// verdict.
type DiskEstimate struct {
	SourcePrimaryBytes int64 `json:"source_primary_bytes"`
	Replicas           int   `json:"replicas"`
	// PlacedReplicas are the replicas the data nodes can hold: a replica
	// never shares a node with its primary, so n nodes hold at most n-1
	// (none on one node; the cutover then waits for a green that never
	// comes, which is not this check's concern).
	PlacedReplicas int     `json:"placed_replicas"`
	Headroom       float64 `json:"headroom"`
	// NeededBytes = SourcePrimaryBytes × (1 + PlacedReplicas) × (1 + Headroom).
	NeededBytes int64 `json:"needed_bytes"`
	Shards      int   `json:"shards"`
	// LargestShare is the largest shard's share of the documents (1/Shards
	// when the map gives no loads); LargestShardBytes one copy of it, with
	// headroom, which must fit on one node.
	LargestShare      float64      `json:"largest_shard_share"`
	LargestShardBytes int64        `json:"largest_shard_bytes"`
	Settings          DiskSettings `json:"settings"`
	// Nodes, most usable room first.
	Nodes       []NodeRoom `json:"nodes"`
	UsableBytes int64      `json:"usable_bytes"`
	Fits        bool       `json:"fits"`
	// Verdict is one line starting "fits: " or "does not fit: ".
	Verdict string `json:"verdict"`
}

// EstimateDisk weighs the target's need against the data nodes' room. The
// target fits when the room left under the high watermark on all the
// nodes together holds it, and each copy of its largest shard finds a
// node of its own with room for it (copies of a shard are on different
// nodes). Those two conditions are necessary, not sufficient: packing
// many shards onto nodes is the allocator's business, and the headroom
// is its slack.
func EstimateDisk(in DiskInput) (DiskEstimate, error) {
	var p []string
	if in.SourcePrimaryBytes < 0 {
		p = append(p, fmt.Sprintf("source size %d: must not be negative", in.SourcePrimaryBytes))
	}
	if in.Replicas < 0 {
		p = append(p, fmt.Sprintf("replicas %d: must not be negative", in.Replicas))
	}
	if in.Shards < 1 {
		p = append(p, fmt.Sprintf("shards %d: want at least 1", in.Shards))
	}
	if len(in.ShardDocs) > 0 && len(in.ShardDocs) != in.Shards {
		p = append(p, fmt.Sprintf("%d shard loads for %d shards", len(in.ShardDocs), in.Shards))
	}
	if len(in.Nodes) == 0 {
		p = append(p, "no data node reported its disk")
	}
	if len(p) > 0 {
		return DiskEstimate{}, fmt.Errorf("migrate: disk estimate: %s", joinProblems(p))
	}
	e := DiskEstimate{
		SourcePrimaryBytes: in.SourcePrimaryBytes, Replicas: in.Replicas, PlacedReplicas: min(in.Replicas, len(in.Nodes)-1),
		Headroom: DiskHeadroom, Shards: in.Shards, LargestShare: largestShare(in.ShardDocs, in.Shards), Settings: in.Settings,
	}
	copies := 1 + e.PlacedReplicas
	withHeadroom := float64(in.SourcePrimaryBytes) * (1 + DiskHeadroom)
	e.NeededBytes = int64(math.Ceil(withHeadroom * float64(copies)))
	e.LargestShardBytes = int64(math.Ceil(withHeadroom * e.LargestShare))
	for _, n := range in.Nodes {
		r := NodeRoom{NodeDisk: n}
		if in.Settings.Enabled {
			r.KeptBytes = in.Settings.High.Reserve(n.TotalBytes)
		}
		r.UsableBytes = max(0, n.AvailableBytes-r.KeptBytes)
		e.UsableBytes += r.UsableBytes
		e.Nodes = append(e.Nodes, r)
	}
	sort.SliceStable(e.Nodes, func(i, j int) bool { return e.Nodes[i].UsableBytes > e.Nodes[j].UsableBytes })
	// The copies of the largest shard take the nodes with most room, one
	// each: the last of them has the least.
	last := e.Nodes[copies-1]
	switch {
	case e.UsableBytes < e.NeededBytes:
		e.Verdict = fmt.Sprintf("does not fit: the new index needs %s, the data nodes have %s usable",
			Bytes(e.NeededBytes), Bytes(e.UsableBytes))
	case last.UsableBytes < e.LargestShardBytes:
		e.Verdict = fmt.Sprintf("does not fit: a copy of the largest shard needs %s on one node, and %s has %s usable",
			Bytes(e.LargestShardBytes), e.lastCopyOn(copies), Bytes(last.UsableBytes))
	default:
		e.Fits = true
		e.Verdict = fmt.Sprintf("fits: the new index needs %s, the data nodes have %s usable; a copy of the largest shard needs %s, and %s has %s",
			Bytes(e.NeededBytes), Bytes(e.UsableBytes), Bytes(e.LargestShardBytes), e.lastCopyOn(copies), Bytes(last.UsableBytes))
	}
	return e, nil
}

// largestShare is the largest shard's share of docs, or 1/shards when
// docs say nothing.
func largestShare(docs []int64, shards int) float64 {
	var sum, top int64
	for _, d := range docs {
		sum += d
		top = max(top, d)
	}
	if sum <= 0 {
		return 1 / float64(shards)
	}
	return float64(top) / float64(sum)
}

// lastCopyOn names the node that takes the last copy of the largest
// shard: with c copies, the c-th roomiest.
func (e DiskEstimate) lastCopyOn(c int) string {
	if c == 1 {
		return "the roomiest node, " + e.Nodes[0].Name + ","
	}
	return fmt.Sprintf("with %d copies on different nodes the %s roomiest, %s,", c, ordinal(c), e.Nodes[c-1].Name)
}

func ordinal(n int) string {
	switch n {
	case 2:
		return "2nd"
	case 3:
		return "3rd"
	}
	return strconv.Itoa(n) + "th"
}

// Explain is the estimate's arithmetic, one line per part: how the need
// is computed, and each node's room.
func (e DiskEstimate) Explain() []string {
	replicas := plural(e.PlacedReplicas, "replica", "replicas")
	if e.PlacedReplicas < e.Replicas {
		replicas += fmt.Sprintf(" (%d asked; %s hold %d)", e.Replicas, plural(len(e.Nodes), "data node", "data nodes"), e.PlacedReplicas)
	}
	lines := []string{
		fmt.Sprintf("needed: %s = source primaries %s × (1 + %s) × (1 + %.0f%% headroom)",
			Bytes(e.NeededBytes), Bytes(e.SourcePrimaryBytes), replicas, 100*e.Headroom),
		fmt.Sprintf("largest shard: %s a copy = %s × %.1f%% of the documents (%d shards) × (1 + %.0f%% headroom)",
			Bytes(e.LargestShardBytes), Bytes(e.SourcePrimaryBytes), 100*e.LargestShare, e.Shards, 100*e.Headroom),
	}
	if e.Settings.Enabled {
		lines = append(lines, fmt.Sprintf("usable: %s = available less what the high watermark %s keeps free (past it shards move away; past flood_stage %s indices turn read-only)",
			Bytes(e.UsableBytes), e.Settings.High, e.Settings.FloodStage))
	} else {
		lines = append(lines, fmt.Sprintf("usable: %s = available (cluster.routing.allocation.disk.threshold_enabled is false: no watermark applies, and a disk can fill up)",
			Bytes(e.UsableBytes)))
	}
	for _, n := range e.Nodes {
		lines = append(lines, fmt.Sprintf("  %s: %s usable = %s available - %s kept free, of %s",
			n.Name, Bytes(n.UsableBytes), Bytes(n.AvailableBytes), Bytes(n.KeptBytes), Bytes(n.TotalBytes)))
	}
	return lines
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// Bytes prints a size in binary units with one decimal ("41.3 GiB"), and
// below a KiB in bytes.
func Bytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	f, i := float64(n), 0
	for i < len(units)-1 && math.Abs(f) >= 1024 {
		f /= 1024
		i++
	}
	if i == 0 {
		return strconv.FormatInt(n, 10) + " B"
	}
	return strconv.FormatFloat(f, 'f', 1, 64) + " " + units[i]
}
