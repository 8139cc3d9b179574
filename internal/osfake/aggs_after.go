package osfake

import (
	"encoding/json"
	"strconv"
)

// The composite aggregation's terms sources and after key, checked the way
// the server's parser and CompositeAggregator check them.

// checkTermsSourceFields rejects what a composite terms source does not
// take. The server's source parser knows no format (only date_histogram
// sources have one); script, missing_order and value_type are real but
// not emulated.
func checkTermsSourceFields(terms map[string]any) *osError {
	for _, k := range sortedNames(terms) {
		switch k {
		case "field", "order", "missing_bucket":
		case "script", "missing_order", "value_type":
			return notEmulated("composite terms [" + k + "]")
		default:
			return &osError{Status: 400, Type: "x_content_parse_exception", Reason: "[composite] failed to parse field [sources]",
				CausedBy: xContentError("[terms] unknown field [" + k + "]")}
		}
	}
	return nil
}

// checkAfter converts the after key to each source's type on ix, which a
// shard does as it builds the aggregator: a number, or text that parses
// as one, for numeric and date fields (a date is its epoch milliseconds,
// not a date string); true or false for booleans.
func (a *aggSpec) checkAfter(ix *index) *osError {
	if a.kind != "composite" || a.after == nil {
		return nil
	}
	for _, src := range a.sources {
		v := a.after[src.name]
		if v == nil {
			continue
		}
		f := resolveField(ix, src.field)
		text := scalarString(v)
		nfe := &osError{Status: 400, Type: "number_format_exception", Reason: `For input string: "` + text + `"`}
		_, isNum := v.(json.Number)
		switch {
		case f.kind == kindBool:
			if _, ok := v.(bool); !ok && text != "true" && text != "false" {
				return illegalArgument("Cannot parse boolean [" + text + "], expected either [true] or [false]")
			}
		case isNum:
		case f.kind == kindDate || f.kind == kindNumber && f.integer:
			if _, err := strconv.ParseInt(text, 10, 64); err != nil {
				return nfe
			}
		case f.kind == kindNumber:
			if !javaParseDouble(text) {
				return nfe
			}
		}
	}
	return nil
}
