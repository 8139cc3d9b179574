package serve

import (
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

func TestServesMetricsAndExtraHandlers(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "geoshard_test_total", Help: "test"})
	reg.MustRegister(c)
	c.Inc()
	stop, addr, err := Start("127.0.0.1:0", reg, map[string]http.Handler{
		"/healthz": http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok\n") }),
	}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	get := func(path string) string {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if m := get("/metrics"); !strings.Contains(m, "geoshard_test_total 1") {
		t.Errorf("/metrics = %q", m)
	}
	if h := get("/healthz"); h != "ok\n" {
		t.Errorf("/healthz = %q", h)
	}
	stop()
	if _, err := http.Get("http://" + addr + "/metrics"); err == nil {
		t.Errorf("server still answers after stop")
	}
	if _, _, err := Start("256.0.0.1:bad", reg, nil, slog.New(slog.DiscardHandler)); err == nil {
		t.Errorf("Start on a bad address succeeded")
	}
}
