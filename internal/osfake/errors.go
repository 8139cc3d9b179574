package osfake

import (
	"net/http"
)

// osError is an OpenSearch exception as the server renders it: a type in
// snake_case (the Java class name without its OpenSearch prefix), a reason,
// an HTTP status, and optionally the index and a cause.
type osError struct {
	Status   int
	Type     string
	Reason   string
	Index    string // adds "index" and "index_uuid" when set
	UUID     string
	Shard    string
	CausedBy *osError
	Extra    map[string]any
	// roots overrides the root causes guessed from the chain: a
	// search_phase_execution_exception lists those of its failed shards.
	roots []*osError
}

func (e *osError) Error() string { return e.Type + ": " + e.Reason }

// body renders the exception object ({"type","reason",...}).
func (e *osError) body() map[string]any {
	m := map[string]any{"type": e.Type, "reason": e.Reason}
	if e.Index != "" {
		m["index"] = e.Index
		uuid := e.UUID
		if uuid == "" {
			uuid = "_na_"
		}
		m["index_uuid"] = uuid
	}
	if e.Shard != "" {
		m["shard"] = e.Shard
	}
	for k, v := range e.Extra {
		m[k] = v
	}
	if e.CausedBy != nil {
		m["caused_by"] = e.CausedBy.body()
	}
	return m
}

// writeError writes a whole-request error the way the server does:
// {"error":{"root_cause":[...],"type":...,"reason":...},"status":N}, the
// root causes chosen as rootcause.go describes and rendered without their
// causes.
func writeError(w http.ResponseWriter, e *osError) {
	roots := rootCauses(e)
	rootBodies := make([]any, len(roots))
	for i, r := range roots {
		rb := r.body()
		delete(rb, "caused_by")
		rootBodies[i] = rb
	}
	b := e.body()
	b["root_cause"] = rootBodies
	writeJSON(w, e.Status, map[string]any{"error": b, "status": e.Status})
}

func indexNotFound(name string) *osError {
	return &osError{Status: 404, Type: "index_not_found_exception", Reason: "no such index [" + name + "]",
		Index: name, Extra: map[string]any{"resource.type": "index_or_alias", "resource.id": name}}
}

func illegalArgument(reason string) *osError {
	return &osError{Status: 400, Type: "illegal_argument_exception", Reason: reason}
}

func parseError(reason string) *osError {
	return &osError{Status: 400, Type: "parse_exception", Reason: reason}
}
