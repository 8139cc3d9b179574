package bulk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
)

// The figures a disk check reads: the data nodes' file systems, the
// cluster's settings, and an index's primary store size.

// NodeFS is one node's file systems as GET /_nodes/stats/fs reports them:
// fs.total, the sum over the node's data paths.
type NodeFS struct {
	// ID is the node's id, the key of its entry in the answer.
	ID   string
	Name string
	// Roles are the node's roles ("data", "cluster_manager", …).
	Roles []string
	// TotalBytes is fs.total.total_in_bytes.
	TotalBytes int64
	// AvailableBytes is fs.total.available_in_bytes: what the node's
	// process may still write (free less what the file system reserves),
	// which is the figure the disk watermarks are measured against.
	AvailableBytes int64
}

// IsData reports whether the node holds shards (role "data").
func (n NodeFS) IsData() bool { return slices.Contains(n.Roles, "data") }

// NodesFSRequest reads every node's file system figures.
func NodesFSRequest() Request {
	return Request{Method: http.MethodGet, Path: "/_nodes/stats/fs"}
}

// NodesFS sends NodesFSRequest and returns every node that answered, by
// name. Nodes that did not answer (_nodes.failed) are absent.
func (a *Admin) NodesFS(ctx context.Context) ([]NodeFS, error) {
	var out struct {
		Nodes map[string]struct {
			Name  string   `json:"name"`
			Roles []string `json:"roles"`
			FS    struct {
				Total struct {
					Total     *int64 `json:"total_in_bytes"`
					Available *int64 `json:"available_in_bytes"`
				} `json:"total"`
			} `json:"fs"`
		} `json:"nodes"`
	}
	r := NodesFSRequest()
	if err := a.Send(ctx, r, &out); err != nil {
		return nil, err
	}
	nodes := make([]NodeFS, 0, len(out.Nodes))
	for id, n := range out.Nodes {
		t := n.FS.Total
		if t.Total == nil || t.Available == nil {
			return nil, fmt.Errorf("bulk: %s %s: node %s (%s) reports no fs.total figures", r.Method, r.Path, n.Name, id)
		}
		nodes = append(nodes, NodeFS{ID: id, Name: n.Name, Roles: n.Roles, TotalBytes: *t.Total, AvailableBytes: *t.Available})
	}
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].Name < nodes[j].Name })
	return nodes, nil
}

// ClusterSettingsRequest reads the cluster's settings, defaults included,
// in flat form ("cluster.routing.allocation.disk.watermark.high": "90%").
func ClusterSettingsRequest() Request {
	return Request{Method: http.MethodGet, Path: "/_cluster/settings?flat_settings=true&include_defaults=true"}
}

// ClusterSettings sends ClusterSettingsRequest and returns the settings in
// effect: a transient setting over a persistent one over the default (a
// value from the node's configuration file is among the defaults). A
// setting the answer does not name is absent.
func (a *Admin) ClusterSettings(ctx context.Context) (map[string]string, error) {
	var out struct {
		Persistent map[string]any `json:"persistent"`
		Transient  map[string]any `json:"transient"`
		Defaults   map[string]any `json:"defaults"`
	}
	if err := a.Send(ctx, ClusterSettingsRequest(), &out); err != nil {
		return nil, err
	}
	flat := make(map[string]string, len(out.Defaults))
	for _, layer := range []map[string]any{out.Defaults, out.Persistent, out.Transient} {
		for k, v := range layer {
			if s, ok := v.(string); ok {
				flat[k] = s
				continue
			}
			b, _ := json.Marshal(v) // a list setting: its JSON
			flat[k] = string(b)
		}
	}
	return flat, nil
}

// PrimaryStoreBytes is the store size of the primary copies of an index,
// or of every index an alias or pattern names together, in bytes:
// _cat/indices' pri.store.size. Deleted documents not merged away yet
// are counted: they take disk until a merge removes them.
func (a *Admin) PrimaryStoreBytes(ctx context.Context, index string) (int64, error) {
	var rows []struct {
		Index string  `json:"index"`
		Size  *string `json:"pri.store.size"`
	}
	r := Request{Method: http.MethodGet, Path: "/_cat/indices/" + esc(index) + "?format=json&bytes=b&h=index,pri.store.size"}
	if err := a.Send(ctx, r, &rows); err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, fmt.Errorf("bulk: %s %s: no index", r.Method, r.Path)
	}
	var total int64
	for _, row := range rows {
		// A closed index, or one whose primaries are not all active,
		// reports no size.
		if row.Size == nil {
			return 0, fmt.Errorf("bulk: %s %s: index %s reports no primary store size (closed, or red?)", r.Method, r.Path, row.Index)
		}
		n, err := strconv.ParseInt(*row.Size, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bulk: %s %s: index %s: pri.store.size %q: %w", r.Method, r.Path, row.Index, *row.Size, err)
		}
		total += n
	}
	return total, nil
}
