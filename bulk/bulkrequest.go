package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
)

// One _bulk request outside the Writer. The Writer is for streams of
// items: it batches them per shard, coalesces and resends. A step with a
// dry run (reshard repair) writes a small, known set instead, whose
// requests are shown before anything is sent: it builds them with
// BulkRequest, prints them in the dry run, and otherwise sends the very
// same values with Bulk.

// BulkRequest is POST /_bulk with items as NDJSON, in order: the request
// a dry run prints and Bulk sends. Each item is checked as Writer.Add
// checks it.
func BulkRequest(items []Item) (Request, error) {
	if len(items) == 0 {
		return Request{}, errors.New("bulk: a bulk request needs items")
	}
	var buf bytes.Buffer
	line := make([]byte, 0, 256)
	for i := range items {
		it := &items[i]
		if err := checkItem(it); err != nil {
			return Request{}, err
		}
		line = appendActionLine(line[:0], it)
		buf.Write(line)
		if it.Action != Delete {
			writeBody(&buf, it.Body)
		}
	}
	return Request{Method: http.MethodPost, Path: "/_bulk", Body: buf.Bytes()}, nil
}

// Bulk sends BulkRequest(items) once and returns one Result per item, in
// the order of items, as Classify decides: OK, Stale, NotFound or
// Permanent. An item the server refused for now (what the Writer would
// resend: 429, 500, 502, 503, 504) is Failed with its *ItemError as Err:
// Bulk sends once, and the caller decides what to do again. A request
// that fails whole is an error (an *APIError for a status), with no
// results.
func (a *Admin) Bulk(ctx context.Context, items []Item) ([]Result, error) {
	req, err := BulkRequest(items)
	if err != nil {
		return nil, err
	}
	var body json.RawMessage
	if err := a.Send(ctx, req, &body); err != nil {
		return nil, err
	}
	resps, err := decodeResponse(body, len(items), false)
	if err != nil {
		return nil, fmt.Errorf("bulk: %s %s: %w", req.Method, req.Path, err)
	}
	out := make([]Result, len(items))
	for i := range items {
		v := itemVerdict(&items[i], &resps[i])
		if v.class == ClassRetry {
			v.outcome = Failed
		}
		out[i] = Result{Item: &items[i], Outcome: v.outcome, Err: v.err, Status: v.status, Stored: v.stored, Attempts: 1}
	}
	return out, nil
}
