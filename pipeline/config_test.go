package pipeline

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
)

func TestConfigValidate(t *testing.T) {
	good := Config{Brokers: []string{"127.0.0.1:9092"}}
	if err := good.Validate(); err != nil {
		t.Fatalf("Validate(minimal) = %v", err)
	}
	d := good.withDefaults()
	if d.RestaurantTopic != "restaurants" || d.DishTopic != "dishes" || d.Group != "geoshard-ingest" || d.DLQTopic != "geoshard.dlq" ||
		d.Alias != "menu" || d.CommitInterval != time.Second || d.PendingMax != 100_000 || d.MaxEventBytes != 1<<20 ||
		d.PendingMaxAge != 5*time.Minute || d.StallTimeout != 2*time.Minute || d.DrainTimeout != 20*time.Second || d.MapCheckInterval != 30*time.Second ||
		d.MigrationPollInterval != 5*time.Second || !strings.HasSuffix(d.Instance, "-"+strconv.Itoa(os.Getpid())) {
		t.Errorf("withDefaults = %+v", d)
	}
	bad := Config{
		Brokers:               []string{"nohost"},
		DLQTopic:              "restaurants",
		MapHash:               "xyz",
		CommitInterval:        -time.Second,
		PendingMax:            -1,
		Instance:              strings.Repeat("i", 600),
		MigrationPollInterval: -time.Second,
		Kafka:                 KafkaConfig{SASLMechanism: "gssapi", HeartbeatInterval: time.Minute},
		Bulk:                  bulk.Config{Workers: -1, OnResult: func(bulk.Result) {}},
	}
	err := bad.Validate()
	if err == nil {
		t.Fatal("Validate(bad) = nil")
	}
	for _, want := range []string{`broker "nohost"`, "dlq topic", "map hash", "commit interval", "pending max", "SASL mechanism", "heartbeat", "bulk OnResult", "workers", "instance", "migration poll interval"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error %q does not mention %q", err, want)
		}
	}
	sasl := Config{Brokers: []string{"k:9092"}, Kafka: KafkaConfig{SASLMechanism: "scram-sha-512", Username: "u"}}
	if err := sasl.Validate(); err == nil || !strings.Contains(err.Error(), "needs a username and a password") {
		t.Errorf("Validate(scram without password) = %v", err)
	}
	sasl.Kafka.Password = bulk.NewSecret("pw")
	if err := sasl.Validate(); err != nil {
		t.Errorf("Validate(scram) = %v", err)
	}
	d2, tr, err := sasl.withDefaults().Kafka.KafkaDialer()
	if err != nil || d2.SASLMechanism == nil || tr.SASL == nil {
		t.Errorf("KafkaDialer(scram) = %v, %v, %v", d2, tr, err)
	}
	if _, err := New(Config{}, nil); err == nil {
		t.Error("New with a nil client succeeded")
	}
}

// TestMetricsAndHealth checks the exported metric names, OnProgress and
// Ready through a run that stalls on a failing cluster and recovers.
func TestMetricsAndHealth(t *testing.T) {
	realenv.EmulatorOnly(t, "stalls the pipeline with injected bulk failures")
	realenv.Parallel(t)
	e := newEnv(t, envOptions{partitions: 2})
	reg := prometheus.NewRegistry()
	cfg := e.config()
	cfg.Registerer = reg
	cfg.StallTimeout = 300 * time.Millisecond
	cfg.Bulk.RetryMaxElapsed = time.Minute
	var progress atomic.Int64
	cfg.OnProgress = func(Progress) { progress.Add(1) }
	p, err := New(cfg, e.client)
	if err != nil {
		t.Fatal(err)
	}
	if ok, why := p.Ready(); ok || why != "not started" {
		t.Errorf("Ready before Run = %v, %q", ok, why)
	}
	if err := e.os.SetFaults(osfake.Faults{FailRate: 1, FailEndpoints: []string{"bulk"}}); err != nil {
		t.Fatal(err)
	}
	r := &running{p: p, Running: testenv.Go(t, p.Run)}
	evs := encodeAll(restaurantWithDishes(5))
	e.produce(context.Background(), evs)
	waitFor := func(what string, f func() bool) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for !f() {
			if time.Now().After(deadline) {
				ok, why := p.Ready()
				t.Fatalf("timed out waiting for %s (Ready = %v, %q)", what, ok, why)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("a stall", func() bool {
		ok, why := p.Ready()
		return !ok && strings.HasPrefix(why, "stalled")
	})
	e.os.ClearFaults()
	e.waitCaughtUp(t, r, 20*time.Second)
	waitFor("ready", func() bool { ok, _ := p.Ready(); return ok })
	// The gauges are published with each progress report: every series
	// appears once a report has run after the catch-up.
	names := []string{
		"geoshard_ingest_consumer_lag", "geoshard_ingest_events_total", "geoshard_ingest_end_to_end_seconds",
		"geoshard_ingest_pending_dishes", "geoshard_ingest_directory_restaurants", "geoshard_ingest_dead_letters_total",
		"geoshard_ingest_last_progress_timestamp_seconds", "geoshard_ingest_moves_total", "geoshard_ingest_committed_offset",
		"geoshard_ingest_migration_phase", "geoshard_bulk_requests_total", "geoshard_bulk_items_total",
	}
	missing := func() []string {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		have := map[string]bool{}
		for _, mf := range mfs {
			have[mf.GetName()] = true
		}
		var out []string
		for _, name := range names {
			if !have[name] {
				out = append(out, name)
			}
		}
		return out
	}
	reports := progress.Load()
	waitFor("a progress report", func() bool { return progress.Load() > reports })
	waitFor("every metric", func() bool { return len(missing()) == 0 })
	st := p.Stats()
	if st.Events[EventKey{decode.TypeDish, decode.OpUpsert, resultWritten}] != 6 || st.Events[EventKey{decode.TypeRestaurant, decode.OpUpsert, resultWritten}] != 2 || st.Directory != 2 {
		t.Errorf("stats = %+v", st)
	}
	for k, ps := range st.Partitions {
		if ps.Lag != 0 || ps.Committed != ps.HighWatermark {
			t.Errorf("partition %s = %+v, want committed at the high watermark", k, ps)
		}
	}
}
