package decode

// JSON as the Debezium decoder reads it: a walk over an object's members
// that slices the value instead of decoding it, and the Kafka Connect
// decimal encodings.
//
// The decoder checks a whole value once with json.Valid and then walks
// only what it needs, without a map or a copy per member: a change event
// is mostly a row the document copies as it is. The walk still checks
// every bound, so that input json.Valid did not see (a key, a test)
// stops it instead of panicking.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"strconv"
)

// objectWalk walks the members of a JSON object in order.
type objectWalk struct {
	b []byte
	i int
}

// walkObject starts a walk over obj; ok is false if obj is not an object.
func walkObject(obj []byte) (objectWalk, bool) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return objectWalk{}, false
	}
	return objectWalk{b: obj, i: i + 1}, true
}

// next returns the next member: its name token with the quotes, and its
// raw value. ok is false at the end of the object (or at a defect).
func (w *objectWalk) next() (name, value []byte, ok bool) {
	b := w.b
	i := skipSpace(b, w.i)
	if i < len(b) && b[i] == ',' {
		i = skipSpace(b, i+1)
	}
	if i >= len(b) || b[i] != '"' {
		w.i = len(b)
		return nil, nil, false
	}
	end := skipString(b, i)
	if end < 0 {
		w.i = len(b)
		return nil, nil, false
	}
	name = b[i:end]
	i = skipSpace(b, end)
	if i >= len(b) || b[i] != ':' {
		w.i = len(b)
		return nil, nil, false
	}
	i = skipSpace(b, i+1)
	vend := skipValue(b, i)
	if vend < 0 {
		w.i = len(b)
		return nil, nil, false
	}
	w.i = vend
	return name, b[i:vend], true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the string that starts at b[i]
// (a quote), or -1.
func skipString(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return -1
}

// skipValue returns the index after the value that starts at b[i], or
// -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				if j = skipString(b, j); j < 0 {
					return -1
				}
				j--
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\t' && b[j] != '\n' && b[j] != '\r' {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

// memberName is a name token's text: the bytes between the quotes, or,
// for a name with escapes, its decoded text.
func memberName(tok []byte) string {
	if len(tok) < 2 {
		return ""
	}
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1])
	}
	var s string
	if json.Unmarshal(tok, &s) != nil {
		return ""
	}
	return s
}

// nameIs reports whether a name token is name, without allocating for a
// name without escapes.
func nameIs(tok []byte, name string) bool {
	if len(tok) < 2 {
		return false
	}
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1:len(tok)-1]) == name
	}
	return memberName(tok) == name
}

// isNull reports an absent value or JSON null.
func isNull(raw []byte) bool { return len(raw) == 0 || string(raw) == "null" }

// idText is a column value as an id: a string's text, or an integer's
// decimal digits (42 → "42"). ok is false for anything else (null, a
// fraction, a boolean, an object) and for an empty string.
func idText(raw []byte) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	if raw[0] == '"' {
		s, ok := jsonString(raw)
		return s, ok && s != ""
	}
	if !isInteger(raw) {
		return "", false
	}
	return string(raw), true
}

// isInteger reports a JSON integer literal: an optional minus and digits.
func isInteger(raw []byte) bool {
	i := 0
	if len(raw) > 0 && raw[0] == '-' {
		i = 1
	}
	if i == len(raw) {
		return false
	}
	for ; i < len(raw); i++ {
		if raw[i] < '0' || raw[i] > '9' {
			return false
		}
	}
	return true
}

// versionOf reads a version: a JSON integer >= 0 that fits an int64.
func versionOf(raw []byte) (int64, bool) {
	if !isInteger(raw) || raw[0] == '-' {
		return 0, false
	}
	v, err := strconv.ParseInt(string(raw), 10, 64)
	return v, err == nil
}

// maxDecimalScale bounds the scale of a decimal the decoder expands; a
// Postgres numeric has at most 16,383 digits after the point, and no
// location or price needs more than a few.
const maxDecimalScale = 1000

// appendDecimal appends, as a JSON number, the Kafka Connect Decimal
// whose unscaled value is b64 (the base64 of a big-endian two's-complement
// integer, as the JSON converter writes bytes) at scale. ok is false if
// b64 is not base64 or the scale is out of bounds.
func appendDecimal(dst, b64 []byte, scale int) ([]byte, bool) {
	if scale < -maxDecimalScale || scale > maxDecimalScale {
		return dst, false
	}
	var small [32]byte
	buf := small[:]
	if n := base64.StdEncoding.DecodedLen(len(b64)); n > len(buf) {
		buf = make([]byte, n)
	}
	n, err := base64.StdEncoding.Decode(buf, b64)
	if err != nil || n == 0 {
		return dst, false
	}
	raw := buf[:n]
	start := len(dst)
	if n <= 8 {
		v := int64(int8(raw[0])) // sign-extended
		for _, c := range raw[1:] {
			v = v<<8 | int64(c)
		}
		dst = strconv.AppendInt(dst, v, 10)
	} else {
		v := new(big.Int).SetBytes(raw)
		if raw[0]&0x80 != 0 {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*n)))
		}
		dst = v.Append(dst, 10)
	}
	// Place the point: dst[start:] is [-]digits.
	digitsAt := start
	if dst[start] == '-' {
		digitsAt++
	}
	digits := len(dst) - digitsAt
	switch {
	case scale <= 0:
		if !(digits == 1 && dst[digitsAt] == '0') {
			for range -scale {
				dst = append(dst, '0')
			}
		}
	case digits > scale:
		dst = append(dst, 0)
		at := len(dst) - 1 - scale
		copy(dst[at+1:], dst[at:len(dst)-1])
		dst[at] = '.'
	default:
		// 0.000ddd: move the digits right by the zeros and "0.".
		pad := scale - digits + 2
		for range pad {
			dst = append(dst, 0)
		}
		copy(dst[digitsAt+pad:], dst[digitsAt:digitsAt+digits])
		dst[digitsAt], dst[digitsAt+1] = '0', '.'
		for i := digitsAt + 2; i < digitsAt+pad; i++ {
			dst[i] = '0'
		}
	}
	return dst, true
}

// appendVariableDecimal appends, as a JSON number, Debezium's
// VariableScaleDecimal ({"scale":2,"value":"<base64>"}, a numeric column
// without a declared scale under decimal.handling.mode=precise). ok is
// false if raw is not one.
func appendVariableDecimal(dst, raw []byte) ([]byte, bool) {
	w, ok := walkObject(raw)
	if !ok {
		return dst, false
	}
	var scale, value []byte
	n := 0
	for k, v, ok := w.next(); ok; k, v, ok = w.next() {
		n++
		switch {
		case nameIs(k, "scale"):
			scale = v
		case nameIs(k, "value"):
			value = v
		}
	}
	if n != 2 || !isInteger(scale) || len(value) < 2 || value[0] != '"' {
		return dst, false
	}
	s, err := strconv.Atoi(string(scale))
	if err != nil {
		return dst, false
	}
	return appendDecimal(dst, value[1:len(value)-1], s)
}
