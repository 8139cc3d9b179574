package bulk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

// Index lifecycle, mappings _meta, settings and health: the calls that
// create, inspect, tune and remove whole indices.

// CreateIndex creates an index from a create-index body. An index that
// exists already fails with IsAlreadyExists.
func (a *Admin) CreateIndex(ctx context.Context, name string, body []byte) error {
	return a.Send(ctx, Request{Method: http.MethodPut, Path: "/" + esc(name), Body: body}, nil)
}

// DeleteIndexRequest deletes an index.
func DeleteIndexRequest(index string) Request {
	return Request{Method: http.MethodDelete, Path: "/" + esc(index)}
}

// DeleteIndex sends DeleteIndexRequest.
func (a *Admin) DeleteIndex(ctx context.Context, name string) error {
	return a.Send(ctx, DeleteIndexRequest(name), nil)
}

// IndexExists reports whether an index or alias of that name exists.
func (a *Admin) IndexExists(ctx context.Context, name string) (bool, error) {
	err := a.Send(ctx, Request{Method: http.MethodHead, Path: "/" + esc(name)}, nil)
	if IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// Meta returns an index's mapping _meta object (nil if it has none).
func (a *Admin) Meta(ctx context.Context, index string) (json.RawMessage, error) {
	var out map[string]struct {
		Mappings struct {
			Meta json.RawMessage `json:"_meta"`
		} `json:"mappings"`
	}
	if err := a.Send(ctx, Request{Method: http.MethodGet, Path: "/" + esc(index) + "/_mapping"}, &out); err != nil {
		return nil, err
	}
	m, ok := out[index]
	if !ok {
		return nil, fmt.Errorf("bulk: GET /%s/_mapping: the answer does not name the index", index)
	}
	return m.Mappings.Meta, nil
}

// Settings returns an index's settings in flat form
// ("index.number_of_replicas": "1"). Settings left at their defaults are
// absent.
func (a *Admin) Settings(ctx context.Context, index string) (map[string]string, error) {
	var out map[string]struct {
		Settings map[string]any `json:"settings"`
	}
	if err := a.Send(ctx, Request{Method: http.MethodGet, Path: "/" + esc(index) + "/_settings?flat_settings=true"}, &out); err != nil {
		return nil, err
	}
	s, ok := out[index]
	if !ok {
		return nil, fmt.Errorf("bulk: GET /%s/_settings: the answer does not name the index", index)
	}
	flat := make(map[string]string, len(s.Settings))
	for k, v := range s.Settings {
		switch x := v.(type) {
		case string:
			flat[k] = x
		default:
			b, _ := json.Marshal(x)
			flat[k] = string(b)
		}
	}
	return flat, nil
}

// PutSettingsRequest updates dynamic index settings:
// PUT /<index>/_settings {"index":{...}}. Keys are sorted, so the body is
// the same for the same settings.
func PutSettingsRequest(index string, settings map[string]any) (Request, error) {
	b, err := jsonBody(map[string]any{"index": settings})
	if err != nil {
		return Request{}, fmt.Errorf("bulk: settings of %s: %w", index, err)
	}
	return Request{Method: http.MethodPut, Path: "/" + esc(index) + "/_settings", Body: b}, nil
}

// PutSettings sends PutSettingsRequest.
func (a *Admin) PutSettings(ctx context.Context, index string, settings map[string]any) error {
	r, err := PutSettingsRequest(index, settings)
	if err != nil {
		return err
	}
	return a.Send(ctx, r, nil)
}

// Refresh makes every write so far visible to search and count.
func (a *Admin) Refresh(ctx context.Context, index string) error {
	return a.Send(ctx, Request{Method: http.MethodPost, Path: "/" + esc(index) + "/_refresh"}, nil)
}

// IndexNames lists the concrete indices whose names match a pattern such
// as "menu-v*" (none is not an error).
func (a *Admin) IndexNames(ctx context.Context, pattern string) ([]string, error) {
	var rows []struct {
		Index string `json:"index"`
	}
	if err := a.Send(ctx, Request{Method: http.MethodGet, Path: "/_cat/indices/" + esc(pattern) + "?format=json&h=index&s=index"}, &rows); err != nil {
		if IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	names := make([]string, 0, len(rows))
	for _, r := range rows {
		names = append(names, r.Index)
	}
	return names, nil
}

// HealthRequest waits up to timeout (an OpenSearch time value such as
// "5m") for an index to reach status ("green" or "yellow"). The server
// answers 408 (an *APIError) when the wait times out.
func HealthRequest(index, status, timeout string) Request {
	v := url.Values{}
	v.Set("wait_for_status", status)
	v.Set("timeout", timeout)
	return Request{Method: http.MethodGet, Path: "/_cluster/health/" + esc(index) + "?" + v.Encode()}
}
