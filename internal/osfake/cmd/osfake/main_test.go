package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

func TestRunServesUntilCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs testenv.LogBuffer
	addrs := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-addr", "127.0.0.1:0", "-cluster-name", "demo", "-version", "2.19.6"}, &logs, func(a string) { addrs <- a })
	}()
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		t.Fatalf("run returned before serving: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("run did not start listening")
	}

	client, err := opensearchapi.NewClient(opensearchapi.Config{Client: opensearch.Config{Addresses: []string{"http://" + addr}}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := client.Info(ctx, nil)
	if err != nil || info.ClusterName != "demo" || info.Version.Distribution != "opensearch" || info.Version.Number != "2.19.6" {
		t.Fatalf("Info = %+v, %v, want cluster demo at version 2.19.6", info, err)
	}
	if _, err := client.Indices.Create(ctx, opensearchapi.IndicesCreateReq{Index: "restaurants"}); err != nil {
		t.Fatalf("Indices.Create = %v", err)
	}
	health, err := client.Cluster.Health(ctx, &opensearchapi.ClusterHealthReq{Indices: []string{"restaurants"}})
	if err != nil || health.Status != "green" {
		t.Fatalf("Cluster.Health = %+v, %v, want green", health, err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("run after cancel = %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("run did not stop after cancel")
	}
	if _, err := client.Info(context.Background(), nil); err == nil {
		t.Error("Info after shutdown succeeded, want the listener closed")
	}
	for _, want := range []string{"osfake listening", "addr=" + addr, "version=2.19.6", "osfake stopped"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("logs lack %q:\n%s", want, logs.String())
		}
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"all interfaces", []string{"-addr", ":0"}, "not a loopback address"},
		{"unspecified IP", []string{"-addr", "0.0.0.0:0"}, "-allow-remote"},
		{"no port", []string{"-addr", "127.0.0.1"}, "missing port"},
		{"unknown flag", []string{"-port", "9200"}, "flag provided but not defined"},
		{"stray argument", []string{"serve"}, "unexpected arguments"},
		{"unknown line", []string{"-version", "3.8.0"}, `-version "3.8.0": the emulator answers as 2.19.x or 3.9.x`},
		{"not a version", []string{"-version", "3.9"}, `-version "3.9": the emulator answers as 2.19.x or 3.9.x`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stderr, func(string) { t.Error("listening despite bad flags") })
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%v) = %v, want a usage error mentioning %q", tc.args, err, tc.want)
			}
		})
	}
}

func TestCheckAddr(t *testing.T) {
	cases := []struct {
		addr        string
		allowRemote bool
		ok          bool
	}{
		{"127.0.0.1:9200", false, true},
		{"127.0.0.2:9200", false, true},
		{"localhost:9200", false, true},
		{"[::1]:9200", false, true},
		{":9200", false, false},
		{"0.0.0.0:9200", false, false},
		{"[::]:9200", false, false},
		{"10.1.2.3:9200", false, false},
		{"search.example:9200", false, false},
		{":9200", true, true},
		{"10.1.2.3:9200", true, true},
	}
	for _, tc := range cases {
		err := checkAddr(tc.addr, tc.allowRemote)
		if (err == nil) != tc.ok {
			t.Errorf("checkAddr(%q, %v) = %v, want ok=%v", tc.addr, tc.allowRemote, err, tc.ok)
		}
	}
}
