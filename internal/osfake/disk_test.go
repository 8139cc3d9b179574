package osfake

import (
	"strconv"
	"strings"
	"testing"
)

// diskSettingNames are the disk allocation settings a disk check reads.
var diskSettingNames = []string{
	"cluster.routing.allocation.disk.threshold_enabled",
	"cluster.routing.allocation.disk.watermark.low",
	"cluster.routing.allocation.disk.watermark.high",
	"cluster.routing.allocation.disk.watermark.flood_stage",
}

// wholeNum reads a JSON number the target answered, failing the test unless it
// is a whole number.
func wholeNum(t *testing.T, v any, what string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(str(v), 10, 64)
	if err != nil {
		t.Fatalf("%s = %v, want a whole number", what, v)
	}
	return n
}

// _nodes/stats/fs: the node counts, and per node its name, roles and the
// fs.total figures, as every engine answers them.
func TestNodesStatsFSShape(t *testing.T) {
	tg := newTarget(t)
	out := tg.mustDo(200, "GET", "/_nodes/stats/fs", "")
	total := wholeNum(t, dig(out, "_nodes", "total"), "_nodes.total")
	if ok := wholeNum(t, dig(out, "_nodes", "successful"), "_nodes.successful"); ok != total || total < 1 {
		t.Errorf("_nodes = %v, want every node successful", dig(out, "_nodes"))
	}
	if str(dig(out, "cluster_name")) == "" {
		t.Errorf("cluster_name missing: %v", out)
	}
	nodes, _ := dig(out, "nodes").(map[string]any)
	if int64(len(nodes)) != total {
		t.Fatalf("%d nodes listed, _nodes.total %d", len(nodes), total)
	}
	data := 0
	for id, n := range nodes {
		if str(dig(n, "name")) == "" {
			t.Errorf("node %s has no name: %v", id, n)
		}
		roles, _ := dig(n, "roles").([]any)
		for _, r := range roles {
			if r == "data" {
				data++
			}
		}
		fs := dig(n, "fs", "total")
		size := wholeNum(t, dig(fs, "total_in_bytes"), "fs.total.total_in_bytes")
		free := wholeNum(t, dig(fs, "free_in_bytes"), "fs.total.free_in_bytes")
		avail := wholeNum(t, dig(fs, "available_in_bytes"), "fs.total.available_in_bytes")
		if size <= 0 || avail <= 0 || avail > free || free > size {
			t.Errorf("node %s: fs.total = %v, want 0 < available ≤ free ≤ total", id, fs)
		}
	}
	if data != tg.dataNodes() {
		t.Errorf("%d nodes with role data, cluster health says %d data nodes", data, tg.dataNodes())
	}
}

// _cluster/settings: persistent and transient always; with
// include_defaults the disk settings under one of the three, in flat
// form with flat_settings, else nested at each dot.
func TestClusterSettingsDiskShape(t *testing.T) {
	tg := newTarget(t)
	out := tg.mustDo(200, "GET", "/_cluster/settings", "")
	if _, ok := out["defaults"]; ok {
		t.Errorf("without include_defaults: %v, want no defaults", out)
	}
	for _, layer := range []string{"persistent", "transient"} {
		if _, ok := out[layer].(map[string]any); !ok {
			t.Errorf("GET /_cluster/settings = %v, want a %s object", out, layer)
		}
	}
	flat := tg.mustDo(200, "GET", "/_cluster/settings?include_defaults=true&flat_settings=true", "")
	nested := tg.mustDo(200, "GET", "/_cluster/settings?include_defaults=true", "")
	for _, name := range diskSettingNames {
		var got any
		var in string
		for _, layer := range []string{"transient", "persistent", "defaults"} {
			if v, ok := dig(flat, layer).(map[string]any)[name]; ok {
				got, in = v, layer
				break
			}
		}
		if _, ok := got.(string); !ok {
			t.Errorf("flat_settings: %s = %v (%T), want a string", name, got, got)
			continue
		}
		path := []any{in}
		for _, p := range strings.Split(name, ".") {
			path = append(path, p)
		}
		if v := dig(nested, path...); v != got {
			t.Errorf("nested: %v = %v, want %v as in flat form", path, v, got)
		}
	}
	if v := str(dig(flat, "defaults", "cluster.routing.allocation.disk.threshold_enabled")); v != "" && v != "true" && v != "false" {
		t.Errorf("threshold_enabled = %q, want true or false", v)
	}
}

// The emulator reports Options.Disk, node by node, and its watermarks.
func TestDiskOptions(t *testing.T) {
	srv := NewTestServer(Options{Disk: Disk{
		Nodes:             []NodeDisk{{TotalBytes: 1000, AvailableBytes: 10}},
		ThresholdDisabled: true, WatermarkHigh: "50gb",
	}})
	defer srv.Close()
	tg := &target{t: t, url: srv.URL, fake: srv}
	out := tg.mustDo(200, "GET", "/_nodes/stats/fs", "")
	want := map[string][2]int64{
		"osfake-0": {1000, 10},
		"osfake-1": {DefaultNodeDisk.TotalBytes, DefaultNodeDisk.AvailableBytes},
		"osfake-2": {DefaultNodeDisk.TotalBytes, DefaultNodeDisk.AvailableBytes},
	}
	for _, n := range dig(out, "nodes").(map[string]any) {
		name := str(dig(n, "name"))
		got := [2]int64{wholeNum(t, dig(n, "fs", "total", "total_in_bytes"), "total"), wholeNum(t, dig(n, "fs", "total", "available_in_bytes"), "available")}
		if got != want[name] {
			t.Errorf("node %s: total, available = %v, want %v", name, got, want[name])
		}
		delete(want, name)
	}
	if len(want) > 0 {
		t.Errorf("nodes not reported: %v", want)
	}
	set := tg.mustDo(200, "GET", "/_cluster/settings?include_defaults=true&flat_settings=true", "")
	for k, v := range map[string]string{
		"cluster.routing.allocation.disk.threshold_enabled":     "false",
		"cluster.routing.allocation.disk.watermark.high":        "50gb",
		"cluster.routing.allocation.disk.watermark.low":         "85%",
		"cluster.routing.allocation.disk.watermark.flood_stage": "95%",
	} {
		if got := str(dig(set, "defaults", k)); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
}

func TestDiskOptionsValidate(t *testing.T) {
	for _, d := range []Disk{
		{Nodes: []NodeDisk{{TotalBytes: 10, AvailableBytes: 11}}},
		{Nodes: []NodeDisk{{TotalBytes: -1}}},
		{Nodes: make([]NodeDisk, nodes+1)},
	} {
		if err := (Options{Disk: d}).Validate(); err == nil {
			t.Errorf("Options{Disk: %+v}.Validate() = nil, want an error", d)
		}
	}
	if err := (Options{}).Validate(); err != nil {
		t.Errorf("Options{}.Validate() = %v", err)
	}
}
