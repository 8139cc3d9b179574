package osfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The vocabulary of the server's JSON parser (XContentParser over
// Jackson): token names as its messages spell them, scalars read as text,
// longs and strict booleans, and its parse errors.

// xToken is the XContentParser.Token name of a decoded token.
func xToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return "START_OBJECT"
		case '}':
			return "END_OBJECT"
		case '[':
			return "START_ARRAY"
		}
		return "END_ARRAY"
	}
	return xValueToken(tok)
}

func xValueToken(v any) string {
	switch x := v.(type) {
	case string:
		return "VALUE_STRING"
	case json.Number:
		return "VALUE_NUMBER"
	case bool:
		if x {
			return "VALUE_TRUE"
		}
		return "VALUE_FALSE"
	case nil:
		return "VALUE_NULL"
	case map[string]any:
		return "START_OBJECT"
	case []any:
		return "START_ARRAY"
	}
	return "VALUE_EMBEDDED_OBJECT"
}

// tokenText is parser.text() of a scalar.
func tokenText(tok json.Token) string {
	switch t := tok.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case bool:
		return strconv.FormatBool(t)
	}
	return ""
}

// tokenLong is parser.longValue(): numbers and numeric strings, decimals
// truncated.
func tokenLong(d *dialect, tok json.Token) (int64, *osError) {
	if b, ok := tok.(bool); ok {
		return 0, d.notNumeric(xValueToken(b))
	}
	return parseLong(tokenText(tok))
}

func parseLong(s string) (int64, *osError) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		return int64(f), nil
	}
	return 0, &osError{Status: 400, Type: "number_format_exception", Reason: "For input string: \"" + s + "\""}
}

func strictBool(s string) (bool, *osError) {
	switch s {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, illegalArgument("Failed to parse value [" + s + "] as only [true] or [false] are allowed.")
}

func scalarString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = scalarString(e)
		}
		return strings.Join(parts, ",")
	}
	return fmt.Sprint(v)
}

// rawToken stands for the first JSON value in raw, enough for tokenName:
// an empty object, array or string, a number, a boolean or nil.
func rawToken(raw []byte) any {
	b := bytes.TrimLeft(raw, " \t\r\n")
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case '{':
		return map[string]any{}
	case '[':
		return []any{}
	case '"':
		return ""
	case 't', 'f':
		return true
	case 'n':
		return nil
	}
	return json.Number("0")
}

// rawTokenName is the parser's name for the first token of raw.
func rawTokenName(raw []byte) string { return tokenName(rawToken(raw)) }
