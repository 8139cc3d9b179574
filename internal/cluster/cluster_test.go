package cluster

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestFromEnvSplitsTheLists(t *testing.T) {
	c, err := fromEnv(env(map[string]string{
		OpenSearchVar: "http://127.0.0.1:29200/, http://127.0.0.1:29201,,http://127.0.0.1:29202",
		BrokersVar:    "127.0.0.1:29092,127.0.0.1:29094,127.0.0.1:29096",
		RealShVar:     "/x/real.sh",
	}))
	if err != nil {
		t.Fatal(err)
	}
	wantNodes := []string{"http://127.0.0.1:29200", "http://127.0.0.1:29201", "http://127.0.0.1:29202"}
	if strings.Join(c.Nodes, " ") != strings.Join(wantNodes, " ") {
		t.Errorf("Nodes = %q, want %q", c.Nodes, wantNodes)
	}
	if len(c.Brokers) != 3 || c.Brokers[2] != "127.0.0.1:29096" {
		t.Errorf("Brokers = %q", c.Brokers)
	}
	if c.RealSh != "/x/real.sh" {
		t.Errorf("RealSh = %q", c.RealSh)
	}
}

func TestFromEnvReadsTheCommandsVariablesAndFindsRealSh(t *testing.T) {
	c, err := fromEnv(env(map[string]string{
		OpenSearchCmdVar: "http://127.0.0.1:9200",
		BrokersCmdVar:    "127.0.0.1:9092",
	}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 1 || len(c.Brokers) != 1 {
		t.Errorf("Nodes %q, Brokers %q", c.Nodes, c.Brokers)
	}
	if filepath.Base(c.RealSh) != "real.sh" {
		t.Errorf("RealSh = %q", c.RealSh)
	}
	if _, err := os.Stat(c.RealSh); err != nil {
		t.Errorf("the default real.sh: %v", err)
	}
}

func TestFromEnvNamesWhatIsMissing(t *testing.T) {
	_, err := fromEnv(env(map[string]string{BrokersVar: "127.0.0.1:9092"}))
	if err == nil || !strings.Contains(err.Error(), OpenSearchVar) || strings.Contains(err.Error(), BrokersVar) {
		t.Fatalf("err = %v, want one naming %s only", err, OpenSearchVar)
	}
}

func TestNodeNumber(t *testing.T) {
	for name, want := range map[string]int{"geoshard-1": 1, "geoshard-3": 3, "geoshard-12": 12} {
		if got, err := NodeNumber(name); err != nil || got != want {
			t.Errorf("NodeNumber(%q) = %d, %v; want %d", name, got, err, want)
		}
	}
	for _, name := range []string{"geoshard-node", "geoshard-0", "node-1", ""} {
		if _, err := NodeNumber(name); err == nil {
			t.Errorf("NodeNumber(%q): no error", name)
		}
	}
}

func TestMostPrimaries(t *testing.T) {
	body := `[
	{"index":"menu-v1","shard":"0","prirep":"p","state":"STARTED","node":"geoshard-2"},
	{"index":"menu-v1","shard":"0","prirep":"r","state":"STARTED","node":"geoshard-1"},
	{"index":"menu-v1","shard":"1","prirep":"p","state":"STARTED","node":"geoshard-3"},
	{"index":"menu-v1","shard":"1","prirep":"r","state":"STARTED","node":"geoshard-2"},
	{"index":"menu-v1","shard":"2","prirep":"p","state":"STARTED","node":"geoshard-3"},
	{"index":"menu-v1","shard":"2","prirep":"r","state":"UNASSIGNED","node":null},
	{"index":"menu-v1","shard":"3","prirep":"p","state":"INITIALIZING","node":"geoshard-2"},
	{"index":"menu-v1","shard":"4","prirep":"r","state":"STARTED","node":"geoshard-1"},
	{"index":"menu-v1","shard":"5","prirep":"r","state":"STARTED","node":"geoshard-1"}
	]`
	got, err := mostPrimaries([]byte(body))
	if err != nil || got != 3 {
		t.Errorf("mostPrimaries = %d, %v; want 3 (two started primaries)", got, err)
	}
	tie := `[{"prirep":"p","state":"STARTED","node":"geoshard-3"},{"prirep":"p","state":"STARTED","node":"geoshard-2"}]`
	if got, err := mostPrimaries([]byte(tie)); err != nil || got != 2 {
		t.Errorf("a tie: %d, %v; want the lower number, 2", got, err)
	}
	if _, err := mostPrimaries([]byte(`[]`)); err == nil {
		t.Error("no shards: no error")
	}
	if _, err := mostPrimaries([]byte(`[{"prirep":"p","state":"STARTED","node":"geoshard-node"}]`)); err == nil {
		t.Error("a node not named geoshard-N: no error")
	}
}

func TestBusiestLeader(t *testing.T) {
	c := &Cluster{Brokers: []string{"127.0.0.1:29092", "127.0.0.1:29094", "127.0.0.1:29096"}}
	b := func(id, port int) kafka.Broker { return kafka.Broker{ID: id, Host: "127.0.0.1", Port: port} }
	parts := []kafka.Partition{
		{ID: 0, Leader: b(1, 29092)},
		{ID: 1, Leader: b(3, 29096)},
		{ID: 2, Leader: b(3, 29096)},
		{ID: 3, Leader: b(2, 29094)},
		{ID: 4, Leader: kafka.Broker{ID: -1}},
	}
	if got, err := c.busiestLeader(parts); err != nil || got != 3 {
		t.Errorf("busiestLeader = %d, %v; want 3", got, err)
	}
	// Mapped by address, not by id: broker id 7 at the second address is
	// broker 2.
	if got, err := c.busiestLeader([]kafka.Partition{{Leader: b(7, 29094)}}); err != nil || got != 2 {
		t.Errorf("by address: %d, %v; want 2", got, err)
	}
	if _, err := c.busiestLeader([]kafka.Partition{{Leader: b(7, 1)}}); err == nil {
		t.Error("an unknown broker: no error")
	}
}

func TestStatusAtLeast(t *testing.T) {
	for _, tc := range []struct {
		got, want string
		ok        bool
	}{
		{"green", "green", true}, {"green", "yellow", true}, {"yellow", "yellow", true},
		{"yellow", "green", false}, {"red", "yellow", false}, {"", "yellow", false},
	} {
		if statusAtLeast(tc.got, tc.want) != tc.ok {
			t.Errorf("statusAtLeast(%q, %q) = %v", tc.got, tc.want, !tc.ok)
		}
	}
}

func TestCheckNumber(t *testing.T) {
	c := &Cluster{Nodes: []string{"a", "b", "c"}, Brokers: []string{"x"}}
	if err := c.Kill(OpenSearch, 4); err == nil || !strings.Contains(err.Error(), "1 to 3") {
		t.Errorf("node 4 of 3: %v", err)
	}
	if err := c.Stop(Kafka, 2); err == nil {
		t.Error("broker 2 of 1: no error")
	}
	if err := c.Cont("zookeeper", 1); err == nil {
		t.Error("an unknown kind: no error")
	}
}

// WaitStatus asks the nodes in turn (a dead one refuses), and keeps asking
// until the health is what it waits for.
func TestWaitStatusAsksTheNextNodeAndWaits(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/_cluster/health" || r.URL.Query().Get("wait_for_nodes") != "3" ||
			r.URL.Query().Get("wait_for_status") != "green" {
			http.Error(w, "unexpected "+r.URL.String(), http.StatusBadRequest)
			return
		}
		if calls.Add(1) < 3 {
			w.Write([]byte(`{"status":"yellow","timed_out":true,"number_of_nodes":2}`))
			return
		}
		w.Write([]byte(`{"status":"green","timed_out":false,"number_of_nodes":3}`))
	}))
	defer srv.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close()
	c := &Cluster{Nodes: []string{deadURL, srv.URL}}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitGreen(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 3 {
		t.Errorf("%d health requests, want 3", calls.Load())
	}
	short, cancel2 := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel2()
	if err := c.WaitStatus(short, "green", 4); err == nil {
		t.Error("4 nodes: no error")
	}
}
