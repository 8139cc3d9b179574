package osfake

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// Numeric values that a numeric field rejects, with the server's
// exceptions. A JSON number is converted by the JSON parser (Jackson),
// whose overflow is an input_coercion_exception naming the number as
// written; text is converted by the field mapper, whose overflow is an
// IllegalArgumentException. Floating-point fields take only finite
// values. Jackson's messages also give the number's position in the
// source; the emulator's leave it out.

// integerRange is each integer type's bounds, the name the mapper's
// message gives it and the Java type the JSON parser reads it as.
var integerRange = map[string]struct {
	min, max int64
	article  string
	javaType string
}{
	"long":    {math.MinInt64, math.MaxInt64, "a long", "long"},
	"integer": {math.MinInt32, math.MaxInt32, "an integer", "int"},
	"short":   {math.MinInt16, math.MaxInt16, "a short", "short"},
	"byte":    {math.MinInt8, math.MaxInt8, "a byte", ""},
}

func outOfRange(value, article string) *osError {
	return illegalArgument("Value [" + value + "] is out of range for " + article)
}

// numberRejected checks a JSON number against typ.
func numberRejected(d *dialect, typ string, n json.Number) *osError {
	if r, ok := integerRange[typ]; ok {
		// Jackson reads a byte as an int, which the mapper then checks.
		jacksonType, bounds := typ, r
		if typ == "byte" {
			jacksonType, bounds = "integer", integerRange["integer"]
		}
		var v int64
		if isIntegerLiteral(n) {
			b, _ := new(big.Int).SetString(n.String(), 10)
			if b == nil || b.Cmp(big.NewInt(bounds.min)) < 0 || b.Cmp(big.NewInt(bounds.max)) > 0 {
				return d.numberOutOfRange(n, integerRange[jacksonType].javaType)
			}
			v = b.Int64()
		} else {
			// A double beyond the bounds (as doubles) overflows; one
			// within them is truncated.
			f, _ := strconv.ParseFloat(n.String(), 64)
			if f < float64(bounds.min) || f > float64(bounds.max) || math.IsNaN(f) {
				return d.numberOutOfRange(n, integerRange[jacksonType].javaType)
			}
			v = int64(math.Max(math.Min(math.Trunc(f), math.MaxInt64), math.MinInt64))
		}
		if typ == "byte" && (v < r.min || v > r.max) {
			return outOfRange(strconv.FormatInt(v, 10), r.article)
		}
		return nil
	}
	f, _ := strconv.ParseFloat(n.String(), 64) // ±Inf beyond a double, as Java's parser
	return nonFinite(typ, f)
}

// numericStringRejected checks text against typ: it must read as a
// number (else the parser's NumberFormatException, which a long's parser
// rethrows as an IllegalArgumentException) within the type's range, after
// truncation toward zero for integer types.
func numericStringRejected(typ, s string) *osError {
	text := strings.TrimSpace(s)
	f, err := strconv.ParseFloat(text, 64)
	if err != nil && !errorsIsRange(err) {
		cause := "number_format_exception"
		if typ == "long" {
			cause = "illegal_argument_exception"
		}
		return &osError{Type: cause, Reason: "For input string: \"" + s + "\""}
	}
	if r, ok := integerRange[typ]; ok {
		v, _, perr := big.ParseFloat(text, 10, 256, big.ToZero)
		if perr != nil {
			return outOfRange(s, r.article)
		}
		i, _ := v.Int(nil)
		if i.Cmp(big.NewInt(r.min)) < 0 || i.Cmp(big.NewInt(r.max)) > 0 {
			return outOfRange(s, r.article)
		}
		return nil
	}
	return nonFinite(typ, f)
}

func errorsIsRange(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// nonFinite rejects a value a floating-point type cannot hold: a float
// or half_float reads it as a float first, and a half_float beyond 65504
// rounds to infinity.
func nonFinite(typ string, f float64) *osError {
	shown := ""
	switch typ {
	case "double":
		if math.IsInf(f, 0) || math.IsNaN(f) {
			shown = javaDouble(f)
		}
	case "float", "half_float":
		f32 := float32(f)
		if math.IsInf(float64(f32), 0) || math.IsNaN(float64(f32)) || typ == "half_float" && math.Abs(float64(f32)) >= 65520 {
			shown = javaFloat(f32)
		}
	}
	if shown == "" {
		return nil
	}
	return illegalArgument("[" + typ + "] supports only finite values, but got [" + shown + "]")
}
