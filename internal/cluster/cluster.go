// Package cluster drives the cluster profile of deploy/local/real.sh for
// fault tests: three OpenSearch nodes (geoshard-1 … geoshard-3) and three
// KRaft brokers (node ids 1 … 3) on loopback, started by
//
//	REAL_CLUSTER=3 deploy/local/real.sh up
//
// It reads where they are from the variables real.sh env prints, kills,
// stops and starts one of them through real.sh's verbs, waits for the
// OpenSearch cluster's health, and says which node or broker a test should
// hit to hurt the most: the node with the most primaries of an index, the
// broker leading the most partitions of a topic.
//
// Nodes and brokers are numbered from 1, as real.sh numbers them. The
// package needs no engine to build; its tests that do carry the
// realcluster build tag and skip unless ClusterVar names a cluster.
package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
)

// The variables FromEnv reads.
const (
	// OpenSearchVar and BrokersVar are the suites' variables real.sh env
	// prints, each a comma-joined list; the commands' (OpenSearchCmdVar,
	// BrokersCmdVar) are read where those are unset.
	OpenSearchVar    = "GEOSHARD_OPENSEARCH_URL"
	BrokersVar       = "GEOSHARD_KAFKA_BROKERS"
	OpenSearchCmdVar = "GEOSHARD_OPENSEARCH"
	BrokersCmdVar    = "GEOSHARD_BROKERS"

	// RealShVar is the path of real.sh; unset, the one in this
	// repository's deploy/local. real.sh finds the cluster it controls
	// through GEOSHARD_REAL_DIR, which the commands it runs inherit.
	RealShVar = "GEOSHARD_REAL_SH"

	// ClusterVar set to the number of nodes (3) says a cluster profile
	// runs: the fault tests skip without it.
	ClusterVar = "GEOSHARD_CLUSTER"
)

// Kind is what a number names: an OpenSearch node or a Kafka broker.
type Kind string

const (
	OpenSearch Kind = "opensearch"
	Kafka      Kind = "kafka"
)

// Cluster is the cluster profile's nodes and brokers.
type Cluster struct {
	// Nodes are the OpenSearch nodes' URLs, node n at Nodes[n-1].
	Nodes []string
	// Brokers are the brokers' addresses, broker n at Brokers[n-1].
	Brokers []string
	// RealSh is the path of real.sh, whose verbs Kill, Start, Stop and
	// Cont run.
	RealSh string
	// HTTP asks the nodes; nil is a client with a 15 s timeout (a node a
	// test stopped answers nothing).
	HTTP *http.Client
}

// FromEnv reads the cluster from the environment.
func FromEnv() (*Cluster, error) {
	return fromEnv(os.Getenv)
}

func fromEnv(getenv func(string) string) (*Cluster, error) {
	c := &Cluster{
		Nodes:   splitList(firstSet(getenv, OpenSearchVar, OpenSearchCmdVar)),
		Brokers: splitList(firstSet(getenv, BrokersVar, BrokersCmdVar)),
		RealSh:  strings.TrimSpace(getenv(RealShVar)),
	}
	for i, u := range c.Nodes {
		c.Nodes[i] = strings.TrimRight(u, "/")
	}
	var missing []string
	if len(c.Nodes) == 0 {
		missing = append(missing, OpenSearchVar)
	}
	if len(c.Brokers) == 0 {
		missing = append(missing, BrokersVar)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("cluster: %s not set; run `REAL_CLUSTER=3 deploy/local/real.sh up` and export what it prints",
			strings.Join(missing, " and "))
	}
	if c.RealSh == "" {
		c.RealSh = defaultRealSh()
	}
	return c, nil
}

func firstSet(getenv func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(getenv(n)); v != "" {
			return v
		}
	}
	return ""
}

// splitList splits a comma-joined list, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// defaultRealSh is deploy/local/real.sh of the repository this file is in.
func defaultRealSh() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return filepath.Join("deploy", "local", "real.sh")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "deploy", "local", "real.sh")
}

// Kill sends node or broker n SIGKILL.
func (c *Cluster) Kill(kind Kind, n int) error { _, err := c.realSh("kill", kind, n); return err }

// Start starts node or broker n again with its data. It returns once the
// process runs, not once it has joined: WaitGreen waits for that.
func (c *Cluster) Start(kind Kind, n int) error { _, err := c.realSh("start", kind, n); return err }

// Stop sends node or broker n SIGSTOP: it keeps its sockets but answers
// nothing, as a machine that hangs.
func (c *Cluster) Stop(kind Kind, n int) error { _, err := c.realSh("stop", kind, n); return err }

// Cont sends node or broker n SIGCONT.
func (c *Cluster) Cont(kind Kind, n int) error { _, err := c.realSh("cont", kind, n); return err }

// Pid is node or broker n's process id.
func (c *Cluster) Pid(kind Kind, n int) (int, error) {
	out, err := c.realSh("pid", kind, n)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("cluster: real.sh pid %s %d printed %q", kind, n, out)
	}
	return pid, nil
}

// realSh runs real.sh VERB KIND N and returns what it printed.
func (c *Cluster) realSh(verb string, kind Kind, n int) (string, error) {
	if err := c.checkNumber(kind, n); err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command("bash", c.RealSh, verb, string(kind), strconv.Itoa(n))
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cluster: real.sh %s %s %d: %w: %s", verb, kind, n, err,
			strings.TrimSpace(stderr.String()+stdout.String()))
	}
	return stdout.String(), nil
}

func (c *Cluster) checkNumber(kind Kind, n int) error {
	var count int
	switch kind {
	case OpenSearch:
		count = len(c.Nodes)
	case Kafka:
		count = len(c.Brokers)
	default:
		return fmt.Errorf("cluster: kind %q is neither %s nor %s", kind, OpenSearch, Kafka)
	}
	if n < 1 || n > count {
		return fmt.Errorf("cluster: %s %d: no such one, there are %d (1 to %d)", kind, n, count, count)
	}
	return nil
}

func (c *Cluster) client() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 15 * time.Second}
}

// get asks the nodes in turn for path (a node may be down: that is what the
// tests do to them) and returns the first answer of status 200.
func (c *Cluster) get(ctx context.Context, path string) ([]byte, error) {
	var errs []error
	for _, node := range c.Nodes {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, node+path, nil)
		if err != nil {
			return nil, err
		}
		resp, err := c.client().Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if resp.StatusCode != http.StatusOK {
			errs = append(errs, fmt.Errorf("GET %s%s: %s: %.300s", node, path, resp.Status, body))
			continue
		}
		return body, nil
	}
	return nil, errors.Join(errs...)
}

// Health is the part of _cluster/health the waits read.
type Health struct {
	Status           string `json:"status"`
	TimedOut         bool   `json:"timed_out"`
	NumberOfNodes    int    `json:"number_of_nodes"`
	ActiveShards     int    `json:"active_shards"`
	UnassignedShards int    `json:"unassigned_shards"`
}

func parseHealth(body []byte) (Health, error) {
	var h Health
	if err := json.Unmarshal(body, &h); err != nil {
		return h, fmt.Errorf("cluster: health: %w: %.200s", err, body)
	}
	return h, nil
}

// WaitGreen waits until the cluster is green with exactly nodes nodes.
func (c *Cluster) WaitGreen(ctx context.Context, nodes int) error {
	return c.WaitStatus(ctx, "green", nodes)
}

// WaitStatus waits until the cluster's health is status ("yellow" means
// yellow or green) with exactly nodes nodes, or ctx ends; it returns the
// last health it saw in its error.
func (c *Cluster) WaitStatus(ctx context.Context, status string, nodes int) error {
	path := fmt.Sprintf("/_cluster/health?wait_for_status=%s&wait_for_nodes=%d&timeout=5s",
		url.QueryEscape(status), nodes)
	var last error
	for {
		body, err := c.get(ctx, path)
		if err == nil {
			h, perr := parseHealth(body)
			if perr == nil && !h.TimedOut && h.NumberOfNodes == nodes && statusAtLeast(h.Status, status) {
				return nil
			}
			last = perr
			if perr == nil {
				last = fmt.Errorf("status %s with %d node(s), %d shard(s) unassigned", h.Status, h.NumberOfNodes, h.UnassignedShards)
			}
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: not %s with %d node(s): %w (last: %v)", status, nodes, ctx.Err(), last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

func statusAtLeast(got, want string) bool {
	rank := map[string]int{"red": 0, "yellow": 1, "green": 2}
	g, ok1 := rank[got]
	w, ok2 := rank[want]
	return ok1 && ok2 && g >= w
}

// NodeNumber is the number of a node named geoshard-N, or an error for any
// other name.
func NodeNumber(name string) (int, error) {
	s, ok := strings.CutPrefix(name, "geoshard-")
	n, err := strconv.Atoi(s)
	if !ok || err != nil || n < 1 {
		return 0, fmt.Errorf("cluster: node %q is not named geoshard-N", name)
	}
	return n, nil
}

// catShard is a row of _cat/shards?format=json.
type catShard struct {
	Index  string `json:"index"`
	Shard  string `json:"shard"`
	PriRep string `json:"prirep"`
	State  string `json:"state"`
	Node   string `json:"node"`
}

// NodeWithMostPrimaries is the number of the node holding the most started
// primaries of index (an alias or pattern works too), the lowest number on
// a tie.
func (c *Cluster) NodeWithMostPrimaries(ctx context.Context, index string) (int, error) {
	body, err := c.get(ctx, "/_cat/shards/"+url.PathEscape(index)+"?format=json&h=index,shard,prirep,state,node")
	if err != nil {
		return 0, fmt.Errorf("cluster: shards of %s: %w", index, err)
	}
	return mostPrimaries(body)
}

func mostPrimaries(body []byte) (int, error) {
	var rows []catShard
	if err := json.Unmarshal(body, &rows); err != nil {
		return 0, fmt.Errorf("cluster: _cat/shards: %w: %.200s", err, body)
	}
	count := map[int]int{}
	for _, r := range rows {
		if r.PriRep != "p" || r.State != "STARTED" {
			continue
		}
		n, err := NodeNumber(r.Node)
		if err != nil {
			return 0, err
		}
		count[n]++
	}
	return busiest(count, "started primaries")
}

// busiest is the key of count's largest value, the lowest key on a tie.
func busiest(count map[int]int, what string) (int, error) {
	if len(count) == 0 {
		return 0, fmt.Errorf("cluster: no %s", what)
	}
	keys := make([]int, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	best := keys[0]
	for _, k := range keys[1:] {
		if count[k] > count[best] {
			best = k
		}
	}
	return best, nil
}

// LeaderOfBusiestPartitions is the number of the broker leading the most
// partitions of topic, the lowest number on a tie. Brokers are numbered by
// their place in Brokers (which is their node id in real.sh's cluster).
func (c *Cluster) LeaderOfBusiestPartitions(ctx context.Context, topic string) (int, error) {
	var errs []error
	for _, addr := range c.Brokers {
		client := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
		md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: []string{topic}})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, t := range md.Topics {
			if t.Name != topic {
				continue
			}
			if t.Error != nil {
				return 0, fmt.Errorf("cluster: metadata of %s: %w", topic, t.Error)
			}
			return c.busiestLeader(t.Partitions)
		}
		return 0, fmt.Errorf("cluster: metadata has no topic %s", topic)
	}
	return 0, fmt.Errorf("cluster: metadata of %s: %w", topic, errors.Join(errs...))
}

// GroupCoordinator is the number (from 1) of the broker that coordinates
// consumer group group: the one whose death makes the group's members
// rejoin, and refuses their commits of the generation it knew.
func (c *Cluster) GroupCoordinator(ctx context.Context, group string) (int, error) {
	var errs []error
	for _, addr := range c.Brokers {
		client := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
		resp, err := client.FindCoordinator(ctx, &kafka.FindCoordinatorRequest{Key: group, KeyType: kafka.CoordinatorKeyTypeConsumer})
		if err == nil && resp.Error != nil {
			err = resp.Error
		}
		if err == nil && resp.Coordinator == nil {
			err = errors.New("no coordinator in the answer")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
			continue
		}
		co := resp.Coordinator
		return c.brokerNumber(kafka.Broker{ID: co.NodeID, Host: co.Host, Port: co.Port})
	}
	return 0, fmt.Errorf("cluster: coordinator of group %s: %w", group, errors.Join(errs...))
}

// busiestLeader maps each partition's leader to a broker number: the place
// of its address in Brokers, else its node id.
func (c *Cluster) busiestLeader(parts []kafka.Partition) (int, error) {
	count := map[int]int{}
	for _, p := range parts {
		if p.Leader.Host == "" && p.Leader.ID < 0 {
			continue // no leader now
		}
		n, err := c.brokerNumber(p.Leader)
		if err != nil {
			return 0, err
		}
		count[n]++
	}
	return busiest(count, "partition leaders")
}

func (c *Cluster) brokerNumber(b kafka.Broker) (int, error) {
	if b.Host != "" {
		addr := net.JoinHostPort(b.Host, strconv.Itoa(b.Port))
		for i, a := range c.Brokers {
			if a == addr {
				return i + 1, nil
			}
		}
	}
	if b.ID >= 1 && b.ID <= len(c.Brokers) {
		return b.ID, nil
	}
	return 0, fmt.Errorf("cluster: broker %d at %s:%d is none of %v", b.ID, b.Host, b.Port, c.Brokers)
}
