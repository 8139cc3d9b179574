package osfake

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// geo_distance: the query, distance units, arc distance on the server's
// sphere, and geo points in the forms the server accepts ({"lat","lon"},
// "lat,lon", WKT POINT, [lon, lat], geohash).

// earthRadiusMeters is Lucene's GeoUtils.EARTH_MEAN_RADIUS, the sphere
// OpenSearch measures arc distances on.
const earthRadiusMeters = 6371008.7714

type geoPoint struct{ lat, lon float64 }

type geoDistanceQuery struct {
	field          string
	center         geoPoint
	meters         float64
	ignoreUnmapped bool
}

func parseGeoDistance(body any) (query, *osError) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, parsingException("[geo_distance] query malformed, no start_object after query name")
	}
	q := &geoDistanceQuery{meters: -1}
	for _, k := range sortedNames(m) {
		v := m[k]
		switch k {
		case "distance":
			d, err := parseDistance(v)
			if err != nil {
				return nil, err
			}
			q.meters = d
		case "ignore_unmapped":
			q.ignoreUnmapped = v == true
		case "distance_type", "validation_method", "_name", "boost", "unit":
		default:
			if q.field != "" {
				return nil, parsingException("[geo_distance] query doesn't support multiple fields, found [" + q.field + "] and [" + k + "]")
			}
			p, ok := parseGeoPoint(v)
			if !ok {
				return nil, parsingException("[geo_distance] failed to parse point of field [" + k + "]")
			}
			q.field, q.center = k, p
		}
	}
	if q.meters < 0 {
		return nil, parsingException("geo_distance requires 'distance' to be specified")
	}
	if q.field == "" {
		return nil, parsingException("no geo point specified in [geo_distance]")
	}
	return q, nil
}

// distanceUnits are OpenSearch's DistanceUnit names in its parse order
// ("km" is tried before "m", "nmi" before "mi").
var distanceUnits = []struct {
	names  []string
	meters float64
}{
	{[]string{"in", "inch"}, 0.0254}, {[]string{"yd", "yards"}, 0.9144}, {[]string{"ft", "feet"}, 0.3048},
	{[]string{"km", "kilometers"}, 1000}, {[]string{"NM", "nmi", "nauticalmiles"}, 1852},
	{[]string{"mm", "millimeters"}, 0.001}, {[]string{"cm", "centimeters"}, 0.01},
	{[]string{"mi", "miles"}, 1609.344}, {[]string{"m", "meters"}, 1},
}

// parseDistance reads "25mi", "10km", "500m" or a number of metres.
func parseDistance(v any) (float64, *osError) {
	if n, ok := v.(json.Number); ok {
		f, err := n.Float64()
		if err == nil {
			return f, nil
		}
	}
	s, _ := v.(string)
	s = strings.TrimSpace(s)
	for _, u := range distanceUnits {
		for _, name := range u.names {
			if num, ok := strings.CutSuffix(s, name); ok {
				if f, err := strconv.ParseFloat(strings.TrimSpace(num), 64); err == nil {
					return f * u.meters, nil
				}
			}
		}
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f, nil
	}
	return 0, parseError(fmt.Sprintf("failed to parse distance [%v]", v))
}

func (q *geoDistanceQuery) score() float64 { return 1 }

func (q *geoDistanceQuery) bind(ix *index) (matcher, *osError) {
	return bindGeo(ix, "geo_distance", q.field, q.ignoreUnmapped, func(p geoPoint) bool { return arcDistance(q.center, p) <= q.meters })
}

// bindGeo binds a geo query on field: a document matches when one of its
// points passes in. An unmapped field matches nothing with
// ignoreUnmapped, and is an error otherwise, as is a field that is not a
// geo_point.
func bindGeo(ix *index, name, field string, ignoreUnmapped bool, in func(geoPoint) bool) (matcher, *osError) {
	f := resolveField(ix, field)
	switch {
	case f.kind == kindNone && ignoreUnmapped:
		return matchNone, nil
	case f.kind == kindNone:
		return nil, queryShardException("failed to find geo field [" + field + "]")
	case f.kind != kindGeo:
		return nil, queryShardException("field [" + field + "] is of type [" + f.typ + "], but only geo_point fields are supported by [" + name + "] query")
	}
	return func(d *doc) bool {
		hit := false
		walkPath(d.fields, f.path, func(v any) bool {
			eachGeoPoint(v, func(p geoPoint) bool {
				hit = in(p)
				return !hit
			})
			return !hit
		})
		return hit
	}, nil
}

// arcDistance is Lucene's SloppyMath.haversinMeters (with exact
// trigonometry): the great-circle distance in metres.
func arcDistance(a, b geoPoint) float64 {
	x1, x2 := a.lat*math.Pi/180, b.lat*math.Pi/180
	h1 := 1 - math.Cos(x1-x2)
	h2 := 1 - math.Cos((a.lon-b.lon)*math.Pi/180)
	h := h1 + math.Cos(x1)*math.Cos(x2)*h2
	return earthRadiusMeters * 2 * math.Asin(math.Min(1, math.Sqrt(h*0.5)))
}

// eachGeoPoint calls fn with each point of a geo_point field value: one
// point ({"lat","lon"}, "lat,lon", "POINT (lon lat)", a geohash, or
// [lon, lat]) or an array of them.
func eachGeoPoint(v any, fn func(geoPoint) bool) bool {
	if arr, ok := v.([]any); ok && !isLonLatArray(arr) {
		for _, e := range arr {
			if !eachGeoPoint(e, fn) {
				return false
			}
		}
		return true
	}
	if p, ok := parseGeoPoint(v); ok {
		return fn(p)
	}
	return true
}

func isLonLatArray(arr []any) bool {
	if len(arr) < 2 || len(arr) > 3 {
		return false
	}
	for _, e := range arr {
		if _, ok := e.(json.Number); !ok {
			return false
		}
	}
	return true
}

func parseGeoPoint(v any) (geoPoint, bool) {
	switch x := v.(type) {
	case map[string]any:
		lat, ok1 := toNum(x["lat"])
		lon, ok2 := toNum(x["lon"])
		return geoPoint{lat: lat.f, lon: lon.f}, ok1 && ok2
	case []any:
		if !isLonLatArray(x) {
			return geoPoint{}, false
		}
		lon, _ := toNum(x[0])
		lat, _ := toNum(x[1])
		return geoPoint{lat: lat.f, lon: lon.f}, true
	case string:
		s := strings.TrimSpace(x)
		if wkt, ok := strings.CutPrefix(strings.ToUpper(s), "POINT"); ok {
			parts := strings.Fields(strings.Trim(strings.TrimSpace(wkt), "()"))
			if len(parts) >= 2 {
				lon, err1 := strconv.ParseFloat(parts[0], 64)
				lat, err2 := strconv.ParseFloat(parts[1], 64)
				return geoPoint{lat: lat, lon: lon}, err1 == nil && err2 == nil
			}
			return geoPoint{}, false
		}
		if lat, lon, ok := strings.Cut(s, ","); ok {
			la, err1 := strconv.ParseFloat(strings.TrimSpace(lat), 64)
			lo, err2 := strconv.ParseFloat(strings.TrimSpace(lon), 64)
			return geoPoint{lat: la, lon: lo}, err1 == nil && err2 == nil
		}
		return decodeGeohash(s)
	}
	return geoPoint{}, false
}

// decodeGeohash returns the centre of a geohash cell.
func decodeGeohash(h string) (geoPoint, bool) {
	const alphabet = "0123456789bcdefghjkmnpqrstuvwxyz"
	if h == "" || len(h) > 12 {
		return geoPoint{}, false
	}
	latLo, latHi, lonLo, lonHi := -90.0, 90.0, -180.0, 180.0
	even := true
	for _, c := range strings.ToLower(h) {
		idx := strings.IndexRune(alphabet, c)
		if idx < 0 {
			return geoPoint{}, false
		}
		for bit := 4; bit >= 0; bit-- {
			on := idx>>bit&1 == 1
			if even {
				if mid := (lonLo + lonHi) / 2; on {
					lonLo = mid
				} else {
					lonHi = mid
				}
			} else {
				if mid := (latLo + latHi) / 2; on {
					latLo = mid
				} else {
					latHi = mid
				}
			}
			even = !even
		}
	}
	return geoPoint{lat: (latLo + latHi) / 2, lon: (lonLo + lonHi) / 2}, true
}

// --- geo_bounding_box --------------------------------------------------------

type geoBoxQuery struct {
	field                    string
	top, left, bottom, right float64
	ignoreUnmapped           bool
}

// parseGeoBox reads {"<field>": {"top_left": P, "bottom_right": P}} (or
// top_right/bottom_left, or "top", "left", "bottom", "right" numbers), P in
// any geo point form. A box whose left edge is east of its right edge
// crosses the antimeridian.
func parseGeoBox(body any) (query, *osError) {
	m, ok := body.(map[string]any)
	if !ok {
		return nil, parsingException("[geo_bounding_box] query malformed, no start_object after query name")
	}
	q := &geoBoxQuery{}
	for _, k := range sortedNames(m) {
		v := m[k]
		switch k {
		case "ignore_unmapped":
			q.ignoreUnmapped = v == true
		case "validation_method", "type", "_name", "boost":
		default:
			if q.field != "" {
				return nil, parsingException("[geo_bounding_box] query doesn't support multiple fields, found [" + q.field + "] and [" + k + "]")
			}
			box, ok := v.(map[string]any)
			if !ok {
				return nil, parsingException("[geo_bounding_box] failed to parse bounding box of field [" + k + "]")
			}
			if err := q.parseCorners(box); err != nil {
				return nil, err
			}
			q.field = k
		}
	}
	if q.field == "" {
		return nil, parsingException("no geo point field specified in [geo_bounding_box]")
	}
	if q.top < q.bottom {
		return nil, &osError{Status: 400, Type: "illegal_argument_exception",
			Reason: fmt.Sprintf("top is below bottom corner: %v vs. %v", q.top, q.bottom)}
	}
	for _, c := range []struct {
		v, limit float64
		name     string
	}{{q.top, 90, "top"}, {q.bottom, 90, "bottom"}, {q.left, 180, "left"}, {q.right, 180, "right"}} {
		if math.IsNaN(c.v) || math.Abs(c.v) > c.limit {
			return nil, queryShardException(fmt.Sprintf("%s %v is out of range [-%v, %v]", c.name, c.v, c.limit, c.limit))
		}
	}
	return q, nil
}

func (q *geoBoxQuery) parseCorners(box map[string]any) *osError {
	set := map[string]bool{}
	point := func(k string) (geoPoint, *osError) {
		p, ok := parseGeoPoint(box[k])
		if !ok {
			return geoPoint{}, parsingException("[geo_bounding_box] failed to parse point [" + k + "]")
		}
		return p, nil
	}
	num := func(k string) (float64, *osError) {
		n, ok := toNum(box[k])
		if !ok {
			return 0, parsingException("[geo_bounding_box] [" + k + "] must be a number")
		}
		return n.f, nil
	}
	for _, k := range sortedNames(box) {
		var err *osError
		switch k {
		case "top_left":
			var p geoPoint
			if p, err = point(k); err == nil {
				q.top, q.left = p.lat, p.lon
				set["top"], set["left"] = true, true
			}
		case "bottom_right":
			var p geoPoint
			if p, err = point(k); err == nil {
				q.bottom, q.right = p.lat, p.lon
				set["bottom"], set["right"] = true, true
			}
		case "top_right":
			var p geoPoint
			if p, err = point(k); err == nil {
				q.top, q.right = p.lat, p.lon
				set["top"], set["right"] = true, true
			}
		case "bottom_left":
			var p geoPoint
			if p, err = point(k); err == nil {
				q.bottom, q.left = p.lat, p.lon
				set["bottom"], set["left"] = true, true
			}
		case "top":
			q.top, err = num(k)
			set[k] = true
		case "bottom":
			q.bottom, err = num(k)
			set[k] = true
		case "left":
			q.left, err = num(k)
			set[k] = true
		case "right":
			q.right, err = num(k)
			set[k] = true
		default:
			return parsingException("[geo_bounding_box] unexpected field [" + k + "]")
		}
		if err != nil {
			return err
		}
	}
	if len(set) != 4 {
		return parsingException("[geo_bounding_box] failed to parse bounding box: top, left, bottom and right are all required")
	}
	return nil
}

func (q *geoBoxQuery) score() float64 { return 1 }

func (q *geoBoxQuery) bind(ix *index) (matcher, *osError) {
	return bindGeo(ix, "geo_bounding_box", q.field, q.ignoreUnmapped, q.contains)
}

// contains reports whether p is in the box, edges included; a box whose
// left is east of its right wraps across the antimeridian.
func (q *geoBoxQuery) contains(p geoPoint) bool {
	if p.lat < q.bottom || p.lat > q.top {
		return false
	}
	if q.left <= q.right {
		return p.lon >= q.left && p.lon <= q.right
	}
	return p.lon >= q.left || p.lon <= q.right
}
