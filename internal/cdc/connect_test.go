package cdc

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestSourceConfig(t *testing.T) {
	src := Source{
		DSN:         "postgres://postgres:pw@127.0.0.1:5432/menu?sslmode=disable",
		Tables:      []string{"s.restaurants", "s.dishes"},
		Slot:        "geoshard_1",
		Publication: "geoshard_1",
		TopicPrefix: "geoshard",
		Schemas:     true,
		Partitions:  4,
	}
	cfg, err := src.Config()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"database.hostname":                 "127.0.0.1",
		"database.port":                     "5432",
		"database.user":                     "postgres",
		"database.password":                 "pw",
		"database.dbname":                   "menu",
		"table.include.list":                "s.restaurants,s.dishes",
		"plugin.name":                       "pgoutput",
		"slot.name":                         "geoshard_1",
		"value.converter.schemas.enable":    "true",
		"key.converter.schemas.enable":      "true",
		"topic.creation.default.partitions": "4",
	} {
		if cfg[k] != want {
			t.Errorf("Config()[%q] = %q, want %q", k, cfg[k], want)
		}
	}
	src.Partitions = 0
	if cfg, _ := src.Config(); cfg["topic.creation.default.partitions"] != "1" {
		t.Errorf("Config() with Partitions 0: topic.creation.default.partitions = %q, want 1", cfg["topic.creation.default.partitions"])
	}
}

func TestSourceConfigNamesEveryBadField(t *testing.T) {
	_, err := Source{DSN: "localhost", Slot: "Bad-Slot", Partitions: -1}.Config()
	if err == nil {
		t.Fatal("Config() of a bad source: no error")
	}
	for _, w := range []string{"DSN", "Tables", "Slot", "Publication", "TopicPrefix", "Partitions"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("Config() error %q does not name %s", err, w)
		}
	}
}

// fakeWorker answers the status of one connector with the states given,
// one per request, the last one from then on.
func fakeWorker(t *testing.T, states ...ConnectorStatus) *httptest.Server {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/connectors/c/status" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		s := states[0]
		if len(states) > 1 {
			states = states[1:]
		}
		mu.Unlock()
		json.NewEncoder(w).Encode(s)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func status(connector string, tasks ...string) ConnectorStatus {
	var s ConnectorStatus
	s.Name, s.Connector.State = "c", connector
	for i, st := range tasks {
		s.Tasks = append(s.Tasks, struct {
			ID int `json:"id"`
			TaskStatus
		}{ID: i, TaskStatus: TaskStatus{State: st, Trace: "trace of " + st}})
	}
	return s
}

func TestWaitRunning(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := fakeWorker(t, status("UNASSIGNED"), status("RUNNING"), status("RUNNING", "UNASSIGNED"), status("RUNNING", "RUNNING"))
	if err := (&Connect{URL: srv.URL}).WaitRunning(ctx, "c"); err != nil {
		t.Errorf("WaitRunning = %v, want nil once the connector and its task run", err)
	}
}

func TestWaitRunningStopsAtAFailure(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	srv := fakeWorker(t, status("RUNNING", "UNASSIGNED"), status("RUNNING", "FAILED"))
	err := (&Connect{URL: srv.URL}).WaitRunning(ctx, "c")
	if err == nil || !strings.Contains(err.Error(), "trace of FAILED") {
		t.Errorf("WaitRunning = %v, want the failed task's trace", err)
	}
	if ctx.Err() != nil {
		t.Errorf("WaitRunning waited for its context to end instead of returning at the failure")
	}
}
