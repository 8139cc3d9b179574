package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

func envOf(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestBadFlagsExit2(t *testing.T) {
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"unknown flag", []string{"--nope"}, nil, "flag provided but not defined"},
		{"stray argument", []string{"extra"}, nil, `unexpected argument "extra"`},
		{"bad log level", []string{"--log-level", "loud"}, nil, `--log-level "loud"`},
		{"bad opensearch url", []string{"--opensearch", "ftp://x"}, nil, `"ftp://x"`},
		{"negative demo events", []string{"--embedded", "--demo-events", "-1"}, nil, "--demo-events -1"},
		{"bad env duration", []string{"--flush-interval", "soon"}, nil, "invalid value"},
		{"bad dish key", []string{"--dish-key", "id"}, nil, `--dish-key "id": want restaurant or dish`},
		{"bad env int", nil, map[string]string{"GEOSHARD_WORKERS": "abc"}, `GEOSHARD_WORKERS="abc": not a valid value for --workers`},
		{"env duration without a unit", nil, map[string]string{"GEOSHARD_FLUSH_INTERVAL": "100"}, `GEOSHARD_FLUSH_INTERVAL="100": not a valid value for --flush-interval`},
		{"bad env bool", nil, map[string]string{"GEOSHARD_KAFKA_TLS": "yes"}, `GEOSHARD_KAFKA_TLS="yes": not a valid value for --kafka-tls`},
		{"bad env bool of the client", nil, map[string]string{"GEOSHARD_OPENSEARCH_INSECURE": "sure"}, `GEOSHARD_OPENSEARCH_INSECURE="sure"`},
		{"bad env dish key", nil, map[string]string{"GEOSHARD_DISH_KEY": "id"}, `--dish-key "id"`},
		{"bad restaurant partitioner", []string{"--dish-key", "dish", "--restaurant-partitioner", "crc16"}, nil, `--restaurant-partitioner "crc16": want auto, murmur2, crc32, fnv1a or sarama`},
		{"bad env restaurant partitioner", nil, map[string]string{"GEOSHARD_RESTAURANT_PARTITIONER": "random"}, `--restaurant-partitioner "random"`},
		{"restaurant partitioner without dish key dish", []string{"--restaurant-partitioner", "crc32", "--metrics-addr", ""}, nil, `restaurant partitioner "crc32": only used with dish key "dish"`},
		{"dish key dish on one topic", []string{"--dish-key", "dish", "--dish-topic", "restaurants", "--metrics-addr", ""}, nil, "needs a dish topic of its own"},
		{"missing map file", []string{"--map", "/nonexistent/map.json", "--metrics-addr", ""}, nil, "--map"},
		{"non-loopback embedded address", []string{"--embedded", "--embedded-opensearch", "10.1.2.3:9200", "--metrics-addr", ""}, nil, "loopback"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(context.Background(), tc.args, envOf(tc.env), &out, &errb)
			if code != 2 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("ingest %v: exit %d, stderr %q; want 2 and %q", tc.args, code, errb.String(), tc.want)
			}
		})
	}
}

func TestEnvironmentSetsDefaultsAndSecretsStayHidden(t *testing.T) {
	env := map[string]string{
		"GEOSHARD_BROKERS": "k1:9092,k2:9092", "GEOSHARD_ALIAS": "food", "GEOSHARD_WORKERS": "7",
		"GEOSHARD_OPENSEARCH": "https://search:9200", "GEOSHARD_OPENSEARCH_USERNAME": "ingest",
		"GEOSHARD_OPENSEARCH_PASSWORD": "hunter2", "GEOSHARD_KAFKA_SASL_PASSWORD": "kafkapass",
		"GEOSHARD_DISH_KEY": "dish", "GEOSHARD_REPARTITION_TOPIC": "dishes.rekeyed", "GEOSHARD_PARKING_TOPIC": "ingest.waiting",
		"GEOSHARD_RESTAURANT_PARTITIONER": "crc32",
	}
	var errb bytes.Buffer
	o, err := parseFlags(nil, envOf(env), &errb)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.pipe.Brokers, ",") != "k1:9092,k2:9092" || o.pipe.Alias != "food" || o.pipe.Bulk.Workers != 7 ||
		o.client.Addresses[0] != "https://search:9200" || o.client.Password.Reveal() != "hunter2" || o.pipe.Kafka.Password.Reveal() != "kafkapass" ||
		o.pipe.DishKey != "dish" || o.pipe.RepartitionTopic != "dishes.rekeyed" || o.pipe.ParkingTopic != "ingest.waiting" ||
		o.pipe.RestaurantPartitioner != "crc32" {
		t.Errorf("options from the environment = %+v", o)
	}
	// Neither --help nor a printed config shows a secret.
	var help bytes.Buffer
	run(context.Background(), []string{"--help"}, envOf(env), &help, &help)
	for _, s := range []string{help.String(), errb.String(), strings.ReplaceAll(strings.ReplaceAll(
		sprint(o), "\n", " "), "\t", " ")} {
		if strings.Contains(s, "hunter2") || strings.Contains(s, "kafkapass") {
			t.Errorf("a secret was printed: %s", s)
		}
	}
}

// The embedded mode runs the whole job on a small stream: every routed
// search matches the all-shards search, and the metrics endpoint serves
// the pipeline's metrics while it runs.
func TestEmbeddedRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole embedded job")
	}
	var out, errb bytes.Buffer
	// No deadline of its own: a busy machine makes the run slower, not
	// wrong; the test binary's -timeout ends a run that hangs.
	code := run(t.Context(), []string{"--embedded", "--demo-events", "3000", "--metrics-addr", "127.0.0.1:0"}, envOf(nil), &out, &errb)
	if code != 0 {
		t.Fatalf("embedded run exit %d\nstdout:\n%s\nstderr:\n%s", code, out.String(), errb.String())
	}
	s := out.String()
	for _, want := range []string{"documents per shard:", "dead letters by reason:", "San Francisco 15 mi", "New York 50 mi"} {
		if !strings.Contains(s, want) {
			t.Errorf("summary lacks %q:\n%s", want, s)
		}
	}
	// The progress ends at 100% with nothing uncommitted, and the summary
	// says what its figures measure.
	if !regexp.MustCompile(`100\.0%  (\d+)/(\d+)  done  lag 0  waiting 0  dead \d+`).MatchString(s) {
		t.Errorf("no final progress line at 100%% with no lag:\n%s", s)
	}
	if !regexp.MustCompile(`(?m)^  \d+ events produced, before ingest started +\d+\.\d{3}s\n  ingest joined its group and read its directory +\d+\.\d{3}s\n  \d+ events indexed or dead-lettered`).MatchString(s) {
		t.Errorf("the summary does not say what its rate measures:\n%s", s)
	}
	// Three restaurant searches and four dish searches, each routed and of
	// every shard, agree.
	if strings.Contains(s, "  NO\n") || strings.Count(s, "  yes") != 7 || !strings.Contains(s, "dishes near a point") {
		t.Errorf("routed and all-shard searches disagree:\n%s", s)
	}
	if !regexp.MustCompile(`invalid_json +[1-9]`).MatchString(s) {
		t.Errorf("no poison event reached the dead-letter summary:\n%s", s)
	}
}

func TestHealthEndpoints(t *testing.T) {
	// /healthz answers as soon as the server is up; /readyz once the
	// pipeline has joined its group; /metrics serves the registry, the
	// pipeline's series among them. The listener takes a free port, which
	// the log names. Each is awaited, not timed: the embedded stack takes
	// as long as the machine lets it to start.
	var out, errb testenv.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--embedded", "--demo-events", "0", "--serve", "--metrics-addr", "127.0.0.1:0"}, envOf(nil), &out, &errb)
	}()
	serving := regexp.MustCompile(`msg="serving metrics" addr=(\S+)`)
	var addr string
	awaitRun(t, done, &out, &errb, "a log line naming the metrics listener", func() (bool, string) {
		if m := serving.FindStringSubmatch(errb.String()); m != nil {
			addr = m[1]
		}
		return addr != "", "none"
	})
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp.StatusCode, b.String()
	}
	for _, c := range []struct{ path, want string }{
		{"/healthz", "ok: consuming\n"},
		{"/readyz", "ready\n"},
		// Plain gauges and histograms are exported from the moment they
		// are registered; labelled series only once observed.
		{"/metrics", "geoshard_ingest_pending_dishes"},
		{"/metrics", "geoshard_bulk_request_duration_seconds"},
	} {
		awaitRun(t, done, &out, &errb, "200 from GET "+c.path+" with "+c.want, func() (bool, string) {
			code, body := get(c.path)
			return code == http.StatusOK && strings.Contains(body, c.want), fmt.Sprintf("%d %.200q", code, body)
		})
	}
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after the interrupt: %s", code, errb.String())
	}
}

// awaitRun polls cond until it holds, failing the test if the command
// exits first or if cond still fails after far longer than any machine
// needs (the deadline only stops a hang). cond says what it saw last.
func awaitRun(t *testing.T, done <-chan int, out, errb *testenv.LogBuffer, what string, cond func() (bool, string)) {
	t.Helper()
	const limit = 3 * time.Minute
	deadline := time.Now().Add(limit)
	for {
		ok, last := cond()
		if ok {
			return
		}
		select {
		case code := <-done:
			t.Fatalf("exit %d while waiting for %s (last: %s):\n%s\n%s", code, what, last, out.String(), errb.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %v (last: %s):\n%s\n%s", what, limit, last, out.String(), errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func sprint(v any) string { return fmt.Sprintf("%+v %#v", v, v) }

// With --serve the whole job keeps running after the summary: an event
// produced afterwards is indexed.
func TestEmbeddedServeKeepsIngesting(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole embedded job")
	}
	var out, errb testenv.LogBuffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--embedded", "--demo-events", "300", "--serve", "--metrics-addr", ""}, envOf(nil), &out, &errb)
	}()
	addrs := regexp.MustCompile(`serving until interrupted: Kafka (\S+), OpenSearch (\S+);`)
	var m []string
	awaitRun(t, done, &out, &errb, "serving line", func() (bool, string) {
		m = addrs.FindStringSubmatch(out.String())
		return m != nil, "none"
	})
	broker, osURL := m[1], m[2]
	w := &kafka.Writer{Addr: kafka.TCP(broker), Topic: "restaurants", Balancer: &kafka.Murmur2Balancer{}, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	ev := `{"type":"restaurant","op":"upsert","id":"after-serve","version":1,"location":{"lat":37.77,"lon":-122.42},"doc":{"name":"late"}}`
	if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("after-serve"), Value: []byte(ev)}); err != nil {
		t.Fatal(err)
	}
	query := `{"query":{"ids":{"values":["restaurant:after-serve"]}}}`
	awaitRun(t, done, &out, &errb, "search hit for the event produced after the summary", func() (bool, string) {
		resp, err := http.Post(osURL+"/menu/_search", "application/json", strings.NewReader(query))
		if err != nil {
			return false, err.Error()
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		return strings.Contains(b.String(), `"restaurant:after-serve"`), fmt.Sprintf("%.200q", b.String())
	})
	cancel()
	if code := <-done; code != 0 {
		t.Errorf("exit %d after the interrupt: %s", code, errb.String())
	}
}

// --pprof adds Go's profiles to the metrics listener; without it they are
// not served.
func TestPprofOnlyWhenAsked(t *testing.T) {
	for _, on := range []bool{false, true} {
		stop, addr, err := serveHTTP("127.0.0.1:0", on, prometheus.NewRegistry(), nil, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + addr + "/debug/pprof/heap?debug=1")
		if err != nil {
			stop()
			t.Fatal(err)
		}
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		resp.Body.Close()
		stop()
		switch {
		case on && (resp.StatusCode != http.StatusOK || !strings.Contains(b.String(), "heap profile")):
			t.Errorf("with --pprof: GET /debug/pprof/heap = %s, %.80q; want 200 and a heap profile", resp.Status, b.String())
		case !on && resp.StatusCode != http.StatusNotFound:
			t.Errorf("without --pprof: GET /debug/pprof/heap = %s, want 404", resp.Status)
		}
	}
}
