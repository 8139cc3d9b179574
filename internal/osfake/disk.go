package osfake

import (
	"fmt"
	"net/http"
)

// Disks: GET /_nodes/stats/fs reports each pretend data node's disk, and
// GET /_cluster/settings the disk allocation settings, both from
// Options.Disk. The figures are fixed: writes do not use them up, and no
// watermark is enforced (no shard moves, no index turns read-only).

// Disk is what the pretend data nodes report of their disks, and the
// cluster's disk allocation settings. The zero value is DefaultDisk's
// figures.
type Disk struct {
	// Nodes are the data nodes' disks, osfake-0 first. A node not listed
	// has DefaultNodeDisk.
	Nodes []NodeDisk
	// ThresholdDisabled sets cluster.routing.allocation.disk.threshold_enabled
	// false (default true, as on OpenSearch).
	ThresholdDisabled bool
	// WatermarkLow, WatermarkHigh and WatermarkFloodStage are the
	// watermark settings, as OpenSearch takes them ("90%", "0.9", "50gb").
	// Default 85%, 90% and 95%, OpenSearch's. They are reported, never
	// checked.
	WatermarkLow, WatermarkHigh, WatermarkFloodStage string
}

// NodeDisk is one node's disk: fs.total of _nodes/stats/fs.
type NodeDisk struct {
	// TotalBytes is total_in_bytes.
	TotalBytes int64
	// AvailableBytes is available_in_bytes (and free_in_bytes: the
	// emulator's file system reserves nothing).
	AvailableBytes int64
}

// DefaultNodeDisk is a node's disk unless Options.Disk says otherwise:
// 1 TiB, 900 GiB of it available, far more than any test writes.
var DefaultNodeDisk = NodeDisk{TotalBytes: 1 << 40, AvailableBytes: 900 << 30}

// validate refuses figures no disk has.
func (d Disk) validate() error {
	if len(d.Nodes) > nodes {
		return fmt.Errorf("osfake: options: %d node disks for %d data nodes", len(d.Nodes), nodes)
	}
	for i, n := range d.Nodes {
		if n.TotalBytes < 0 || n.AvailableBytes < 0 || n.AvailableBytes > n.TotalBytes {
			return fmt.Errorf("osfake: options: disk of %s: %d bytes available of %d: want 0 ≤ available ≤ total", nodeName(i), n.AvailableBytes, n.TotalBytes)
		}
	}
	return nil
}

// node is data node n's disk.
func (d Disk) node(n int) NodeDisk {
	if n < len(d.Nodes) {
		return d.Nodes[n]
	}
	return DefaultNodeDisk
}

// settings are the disk allocation settings in flat form, as GET
// /_cluster/settings?include_defaults=true lists them under "defaults"
// (where a node's configuration file puts its values too).
func (d Disk) settings() map[string]string {
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	enabled := "true"
	if d.ThresholdDisabled {
		enabled = "false"
	}
	return map[string]string{
		"cluster.routing.allocation.disk.threshold_enabled":                     enabled,
		"cluster.routing.allocation.disk.watermark.low":                         or(d.WatermarkLow, "85%"),
		"cluster.routing.allocation.disk.watermark.high":                        or(d.WatermarkHigh, "90%"),
		"cluster.routing.allocation.disk.watermark.flood_stage":                 or(d.WatermarkFloodStage, "95%"),
		"cluster.routing.allocation.disk.watermark.enable_for_single_data_node": "false",
	}
}

// handleNodesStatsFS serves GET /_nodes/stats/fs: each pretend node with
// its roles and fs.total (its one data path's figures; the data entry
// and io_stats a real node adds are left out).
func (s *Server) handleNodesStatsFS(w http.ResponseWriter, q *request) {
	out := map[string]any{}
	for n := range nodes {
		d := s.opts.Disk.node(n)
		figures := map[string]any{
			"total_in_bytes": d.TotalBytes, "free_in_bytes": d.AvailableBytes,
			"available_in_bytes": d.AvailableBytes, "cache_reserved_in_bytes": 0,
		}
		out[nodeID(n)] = map[string]any{
			"timestamp":         s.now().UnixMilli(),
			"name":              nodeName(n),
			"transport_address": fmt.Sprintf("127.0.0.1:%d", 9300+n),
			"host":              "127.0.0.1",
			"ip":                fmt.Sprintf("127.0.0.1:%d", 9300+n),
			"roles":             []string{"cluster_manager", "data", "ingest", "remote_cluster_client"},
			"attributes":        map[string]any{"shard_indexing_pressure_enabled": "true"},
			"fs":                map[string]any{"timestamp": s.now().UnixMilli(), "total": figures},
		}
	}
	writeJSON(w, 200, map[string]any{
		"_nodes":       map[string]any{"total": nodes, "successful": nodes, "failed": 0},
		"cluster_name": s.opts.ClusterName,
		"nodes":        out,
	})
}

// nodeID is pretend node n's id, as _cat/shards names it.
func nodeID(n int) string { return fmt.Sprintf("osfake-node-%d", n) }

// handleGetClusterSettings serves GET /_cluster/settings: no persistent
// or transient setting (PUT is not served), and with include_defaults the
// disk allocation settings only (a real node lists some 900 defaults).
// flat_settings as for index settings.
func (s *Server) handleGetClusterSettings(w http.ResponseWriter, q *request) {
	body := map[string]any{"persistent": map[string]any{}, "transient": map[string]any{}}
	if q.boolParam("include_defaults") {
		body["defaults"] = settingsObject(s.opts.Disk.settings(), q.boolParam("flat_settings"))
	}
	writeJSON(w, 200, body)
}
