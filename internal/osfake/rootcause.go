package osfake

// Root causes: the "root_cause" list of an error response and the cause a
// search_phase_execution_exception reports, chosen the way the server's
// OpenSearchException.guessRootCauses chooses them. Clients print the root
// cause first, so which link of a chain it is matters as much as the
// chain itself.
//
// The rule depends on whether each exception is one of OpenSearch's own
// (OpenSearchException subclasses) or a plain Java one:
//
//   - an OpenSearch exception is its own root cause unless its cause is
//     an OpenSearch exception too, whose root cause it then takes
//     (mapper_parsing_exception caused by a json_parse_exception is the
//     root cause itself);
//   - an x_content_parse_exception takes the root cause of its cause
//     when that cause is another x_content_parse_exception or an
//     OpenSearch exception, so nested parser errors report the innermost
//     one;
//   - any other Java exception is its own root cause.

// javaExceptions are the error types the emulator raises that are not
// OpenSearchException subclasses on the server.
var javaExceptions = map[string]bool{
	"illegal_argument_exception":          true,
	"illegal_state_exception":             true,
	"number_format_exception":             true,
	"null_pointer_exception":              true,
	"unsupported_operation_exception":     true,
	"array_index_out_of_bounds_exception": true,
	"arithmetic_exception":                true,
	"date_time_parse_exception":           true,
	"json_parse_exception":                true,
	"json_e_o_f_exception":                true,
	"input_coercion_exception":            true,
	"unexpected_end_of_input_exception":   true,
	"stream_read_exception":               true,
	"not_x_content_exception":             true,
	"x_content_parse_exception":           true,
	"rejected_execution_exception":        true,
}

func isOpenSearchException(e *osError) bool { return !javaExceptions[e.Type] }

// rootCauses is guessRootCauses for an exception raised whole.
func rootCauses(e *osError) []*osError {
	if e.roots != nil {
		return e.roots
	}
	return []*osError{rootCause(e)}
}

func rootCause(e *osError) *osError {
	for {
		c := e.CausedBy
		switch {
		case c == nil:
			return e
		case isOpenSearchException(e) && isOpenSearchException(c):
		case e.Type == "x_content_parse_exception" && (c.Type == "x_content_parse_exception" || isOpenSearchException(c)):
		default:
			return e
		}
		e = c
	}
}

// shardCause is the cause a search_phase_execution_exception reports for
// the first failed shard: the root cause of the shard's failure, which
// the server wraps when it is a plain Java exception — so an
// IllegalArgumentException shows as an illegal_argument_exception caused
// by itself.
func shardCause(failure *osError) *osError {
	root := rootCause(failure)
	if isOpenSearchException(root) {
		return root
	}
	return &osError{Status: root.Status, Type: root.Type, Reason: root.Reason, CausedBy: root}
}

// allShardsFailed is the SearchPhaseExecutionException of a search whose
// every shard failed in the given phase: failedShards are the grouped failures as rendered
// (one per index and reason) and groups their exceptions, in the same
// order. Its cause is that of the first failure, its root causes one per
// group, and its status the first failure's unless a later one is a 5xx.
func allShardsFailed(phase string, failedShards []any, groups []*osError) *osError {
	status := groups[0].Status
	roots := make([]*osError, len(groups))
	for i, g := range groups {
		if i > 0 && g.Status >= 500 {
			status = g.Status
		}
		roots[i] = shardCause(g)
	}
	return &osError{Status: status, Type: "search_phase_execution_exception", Reason: "all shards failed",
		Extra:    map[string]any{"phase": phase, "grouped": true, "failed_shards": failedShards},
		CausedBy: roots[0], roots: roots}
}
