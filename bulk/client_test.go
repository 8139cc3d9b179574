package bulk

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/osfake"
)

// The writer reaches a TLS cluster that trusts only its own CA and
// requires basic auth, with the credentials from ClientConfig.
func TestClientTLSAndBasicAuth(t *testing.T) {
	fake := osfake.New(osfake.Options{})
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "ingest" || p != "s3cret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		fake.ServeHTTP(w, r)
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
		w.Add(context.Background(), Item{Action: Index, Index: "menu", ID: "1", Body: []byte(`{"a":1}`)})
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
