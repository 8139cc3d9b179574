package benchrun

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Search is the few OpenSearch calls the harness makes, over plain HTTP.
type Search struct {
	base string
	hc   *http.Client
}

// NewSearch talks to the node at base (http://host:port).
func NewSearch(base string) *Search {
	return &Search{base: strings.TrimRight(base, "/"), hc: &http.Client{Timeout: 30 * time.Second}}
}

// IndexStats are the figures of an index's primaries the harness follows.
type IndexStats struct {
	Docs    int64        // docs.count: documents visible since the last refresh
	Writes  int64        // indexing.index_total + delete_total: operations applied
	Refresh RefreshStats // refresh.total and external_total
}

// ParseIndexStats reads the body of GET /<index>/_stats/docs,indexing,refresh.
func ParseIndexStats(body []byte) (IndexStats, error) {
	var v struct {
		All struct {
			Primaries struct {
				Docs struct {
					Count *int64 `json:"count"`
				} `json:"docs"`
				Indexing struct {
					IndexTotal  *int64 `json:"index_total"`
					DeleteTotal *int64 `json:"delete_total"`
				} `json:"indexing"`
				Refresh struct {
					Total         *int64 `json:"total"`
					ExternalTotal *int64 `json:"external_total"`
				} `json:"refresh"`
			} `json:"primaries"`
		} `json:"_all"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return IndexStats{}, fmt.Errorf("benchrun: index stats: %w", err)
	}
	p := v.All.Primaries
	for _, f := range []struct {
		name string
		v    *int64
	}{
		{"docs.count", p.Docs.Count}, {"indexing.index_total", p.Indexing.IndexTotal},
		{"indexing.delete_total", p.Indexing.DeleteTotal}, {"refresh.total", p.Refresh.Total},
		{"refresh.external_total", p.Refresh.ExternalTotal},
	} {
		if f.v == nil {
			return IndexStats{}, fmt.Errorf("benchrun: index stats: no _all.primaries.%s", f.name)
		}
	}
	return IndexStats{
		Docs:    *p.Docs.Count,
		Writes:  *p.Indexing.IndexTotal + *p.Indexing.DeleteTotal,
		Refresh: RefreshStats{Total: *p.Refresh.Total, External: *p.Refresh.ExternalTotal},
	}, nil
}

// IndexStats reads an index's stats.
func (s *Search) IndexStats(ctx context.Context, index string) (IndexStats, error) {
	body, err := s.do(ctx, http.MethodGet, "/"+url.PathEscape(index)+"/_stats/docs,indexing,refresh", http.StatusOK)
	if err != nil {
		return IndexStats{}, err
	}
	return ParseIndexStats(body)
}

// Refresh refreshes an index, so that docs.count counts every write.
func (s *Search) Refresh(ctx context.Context, index string) error {
	_, err := s.do(ctx, http.MethodPost, "/"+url.PathEscape(index)+"/_refresh", http.StatusOK)
	return err
}

// DeleteIndex deletes an index (and so its aliases); a missing one is not
// an error.
func (s *Search) DeleteIndex(ctx context.Context, index string) error {
	_, err := s.do(ctx, http.MethodDelete, "/"+url.PathEscape(index), http.StatusOK, http.StatusNotFound)
	return err
}

// Version is the node's version number, from GET /.
func (s *Search) Version(ctx context.Context) (string, error) {
	body, err := s.do(ctx, http.MethodGet, "/", http.StatusOK)
	if err != nil {
		return "", err
	}
	var v struct {
		Version struct {
			Number string `json:"number"`
		} `json:"version"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		return "", fmt.Errorf("benchrun: GET /: %w", err)
	}
	return v.Version.Number, nil
}

func (s *Search) do(ctx context.Context, method, path string, ok ...int) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, nil)
	if err != nil {
		return nil, err
	}
	return s.send(req, method, path, ok)
}

// doBody sends a JSON body and wants 200.
func (s *Search) doBody(ctx context.Context, method, path, body string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return s.send(req, method, path, []int{http.StatusOK})
}

func (s *Search) send(req *http.Request, method, path string, ok []int) ([]byte, error) {
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("benchrun: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("benchrun: %s %s: %w", method, path, err)
	}
	for _, code := range ok {
		if resp.StatusCode == code {
			return body, nil
		}
	}
	return nil, fmt.Errorf("benchrun: %s %s: %s: %.300s", method, path, resp.Status, body)
}
