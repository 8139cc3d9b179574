package bulk

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/osfake"
	"github.com/geoshard/geoshard/internal/realenv"
)

// The writer reaches a TLS cluster that trusts only its own CA and
// requires basic auth, with the credentials from ClientConfig. The TLS
// front end and its password check are the test's own; behind them is the
// emulator, or under -tags realcluster a proxy to the real node (which
// runs plain HTTP without the security plugin).
func TestClientTLSAndBasicAuth(t *testing.T) {
	realenv.Parallel(t)
	var backend http.Handler = osfake.New(osfake.Options{})
	index := realenv.Unique("bulk-tls")
	if realenv.Enabled() {
		u, err := url.Parse(realenv.OpenSearchURL())
		if err != nil {
			t.Fatal(err)
		}
		proxy := httputil.NewSingleHostReverseProxy(u)
		backend = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Authorization")
			proxy.ServeHTTP(w, r)
		})
		e := newAdminEnv(t)
		index = e.index(t, "tls")
		if err := e.a.CreateIndex(context.Background(), index, []byte(`{"settings":{"number_of_shards":1,"number_of_replicas":0}}`)); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ingest" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		backend.ServeHTTP(w, r)
	}))
	defer srv.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(caFile, ca, 0o600); err != nil {
		t.Fatal(err)
	}

	write := func(cc ClientConfig) Result {
		client, err := NewClient(cc)
		if err != nil {
			t.Fatal(err)
		}
		var got Result
		w, err := New(client, Config{RetryMaxElapsed: 1, OnResult: func(r Result) { got = r }})
		if err != nil {
			t.Fatal(err)
		}
		w.Add(context.Background(), Item{Action: Index, Index: index, ID: "1", Body: []byte(`{"a":1}`)})
		w.Close(context.Background())
		return got
	}
	good := ClientConfig{Addresses: []string{srv.URL}, Username: "ingest", Password: NewSecret("s3cret"), CACertFile: caFile}
	if r := write(good); r.Outcome != OK {
		t.Errorf("with CA and credentials: %v %v, want ok", r.Outcome, r.Err)
	}
	bad := good
	bad.Password = NewSecret("wrong")
	if r := write(bad); r.Outcome != Permanent || r.Status != 401 {
		t.Errorf("with a wrong password: %v status %d, want permanent 401", r.Outcome, r.Status)
	}
	untrusted := good
	untrusted.CACertFile = ""
	if r := write(untrusted); r.Outcome != Failed || !strings.Contains(r.Err.Error(), "certificate") {
		t.Errorf("without the CA: %v %v, want a failure naming the certificate", r.Outcome, r.Err)
	}
	if _, err := NewClient(ClientConfig{Addresses: []string{srv.URL}, CACertFile: filepath.Join(t.TempDir(), "missing.pem")}); err == nil {
		t.Errorf("NewClient with a missing CA file succeeded")
	}
}

// Responses come uncompressed unless Gzip asks for them compressed: the
// client sends Accept-Encoding: gzip only then.
func TestClientGzip(t *testing.T) {
	for _, gz := range []bool{false, true} {
		t.Run(map[bool]string{false: "default", true: "gzip"}[gz], func(t *testing.T) {
			var got string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.Header.Get("Accept-Encoding")
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{}`))
			}))
			defer srv.Close()
			client, err := NewClient(ClientConfig{Addresses: []string{srv.URL}, Gzip: gz})
			if err != nil {
				t.Fatal(err)
			}
			if err := NewAdmin(client).Refresh(context.Background(), "menu"); err != nil {
				t.Fatal(err)
			}
			if want := map[bool]string{false: "", true: "gzip"}[gz]; got != want {
				t.Errorf("Accept-Encoding %q, want %q", got, want)
			}
		})
	}
}
