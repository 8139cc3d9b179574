package osfake

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The release lines the emulator answers as. A Server reports the version
// of Options.Version and answers as that version's line does wherever the
// lines differ in what the emulator emulates. Every such answer comes from
// the server's dialect: made here (the parser's exceptions), or read from
// one of its fields where the response is built; nothing else asks which
// version it is.

// DefaultVersion is the version the emulator reports when Options.Version
// is empty: the newest release it was checked against.
const DefaultVersion = "3.9.0"

// dialect is one release line's way of answering.
type dialect struct {
	version string // as reported, e.g. "3.9.0"
	major   int
	minor   int
	patch   int

	// What GET / reports beside the number.
	lucene, minWire, minIndex string

	// parser3 is 3.x's JSON parser: its messages say "cannot" and put a
	// Java type name in backticks with its range; each failure comes
	// wrapped in an exception of its kind carrying the same message (a
	// syntax error in a json_parse_exception over a
	// stream_read_exception); and input that ends early is an
	// unexpected_end_of_input_exception, not a json_e_o_f_exception.
	// 2.19's parser raises each failure bare.
	parser3 bool
	// searchOnly: _search_shards marks each shard copy "searchOnly"
	// (false: the emulator has no search-only replicas).
	searchOnly bool
	// sizeZeroAggsTerminateEarly: a search of size 0 with aggregations
	// reports terminated_early: true once a shard it ran on holds
	// documents.
	sizeZeroAggsTerminateEarly bool
}

// lines are the release lines the emulator knows, by major.minor, as
// checked against a real node of each (2.19.6 and 3.9.0).
var lines = map[string]dialect{
	"2.19": {lucene: "9.12.3", minWire: "7.10.0", minIndex: "7.0.0"},
	"3.9": {lucene: "10.5.1", minWire: "2.19.0", minIndex: "2.0.0",
		parser3: true, searchOnly: true, sizeZeroAggsTerminateEarly: true},
}

// AcceptedVersions says what Options.Version takes: major.minor.patch of
// a line in lines.
const AcceptedVersions = "2.19.x or 3.9.x, such as 2.19.6 or 3.9.0"

// dialectOf returns the dialect of a version.
func dialectOf(version string) (*dialect, error) {
	bad := fmt.Errorf("osfake: Version %q: the emulator answers as %s", version, AcceptedVersions)
	parts := strings.Split(version, ".")
	if len(parts) != 3 {
		return nil, bad
	}
	var nums [3]int
	for i, p := range parts {
		// Digits without a leading zero, within the two digits a part
		// has in the version id.
		n, err := strconv.Atoi(p)
		if err != nil || n < 0 || n > 99 || strconv.Itoa(n) != p {
			return nil, bad
		}
		nums[i] = n
	}
	d, ok := lines[parts[0]+"."+parts[1]]
	if !ok {
		return nil, bad
	}
	d.version, d.major, d.minor, d.patch = version, nums[0], nums[1], nums[2]
	return &d, nil
}

// versionID is the version as index.version.created spells it: the
// server's version id, major, minor, patch and the release build 99 in
// pairs of decimal digits, with the bit 2^27 set that OpenSearch adds to
// tell its versions from the legacy ones it forked from.
func (d *dialect) versionID() string {
	return strconv.Itoa(1<<27 + d.major*1_000_000 + d.minor*10_000 + d.patch*100 + 99)
}

// parserError is a failure of the JSON parser with reason: on 2.19 an
// exception of type typ, on 3.x one of type typ3 over one of type inner3
// with the same reason.
func (d *dialect) parserError(typ, typ3, inner3, reason string) *osError {
	if !d.parser3 {
		return &osError{Status: 400, Type: typ, Reason: reason}
	}
	return &osError{Status: 400, Type: typ3, Reason: reason, CausedBy: &osError{Status: 400, Type: inner3, Reason: reason}}
}

// notNumeric is the parser's failure to read a number from token.
func (d *dialect) notNumeric(token string) *osError {
	cannot := "can not"
	if d.parser3 {
		cannot = "cannot"
	}
	return d.parserError("json_parse_exception", "input_coercion_exception", "input_coercion_exception",
		"Current token ("+token+") not numeric, "+cannot+" use numeric value accessors")
}

// notBoolean is the parser's failure to read a boolean from token.
func (d *dialect) notBoolean(token string) *osError {
	return d.parserError("json_parse_exception", "input_coercion_exception", "input_coercion_exception", "Current token ("+token+") not of boolean type")
}

// javaRanges are the bounds the parser names when a number overflows a
// Java type.
var javaRanges = map[string]string{
	"long":  "(-9223372036854775808 - 9223372036854775807)",
	"int":   "(-2147483648 - 2147483647)",
	"short": "(-32768 - 32767)",
}

// numberOutOfRange is the parser's failure to read n, as written, as the
// Java type javaType (long, int or short). 2.19 names a short without
// its range.
func (d *dialect) numberOutOfRange(n json.Number, javaType string) *osError {
	of := javaType + " " + javaRanges[javaType]
	switch {
	case d.parser3:
		of = "`" + javaType + "` " + javaRanges[javaType]
	case javaType == "short":
		of = "Java short"
	}
	return d.parserError("input_coercion_exception", "input_coercion_exception", "input_coercion_exception", "Numeric value ("+n.String()+") out of range of "+of)
}

// badJSON is the parser's failure on input that is not JSON: input that
// ends early, or a syntax error. The reason is Go's wording, not the
// server's.
func (d *dialect) badJSON(err error) *osError {
	if endsEarly(err) {
		return d.parserError("json_e_o_f_exception", "unexpected_end_of_input_exception", "unexpected_end_of_input_exception", "Unexpected end-of-input: "+err.Error())
	}
	return d.parserError("json_parse_exception", "json_parse_exception", "stream_read_exception", err.Error())
}

// endsEarly reports a decoding error that is the input ending: a
// Decoder's io.ErrUnexpectedEOF, or its io.EOF where a token was due (the
// callers take an EOF that ends the input well before they get here), or
// the SyntaxError json.Unmarshal gives for it (the package has no
// sentinel for that one).
func endsEarly(err error) bool {
	var se *json.SyntaxError
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.As(err, &se) && se.Error() == "unexpected end of JSON input"
}
