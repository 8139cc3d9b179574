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
	"strings"

	"github.com/opensearch-project/opensearch-go/v4"
)

// Admin makes the small, non-bulk calls ingest and reshard need: index
// creation, mappings _meta, aliases, refresh, counts and search pages. It
// decodes only what it returns.
//
// Every call is a Request sent by Send: the methods only build the
// request and pick out the part of the answer their callers use, so
// status handling and error decoding live in one place, and a dry run can
// print the very request a real run sends.
type Admin struct {
	client *opensearch.Client
}

// NewAdmin returns an Admin that sends through client.
func NewAdmin(client *opensearch.Client) *Admin { return &Admin{client: client} }

// Request is one HTTP request to OpenSearch exactly as Send sends it.
// Steps that have a dry run build their requests as Requests, print them
// in the dry run and send the same values otherwise.
type Request struct {
	Method string
	// Path is the path with its query string, e.g.
	// "/_cluster/health/menu-v2?timeout=5m&wait_for_status=green".
	Path string
	// Body is sent as is, as JSON; nil sends none.
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
// nil; a HEAD answer has no body to decode). Other statuses become
// *APIError.
func (a *Admin) Send(ctx context.Context, r Request, out any) error {
	var body io.Reader
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, r.Path, body)
	if err != nil {
		return fmt.Errorf("bulk: %s %s: %w", r.Method, r.Path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	status, data, err := perform(a.client, req)
	var rerr *readError
	switch {
	case errors.As(err, &rerr):
		return fmt.Errorf("bulk: %s %s: read response: %w", r.Method, r.Path, rerr.err)
	case err != nil:
		return fmt.Errorf("bulk: %s %s: %w", r.Method, r.Path, err)
	}
	if status < 200 || status > 299 {
		ie := requestFailure(status, data)
		return &APIError{Method: r.Method, Path: r.Path, Status: status, Type: ie.Type, Reason: ie.Reason}
	}
	if out != nil && r.Method != http.MethodHead {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("bulk: %s %s: decode response: %w", r.Method, r.Path, err)
		}
	}
	return nil
}

// perform sends req through the client (its retries, authentication and
// compression) and reads the whole answer. The client's buffered Perform
// is deprecated and would copy the body once more: Stream hands it over.
// A failure to read the answer is a *readError: the request reached the
// server, which may have acted on it.
func perform(c *opensearch.Client, req *http.Request) (status int, body []byte, err error) {
	resp, err := c.Stream(req)
	if resp != nil && resp.Body != nil {
		// Stream may answer with a response and an error (a context that
		// ended during a retry's backoff): the body is closed either way.
		defer resp.Body.Close()
	}
	if err != nil {
		return 0, nil, err
	}
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, &readError{err}
	}
	return resp.StatusCode, body, nil
}

// readError is a failure to read an answer's body.
type readError struct{ err error }

func (e *readError) Error() string { return "read response: " + e.err.Error() }
func (e *readError) Unwrap() error { return e.err }

// jsonBody encodes a request body indented, so that a dry run prints it
// readably; map keys are sorted, so the same value gives the same body.
func jsonBody(v any) ([]byte, error) { return json.MarshalIndent(v, "", "  ") }

func esc(s string) string { return url.PathEscape(s) }
