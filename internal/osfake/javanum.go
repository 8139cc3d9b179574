package osfake

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// Numbers as the JVM spells them. The server writes a double or a float
// with Double.toString or Float.toString (Jackson does the same), so a
// double sort value or bucket key 4 reads 4.0, and 1e19 reads 1.0E19.

// javaDouble is Double.toString: the shortest digits that read back as
// f, in plain notation from 10^-3 up to 10^7, else as d.dddE±n.
func javaDouble(f float64) string { return javaFloating(f, 64) }

// javaFloat is Float.toString.
func javaFloat(f float32) string { return javaFloating(float64(f), 32) }

func javaFloating(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	sign := ""
	if f < 0 {
		sign, f = "-", -f
	}
	// Shortest digits d1d2…dn and exponent e: f = 0.d1d2…dn × 10^(e+1).
	sci := strconv.FormatFloat(f, 'e', -1, bits) // d.ddde±XX
	mant, expText, _ := strings.Cut(sci, "e")
	digits := strings.Replace(mant, ".", "", 1)
	exp, _ := strconv.Atoi(expText)
	if f >= 1e-3 && f < 1e7 {
		var s string
		switch {
		case exp < 0:
			s = "0." + strings.Repeat("0", -exp-1) + digits
		case len(digits) > exp+1:
			s = digits[:exp+1] + "." + digits[exp+1:]
		default:
			s = digits + strings.Repeat("0", exp+1-len(digits)) + ".0"
		}
		return sign + s
	}
	frac := digits[1:]
	if frac == "" {
		frac = "0"
	}
	return sign + digits[:1] + "." + frac + "E" + strconv.Itoa(exp)
}

// isIntegerLiteral reports whether a JSON number is written as an
// integer, which the JSON parser reads as an int, long or BigInteger
// rather than a double.
func isIntegerLiteral(n json.Number) bool { return !strings.ContainsAny(n.String(), ".eE") }

// numberPreview is how the server previews a JSON number that a field
// rejects: an integer as written, any other number as the double (or,
// for float and half_float fields, the float) the parser read.
func numberPreview(typ string, n json.Number) string {
	if isIntegerLiteral(n) {
		return n.String()
	}
	f, _ := strconv.ParseFloat(n.String(), 64) // ±Inf when out of range, as Java's parser
	if typ == "float" || typ == "half_float" {
		return javaFloat(float32(f))
	}
	return javaDouble(f)
}
