package bulk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/realenv"
)

func TestIndexCalls(t *testing.T) {
	realenv.Parallel(t)
	e := newAdminEnv(t)
	a := e.a
	ctx := context.Background()
	v1, nope := e.index(t, "menu-v1"), e.index(t, "nope")
	body := []byte(`{"settings":{"number_of_shards":3,"number_of_replicas":0},"mappings":{"_meta":{"owner":"geoshard"},"properties":{"k":{"type":"keyword"}}}}`)
	if err := a.CreateIndex(ctx, v1, body); err != nil {
		t.Fatal(err)
	}
	err := a.CreateIndex(ctx, v1, body)
	if ae, ok := err.(*APIError); !ok || ae.Status != 400 || ae.Type != "resource_already_exists_exception" {
		t.Errorf("second CreateIndex = %v, want a 400 resource_already_exists_exception", err)
	}
	if !IsAlreadyExists(err) {
		t.Errorf("second CreateIndex = %v, want IsAlreadyExists", err)
	}
	if ok, err := a.IndexExists(ctx, v1); !ok || err != nil {
		t.Errorf("IndexExists(%s) = %v, %v", v1, ok, err)
	}
	if ok, err := a.IndexExists(ctx, nope); ok || err != nil {
		t.Errorf("IndexExists(%s) = %v, %v", nope, ok, err)
	}
	meta, err := a.Meta(ctx, v1)
	if err != nil || !strings.Contains(string(meta), `"owner":"geoshard"`) {
		t.Errorf("Meta = %s, %v", meta, err)
	}
	// How long a wait for a health status may take before the test fails:
	// the cluster answers as soon as the status is reached, which for a
	// replica on a cluster's second node is a recovery away.
	healthWait := fmt.Sprintf("%ds", int(realenv.Slack(6*time.Second)/time.Second))
	var health struct{ Status string }
	if err := a.Send(ctx, HealthRequest(v1, "green", healthWait), &health); err != nil || health.Status != "green" {
		t.Errorf("HealthRequest(green) without replicas = %+v, %v", health, err)
	}

	// Settings, through the request value Send sends.
	req, err := PutSettingsRequest(v1, map[string]any{"gc_deletes": "1h"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Send(ctx, req, nil); err != nil {
		t.Fatal(err)
	}
	set, err := a.Settings(ctx, v1)
	if err != nil || set["index.gc_deletes"] != "1h" || set["index.number_of_replicas"] != "0" || set["index.number_of_shards"] != "3" {
		t.Errorf("Settings = %v, %v", set, err)
	}

	// One replica is assigned only where there is a second data node:
	// the emulator pretends to have three, and so has real.sh's cluster
	// profile, where the index turns green once the replicas have
	// recovered; the single real node is alone, and there the wait for
	// green times out (408).
	var cluster struct {
		DataNodes int `json:"number_of_data_nodes"`
	}
	if err := a.Send(ctx, Request{Method: http.MethodGet, Path: "/_cluster/health"}, &cluster); err != nil || cluster.DataNodes < 1 {
		t.Fatalf("cluster health = %+v, %v", cluster, err)
	}
	if err := a.PutSettings(ctx, v1, map[string]any{"number_of_replicas": 1}); err != nil {
		t.Errorf("PutSettings: %v", err)
	}
	if set, err := a.Settings(ctx, v1); err != nil || set["index.number_of_replicas"] != "1" {
		t.Errorf("Settings after PutSettings = %v, %v", set, err)
	}
	if err := a.Send(ctx, HealthRequest(v1, "yellow", healthWait), nil); err != nil {
		t.Errorf("HealthRequest(yellow): %v", err)
	}
	var ae *APIError
	if cluster.DataNodes > 1 {
		if err := a.Send(ctx, HealthRequest(v1, "green", healthWait), &health); err != nil || health.Status != "green" {
			t.Errorf("HealthRequest(green) with %d data nodes and a replica = %+v, %v", cluster.DataNodes, health, err)
		}
	} else if err := a.Send(ctx, HealthRequest(v1, "green", "1s"), nil); !(errors.As(err, &ae) && ae.Status == http.StatusRequestTimeout) {
		// The 408 is the outcome: green can never come, and the 1 s is
		// only how long the node waits before it says so.
		t.Errorf("HealthRequest(green) with one data node and a replica = %v, want a 408", err)
	}

	if err := a.DeleteIndex(ctx, v1); err != nil {
		t.Errorf("DeleteIndex: %v", err)
	}
	if ok, err := a.IndexExists(ctx, v1); ok || err != nil {
		t.Errorf("IndexExists(%s) after DeleteIndex = %v, %v", v1, ok, err)
	}
	if err := a.DeleteIndex(ctx, v1); !IsNotFound(err) {
		t.Errorf("DeleteIndex(missing) = %v, want a not-found error", err)
	}
}

func TestIndexNames(t *testing.T) {
	realenv.Parallel(t)
	e := newAdminEnv(t)
	a := e.a
	ctx := context.Background()
	v1, v3, vintage, other := e.index(t, "menu-v1"), e.index(t, "menu-v3"), e.index(t, "menu-vintage"), e.index(t, "other")
	for _, ix := range []string{v1, v3, vintage, other} {
		if err := a.CreateIndex(ctx, ix, []byte(`{"settings":{"number_of_shards":2}}`)); err != nil {
			t.Fatal(err)
		}
	}
	if names, err := a.IndexNames(ctx, e.prefix+"menu-v*"); err != nil || !reflect.DeepEqual(names, []string{v1, v3, vintage}) {
		t.Errorf("IndexNames(%smenu-v*) = %v, %v", e.prefix, names, err)
	}
	if names, err := a.IndexNames(ctx, e.prefix+"nothing-*"); err != nil || len(names) != 0 {
		t.Errorf("IndexNames(%snothing-*) = %v, %v; want none", e.prefix, names, err)
	}
	if err := a.Send(ctx, DeleteIndexRequest(vintage), nil); err != nil {
		t.Errorf("DeleteIndexRequest: %v", err)
	}
	if names, err := a.IndexNames(ctx, e.prefix+"menu-v*"); err != nil || !reflect.DeepEqual(names, []string{v1, v3}) {
		t.Errorf("IndexNames(%smenu-v*) after deleting %s = %v, %v", e.prefix, vintage, names, err)
	}
}
