package bulk

import (
	"errors"
	"fmt"
	"net/http"
)

// Sentinel errors.
var (
	// ErrClosed is returned by Add after Close, and is the error of items
	// still queued when Close's deadline passed.
	ErrClosed = errors.New("bulk: writer closed")
	// ErrRetryBudget is the error of an item whose retries ran past
	// Config.RetryMaxElapsed; it wraps the last failure.
	ErrRetryBudget = errors.New("bulk: retry budget exhausted")
	// ErrWithdrawn is the error of an item Config.Withdraw withdrew before
	// it was sent (again).
	ErrWithdrawn = errors.New("bulk: withdrawn before it was sent")
)

// ItemError is the server's error for one item (or, for a request that
// failed whole, for every item of it).
type ItemError struct {
	Index  string
	ID     string
	Status int
	// Type and Reason are the server's error type and reason, e.g.
	// "mapper_parsing_exception", "failed to parse".
	Type   string
	Reason string
	// CausedByType and CausedByReason are the first cause, when the
	// server gives one.
	CausedByType   string
	CausedByReason string
}

func (e *ItemError) Error() string {
	s := fmt.Sprintf("bulk: %s/%s: %d %s: %s", e.Index, e.ID, e.Status, e.Type, e.Reason)
	if e.CausedByType != "" {
		s += fmt.Sprintf(" (caused by %s: %s)", e.CausedByType, e.CausedByReason)
	}
	return s
}

// RequestError is a whole-request failure: a transport error, or a response
// that is not a bulk response.
type RequestError struct {
	Status int   // 0 for a transport error
	Err    error // the transport error, or a summary of the body
}

func (e *RequestError) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("bulk: request failed: %v", e.Err)
	}
	return fmt.Sprintf("bulk: request failed with status %d: %v", e.Status, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }

// APIError is an OpenSearch error response to an admin call (Send).
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

// EngineProblem is why geoshard does not run on an engine (CheckEngine).
type EngineProblem int

const (
	// EngineNotOpenSearch: Elasticsearch, another engine, or an answer
	// that names none.
	EngineNotOpenSearch EngineProblem = iota + 1
	// EngineUnreadable: the answer to GET / is not an engine's JSON, or
	// its version.number is not major.minor.patch.
	EngineUnreadable
	// EngineTooOld: an OpenSearch older than the oldest supported.
	EngineTooOld
	// EngineUntested: an OpenSearch newer than the newest tested, which
	// an operator may choose to run on anyway.
	EngineUntested
)

// EngineError is an engine geoshard does not run on. Its message is one
// line that names the engine and what geoshard supports.
type EngineError struct {
	Engine  Engine
	Problem EngineProblem
	// Err is the failure to read the answer, for EngineUnreadable without
	// an engine.
	Err error
}

func (e *EngineError) Error() string {
	supported := supportedLines()
	switch e.Problem {
	case EngineNotOpenSearch:
		switch e.Engine.Distribution {
		case DistElasticsearch:
			return fmt.Sprintf("%s is not supported: geoshard runs on OpenSearch only (%s); what running on Elasticsearch would take is in docs/engines.md#elasticsearch",
				e.Engine, supported)
		case "":
			return fmt.Sprintf("the answer to GET / names no engine (no version.distribution) and is not Elasticsearch's: geoshard runs on OpenSearch only (%s)", supported)
		}
		return fmt.Sprintf("engine %q %s is not supported: geoshard runs on OpenSearch only (%s)", e.Engine.Distribution, e.Engine.Version, supported)
	case EngineUnreadable:
		switch {
		case e.Err != nil:
			return fmt.Sprintf("the answer to GET / is not an engine's (%v): geoshard runs on OpenSearch %s", e.Err, supported)
		case e.Engine.Version == "":
			return fmt.Sprintf("%s gives no version (version.number): geoshard runs on OpenSearch %s", e.Engine, supported)
		}
		return fmt.Sprintf("%s version %q is not a version (want major.minor.patch): geoshard runs on OpenSearch %s",
			Engine{Distribution: e.Engine.Distribution}, e.Engine.Version, supported)
	case EngineTooOld:
		return fmt.Sprintf("%s is older than geoshard supports (OpenSearch %s): upgrade OpenSearch", e.Engine, supported)
	case EngineUntested:
		return fmt.Sprintf("%s is newer than geoshard is tested with (OpenSearch %s)", e.Engine, supported)
	}
	return fmt.Sprintf("%s is not supported: geoshard runs on OpenSearch %s", e.Engine, supported)
}

func (e *EngineError) Unwrap() error { return e.Err }

// IsNotFound reports a 404 (a missing index, alias or document).
func IsNotFound(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
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

// Class is what Classify decides for a status.
type Class int

const (
	// ClassSuccess: the item is done (OK, Stale or NotFound).
	ClassSuccess Class = iota
	// ClassRetry: send the item again after a backoff.
	ClassRetry
	// ClassPermanent: the item cannot succeed as it is; report it.
	ClassPermanent
)

// Classify decides what happens to an item from the server's status and
// error type, and whether the write used external versioning. It is the
// only place that decides what is retried:
//
//   - 2xx: success.
//   - 404 on a delete: success (the document is already gone).
//   - 409 version_conflict_engine_exception under external versioning:
//     success — the same or a newer version is stored (Stale): a newer
//     write, or on a retry the item's own earlier attempt.
//   - 429 (rejected_execution_exception, circuit_breaking_exception, a
//     flood-stage cluster_block_exception): retry; the server is shedding
//     load.
//   - 500, 502, 503, 504: retry; the shard or a proxy failed transiently.
//   - any other status: permanent.
//
// The two retry rules are retryableStatus, which Transient applies to a
// whole request too.
func Classify(status int, errType string, action Action, external bool) Class {
	switch {
	case status >= 200 && status < 300:
		return ClassSuccess
	case status == 404 && action == Delete && errType == "":
		return ClassSuccess
	case status == 409 && external && errType == "version_conflict_engine_exception":
		return ClassSuccess
	case retryableStatus(status):
		return ClassRetry
	}
	return ClassPermanent
}

// retryableStatus reports a status worth sending the same thing again
// for: 429 (the server sheds load) and 500, 502, 503, 504 (a shard or a
// proxy failed transiently). Every other status, 501 Not Implemented and
// 505 among them, would get the same answer again. It is the one rule of
// Classify (an item) and Transient (a request).
func retryableStatus(status int) bool {
	switch status {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		return true
	}
	return false
}
