package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// More admin calls, for the reshard workflow: requests as values (so a
// dry run prints exactly what a real run sends), single documents under
// optimistic concurrency, flat settings, index names by pattern and
// composite aggregation pages.

// Request is one HTTP request to OpenSearch exactly as Send sends it.
// Steps that have a dry run build their requests as Requests, print them
// in the dry run and send the same values otherwise.
type Request struct {
	Method string
	// Path is the path with its query string, e.g.
	// "/_cluster/health/menu-v2?timeout=5m&wait_for_status=green".
	Path string
	// Body is sent as is; nil sends none.
	Body []byte
}

// String renders the request for a dry run: the method and path on one
// line, then the body (if any) as sent.
func (r Request) String() string {
	if len(r.Body) == 0 {
		return r.Method + " " + r.Path + "\n"
	}
	return r.Method + " " + r.Path + "\n" + strings.TrimRight(string(r.Body), "\n") + "\n"
}

// Send sends a request and decodes a 2xx JSON answer into out (if not
// nil). Other statuses become *APIError.
func (a *Admin) Send(ctx context.Context, r Request, out any) error {
	var body any
	if len(r.Body) > 0 {
		body = r.Body
	}
	return a.do(ctx, r.Method, r.Path, body, out)
}

// PutSettingsRequest updates dynamic index settings:
// PUT /<index>/_settings {"index":{...}}. Keys are sorted, so the body is
// the same for the same settings.
func PutSettingsRequest(index string, settings map[string]any) (Request, error) {
	b, err := json.MarshalIndent(map[string]any{"index": settings}, "", "  ")
	if err != nil {
		return Request{}, fmt.Errorf("bulk: settings of %s: %w", index, err)
	}
	return Request{Method: http.MethodPut, Path: "/" + esc(index) + "/_settings", Body: b}, nil
}

// HealthRequest waits up to timeout (an OpenSearch time value such as
// "5m") for an index to reach status ("green" or "yellow"). The server
// answers 408 when the wait times out.
func HealthRequest(index, status, timeout string) Request {
	v := url.Values{}
	v.Set("wait_for_status", status)
	v.Set("timeout", timeout)
	return Request{Method: http.MethodGet, Path: "/_cluster/health/" + esc(index) + "?" + v.Encode()}
}

// UpdateAliasesRequest is the one atomic _aliases call for actions.
func UpdateAliasesRequest(actions []AliasAction) (Request, error) {
	b, err := AliasRequestBody(actions)
	if err != nil {
		return Request{}, fmt.Errorf("bulk: alias actions: %w", err)
	}
	return Request{Method: http.MethodPost, Path: "/_aliases", Body: b}, nil
}

// DeleteIndexRequest deletes an index.
func DeleteIndexRequest(index string) Request {
	return Request{Method: http.MethodDelete, Path: "/" + esc(index)}
}

// DocOptions condition a single-document write.
type DocOptions struct {
	// IfSeqNo and IfPrimaryTerm make the write succeed only if the stored
	// document is still at that sequence number and term (optimistic
	// concurrency); a stale pair fails with 409 (IsConflict).
	IfSeqNo, IfPrimaryTerm *int64
	// Create fails with 409 if the document exists (op_type=create).
	Create bool
	// Refresh makes the write visible to search at once (refresh=true).
	Refresh bool
}

// IndexDocRequest writes one document: PUT /<index>/_doc/<id>.
func IndexDocRequest(index, id string, body []byte, opt DocOptions) Request {
	v := url.Values{}
	if opt.IfSeqNo != nil {
		v.Set("if_seq_no", strconv.FormatInt(*opt.IfSeqNo, 10))
	}
	if opt.IfPrimaryTerm != nil {
		v.Set("if_primary_term", strconv.FormatInt(*opt.IfPrimaryTerm, 10))
	}
	if opt.Create {
		v.Set("op_type", "create")
	}
	if opt.Refresh {
		v.Set("refresh", "true")
	}
	path := "/" + esc(index) + "/_doc/" + esc(id)
	if len(v) > 0 {
		path += "?" + v.Encode()
	}
	return Request{Method: http.MethodPut, Path: path, Body: body}
}

// DocWrite is the answer to a single-document write.
type DocWrite struct {
	SeqNo       int64  `json:"_seq_no"`
	PrimaryTerm int64  `json:"_primary_term"`
	Version     int64  `json:"_version"`
	Result      string `json:"result"`
}

// IndexDoc sends IndexDocRequest.
func (a *Admin) IndexDoc(ctx context.Context, index, id string, body []byte, opt DocOptions) (DocWrite, error) {
	var out DocWrite
	err := a.Send(ctx, IndexDocRequest(index, id, body, opt), &out)
	return out, err
}

// Doc is a document read in real time with its concurrency token.
type Doc struct {
	Found       bool            `json:"found"`
	Source      json.RawMessage `json:"_source"`
	Version     int64           `json:"_version"`
	SeqNo       int64           `json:"_seq_no"`
	PrimaryTerm int64           `json:"_primary_term"`
}

// GetDoc fetches a document by id (no routing) in real time. A missing
// document is Found false, not an error; a missing index is an error
// (IsNotFound).
func (a *Admin) GetDoc(ctx context.Context, index, id string) (*Doc, error) {
	var d Doc
	err := a.do(ctx, http.MethodGet, "/"+esc(index)+"/_doc/"+esc(id), nil, &d)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusNotFound && ae.Type == "" {
		// A missing document is a 404 whose body is {"found":false}, not
		// an error object; a missing index has a type.
		return &Doc{}, nil
	}
	if err != nil {
		return nil, err
	}
	return &d, nil
}

// IsConflict reports a 409: a version conflict (a stale if_seq_no, or
// op_type=create of an existing document).
func IsConflict(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusConflict
}

// IsAlreadyExists reports a create-index request for an index that exists.
func IsAlreadyExists(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Type == "resource_already_exists_exception"
}

// Settings returns an index's settings in flat form
// ("index.number_of_replicas": "1"). Settings left at their defaults are
// absent.
func (a *Admin) Settings(ctx context.Context, index string) (map[string]string, error) {
	var out map[string]struct {
		Settings map[string]any `json:"settings"`
	}
	if err := a.do(ctx, http.MethodGet, "/"+esc(index)+"/_settings?flat_settings=true", nil, &out); err != nil {
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

// IndexNames lists the concrete indices whose names match a pattern such
// as "menu-v*" (none is not an error).
func (a *Admin) IndexNames(ctx context.Context, pattern string) ([]string, error) {
	var rows []struct {
		Index string `json:"index"`
	}
	if err := a.do(ctx, http.MethodGet, "/_cat/indices/"+esc(pattern)+"?format=json&h=index&s=index", nil, &rows); err != nil {
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

// Composite runs a search whose body holds a composite aggregation named
// name and returns that aggregation's page.
func (a *Admin) Composite(ctx context.Context, index, name string, body []byte, p SearchParams) (*CompositePage, error) {
	var out struct {
		Aggregations map[string]struct {
			Buckets  []CompositeBucket `json:"buckets"`
			AfterKey json.RawMessage   `json:"after_key"`
		} `json:"aggregations"`
	}
	if err := a.do(ctx, http.MethodPost, "/"+esc(index)+"/_search"+p.query(), json.RawMessage(body), &out); err != nil {
		return nil, err
	}
	agg, ok := out.Aggregations[name]
	if !ok {
		return nil, fmt.Errorf("bulk: search of %s: the answer has no aggregation %q", index, name)
	}
	return &CompositePage{Buckets: agg.Buckets, AfterKey: agg.AfterKey}, nil
}
