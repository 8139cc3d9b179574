package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"

	"github.com/opensearch-project/opensearch-go/v4"
)

// Admin makes the small, non-bulk calls ingest and reshard need: index
// creation, mappings _meta, aliases, refresh, counts and search pages. It
// decodes only what it returns.
type Admin struct {
	client *opensearch.Client
}

// NewAdmin returns an Admin that sends through client.
func NewAdmin(client *opensearch.Client) *Admin { return &Admin{client: client} }

// APIError is an OpenSearch error response.
type APIError struct {
	Method, Path string
	Status       int
	Type, Reason string
}

func (e *APIError) Error() string {
	if e.Type == "" {
		return fmt.Sprintf("bulk: %s %s: status %d: %s", e.Method, e.Path, e.Status, e.Reason)
	}
	return fmt.Sprintf("bulk: %s %s: status %d %s: %s", e.Method, e.Path, e.Status, e.Type, e.Reason)
}

// IsNotFound reports a 404 (a missing index, alias or document).
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// do sends one request and decodes a 2xx JSON answer into out (if not
// nil). Other statuses become *APIError.
func (a *Admin) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	case json.RawMessage:
		rd = bytes.NewReader(b)
	default:
		enc, err := json.Marshal(b)
		if err != nil {
			return fmt.Errorf("bulk: %s %s: encode body: %w", method, path, err)
		}
		rd = bytes.NewReader(enc)
	}
	req, err := http.NewRequestWithContext(ctx, method, path, rd)
	if err != nil {
		return err
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := a.client.Perform(req)
	if err != nil {
		return fmt.Errorf("bulk: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("bulk: %s %s: read response: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ie := requestFailure(resp.StatusCode, data)
		return &APIError{Method: method, Path: path, Status: resp.StatusCode, Type: ie.Type, Reason: ie.Reason}
	}
	if out != nil && method != http.MethodHead {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("bulk: %s %s: decode response: %w", method, path, err)
		}
	}
	return nil
}

func esc(s string) string { return url.PathEscape(s) }

// CreateIndex creates an index from a create-index body.
func (a *Admin) CreateIndex(ctx context.Context, name string, body []byte) error {
	return a.do(ctx, http.MethodPut, "/"+esc(name), body, nil)
}

// DeleteIndex deletes an index.
func (a *Admin) DeleteIndex(ctx context.Context, name string) error {
	return a.do(ctx, http.MethodDelete, "/"+esc(name), nil, nil)
}

// IndexExists reports whether an index or alias of that name exists.
func (a *Admin) IndexExists(ctx context.Context, name string) (bool, error) {
	err := a.do(ctx, http.MethodHead, "/"+esc(name), nil, nil)
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
	if err := a.do(ctx, http.MethodGet, "/"+esc(index)+"/_mapping", nil, &out); err != nil {
		return nil, err
	}
	m, ok := out[index]
	if !ok {
		return nil, fmt.Errorf("bulk: GET /%s/_mapping: the answer does not name the index", index)
	}
	return m.Mappings.Meta, nil
}

// AliasTarget is one index an alias points to.
type AliasTarget struct {
	Index        string
	IsWriteIndex *bool
}

// Alias returns the indices an alias points to, by index name.
func (a *Admin) Alias(ctx context.Context, alias string) ([]AliasTarget, error) {
	var out map[string]struct {
		Aliases map[string]struct {
			IsWriteIndex *bool `json:"is_write_index"`
		} `json:"aliases"`
	}
	if err := a.do(ctx, http.MethodGet, "/_alias/"+esc(alias), nil, &out); err != nil {
		return nil, err
	}
	var ts []AliasTarget
	for idx, v := range out {
		if meta, ok := v.Aliases[alias]; ok {
			ts = append(ts, AliasTarget{Index: idx, IsWriteIndex: meta.IsWriteIndex})
		}
	}
	sort.Slice(ts, func(i, j int) bool { return ts[i].Index < ts[j].Index })
	return ts, nil
}

// WriteIndex resolves an alias to its write index, by the server's rule:
// the index flagged is_write_index, or the only index when none is
// flagged. A concrete index name resolves to itself.
func (a *Admin) WriteIndex(ctx context.Context, name string) (string, error) {
	ts, err := a.Alias(ctx, name)
	if IsNotFound(err) {
		if ok, err := a.IndexExists(ctx, name); err != nil || !ok {
			return "", fmt.Errorf("bulk: %q is neither an alias nor an index", name)
		}
		return name, nil
	}
	if err != nil {
		return "", err
	}
	var flagged []string
	for _, t := range ts {
		if t.IsWriteIndex != nil && *t.IsWriteIndex {
			flagged = append(flagged, t.Index)
		}
	}
	switch {
	case len(flagged) == 1:
		return flagged[0], nil
	case len(flagged) == 0 && len(ts) == 1 && ts[0].IsWriteIndex == nil:
		return ts[0].Index, nil
	}
	return "", fmt.Errorf("bulk: alias %q has no single write index (it points to %d indices)", name, len(ts))
}

// AliasAction is one action of an atomic _aliases request.
type AliasAction struct {
	Add         *AliasSpec `json:"add,omitempty"`
	Remove      *AliasSpec `json:"remove,omitempty"`
	RemoveIndex *AliasSpec `json:"remove_index,omitempty"`
}

// AliasSpec names an index and an alias, with the options of an add.
type AliasSpec struct {
	Index        string `json:"index"`
	Alias        string `json:"alias,omitempty"`
	IsWriteIndex *bool  `json:"is_write_index,omitempty"`
	MustExist    *bool  `json:"must_exist,omitempty"`
}

// UpdateAliases applies alias actions in one atomic request: all or none.
func (a *Admin) UpdateAliases(ctx context.Context, actions []AliasAction) error {
	return a.do(ctx, http.MethodPost, "/_aliases", map[string]any{"actions": actions}, nil)
}

// AliasRequestBody is the body UpdateAliases sends, for dry runs.
func AliasRequestBody(actions []AliasAction) ([]byte, error) {
	return json.MarshalIndent(map[string]any{"actions": actions}, "", "  ")
}

// PutSettings updates dynamic index settings.
func (a *Admin) PutSettings(ctx context.Context, index string, settings map[string]any) error {
	return a.do(ctx, http.MethodPut, "/"+esc(index)+"/_settings", map[string]any{"index": settings}, nil)
}

// Refresh makes every write so far visible to search and count.
func (a *Admin) Refresh(ctx context.Context, index string) error {
	return a.do(ctx, http.MethodPost, "/"+esc(index)+"/_refresh", nil, nil)
}

// Health waits up to timeout (an OpenSearch time value such as "30s")
// for the cluster, or an index, to reach status ("green" or "yellow").
func (a *Admin) Health(ctx context.Context, index, status, timeout string) error {
	path := "/_cluster/health"
	if index != "" {
		path += "/" + esc(index)
	}
	path += "?wait_for_status=" + url.QueryEscape(status) + "&timeout=" + url.QueryEscape(timeout)
	var out struct {
		Status   string `json:"status"`
		TimedOut bool   `json:"timed_out"`
	}
	err := a.do(ctx, http.MethodGet, path, nil, &out)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusRequestTimeout {
		return fmt.Errorf("bulk: cluster health did not reach %s within %s", status, timeout)
	}
	return err
}

// SearchParams target a search or count.
type SearchParams struct {
	// Routing is the comma-joined routing of the shards to ask.
	Routing string
	// Preference such as "_shards:3".
	Preference string
}

func (p SearchParams) query() string {
	v := url.Values{}
	if p.Routing != "" {
		v.Set("routing", p.Routing)
	}
	if p.Preference != "" {
		v.Set("preference", p.Preference)
	}
	if len(v) == 0 {
		return ""
	}
	return "?" + v.Encode()
}

// Count counts the documents matching query (nil: all) as of the last
// refresh.
func (a *Admin) Count(ctx context.Context, index string, query json.RawMessage, p SearchParams) (int64, error) {
	var body any
	if len(query) > 0 {
		body = map[string]json.RawMessage{"query": query}
	}
	var out struct {
		Count int64 `json:"count"`
	}
	if err := a.do(ctx, http.MethodPost, "/"+esc(index)+"/_count"+p.query(), body, &out); err != nil {
		return 0, err
	}
	return out.Count, nil
}

// Hit is one search hit.
type Hit struct {
	Index   string            `json:"_index"`
	ID      string            `json:"_id"`
	Routing string            `json:"_routing"`
	Source  json.RawMessage   `json:"_source"`
	Sort    []json.RawMessage `json:"sort"`
}

// Page is one page of search hits.
type Page struct {
	Hits  []Hit
	Total int64
	// Shards is the number of shards the search asked (_shards.total).
	Shards int
}

// Search runs a search whose body the caller builds (query, sort,
// search_after, size, _source) and returns its hits.
func (a *Admin) Search(ctx context.Context, index string, body []byte, p SearchParams) (*Page, error) {
	var out struct {
		Shards struct {
			Total int `json:"total"`
		} `json:"_shards"`
		Hits struct {
			Total struct {
				Value int64 `json:"value"`
			} `json:"total"`
			Hits []Hit `json:"hits"`
		} `json:"hits"`
	}
	if err := a.do(ctx, http.MethodPost, "/"+esc(index)+"/_search"+p.query(), json.RawMessage(body), &out); err != nil {
		return nil, err
	}
	return &Page{Hits: out.Hits.Hits, Total: out.Hits.Total.Value, Shards: out.Shards.Total}, nil
}

// Get fetches a document by id and routing (real time). found is false for
// a missing document.
func (a *Admin) Get(ctx context.Context, index, id, routing string) (src json.RawMessage, version int64, found bool, err error) {
	path := "/" + esc(index) + "/_doc/" + esc(id)
	if routing != "" {
		path += "?routing=" + url.QueryEscape(routing)
	}
	var out struct {
		Found   bool            `json:"found"`
		Version int64           `json:"_version"`
		Source  json.RawMessage `json:"_source"`
	}
	err = a.do(ctx, http.MethodGet, path, nil, &out)
	if IsNotFound(err) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	return out.Source, out.Version, out.Found, nil
}
