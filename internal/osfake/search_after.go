package osfake

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// search_after: the values a search pages after, checked the way the
// server's SearchAfterBuilder reads them. The body parser takes an array
// of scalars; each shard then converts every value to its sort field's
// type (SearchAfterBuilder.buildFieldDoc). A JSON number always converts;
// any other value is read from its text, as a long, int, double or date
// according to the sort type, and fails with the parser's
// NumberFormatException inside an IllegalArgumentException that names the
// field. Keyword sorts take any value.

func parseSearchAfter(v any) ([]any, *osError) {
	arr, ok := v.([]any)
	if !ok {
		return nil, parsingException("Unknown key for a " + tokenName(v) + " in [search_after].")
	}
	if len(arr) == 0 {
		return nil, illegalArgument("Values must contains at least one value.")
	}
	for _, e := range arr {
		switch e.(type) {
		case map[string]any, []any:
			return nil, parsingException("Expected [VALUE_STRING] or [VALUE_NUMBER] or [VALUE_BOOLEAN] or [VALUE_NULL] but found [" +
				tokenName(e) + "] inside search_after.")
		}
	}
	return arr, nil
}

// inCanMatch reports whether the server runs its can_match phase before
// the query phase: it does when the primary sort is on a field (not
// _score) and the search has more than one shard (and also, which is not
// emulated, when the query could match nothing on more than 128 shards).
// That phase builds the sort and converts search_after, so their
// failures carry phase "can_match".
func (req *searchRequest) inCanMatch(shards int) bool {
	return shards > 1 && len(req.sort) > 0 && req.sort[0].field != "_score"
}

// afterChecks is buildFieldDoc: a sort to page by, as many values as
// sort clauses, each convertible to its clause's type on ix.
func (req *searchRequest) afterChecks(ix *index) *osError {
	if len(req.sort) == 0 {
		return illegalArgument("Sort must contain at least one field.")
	}
	if len(req.after) != len(req.sort) {
		return illegalArgument(fmt.Sprintf("search_after has %d value(s) but sort has %d.", len(req.after), len(req.sort)))
	}
	for i, c := range req.sort {
		if err := afterValueCheck(ix, c.field, req.after[i]); err != nil {
			return err
		}
	}
	return nil
}

func afterValueCheck(ix *index, field string, v any) *osError {
	if _, isNum := v.(json.Number); isNum || v == nil {
		return nil
	}
	text := scalarString(v)
	var ok bool
	switch field {
	case "_score":
		ok = javaParseDouble(text)
	case "_doc":
		_, err := strconv.ParseInt(text, 10, 32)
		ok, field = err == nil, "null" // the _doc sort has no field name
	default:
		f := resolveField(ix, field)
		switch {
		case f.kind == kindDate:
			if _, _, ok := parseDate(text); !ok {
				return dateParseFailure(text, dateFormat(ix, field))
			}
			return nil
		case f.kind == kindBool || f.typ == "integer" || f.typ == "short" || f.typ == "byte":
			_, err := strconv.ParseInt(text, 10, 32)
			ok = err == nil
		case f.kind == kindNumber:
			ok = javaParseDouble(text)
		default:
			return nil
		}
	}
	if ok {
		return nil
	}
	return &osError{Status: 400, Type: "illegal_argument_exception",
		Reason:   "Failed to parse search_after value for field [" + field + "].",
		CausedBy: &osError{Status: 400, Type: "number_format_exception", Reason: `For input string: "` + text + `"`}}
}

// javaParseDouble reports whether Double.parseDouble reads s, leading and
// trailing blanks allowed.
func javaParseDouble(s string) bool {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(s, "d"), "D"), "f"), "F")
	_, err := strconv.ParseFloat(s, 64)
	return err == nil && !strings.ContainsAny(strings.ToLower(s), "x_")
}

// dateParseFailure is the server's failure to read text as a date in
// the given format: an OpenSearchParseException around the
// IllegalArgumentException of the date parser.
func dateParseFailure(text, format string) *osError {
	msg := "failed to parse date field [" + text + "] with format [" + format + "]"
	return &osError{Status: 400, Type: "parse_exception", Reason: msg + ": [" + msg + "]",
		CausedBy: &osError{Status: 400, Type: "illegal_argument_exception", Reason: msg,
			CausedBy: &osError{Status: 400, Type: "date_time_parse_exception", Reason: "Failed to parse with all enclosed parsers"}}}
}

// dateFormat is a date field's format parameter, or the default.
func dateFormat(ix *index, field string) string {
	props := ix.mapping.properties
	parts := strings.Split(field, ".")
	for i, p := range parts {
		spec, _ := props[p].(map[string]any)
		if spec == nil {
			break
		}
		if i == len(parts)-1 {
			if f, ok := spec["format"].(string); ok && f != "" {
				return f
			}
			break
		}
		props, _ = spec["properties"].(map[string]any)
	}
	return "strict_date_optional_time||epoch_millis"
}
