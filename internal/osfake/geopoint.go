package osfake

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
)

// geo_point values as GeoPointFieldMapper parses them: a point is an
// object ({"lat","lon"}, {"geohash"} or GeoJSON), a string ("lat,lon",
// WKT or a geohash) or an array [lon, lat(, z)]; a field holds one point
// or an array of them. The causes are the server's; GeoJSON objects and
// WKT strings are not checked beyond the coordinates of a WKT POINT the
// emulator reads.

const geohashAlphabet = "0123456789bcdefghjkmnpqrstuvwxyz"

// geoPointRejected returns why a geo_point field rejects a value, or nil.
func geoPointRejected(d *dialect, field string, v any) *osError {
	arr, ok := v.([]any)
	if !ok {
		if v == nil {
			return nil
		}
		return geoOneRejected(field, v)
	}
	if len(arr) == 0 {
		return nil
	}
	rest := arr
	if _, isNum := arr[0].(json.Number); isNum {
		// [lon, lat] or [lon, lat, z], then any further points.
		lon := jsonFloat(arr[0].(json.Number))
		if len(arr) == 1 {
			return d.notNumeric("END_ARRAY")
		}
		lat, err := geoArrayNumber(d, arr[1])
		if err != nil {
			return err
		}
		rest = arr[2:]
		if len(rest) > 0 {
			if _, isNum := rest[0].(json.Number); !isNum {
				return parseError("field type does not accept > 3 dimensions")
			}
			rest = rest[1:]
		}
		if err := geoRange(field, lat, lon); err != nil {
			return err
		}
	}
	for _, e := range rest {
		if err := geoOneRejected(field, e); err != nil {
			return err
		}
	}
	return nil
}

// jsonFloat is a JSON number as the parser's doubleValue reads it, ±Inf
// beyond a double.
func jsonFloat(n json.Number) float64 {
	f, _ := strconv.ParseFloat(n.String(), 64)
	return f
}

// geoArrayNumber reads the second value of a [lon, lat] array as the
// parser's doubleValue does: a number, or a string that parses as one.
func geoArrayNumber(d *dialect, v any) (float64, *osError) {
	switch x := v.(type) {
	case json.Number:
		return jsonFloat(x), nil
	case string:
		f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
		if err != nil && !errorsIsRange(err) {
			return 0, &osError{Type: "number_format_exception", Reason: "For input string: \"" + x + "\""}
		}
		return f, nil
	}
	return 0, d.notNumeric(xValueToken(v))
}

// geoOneRejected checks one point of a field (an element of an array of
// points, or the field's only value).
func geoOneRejected(field string, v any) *osError {
	switch x := v.(type) {
	case string:
		return geoStringRejected(field, x)
	case map[string]any:
		return geoObjectRejected(field, x)
	case []any:
		return geoCoordinatesRejected(field, x)
	}
	return parseError("geo_point expected")
}

// geoCoordinatesRejected checks a [lon, lat(, z)] array inside an array
// of points, which GeoUtils.parseGeoPoint reads.
func geoCoordinatesRejected(field string, arr []any) *osError {
	var c [2]float64
	for i, e := range arr {
		n, ok := e.(json.Number)
		if !ok {
			return parseError("numeric value expected")
		}
		if i >= 3 {
			return parseError("[geo_point] field type does not accept more than 3 values")
		}
		if i < 2 {
			c[i] = jsonFloat(n)
		}
	}
	if len(arr) < 2 {
		return parseError("[geo_point] field type should have at least two dimensions")
	}
	return geoRange(field, c[1], c[0])
}

func geoStringRejected(field, s string) *osError {
	if strings.Contains(strings.ToLower(s), "point") {
		if p, ok := parseGeoPoint(s); ok {
			return geoRange(field, p.lat, p.lon)
		}
		return nil // WKT is not checked
	}
	if strings.Contains(s, ",") {
		parts := strings.Split(s, ",")
		if len(parts) > 3 {
			return parseError("failed to parse [" + s + "], expected 2 or 3 coordinates but found: [" + strconv.Itoa(len(parts)) + "]")
		}
		lat, err1 := strconv.ParseFloat(strings.TrimSpace(parts[0]), 64)
		if err1 != nil && !errorsIsRange(err1) {
			return parseError("latitude must be a number")
		}
		lon, err2 := strconv.ParseFloat(strings.TrimSpace(parts[1]), 64)
		if err2 != nil && !errorsIsRange(err2) {
			return parseError("longitude must be a number")
		}
		return geoRange(field, lat, lon)
	}
	return geohashRejected(s)
}

func geohashRejected(h string) *osError {
	reason := ""
	if h == "" {
		reason = "empty geohash"
	}
	for _, c := range h {
		if reason == "" && !strings.ContainsRune(geohashAlphabet, c) {
			reason = "unsupported symbol [" + string(c) + "] in geohash [" + h + "]"
		}
	}
	if reason == "" {
		return nil
	}
	e := parseError(reason)
	e.CausedBy = &osError{Type: "illegal_argument_exception", Reason: reason}
	return e
}

// geoObjectRejected checks {"lat": …, "lon": …}, {"geohash": …} or a
// GeoJSON object ({"type", "coordinates"}), one form only.
func geoObjectRejected(field string, m map[string]any) *osError {
	if len(m) == 0 {
		return parseError("token [END_OBJECT] not allowed")
	}
	var coord [2]float64 // lat, lon
	for _, k := range sortedNames(m) {
		switch v := m[k]; k {
		case "lat", "lon":
			i := 0
			if k == "lon" {
				i = 1
			}
			switch x := v.(type) {
			case json.Number:
				coord[i] = jsonFloat(x)
			case string:
				f, err := strconv.ParseFloat(strings.TrimSpace(x), 64)
				if err != nil && !errorsIsRange(err) {
					e := parseError("[lon] and [lat] must be valid double values")
					e.CausedBy = &osError{Type: "number_format_exception", Reason: "For input string: \"" + x + "\""}
					return e
				}
				coord[i] = f
			default:
				return parseError(k + " must be a number")
			}
		case "geohash":
			s, ok := v.(string)
			if !ok {
				return parseError("geohash must be a string")
			}
			if err := geohashRejected(s); err != nil {
				return err
			}
		case "type", "coordinates":
		default:
			return parseError("field must be either [lon|lat], [type|coordinates], or [geohash]")
		}
	}
	_, lat := m["lat"]
	_, lon := m["lon"]
	_, hash := m["geohash"]
	_, typ := m["type"]
	_, coords := m["coordinates"]
	forms := 0
	for _, f := range []bool{lat || lon, hash, typ || coords} {
		if f {
			forms++
		}
	}
	switch {
	case forms > 1:
		return parseError("field must be either [lon|lat], [type|coordinates], or [geohash]")
	case lat && !lon:
		return parseError("field [lon] missing")
	case lon && !lat:
		return parseError("field [lat] missing")
	case lat:
		return geoRange(field, coord[0], coord[1])
	}
	return nil
}

// geoRange rejects a latitude or longitude out of range, as the mapper
// does without ignore_malformed.
func geoRange(field string, lat, lon float64) *osError {
	switch {
	case math.IsNaN(lat):
		return illegalArgument("invalid latitude NaN; must be between -90.0 and 90.0")
	case lat < -90 || lat > 90:
		return illegalArgument("illegal latitude value [" + javaDouble(lat) + "] for " + field)
	case math.IsNaN(lon):
		return illegalArgument("invalid longitude NaN; must be between -180.0 and 180.0")
	case lon < -180 || lon > 180:
		return illegalArgument("illegal longitude value [" + javaDouble(lon) + "] for " + field)
	}
	return nil
}
