package migrate

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
)

const (
	gib = int64(1) << 30
	tib = int64(1) << 40
	// tenth is what a 90% watermark keeps free of a TiB, rounded up.
	tenth = (tib + 9) / 10
)

func TestParseWatermark(t *testing.T) {
	tests := []struct {
		in      string
		want    Watermark
		wantErr bool
	}{
		{in: "90%", want: Watermark{Setting: "90%", Percent: 90}},
		{in: "85.5%", want: Watermark{Setting: "85.5%", Percent: 85.5}},
		{in: "0.9", want: Watermark{Setting: "0.9", Percent: 90}},
		{in: "1", want: Watermark{Setting: "1", Percent: 100}},
		{in: "50gb", want: Watermark{Setting: "50gb", Bytes: 50 * gib, IsBytes: true}},
		{in: "50GB", want: Watermark{Setting: "50GB", Bytes: 50 * gib, IsBytes: true}},
		{in: "500mb", want: Watermark{Setting: "500mb", Bytes: 500 << 20, IsBytes: true}},
		{in: "1.5g", want: Watermark{Setting: "1.5g", Bytes: 3 * gib / 2, IsBytes: true}},
		{in: "1t", want: Watermark{Setting: "1t", Bytes: tib, IsBytes: true}},
		{in: "10b", want: Watermark{Setting: "10b", Bytes: 10, IsBytes: true}},
		{in: "101%", wantErr: true},
		{in: "-5%", wantErr: true},
		{in: "1.5", wantErr: true}, // a ratio above 1
		{in: "50", wantErr: true},  // neither a ratio nor a size with a unit
		{in: "lots", wantErr: true},
		{in: "", wantErr: true},
	}
	for _, tc := range tests {
		got, err := ParseWatermark(tc.in)
		if tc.wantErr {
			if err == nil {
				t.Errorf("ParseWatermark(%q) = %+v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseWatermark(%q) = %+v, %v, want %+v", tc.in, got, err, tc.want)
		}
	}
}

func TestWatermarkReserve(t *testing.T) {
	tests := []struct {
		name  string
		mark  string
		total int64
		want  int64
	}{
		{"90% of 1 TiB keeps a tenth", "90%", tib, tenth},
		{"the ratio reads as the percentage", "0.9", tib, tenth},
		{"bytes keep the same whatever the disk", "50gb", tib, 50 * gib},
		{"bytes on a small disk keep more than it has", "50gb", 20 * gib, 50 * gib},
		{"100% keeps nothing", "100%", tib, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, err := ParseWatermark(tc.mark)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.Reserve(tc.total); got != tc.want {
				t.Errorf("ParseWatermark(%q).Reserve(%d) = %d, want %d", tc.mark, tc.total, got, tc.want)
			}
		})
	}
}

// settings are disk settings with the high watermark high (flood stage
// 95%); "" turns the thresholds off.
func settings(t *testing.T, high string) DiskSettings {
	t.Helper()
	if high == "" {
		return DiskSettings{Enabled: false, High: mustMark(t, "90%"), FloodStage: mustMark(t, "95%")}
	}
	return DiskSettings{Enabled: true, High: mustMark(t, high), FloodStage: mustMark(t, "95%")}
}

func mustMark(t *testing.T, s string) Watermark {
	t.Helper()
	w, err := ParseWatermark(s)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// nodes are data nodes named a, b, c… each with total and the available
// bytes given.
func nodes(total int64, available ...int64) []NodeDisk {
	out := make([]NodeDisk, len(available))
	for i, a := range available {
		out[i] = NodeDisk{Name: string(rune('a' + i)), TotalBytes: total, AvailableBytes: a}
	}
	return out
}

func TestEstimateDisk(t *testing.T) {
	tests := []struct {
		name string
		in   DiskInput
		high string // the high watermark; "" for thresholds off
		// What the estimate must say.
		needed, usable, largest int64
		placed                  int
		fits                    bool
		verdict                 string // the verdict starts with it
	}{
		{
			name: "plenty of room on three nodes",
			in:   DiskInput{SourcePrimaryBytes: 10 * gib, Replicas: 1, Shards: 4, Nodes: nodes(tib, 500*gib, 500*gib, 500*gib)},
			high: "90%",
			// 10 GiB × 2 copies × 1.2; each node keeps 102.4 GiB free.
			needed: 24 * gib, usable: 3 * (500*gib - tenth), largest: 3 * gib, placed: 1,
			fits: true, verdict: "fits: ",
		},
		{
			name: "the percentage watermark takes the room",
			in:   DiskInput{SourcePrimaryBytes: 10 * gib, Replicas: 1, Shards: 4, Nodes: nodes(100*gib, 15*gib, 15*gib, 15*gib)},
			high: "90%",
			// 5 GiB usable on each node: 15 in all, 24 needed.
			needed: 24 * gib, usable: 15 * gib, largest: 3 * gib, placed: 1,
			verdict: "does not fit: the new index needs 24.0 GiB, the data nodes have 15.0 GiB usable",
		},
		{
			name:   "an absolute watermark keeps the same bytes on every disk",
			in:     DiskInput{SourcePrimaryBytes: 10 * gib, Replicas: 1, Shards: 4, Nodes: nodes(100*gib, 15*gib, 15*gib, 15*gib)},
			high:   "2gb",
			needed: 24 * gib, usable: 39 * gib, largest: 3 * gib, placed: 1,
			fits: true, verdict: "fits: ",
		},
		{
			name:   "the ratio watermark reads as its percentage",
			in:     DiskInput{SourcePrimaryBytes: 10 * gib, Replicas: 1, Shards: 4, Nodes: nodes(100*gib, 15*gib, 15*gib, 15*gib)},
			high:   "0.9",
			needed: 24 * gib, usable: 15 * gib, largest: 3 * gib, placed: 1,
			verdict: "does not fit: ",
		},
		{
			name:   "thresholds off: all the available disk counts",
			in:     DiskInput{SourcePrimaryBytes: 10 * gib, Replicas: 1, Shards: 4, Nodes: nodes(100*gib, 15*gib, 15*gib, 15*gib)},
			high:   "",
			needed: 24 * gib, usable: 45 * gib, largest: 3 * gib, placed: 1,
			fits: true, verdict: "fits: ",
		},
		{
			name:   "a node past its high watermark offers nothing",
			in:     DiskInput{SourcePrimaryBytes: 10 * gib, Replicas: 0, Shards: 4, Nodes: nodes(100*gib, 5*gib, 40*gib)},
			high:   "90%",
			needed: 12 * gib, usable: 30 * gib, largest: 3 * gib, placed: 0,
			fits: true, verdict: "fits: ",
		},
		{
			name: "one node full, the other roomy: no replica has a node to go to",
			in:   DiskInput{SourcePrimaryBytes: 10 * gib, Replicas: 1, Shards: 4, Nodes: nodes(100*gib, 5*gib, 40*gib)},
			high: "90%",
			// 30 GiB usable would hold the 24 needed, but the copies of a
			// shard go to different nodes, and b has no room for any.
			needed: 24 * gib, usable: 30 * gib, largest: 3 * gib, placed: 1,
			verdict: "does not fit: a copy of the largest shard needs 3.0 GiB on one node, and with 2 copies on different nodes the 2nd roomiest, a, has 0 B usable",
		},
		{
			name:   "replicas on a one-node cluster: none is placed, none is counted",
			in:     DiskInput{SourcePrimaryBytes: 10 * gib, Replicas: 2, Shards: 4, Nodes: nodes(100*gib, 30*gib)},
			high:   "90%",
			needed: 12 * gib, usable: 20 * gib, largest: 3 * gib, placed: 0,
			fits: true, verdict: "fits: ",
		},
		{
			name:   "replicas beyond the nodes: as many as there are other nodes",
			in:     DiskInput{SourcePrimaryBytes: 10 * gib, Replicas: 3, Shards: 4, Nodes: nodes(tib, 500*gib, 500*gib)},
			high:   "90%",
			needed: 24 * gib, usable: 2 * (500*gib - tenth), largest: 3 * gib, placed: 1,
			fits: true, verdict: "fits: ",
		},
		{
			name: "room in all, but the largest shard fits no node",
			// A map whose first shard holds 90% of the documents.
			in:     DiskInput{SourcePrimaryBytes: 100 * gib, Replicas: 0, Shards: 3, ShardDocs: []int64{900, 50, 50}, Nodes: nodes(100*gib, 60*gib, 60*gib, 60*gib)},
			high:   "90%",
			needed: 120 * gib, usable: 150 * gib, largest: 108 * gib, placed: 0,
			verdict: "does not fit: a copy of the largest shard needs 108.0 GiB on one node, and the roomiest node, a, has 50.0 GiB usable",
		},
		{
			name:   "loads all zero: the data is spread evenly",
			in:     DiskInput{SourcePrimaryBytes: 100 * gib, Replicas: 0, Shards: 4, ShardDocs: []int64{0, 0, 0, 0}, Nodes: nodes(100*gib, 60*gib, 60*gib, 60*gib)},
			high:   "90%",
			needed: 120 * gib, usable: 150 * gib, largest: 30 * gib, placed: 0,
			fits: true, verdict: "fits: ",
		},
		{
			name:   "an empty source fits anywhere with room",
			in:     DiskInput{SourcePrimaryBytes: 0, Replicas: 1, Shards: 4, Nodes: nodes(100*gib, 50*gib, 50*gib)},
			high:   "90%",
			needed: 0, usable: 80 * gib, largest: 0, placed: 1,
			fits: true, verdict: "fits: ",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Settings = settings(t, tc.high)
			e, err := EstimateDisk(in)
			if err != nil {
				t.Fatal(err)
			}
			if e.NeededBytes != tc.needed || e.UsableBytes != tc.usable || e.LargestShardBytes != tc.largest || e.PlacedReplicas != tc.placed {
				t.Errorf("EstimateDisk: needed %d, usable %d, largest shard %d, placed replicas %d; want %d, %d, %d, %d",
					e.NeededBytes, e.UsableBytes, e.LargestShardBytes, e.PlacedReplicas, tc.needed, tc.usable, tc.largest, tc.placed)
			}
			if e.Fits != tc.fits || !strings.HasPrefix(e.Verdict, tc.verdict) {
				t.Errorf("EstimateDisk: fits %v, %q; want %v, starting %q", e.Fits, e.Verdict, tc.fits, tc.verdict)
			}
			for i := 1; i < len(e.Nodes); i++ {
				if e.Nodes[i].UsableBytes > e.Nodes[i-1].UsableBytes {
					t.Errorf("EstimateDisk: nodes not by room, most first: %+v", e.Nodes)
				}
			}
		})
	}
}

func TestEstimateDiskRefusesNonsense(t *testing.T) {
	ok := DiskInput{SourcePrimaryBytes: gib, Replicas: 1, Shards: 2, Nodes: nodes(100*gib, 50*gib)}
	tests := []struct {
		name string
		edit func(*DiskInput)
		want string
	}{
		{"no data node", func(in *DiskInput) { in.Nodes = nil }, "no data node"},
		{"no shard", func(in *DiskInput) { in.Shards = 0 }, "shards 0"},
		{"loads for other shards", func(in *DiskInput) { in.ShardDocs = []int64{1, 2, 3} }, "3 shard loads for 2 shards"},
		{"negative replicas", func(in *DiskInput) { in.Replicas = -1 }, "replicas -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := ok
			tc.edit(&in)
			_, err := EstimateDisk(in)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("EstimateDisk(%+v) = %v, want an error naming %q", in, err, tc.want)
			}
		})
	}
}

// The refusal names the numbers: what is needed and how it is computed,
// each node's room and the watermark that sets it.
func TestDiskErrorNamesTheNumbers(t *testing.T) {
	in := DiskInput{SourcePrimaryBytes: 10 * gib, Replicas: 1, Shards: 4, Nodes: nodes(100*gib, 15*gib, 15*gib, 15*gib), Settings: settings(t, "90%")}
	e, err := EstimateDisk(in)
	if err != nil {
		t.Fatal(err)
	}
	msg := (&DiskError{Target: "menu-v2", Estimate: e}).Error()
	for _, want := range []string{
		"not enough disk for menu-v2",
		"needed: 24.0 GiB = source primaries 10.0 GiB × (1 + 1 replica) × (1 + 20% headroom)",
		"high watermark 90%", "flood_stage 95%",
		"a: 5.0 GiB usable = 15.0 GiB available - 10.0 GiB kept free, of 100.0 GiB",
		"Free disk on the data nodes, or add data nodes",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("DiskError = %q\nwant it to contain %q", msg, want)
		}
	}
	if !errors.Is(&DiskError{}, ErrNoDisk) {
		t.Errorf("DiskError does not wrap ErrNoDisk")
	}
}

func TestBytes(t *testing.T) {
	for _, tc := range []struct {
		n    int64
		want string
	}{{0, "0 B"}, {1023, "1023 B"}, {1024, "1.0 KiB"}, {3 * gib / 2, "1.5 GiB"}, {tib, "1.0 TiB"}} {
		if got := Bytes(tc.n); got != tc.want {
			t.Errorf("Bytes(%d) = %q, want %q", tc.n, got, tc.want)
		}
	}
}

// On the cluster (the emulator, or with -tags realcluster the real
// node): the estimate reads the node's real figures, and a small index
// fits.
func TestEstimateDiskForCluster(t *testing.T) {
	e := newEnv(t, 40)
	ctx := context.Background()
	if err := e.admin.Refresh(ctx, e.v1); err != nil {
		t.Fatal(err)
	}
	est, err := EstimateDiskFor(ctx, e.admin, e.v1, -1, e.dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(est.Nodes) == 0 {
		t.Fatalf("EstimateDiskFor: no data node")
	}
	for _, n := range est.Nodes {
		if n.TotalBytes <= 0 || n.AvailableBytes <= 0 || n.AvailableBytes > n.TotalBytes {
			t.Errorf("node %s: total %d, available %d; want 0 < available ≤ total", n.Name, n.TotalBytes, n.AvailableBytes)
		}
	}
	if est.SourcePrimaryBytes <= 0 {
		t.Errorf("source primaries = %d bytes, want > 0", est.SourcePrimaryBytes)
	}
	if est.Replicas != e.replicas || est.Shards != e.dst.NumShards() {
		t.Errorf("replicas %d, shards %d; want the source's %d and the map's %d", est.Replicas, est.Shards, e.replicas, e.dst.NumShards())
	}
	if !est.Fits {
		t.Errorf("a copy of %s (%d bytes): %s\n%s", e.v1, est.SourcePrimaryBytes, est.Verdict, strings.Join(est.Explain(), "\n"))
	}
	t.Logf("%s\n%s", est.Verdict, strings.Join(est.Explain(), "\n"))
}

// Create refuses a target that does not fit before it records or creates
// anything, and creates it with SkipDiskCheck.
func TestCreateRefusesWithoutDisk(t *testing.T) {
	if realenv.Enabled() {
		t.Skip("needs the emulator's disk figures")
	}
	full := osfake.NodeDisk{TotalBytes: 100 * gib, AvailableBytes: 10 * gib} // at its 90% high watermark
	e := newEnvWith(t, 40, osfake.Options{Disk: osfake.Disk{Nodes: []osfake.NodeDisk{full, full, full}}})
	ctx := context.Background()
	_, err := e.m.Create(ctx, CreateConfig{Map: e.dst})
	var de *DiskError
	if !errors.As(err, &de) || !errors.Is(err, ErrNoDisk) {
		t.Fatalf("Create = %v, want a *DiskError", err)
	}
	if de.Estimate.UsableBytes != 0 || de.Estimate.Fits || de.Target != e.v2 {
		t.Errorf("Create refused %s with %+v, want %s, 0 bytes usable", de.Target, de.Estimate, e.v2)
	}
	if ok, err := e.admin.IndexExists(ctx, e.v2); err != nil || ok {
		t.Errorf("after the refusal, %s exists = %v, %v; want false", e.v2, ok, err)
	}
	if _, err := e.m.Load(ctx); !errors.Is(err, ErrNoMigration) {
		t.Errorf("after the refusal, Load = %v, want ErrNoMigration", err)
	}

	mig, err := e.m.Create(ctx, CreateConfig{Map: e.dst, SkipDiskCheck: true})
	if err != nil {
		t.Fatalf("Create with SkipDiskCheck = %v", err)
	}
	if ok, err := e.admin.IndexExists(ctx, mig.Target.Index); err != nil || !ok {
		t.Errorf("Create with SkipDiskCheck: %s exists = %v, %v; want true", mig.Target.Index, ok, err)
	}
}
