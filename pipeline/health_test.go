package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/kafkatest"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/schema"
)

// lines are the log lines of message msg.
func logLines(s *testenv.LogBuffer, msg string) []string {
	var out []string
	for _, l := range strings.Split(s.String(), "\n") {
		if strings.Contains(l, "msg="+msg) || strings.Contains(l, `msg="`+msg) {
			out = append(out, l)
		}
	}
	return out
}

// A freePort is a loopback port nothing listens on (just now).
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return port
}

// waitUntil polls cond until it holds, failing the test with what it said
// last if the deadline passes first.
func waitUntil(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(realenv.Slack(timeout))
	why := ""
	for time.Now().Before(deadline) {
		var ok bool
		if ok, why = cond(); ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not after %v (last: %s)", what, timeout, why)
}

// heartbeatOf reads the instance's heartbeat document.
func (e *testEnv) heartbeatOf(t *testing.T, instance string) (schema.Heartbeat, bool) {
	t.Helper()
	var hb schema.Heartbeat
	raw, _, found, err := e.admin.Get(context.Background(), schema.MigrationsIndex, schema.HeartbeatDocID(testAlias, instance), "")
	if err != nil || !found {
		return hb, false
	}
	if err := json.Unmarshal(raw, &hb); err != nil {
		t.Fatal(err)
	}
	return hb, true
}

// An instance started before its brokers waits for them instead of
// exiting, and says so on Ready and in its heartbeat; once they come it
// consumes, and says that.
func TestWaitsForTheBrokersAndSaysSo(t *testing.T) {
	realenv.EmulatorOnly(t, "starts the broker on a port of the test's choosing after ingest")
	t.Parallel()
	port := freePort(t)
	e := &testEnv{t: t, m: testenv.LoadMap(t, testenv.MapUS18)}
	e.openSearch(t, false)
	cfg := Config{
		Brokers: []string{fmt.Sprintf("127.0.0.1:%d", port)}, RestaurantTopic: "menu-events", DishTopic: "menu-events",
		Group: "waits", DLQTopic: testDLQ, Alias: testAlias, Instance: "waiter",
		CommitInterval: 50 * time.Millisecond, MigrationPollInterval: 100 * time.Millisecond,
		Kafka: KafkaConfig{SessionTimeout: 3 * time.Second, HeartbeatInterval: 200 * time.Millisecond, RebalanceTimeout: 5 * time.Second,
			JoinGroupBackoff: 200 * time.Millisecond, MaxWait: 200 * time.Millisecond, DialTimeout: time.Second},
		Logger: testLogger(),
	}
	p, err := New(cfg, e.client)
	if err != nil {
		t.Fatal(err)
	}
	r := &running{p: p}
	done := make(chan error, 1)
	go func() { done <- p.Run(t.Context()) }()
	waitUntil(t, 30*time.Second, "Ready says the brokers cannot be reached", func() (bool, string) {
		ok, why := r.p.Ready()
		return !ok && strings.Contains(why, "cannot reach the Kafka brokers 127.0.0.1:"), why
	})
	if st := r.p.Stats().Health; st.State != schema.InstanceNoBroker || st.Since.IsZero() {
		t.Errorf("Stats().Health = %+v, want cannot_reach_broker with its start", st)
	}
	select {
	case err := <-done:
		t.Fatalf("Run returned %v while the brokers were down, want it to wait", err)
	default:
	}
	// The brokers come; the events topic with them.
	kafkatest.Start(t, kafkatest.WithPorts(port), kafkatest.WithTopic("menu-events", 2), kafkatest.WithTopic(testDLQ, 1))
	waitUntil(t, 60*time.Second, "consuming once the brokers answer", func() (bool, string) {
		h := r.p.Stats().Health
		return h.State == schema.InstanceConsuming, fmt.Sprintf("%+v", h)
	})
	waitUntil(t, 30*time.Second, "the heartbeat says consuming", func() (bool, string) {
		hb, ok := e.heartbeatOf(t, "waiter")
		return ok && hb.State == schema.InstanceConsuming && hb.Waiting == "", fmt.Sprintf("%+v", hb)
	})
}

// An instance whose OpenSearch answers 503 to everything says it cannot
// reach it, on Ready, while its writes are retried; once it answers the
// writes land and the instance is consuming again.
func TestSaysWhenOpenSearchCannotBeReached(t *testing.T) {
	realenv.EmulatorOnly(t, "injects 503 into every request")
	t.Parallel()
	e := newEnv(t, envOptions{partitions: 2})
	cfg := e.config()
	cfg.MigrationPollInterval = 100 * time.Millisecond
	r := e.start(cfg)
	waitUntil(t, 30*time.Second, "consuming", func() (bool, string) {
		ok, why := r.p.Ready()
		return ok && r.p.Stats().Health.State == schema.InstanceConsuming, why
	})
	if err := e.os.SetFaults(osfake.Faults{FailRate: 1, FailStatus: 503, FailEndpoints: []string{"all"}}); err != nil {
		t.Fatal(err)
	}
	evs := encodeAll([]genEvent{{typ: decode.TypeRestaurant, op: decode.OpUpsert, id: "r1", rid: "r1", version: 1, lat: 37.77, lon: -122.42, doc: map[string]any{"name": "one"}}})
	e.produce(context.Background(), evs)
	waitUntil(t, 30*time.Second, "Ready says OpenSearch cannot be reached", func() (bool, string) {
		ok, why := r.p.Ready()
		return !ok && strings.Contains(why, "cannot reach OpenSearch") && strings.Contains(why, "503"), why
	})
	if st := r.p.Stats().Health; st.State != schema.InstanceNoOpenSearch {
		t.Errorf("Stats().Health = %+v, want cannot_reach_opensearch", st)
	}
	e.os.ClearFaults()
	e.waitCaughtUp(t, r, 30*time.Second)
	waitUntil(t, 30*time.Second, "consuming again", func() (bool, string) {
		h := r.p.Stats().Health
		return h.State == schema.InstanceConsuming, fmt.Sprintf("%+v", h)
	})
	if _, ok := e.scanIndex(t)[schema.RestaurantID("r1")]; !ok {
		t.Error("the restaurant written while OpenSearch failed is not in the index")
	}
}
