package bulk

import (
	"context"
	"testing"
)

// The disk figures, from the emulator or with -tags realcluster the real
// node: data nodes with disks, the high watermark among the settings in
// effect, and a store size for an index and for its alias.
func TestDiskFigures(t *testing.T) {
	e := newAdminEnv(t)
	ctx := context.Background()
	nodes, err := e.a.NodesFS(ctx)
	if err != nil {
		t.Fatalf("NodesFS = %v", err)
	}
	data := 0
	for _, n := range nodes {
		if n.Name == "" || n.ID == "" || n.TotalBytes <= 0 || n.AvailableBytes <= 0 || n.AvailableBytes > n.TotalBytes {
			t.Errorf("NodesFS: %+v, want a named node with 0 < available ≤ total", n)
		}
		if n.IsData() {
			data++
		}
	}
	if data == 0 {
		t.Errorf("NodesFS = %+v, want a data node", nodes)
	}
	set, err := e.a.ClusterSettings(ctx)
	if err != nil {
		t.Fatalf("ClusterSettings = %v", err)
	}
	for _, k := range []string{"cluster.routing.allocation.disk.watermark.high", "cluster.routing.allocation.disk.threshold_enabled"} {
		if set[k] == "" {
			t.Errorf("ClusterSettings: %s missing", k)
		}
	}
	index, alias := e.menu(t)
	for _, name := range []string{index, alias} {
		n, err := e.a.PrimaryStoreBytes(ctx, name)
		if err != nil || n <= 0 {
			t.Errorf("PrimaryStoreBytes(%s) = %d, %v; want > 0", name, n, err)
		}
	}
	if _, err := e.a.PrimaryStoreBytes(ctx, e.index(t, "missing")); !IsNotFound(err) {
		t.Errorf("PrimaryStoreBytes(missing) = %v, want not found", err)
	}
}
