package benchrun

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ingestRun is one run of ingest against an alias and topics, in a group.
type ingestRun struct {
	alias, group string
	topics       eventTopics
	metricsAddr  string
	// pprof serves Go's profiles beside the metrics (--pprof).
	pprof bool
	// flags are more flags for ingest.
	flags []string
}

// startIngest starts the built ingest at its defaults, but for where it
// reads, writes and serves its metrics.
func (b *bench) startIngest(r *ingestRun, logName string, epoch time.Time) (*Child, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	r.metricsAddr = addr
	// Ingest parks the dishes that wait for their restaurant in a topic of
	// its own, named after its group, which it creates.
	b.groups = append(b.groups, r.group)
	b.topics = append(b.topics, r.group+".parked")
	args := []string{
		"--brokers", strings.Join(b.cfg.Brokers, ","),
		"--opensearch", b.cfg.OpenSearch,
		"--alias", r.alias,
		"--group", r.group,
		"--restaurant-topic", r.topics.restaurants,
		"--dish-topic", r.topics.dishes,
		"--dlq-topic", r.topics.dlq,
		"--metrics-addr", addr,
	}
	if r.pprof {
		args = append(args, "--pprof")
	}
	args = append(args, r.flags...)
	return StartChild(ChildSpec{
		Name:    "ingest",
		Path:    b.bin["ingest"],
		Args:    args,
		Env:     childEnv(),
		LogPath: filepath.Join(b.work, logName),
		WarmMsg: "directory warm",
	}, epoch)
}

// scrape reads ingest's /metrics.
func scrape(ctx context.Context, hc *http.Client, addr string) (Metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	body, err := get(ctx, hc, addr, "/metrics")
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, 32<<20))
	if err != nil {
		return nil, err
	}
	return ParseMetrics(string(data))
}

// saveHeap saves ingest's heap profile, taken after a collection
// (/debug/pprof/heap?gc=1; ingest runs with --pprof), to path.
func saveHeap(ctx context.Context, hc *http.Client, addr, path string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, err := get(ctx, hc, addr, "/debug/pprof/heap?gc=1")
	if err != nil {
		return err
	}
	defer body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// get GETs path from ingest's metrics listener and returns the body of a
// 200 answer; any other status is an error.
func get(ctx context.Context, hc *http.Client, addr, path string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("benchrun: GET %s: %s", path, resp.Status)
	}
	return resp.Body, nil
}

// The ingest metrics the harness follows.
const (
	metricEvents    = "geoshard_ingest_events_total"
	metricBulkItems = "geoshard_bulk_items_total"
	metricHeapInuse = "go_memstats_heap_inuse_bytes"
	metricDirectory = "geoshard_ingest_directory_restaurants"
)
