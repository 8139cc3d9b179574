package bulk

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
)

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

// SearchRequest is POST /<index>/_search with a body the caller builds
// (query, sort, search_after, size, aggregations, _source), for callers
// that decode answers Search and Composite do not.
func SearchRequest(index string, body []byte, p SearchParams) Request {
	return Request{Method: http.MethodPost, Path: "/" + esc(index) + "/_search" + p.query(), Body: body}
}

// Count counts the documents matching query (nil: all) as of the last
// refresh.
func (a *Admin) Count(ctx context.Context, index string, query json.RawMessage, p SearchParams) (int64, error) {
	r := Request{Method: http.MethodPost, Path: "/" + esc(index) + "/_count" + p.query()}
	if len(query) > 0 {
		b, err := json.Marshal(map[string]json.RawMessage{"query": query})
		if err != nil {
			return 0, fmt.Errorf("bulk: %s %s: encode body: %w", r.Method, r.Path, err)
		}
		r.Body = b
	}
	var out struct {
		Count int64 `json:"count"`
	}
	if err := a.Send(ctx, r, &out); err != nil {
		return 0, err
	}
	return out.Count, nil
}

// Hit is one search hit.
type Hit struct {
	Index   string `json:"_index"`
	ID      string `json:"_id"`
	Routing string `json:"_routing"`
	// Version is the document's _version, when the search asked for it
	// ("version": true); 0 otherwise.
	Version int64             `json:"_version"`
	Source  json.RawMessage   `json:"_source"`
	Sort    []json.RawMessage `json:"sort"`
	// Fields are the values of the search's docvalue_fields, by field.
	Fields map[string][]json.RawMessage `json:"fields"`
}

// Page is one page of search hits.
type Page struct {
	Hits  []Hit
	Total int64
	// Shards is the number of shards the search asked (_shards.total).
	Shards int
}

// Search sends SearchRequest and returns its hits.
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
	if err := a.Send(ctx, SearchRequest(index, body, p), &out); err != nil {
		return nil, err
	}
	return &Page{Hits: out.Hits.Hits, Total: out.Hits.Total.Value, Shards: out.Shards.Total}, nil
}

// CompositeBucket is one bucket of a composite aggregation.
type CompositeBucket struct {
	Key      map[string]json.RawMessage `json:"key"`
	DocCount int64                      `json:"doc_count"`
}

// CompositePage is one page of a composite aggregation. AfterKey is nil
// on the last page.
type CompositePage struct {
	Buckets  []CompositeBucket
	AfterKey json.RawMessage
}

// Composite sends SearchRequest with a body that holds a composite
// aggregation named name, and returns that aggregation's page.
func (a *Admin) Composite(ctx context.Context, index, name string, body []byte, p SearchParams) (*CompositePage, error) {
	var out struct {
		Aggregations map[string]struct {
			Buckets  []CompositeBucket `json:"buckets"`
			AfterKey json.RawMessage   `json:"after_key"`
		} `json:"aggregations"`
	}
	if err := a.Send(ctx, SearchRequest(index, body, p), &out); err != nil {
		return nil, err
	}
	agg, ok := out.Aggregations[name]
	if !ok {
		return nil, fmt.Errorf("bulk: search of %s: the answer has no aggregation %q", index, name)
	}
	return &CompositePage{Buckets: agg.Buckets, AfterKey: agg.AfterKey}, nil
}
