package osfake

import "fmt"

// pagingChecks are the shard-level checks of from, size, search_after and
// slice, in the order the server makes them after parsing the query,
// sort and aggregations (SearchService.parseSource, then
// DefaultSearchContext.preProcess). They fail each shard rather than the
// request, so they reach the client as a search_phase_execution_exception
// whose status is the shard failure's: 500 for the SearchExceptions, 400
// for the IllegalArgumentExceptions. canMatched: search_after was checked
// in the can_match phase already.
func (req *searchRequest) pagingChecks(ix *index, canMatched bool) *osError {
	if req.after != nil {
		if req.from > 0 {
			return searchException("`from` parameter must be set to 0 when `search_after` is used.")
		}
		if !canMatched {
			if err := req.afterChecks(ix); err != nil {
				return err
			}
		}
	}
	if req.slice != nil && req.pit == nil {
		return searchException("`slice` cannot be used outside of a scroll context or PIT context")
	}
	if w := resultWindow(ix); req.from+req.size > w {
		return illegalArgument(fmt.Sprintf("Result window is too large, from + size must be less than or equal to: [%d] but was [%d]. "+
			"See the scroll api for a more efficient way to request large data sets. This limit can be set by changing the "+
			"[index.max_result_window] index level setting.", w, req.from+req.size))
	}
	if req.size > 0 {
		return req.nullAfterFailure(ix)
	}
	return nil
}

// nullAfterFailure is the NullPointerException a shard's collector hits
// when it compares hits with a null search_after value for a numeric
// sort: the boxed value of the sort's type is unboxed. Keyword sorts take
// null as missing, and without hits to collect nothing is compared.
func (req *searchRequest) nullAfterFailure(ix *index) *osError {
	for i, c := range req.sort {
		if i >= len(req.after) || req.after[i] != nil {
			continue
		}
		boxed := ""
		switch c.field {
		case "_score":
			boxed = "Float.floatValue"
		case "_doc":
			boxed = "Integer.intValue"
		default:
			f := resolveField(ix, c.field)
			switch {
			case f.kind == kindDate || f.typ == "long":
				boxed = "Long.longValue"
			case f.kind == kindBool || f.typ == "integer" || f.typ == "short" || f.typ == "byte":
				boxed = "Integer.intValue"
			case f.typ == "float" || f.typ == "half_float":
				boxed = "Float.floatValue"
			case f.kind == kindNumber:
				boxed = "Double.doubleValue"
			}
		}
		if boxed != "" {
			return &osError{Status: 500, Type: "null_pointer_exception",
				Reason: `Cannot invoke "java.lang.` + boxed + `()" because "value" is null`}
		}
	}
	return nil
}

// searchException is a shard's SearchException, which the server reports
// with HTTP 500.
func searchException(reason string) *osError {
	return &osError{Status: 500, Type: "search_exception", Reason: reason}
}
