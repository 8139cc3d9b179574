package bulk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// itemResp is what the writer reads of one bulk item: everything else in
// the response is skipped without being decoded into values.
type itemResp struct {
	Status int       `json:"status"`
	Result string    `json:"result"`
	Error  *errorObj `json:"error"`
}

type errorObj struct {
	Type     string    `json:"type"`
	Reason   string    `json:"reason"`
	CausedBy *errorObj `json:"caused_by"`
}

// itemWrapper is {"<action>": itemResp}.
type itemWrapper struct {
	Index  *itemResp `json:"index"`
	Create *itemResp `json:"create"`
	Update *itemResp `json:"update"`
	Delete *itemResp `json:"delete"`
}

func (w *itemWrapper) resp() *itemResp {
	switch {
	case w.Index != nil:
		return w.Index
	case w.Create != nil:
		return w.Create
	case w.Update != nil:
		return w.Update
	}
	return w.Delete
}

var errShortResponse = errors.New("bulk response ended early")

// decodeResponse reads a bulk response body for a batch of n items. When
// the server says there were no errors and allOK is true (the batch holds
// no deletes, whose not_found outcome would need the item), the items are
// not decoded at all and nil is returned. Otherwise it returns exactly n
// item responses.
func decodeResponse(body []byte, n int, allOK bool) ([]itemResp, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("bulk response: want an object: %w", orShort(err))
	}
	errorsSeen, hasErrors := false, false
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("bulk response: %w", orShort(err))
		}
		key, _ := t.(string)
		switch key {
		case "errors":
			if err := dec.Decode(&hasErrors); err != nil {
				return nil, fmt.Errorf("bulk response: errors: %w", orShort(err))
			}
			errorsSeen = true
			if !hasErrors && allOK {
				return nil, nil
			}
		case "items":
			if t, err := dec.Token(); err != nil || t != json.Delim('[') {
				return nil, fmt.Errorf("bulk response: items: want an array: %w", orShort(err))
			}
			out := make([]itemResp, 0, n)
			for dec.More() {
				var w itemWrapper
				if err := dec.Decode(&w); err != nil {
					return nil, fmt.Errorf("bulk response: item %d: %w", len(out), orShort(err))
				}
				r := w.resp()
				if r == nil {
					return nil, fmt.Errorf("bulk response: item %d has no action", len(out))
				}
				out = append(out, *r)
			}
			if len(out) != n {
				return nil, fmt.Errorf("bulk response: %d items for %d sent", len(out), n)
			}
			if _, err := dec.Token(); err != nil {
				return nil, fmt.Errorf("bulk response: %w", orShort(err))
			}
			// The rest of the object is not needed, but a body cut off
			// after the items must still count as broken.
			if err := skipRest(dec); err != nil {
				return nil, err
			}
			return out, nil
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("bulk response: %s: %w", key, orShort(err))
			}
		}
	}
	if errorsSeen && !hasErrors && allOK {
		return nil, nil
	}
	return nil, fmt.Errorf("bulk response: no items")
}

// scanStatuses reads the statuses of the n items of a response whose
// errors is false, without decoding it: there every item holds exactly one
// "status" key (only an error object, absent here, would hold another),
// in item order. A response with no item created (201) returns nil: every
// item is 200. It returns nil too when the count is not n, which
// decodeResponse would have refused; the items are then taken as 200.
func scanStatuses(body []byte, n int) []int {
	if !bytes.Contains(body, created201) {
		return nil
	}
	out := make([]int, 0, n)
	for rest := body; ; {
		i := bytes.Index(rest, statusKey)
		if i < 0 {
			break
		}
		rest = rest[i+len(statusKey):]
		v, j := 0, 0
		for j < len(rest) && rest[j] >= '0' && rest[j] <= '9' {
			v = v*10 + int(rest[j]-'0')
			j++
		}
		out = append(out, v)
	}
	if len(out) != n {
		return nil
	}
	return out
}

var (
	statusKey  = []byte(`"status":`)
	created201 = []byte(`"status":201`)
)

func skipRest(dec *json.Decoder) error {
	for dec.More() {
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("bulk response: %w", orShort(err))
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("bulk response: %w", orShort(err))
		}
	}
	if _, err := dec.Token(); err != nil {
		return fmt.Errorf("bulk response: %w", orShort(err))
	}
	return nil
}

func orShort(err error) error {
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return errShortResponse
	}
	return err
}

// requestFailure describes a non-200 response body: the server's error
// type and reason when the body is an OpenSearch error, else its start.
func requestFailure(status int, body []byte) *ItemError {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	ie := &ItemError{Status: status}
	if json.Unmarshal(body, &e) == nil && len(e.Error) > 0 {
		var obj errorObj
		if json.Unmarshal(e.Error, &obj) == nil && obj.Type != "" {
			ie.Type, ie.Reason = obj.Type, obj.Reason
			if obj.CausedBy != nil {
				ie.CausedByType, ie.CausedByReason = obj.CausedBy.Type, obj.CausedBy.Reason
			}
			return ie
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil {
			ie.Reason = s
			return ie
		}
	}
	const max = 200
	if len(body) > max {
		body = body[:max]
	}
	ie.Reason = string(bytes.TrimSpace(body))
	return ie
}
