package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
)

// Single documents outside _bulk: the small bookkeeping documents of a
// migration (its state, under optimistic concurrency, and heartbeats) and
// real-time reads by id. Ingest writes through the Writer, never here.

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

// Index writes one document, creating or replacing it, with refresh=true
// so that a search that follows sees it: IndexDoc with DocOptions{Refresh:
// true}, for writers that need neither a condition nor the answer.
func (a *Admin) Index(ctx context.Context, index, id string, body []byte) error {
	_, err := a.IndexDoc(ctx, index, id, body, DocOptions{Refresh: true})
	return err
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
	return a.getDoc(ctx, index, id, "")
}

// GetDocRouted is GetDoc on the shard routing reaches: the copy of the
// document there, with its concurrency token, in real time. A missing
// document is Found false; a missing index is an error (IsNotFound).
func (a *Admin) GetDocRouted(ctx context.Context, index, id, routing string) (*Doc, error) {
	return a.getDoc(ctx, index, id, routing)
}

// Get fetches a document by id and routing (real time). found is false for
// a missing document and, unlike GetDoc, for a missing index too: its
// callers look for a copy and treat no index as no copy.
func (a *Admin) Get(ctx context.Context, index, id, routing string) (src json.RawMessage, version int64, found bool, err error) {
	d, err := a.getDoc(ctx, index, id, routing)
	if IsNotFound(err) {
		return nil, 0, false, nil
	}
	if err != nil {
		return nil, 0, false, err
	}
	return d.Source, d.Version, d.Found, nil
}

// getDoc is GET /<index>/_doc/<id>, routed when routing is not empty.
func (a *Admin) getDoc(ctx context.Context, index, id, routing string) (*Doc, error) {
	path := "/" + esc(index) + "/_doc/" + esc(id)
	if routing != "" {
		path += "?routing=" + url.QueryEscape(routing)
	}
	var d Doc
	err := a.Send(ctx, Request{Method: http.MethodGet, Path: path}, &d)
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
