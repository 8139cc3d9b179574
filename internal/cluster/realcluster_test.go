//go:build realcluster

package cluster

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// fromEnvOrSkip is the cluster of real.sh's cluster profile, or a skip
// where ClusterVar does not say one runs.
func fromEnvOrSkip(t *testing.T) *Cluster {
	t.Helper()
	want, err := strconv.Atoi(os.Getenv(ClusterVar))
	if err != nil || want < 3 {
		t.Skipf("no cluster: set %s=3 with the variables of `REAL_CLUSTER=3 deploy/local/real.sh env`", ClusterVar)
	}
	c, err := FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != want || len(c.Brokers) != want {
		t.Fatalf("%s=%d, but %d node(s) and %d broker(s) in the environment", ClusterVar, want, len(c.Nodes), len(c.Brokers))
	}
	return c
}

func do(t *testing.T, method, url, body string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 && !(method == http.MethodDelete && resp.StatusCode == http.StatusNotFound) {
		t.Fatalf("%s %s: %s", method, url, resp.Status)
	}
}

// A node killed leaves a cluster of two, yellow or green (its replicas
// promoted), and, started again with its data, rejoins a green three.
func TestKillAndRestartANode(t *testing.T) {
	c := fromEnvOrSkip(t)
	n := len(c.Nodes)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := c.WaitGreen(ctx, n); err != nil {
		t.Fatal(err)
	}
	index := fmt.Sprintf("cluster-fault-%x", time.Now().UnixNano())
	do(t, http.MethodPut, c.Nodes[0]+"/"+index,
		`{"settings":{"number_of_shards":6,"number_of_replicas":1}}`)
	t.Cleanup(func() { do(t, http.MethodDelete, c.Nodes[len(c.Nodes)-1]+"/"+index, "") })
	if err := c.WaitGreen(ctx, n); err != nil {
		t.Fatal(err)
	}
	busiest, err := c.NodeWithMostPrimaries(ctx, index)
	if err != nil || busiest < 1 || busiest > n {
		t.Fatalf("NodeWithMostPrimaries = %d, %v", busiest, err)
	}
	t.Logf("node %d holds the most primaries of %s", busiest, index)

	start := time.Now()
	if err := c.Kill(OpenSearch, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pid(OpenSearch, 1); err == nil {
		t.Error("Pid of a killed node: no error")
	}
	if err := c.WaitStatus(ctx, "yellow", n-1); err != nil {
		t.Fatal(err)
	}
	t.Logf("yellow or green with %d nodes %v after the kill", n-1, time.Since(start).Round(time.Millisecond))
	if err := c.Start(OpenSearch, 1); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitGreen(ctx, n); err != nil {
		t.Fatal(err)
	}
	t.Logf("green with %d nodes %v after the kill", n, time.Since(start).Round(time.Millisecond))
	if _, err := c.NodeWithMostPrimaries(ctx, index); err != nil {
		t.Error(err)
	}
}

// Every broker leads some partitions of a topic of six partitions and
// three replicas; the busiest leader is one of them.
func TestLeaderOfBusiestPartitions(t *testing.T) {
	c := fromEnvOrSkip(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	topic := fmt.Sprintf("cluster-leaders-%x", time.Now().UnixNano())
	client := &kafka.Client{Addr: kafka.TCP(c.Brokers[0]), Timeout: 10 * time.Second}
	resp, err := client.CreateTopics(ctx, &kafka.CreateTopicsRequest{Topics: []kafka.TopicConfig{
		{Topic: topic, NumPartitions: 6, ReplicationFactor: len(c.Brokers)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Errors[topic]; err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.DeleteTopics(context.Background(), &kafka.DeleteTopicsRequest{Topics: []string{topic}}) })
	var leader int
	for {
		leader, err = c.LeaderOfBusiestPartitions(ctx, topic)
		if err == nil || ctx.Err() != nil {
			break
		}
		time.Sleep(200 * time.Millisecond) // the topic's metadata spreads
	}
	if err != nil || leader < 1 || leader > len(c.Brokers) {
		t.Fatalf("LeaderOfBusiestPartitions = %d, %v", leader, err)
	}
	t.Logf("broker %d leads the most partitions of %s", leader, topic)
}
