package osfake

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// positionSuffix is the parser position the server appends to some
// reasons (" at 1:6", Jackson's "\n at [Source: …]") and the emulator
// leaves out.
var positionSuffix = regexp.MustCompile(`(?s)( at \d+:\d+|\n at \[Source: .*)$`)

// errorChain renders an error object and its causes as "type: reason"
// joined by " / ", without parser positions.
func errorChain(e any) string {
	var parts []string
	for e != nil {
		parts = append(parts, str(dig(e, "type"))+": "+positionSuffix.ReplaceAllString(str(dig(e, "reason")), ""))
		e = dig(e, "caused_by")
	}
	return strings.Join(parts, " / ")
}

// parserComplaints are the JSON parser's failures to read a number or a
// boolean from a token, as error chains: 2.19's parser raises
// json_parse_exception; 3.x's says "cannot" where 2.19's says "can not",
// and wraps an input_coercion_exception in another.
func parserComplaints(tg *target) (notNumeric, notBoolean func(token string) string) {
	notNumeric = func(token string) string {
		return byLine(tg, "json_parse_exception: Current token ("+token+") not numeric, can not use numeric value accessors",
			"input_coercion_exception: Current token ("+token+") not numeric, cannot use numeric value accessors"+
				" / input_coercion_exception: Current token ("+token+") not numeric, cannot use numeric value accessors")
	}
	notBoolean = func(token string) string {
		return byLine(tg, "json_parse_exception: Current token ("+token+") not of boolean type",
			"input_coercion_exception: Current token ("+token+") not of boolean type"+
				" / input_coercion_exception: Current token ("+token+") not of boolean type")
	}
	return notNumeric, notBoolean
}

// writeBoth writes doc as document id of index twice, by PUT _doc and as
// the only item of a _bulk, and returns the status and error chain ("" on
// success) of each.
func (tg *target) writeBoth(index, id, doc string) (single, bulk string) {
	tg.t.Helper()
	status, out := tg.do("PUT", "/"+index+"/_doc/"+id, doc)
	single = str(status)
	if status >= 300 {
		single += " " + errorChain(dig(out, "error"))
	}
	out = tg.mustDo(200, "POST", "/"+index+"/_bulk", `{"index":{"_id":"`+id+`"}}`+"\n"+doc+"\n")
	it := dig(out, "items", 0, "index")
	bulk = str(dig(it, "status"))
	if e := dig(it, "error"); e != nil {
		bulk += " " + errorChain(e)
	}
	return single, bulk
}

// checkWrite writes doc as document 1 of index both ways (writeBoth)
// and wants the same outcome from each: taken when want is "", else
// exactly want.
func (tg *target) checkWrite(index, doc, want string) {
	tg.t.Helper()
	single, bulk := tg.writeBoth(index, "1", doc)
	want = tg.failureOf(index, want)
	if want == "" {
		if single[0] != '2' || bulk[0] != '2' {
			tg.t.Errorf("%s: PUT %s, bulk %s; want it taken", doc, single, bulk)
		}
		return
	}
	if single != want || bulk != want {
		tg.t.Errorf("%s:\n PUT  %s\n bulk %s\n want %s", doc, single, bulk, want)
	}
}

// mappingProps returns the properties of an index's mapping.
func (tg *target) mappingProps(index string) map[string]any {
	tg.t.Helper()
	tg.mappingSettled()
	props, _ := dig(tg.mustDo(200, "GET", "/"+index+"/_mapping", ""), index, "mappings", "properties").(map[string]any)
	return props
}

// A mapped field rejects a value of the wrong kind: an object for a
// field mapper (with a preview of the object as the server's HashMap
// prints it), a concrete value for an object, text that is not a number
// for a numeric field, a boolean for a number, a number for a boolean,
// and geo_points that do not parse or are out of range. A single index
// and a bulk item fail alike; the mapping is left as it was.
func TestMappedFieldsRejectValuesOfTheWrongKind(t *testing.T) {
	eachLine(t, testMappedFieldsRejectValuesOfTheWrongKind)
}

func testMappedFieldsRejectValuesOfTheWrongKind(t *testing.T, tg *target) {
	name := tg.name("typed")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_replicas":0},"mappings":{"properties":{
		"k":{"type":"keyword"},"o":{"properties":{"x":{"type":"keyword"}}},"i":{"type":"integer"},"b":{"type":"byte"},
		"f":{"type":"float"},"l":{"type":"long"},"g":{"type":"geo_point"},"t":{"type":"text"},"bo":{"type":"boolean"},
		"d":{"type":"date"},"n":{"type":"nested"},"s":{"type":"short"},"h":{"type":"half_float"},"db":{"type":"double"}}}}`)
	before := tg.mappingProps(name)
	field := func(f, typ, preview string) string {
		return "400 mapper_parsing_exception: failed to parse field [" + f + "] of type [" + typ + "] in document with id '1'. Preview of field's value: '" + preview + "'"
	}
	notNumeric, notBoolean := parserComplaints(tg)
	const noText = " / illegal_state_exception: Can't get text on a START_OBJECT"
	noNumber, noBool := " / "+notNumeric("START_OBJECT"), " / "+notBoolean("START_OBJECT")
	concrete := func(o, f string) string {
		return "400 mapper_parsing_exception: object mapping for [" + o + "] tried to parse field [" + f + "] as object, but found a concrete value"
	}
	geo := func(cause string) string {
		return "400 mapper_parsing_exception: failed to parse field [g] of type [geo_point] / " + cause
	}
	cases := []struct{ doc, want string }{
		{`{"k":{"a":1}}`, field("k", "keyword", "{a=1}") + noText},
		{`{"k":[1,{"a":1}]}`, field("k", "keyword", "{a=1}") + noText},
		{`{"k":[[{"a":1}]]}`, field("k", "keyword", "{a=1}") + noText},
		{`{"k":{}}`, field("k", "keyword", "{}") + noText},
		{`{"k":{"a":null}}`, field("k", "keyword", "{a=null}") + noText},
		{`{"k":{"b":1,"a":[1,2.50,"x",true,null,1e3],"c":{"d":"x"}}}`, field("k", "keyword", "{a=[1, 2.5, x, true, null, 1000.0], b=1, c={d=x}}") + noText},
		// A HashMap: by bucket, and in a bucket (mid, cuisine) by document order.
		{`{"k":{"zeta":1,"alpha":2,"mid":3,"name":"x","cuisine":"y"}}`, field("k", "keyword", "{zeta=1, alpha=2, name=x, mid=3, cuisine=y}") + noText},
		{`{"k":{"aa":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"kk":11,"l":12,"m":13,"n":14}}`,
			field("k", "keyword", "{aa=1, kk=11, b=2, c=3, d=4, e=5, f=6, g=7, h=8, i=9, j=10, l=12, m=13, n=14}") + noText},
		{`{"t":{"a":1}}`, field("t", "text", "{a=1}") + noText},
		{`{"t":[{"a":1}]}`, field("t", "text", "{a=1}") + noText},
		{`{"d":{"a":1}}`, field("d", "date", "{a=1}") + noText},
		{`{"o":"flat"}`, concrete("o", "o")},
		{`{"o":1}`, concrete("o", "o")},
		{`{"o":true}`, concrete("o", "o")},
		{`{"o":["flat"]}`, concrete("o", "null")},
		{`{"o":[{"x":"a"},"b"]}`, concrete("o", "null")},
		{`{"o":[["a"]]}`, concrete("o", "null")},
		{`{"o":{"x":{"y":1}}}`, field("o.x", "keyword", "{y=1}") + noText},
		{`{"o":{"x":[{"y":1}]}}`, field("o.x", "keyword", "{y=1}") + noText},
		{`{"n":"x"}`, concrete("n", "n")},
		{`{"n":5}`, concrete("n", "n")},
		{`{"i":{"a":1}}`, field("i", "integer", "{a=1}") + noNumber},
		{`{"i":[{"a":1}]}`, field("i", "integer", "{a=1}") + noNumber},
		{`{"i":"abc"}`, field("i", "integer", "abc") + ` / number_format_exception: For input string: "abc"`},
		{`{"i":true}`, field("i", "integer", "true") + " / " + notNumeric("VALUE_TRUE")},
		{`{"b":{"a":1}}`, field("b", "byte", "{a=1}") + noNumber},
		{`{"b":"x"}`, field("b", "byte", "x") + ` / number_format_exception: For input string: "x"`},
		{`{"b":true}`, field("b", "byte", "true") + " / " + notNumeric("VALUE_TRUE")},
		{`{"s":"x"}`, field("s", "short", "x") + ` / number_format_exception: For input string: "x"`},
		{`{"f":{"a":1}}`, field("f", "float", "{a=1}") + noNumber},
		{`{"f":[{"a":1}]}`, field("f", "float", "{a=1}") + noNumber},
		{`{"f":"x"}`, field("f", "float", "x") + ` / number_format_exception: For input string: "x"`},
		{`{"f":true}`, field("f", "float", "true") + " / " + notNumeric("VALUE_TRUE")},
		{`{"h":"x"}`, field("h", "half_float", "x") + ` / number_format_exception: For input string: "x"`},
		{`{"db":{"a":1}}`, field("db", "double", "{a=1}") + noNumber},
		{`{"l":{"a":1}}`, field("l", "long", "{a=1}") + noNumber},
		// A long's parser rethrows the NumberFormatException as an
		// IllegalArgumentException.
		{`{"l":"x"}`, field("l", "long", "x") + ` / illegal_argument_exception: For input string: "x"`},
		{`{"l":false}`, field("l", "long", "false") + " / " + notNumeric("VALUE_FALSE")},
		{`{"bo":{"a":1}}`, field("bo", "boolean", "{a=1}") + noBool},
		{`{"bo":[{"a":1}]}`, field("bo", "boolean", "{a=1}") + noBool},
		{`{"bo":1}`, field("bo", "boolean", "1") + " / " + notBoolean("VALUE_NUMBER_INT")},
		{`{"bo":1.5}`, field("bo", "boolean", "1.5") + " / " + notBoolean("VALUE_NUMBER_FLOAT")},
		{`{"bo":"yes"}`, field("bo", "boolean", "yes") + " / illegal_argument_exception: Failed to parse value [yes] as only [true] or [false] are allowed."},
		{`{"g":{"a":1}}`, geo("parse_exception: field must be either [lon|lat], [type|coordinates], or [geohash]")},
		{`{"g":[{"a":1}]}`, geo("parse_exception: field must be either [lon|lat], [type|coordinates], or [geohash]")},
		{`{"g":[{"lat":1,"lon":2},{"b":1}]}`, geo("parse_exception: field must be either [lon|lat], [type|coordinates], or [geohash]")},
		{`{"g":{"lat":1,"lon":2,"z":3}}`, geo("parse_exception: field must be either [lon|lat], [type|coordinates], or [geohash]")},
		{`{"g":{"lat":1,"lon":2,"geohash":"x"}}`, geo("parse_exception: field must be either [lon|lat], [type|coordinates], or [geohash]")},
		{`{"g":{}}`, geo("parse_exception: token [END_OBJECT] not allowed")},
		{`{"g":{"lat":1}}`, geo("parse_exception: field [lon] missing")},
		{`{"g":{"lon":1}}`, geo("parse_exception: field [lat] missing")},
		{`{"g":{"lat":"x","lon":1}}`, geo(`parse_exception: [lon] and [lat] must be valid double values / number_format_exception: For input string: "x"`)},
		{`{"g":{"lat":true,"lon":2}}`, geo("parse_exception: lat must be a number")},
		{`{"g":{"lat":{"a":1},"lon":2}}`, geo("parse_exception: lat must be a number")},
		{`{"g":{"lat":null,"lon":1}}`, geo("parse_exception: lat must be a number")},
		{`{"g":{"geohash":5}}`, geo("parse_exception: geohash must be a string")},
		{`{"g":{"geohash":"abc"}}`, geo("parse_exception: unsupported symbol [a] in geohash [abc] / illegal_argument_exception: unsupported symbol [a] in geohash [abc]")},
		{`{"g":{"lat":100,"lon":1}}`, geo("illegal_argument_exception: illegal latitude value [100.0] for g")},
		{`{"g":{"lat":1,"lon":200}}`, geo("illegal_argument_exception: illegal longitude value [200.0] for g")},
		{`{"g":{"lat":1e400,"lon":1}}`, geo("illegal_argument_exception: illegal latitude value [Infinity] for g")},
		{`{"g":{"lat":"NaN","lon":1}}`, geo("illegal_argument_exception: invalid latitude NaN; must be between -90.0 and 90.0")},
		{`{"g":true}`, geo("parse_exception: geo_point expected")},
		{`{"g":5}`, geo("parse_exception: geo_point expected")},
		{`{"g":[true]}`, geo("parse_exception: geo_point expected")},
		{`{"g":[null]}`, geo("parse_exception: geo_point expected")},
		{`{"g":["1,2",null]}`, geo("parse_exception: geo_point expected")},
		{`{"g":"abc"}`, geo("parse_exception: unsupported symbol [a] in geohash [abc] / illegal_argument_exception: unsupported symbol [a] in geohash [abc]")},
		{`{"g":"XYZ"}`, geo("parse_exception: unsupported symbol [X] in geohash [XYZ] / illegal_argument_exception: unsupported symbol [X] in geohash [XYZ]")},
		{`{"g":["a",1]}`, geo("parse_exception: unsupported symbol [a] in geohash [a] / illegal_argument_exception: unsupported symbol [a] in geohash [a]")},
		{`{"g":""}`, geo("parse_exception: empty geohash / illegal_argument_exception: empty geohash")},
		{`{"g":"x,1"}`, geo("parse_exception: latitude must be a number")},
		{`{"g":"1,x"}`, geo("parse_exception: longitude must be a number")},
		{`{"g":"1,2,3,4"}`, geo("parse_exception: failed to parse [1,2,3,4], expected 2 or 3 coordinates but found: [4]")},
		{`{"g":"100,1"}`, geo("illegal_argument_exception: illegal latitude value [100.0] for g")},
		{`{"g":"NaN,1"}`, geo("illegal_argument_exception: invalid latitude NaN; must be between -90.0 and 90.0")},
		{`{"g":[1]}`, geo(notNumeric("END_ARRAY"))},
		{`{"g":[1,true]}`, geo(notNumeric("VALUE_TRUE"))},
		{`{"g":[1,null]}`, geo(notNumeric("VALUE_NULL"))},
		{`{"g":[1,"a"]}`, geo(`number_format_exception: For input string: "a"`)},
		{`{"g":[1,"NaN"]}`, geo("illegal_argument_exception: invalid latitude NaN; must be between -90.0 and 90.0")},
		{`{"g":[1,2,"x"]}`, geo("parse_exception: field type does not accept > 3 dimensions")},
		{`{"g":[1,2,3,4]}`, geo("parse_exception: geo_point expected")},
		{`{"g":[200,1]}`, geo("illegal_argument_exception: illegal longitude value [200.0] for g")},
		{`{"g":[[1]]}`, geo("parse_exception: [geo_point] field type should have at least two dimensions")},
		{`{"g":[[]]}`, geo("parse_exception: [geo_point] field type should have at least two dimensions")},
		{`{"g":[[1,"a"]]}`, geo("parse_exception: numeric value expected")},
		{`{"g":[[1,2,3,4]]}`, geo("parse_exception: [geo_point] field type does not accept more than 3 values")},
		{`{"g":[[200,1]]}`, geo("illegal_argument_exception: illegal longitude value [200.0] for g")},
	}
	for _, tc := range cases {
		single, bulk := tg.writeBoth(name, "1", tc.doc)
		if want := tg.failureOf(name, tc.want); single != want || bulk != want {
			t.Errorf("%s:\n PUT  %s\n bulk %s\n want %s", tc.doc, single, bulk, want)
		}
	}
	// The root cause is the innermost OpenSearch exception of the chain.
	for doc, want := range map[string]string{
		`{"k":{"a":1}}`:                field("k", "keyword", "{a=1}")[4:],
		`{"o":"flat"}`:                 concrete("o", "o")[4:],
		`{"g":"abc"}`:                  "parse_exception: unsupported symbol [a] in geohash [abc]",
		`{"g":{"lat":100,"lon":1}}`:    "mapper_parsing_exception: failed to parse field [g] of type [geo_point]",
		`{"g":{"lat":"x","lon":"1"}}`:  "parse_exception: [lon] and [lat] must be valid double values",
		`{"g":[1,"a"]}`:                "mapper_parsing_exception: failed to parse field [g] of type [geo_point]",
		`{"bo":{"a":1},"i":{"b":2}}`:   field("bo", "boolean", "{a=1}")[4:],
		`{"o":{"x":"a"},"i":{"b":2}} `: field("i", "integer", "{b=2}")[4:],
	} {
		if status, out := tg.do("PUT", "/"+name+"/_doc/1", doc); status != 400 || firstRootCause(out) != want {
			t.Errorf("PUT %s = %d, root cause %s; want %s", doc, status, firstRootCause(out), want)
		}
	}
	// Values of the right kind, coerced or empty, and nulls are taken.
	for _, doc := range []string{`{"k":[]}`, `{"k":true}`, `{"k":1.5}`, `{"k":[["a"]]}`, `{"o":null}`, `{"o":[]}`, `{"o":[null]}`,
		`{"n":[]}`, `{"i":4.7}`, `{"i":"4.7"}`, `{"i":""}`, `{"l":""}`, `{"f":""}`, `{"b":""}`, `{"b":3.9}`, `{"f":4}`, `{"l":4.9}`,
		`{"bo":""}`, `{"bo":"true"}`, `{"g":"x"}`, `{"g":"1"}`, `{"g":"u4pruydqqvjx1"}`, `{"g":"1,2"}`, `{"g":"1,2,3"}`, `{"g":" 1 , 2 "}`,
		`{"g":"POINT (1 2)"}`, `{"g":"point(1 2)"}`, `{"g":[1,2]}`, `{"g":[1,2,3]}`, `{"g":[1,2,3,"x"]}`, `{"g":[[1,2],"x"]}`,
		`{"g":{"lat":1,"lon":2}}`, `{"g":{"lat":"1","lon":"2"}}`, `{"g":{"lat":" 1 ","lon":1}}`, `{"g":{"geohash":"x"}}`,
		`{"g":{"type":"Point","coordinates":[1,2]}}`, `{"g":null}`, `{"g":[]}`, `{"g":["1,2","zz"]}`} {
		if single, bulk := tg.writeBoth(name, "ok", doc); single[0] != '2' || bulk[0] != '2' {
			t.Errorf("%s: PUT %s, bulk %s; want it taken", doc, single, bulk)
		}
	}
	if after := tg.mappingProps(name); !reflect.DeepEqual(after, before) {
		t.Errorf("mapping after the writes = %v, want %v", after, before)
	}
}

// The server coerces numbers (coerce defaults to true): a fraction in an
// integer field is truncated toward zero, an integer in a float field
// is taken, and a numeric string is read as its number.
func TestNumbersAreCoerced(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("coerce")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_replicas":0},"mappings":{"properties":{
		"price_level":{"type":"byte"},"rating":{"type":"float"},"price_cents":{"type":"integer"},"version":{"type":"long"}}}}`)
	tg.mustDo(201, "PUT", "/"+name+"/_doc/1?refresh=true", `{"price_level":"2.7","rating":4,"price_cents":1299.99,"version":-4.9}`)
	for _, q := range []struct {
		query string
		hits  int
	}{
		{`{"term":{"price_level":2}}`, 1},
		{`{"term":{"rating":4.0}}`, 1},
		{`{"term":{"price_cents":1299}}`, 1},
		{`{"term":{"price_cents":1299.99}}`, 0},
		{`{"term":{"version":-4}}`, 1},
		{`{"range":{"version":{"lt":-4}}}`, 0},
	} {
		out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"query":`+q.query+`}`)
		if got := str(dig(out, "hits", "total", "value")); got != str(q.hits) {
			t.Errorf("%s: %s hits, want %d", q.query, got, q.hits)
		}
	}
	// The source keeps the values as written.
	if src := dig(tg.getDoc(name, "1", ""), "_source", "price_cents"); str(src) != "1299.99" {
		t.Errorf("_source.price_cents = %v, want 1299.99", src)
	}
}

// Dynamic mapping: a field mapped by an earlier document rejects what it
// cannot parse, like an explicit mapping; a dotted name cannot go through
// a field that is not an object; and in one document every value of a
// new field gets a mapper of its own, so values that map differently
// conflict when the new mappers are merged (illegal_argument_exception).
// The order of that message follows the server's merge: the mappers
// sorted by path, the second of the first path merged into the first,
// later repeats merged the other way round.
func TestDynamicMappingConflicts(t *testing.T) { eachLine(t, testDynamicMappingConflicts) }

func testDynamicMappingConflicts(t *testing.T, tg *target) {
	name := tg.name("dynamic")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_replicas":0}}`)
	field := func(f, typ, preview string) string {
		return "400 mapper_parsing_exception: failed to parse field [" + f + "] of type [" + typ + "] in document with id '1'. Preview of field's value: '" + preview + "'"
	}
	concrete := func(o, f string) string {
		return "400 mapper_parsing_exception: object mapping for [" + o + "] tried to parse field [" + f + "] as object, but found a concrete value"
	}
	notNumeric, _ := parserComplaints(tg)
	changed := func(f, from, to string) string {
		return "400 illegal_argument_exception: mapper [" + f + "] cannot be changed from type [" + from + "] to [" + to + "]"
	}
	noMerge := func(f string) string {
		return "400 illegal_argument_exception: can't merge a non object mapping [" + f + "] with an object mapping"
	}
	steps := []struct{ doc, want string }{
		{`{"relation":"x","obj":{"a":1},"n":5,"p":{"q":{"r":1}},"eo":{},"e":[],"nn":null}`, ""},
		{`{"relation":{"name":"y"}}`, field("relation", "text", "{name=y}") + " / illegal_state_exception: Can't get text on a START_OBJECT"},
		{`{"obj":"s"}`, concrete("obj", "obj")},
		{`{"obj":["s"]}`, concrete("obj", "null")},
		{`{"eo":"x"}`, concrete("eo", "eo")},
		{`{"n":{"a":1}}`, field("n", "long", "{a=1}") + " / " + notNumeric("START_OBJECT")},
		{`{"p":{"q":"x"}}`, concrete("p.q", "q")},
		{`{"p.q":"x"}`, concrete("p.q", "p.q")},
		{`{"p":{"q":{"r":{"s":1}}}}`, field("p.q.r", "long", "{s=1}") + " / " + notNumeric("START_OBJECT")},
		{`{"relation.keyword":"x"}`, "400 mapper_parsing_exception: Could not dynamically add mapping for field [relation.keyword]. Existing mapping for [relation] must be of type object but found [text]."},
		{`{"n.d":1}`, "400 mapper_parsing_exception: Could not dynamically add mapping for field [n.d]. Existing mapping for [n] must be of type object but found [long]."},
		{`{"mix":[1,"a"]}`, changed("mix", "long", "text")},
		{`{"mix":[1,"a","b"]}`, changed("mix", "long", "text")},
		{`{"mix":[1,1,"a"]}`, changed("mix", "text", "long")},
		{`{"aa":1,"mix":[1,"a"]}`, changed("mix", "text", "long")},
		{`{"zz":1,"mix":[1,"a"]}`, changed("mix", "long", "text")},
		{`{"mix":[1,2.5]}`, changed("mix", "long", "float")},
		{`{"mix":[[1],[2.5]]}`, changed("mix", "long", "float")},
		{`{"mix":[true,1]}`, changed("mix", "boolean", "long")},
		{`{"mix":["1",1]}`, changed("mix", "text", "long")},
		{`{"mix":[{"a":1},"s"]}`, noMerge("mix")},
		{`{"mix":["s",{"a":1}]}`, noMerge("mix")},
		{`{"aa":1,"mix":["s",{"a":1}]}`, noMerge("mix")},
		{`{"aa":1,"mix":[{"a":1},"s"]}`, changed("mix", "text", "ObjectMapper")},
		{`{"mix":[{"a":1},{"a":"x"}]}`, changed("mix.a", "text", "long")},
		{`{"mix":{"b":1},"mix.b":"x"}`, changed("mix.b", "text", "long")},
		{`{"mix":1,"mix.d":2}`, noMerge("mix")},
		{`{"mix":{"c":1},"mix.c":{"d":1}}`, noMerge("mix.c")},
		{`{"mix":[{"c":[1,"a"]}]}`, changed("mix.c", "text", "long")},
		{`{"b":{"x":1},"b.x":"s","a":[1,"z"]}`, changed("a", "long", "text")},
		// A value that fails to parse fails before the mappers are merged.
		{`{"mix":[1,1e400]}`, field("mix", "float", "Infinity") + " / illegal_argument_exception: [float] supports only finite values, but got [Infinity]"},
		{`{"a2":[{"a":1},{"b":1}],"a4":{"b":1},"a4.b":2,"a5":[1,null,2],"a10":[1.5,1e3],"a11":["x","y"]}`, ""},
	}
	for _, s := range steps {
		tg.checkWrite(name, s.doc, s.want)
	}
	props := tg.mappingProps(name)
	text := map[string]any{"type": "text", "fields": map[string]any{"keyword": map[string]any{"type": "keyword", "ignore_above": json.Number("256")}}}
	long := map[string]any{"type": "long"}
	want := map[string]any{
		"relation": text, "a11": text,
		"obj": map[string]any{"properties": map[string]any{"a": long}},
		"n":   long,
		"p":   map[string]any{"properties": map[string]any{"q": map[string]any{"properties": map[string]any{"r": long}}}},
		"eo":  map[string]any{"type": "object"},
		"a2":  map[string]any{"properties": map[string]any{"a": long, "b": long}},
		"a4":  map[string]any{"properties": map[string]any{"b": long}},
		"a5":  long,
		"a10": map[string]any{"type": "float"},
	}
	if !reflect.DeepEqual(props, want) {
		t.Errorf("mapping = %v\nwant      %v", props, want)
	}
}

// Under dynamic strict, any field the mapping lacks is an error, null
// and [] included, naming the field and the object it is in; an object's
// own dynamic setting governs its fields.
func TestStrictDynamicNamesTheObject(t *testing.T) {
	tg := newTarget(t)
	strict, mixed := tg.name("strict"), tg.name("mixed")
	tg.mustDo(200, "PUT", "/"+strict, `{"settings":{"number_of_replicas":0},"mappings":{"dynamic":"strict","properties":{"o":{"properties":{"x":{"type":"keyword"}}},"k":{"type":"keyword"}}}}`)
	tg.mustDo(200, "PUT", "/"+mixed, `{"settings":{"number_of_replicas":0},"mappings":{"properties":{
		"o":{"dynamic":"strict","properties":{"x":{"type":"keyword"}}},"off":{"dynamic":false,"properties":{}}}}}`)
	within := func(f, o string) string {
		return "400 strict_dynamic_mapping_exception: mapping set to strict, dynamic introduction of [" + f + "] within [" + o + "] is not allowed"
	}
	cases := []struct{ index, doc, want string }{
		{strict, `{"o":{"new":1}}`, within("new", "o")},
		{strict, `{"new":[]}`, within("new", "_doc")},
		{strict, `{"new":[null]}`, within("new", "_doc")},
		{strict, `{"new":null}`, within("new", "_doc")},
		{strict, `{"new":{}}`, within("new", "_doc")},
		{strict, `{"o.new":1}`, within("new", "o")},
		{strict, `{"a.b":1}`, within("a", "_doc")},
		{strict, `{"o":{"p":{"q":1}}}`, within("p", "o")},
		{strict, `{"k":"v","o":{"x":"y"}}`, ""},
		{mixed, `{"o":{"y":1}}`, within("y", "o")},
		{mixed, `{"top":1,"off":{"z":{"a":1},"s":"x"}}`, ""},
	}
	for _, tc := range cases {
		tg.checkWrite(tc.index, tc.doc, tc.want)
	}
	props := tg.mappingProps(mixed)
	if dig(props, "top", "type") != "long" || dig(props, "off", "properties", "z") != nil || dig(props, "off", "properties", "s") != nil {
		t.Errorf("mapping = %v, want top long and nothing new under off", props)
	}
}

// dynamic_templates choose the mapping of a new field by the value's JSON
// type (match_mapping_type), its name (match, unmatch) and its path
// (path_match), first match first; {name} and {dynamic_type} are
// replaced, and a template without a type takes the value's default
// type. They are returned as given, replaced whole by a put mapping, and
// checked when given.
func TestDynamicTemplates(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("templates")
	templates := `[{"longs_as_doubles":{"match_mapping_type":"long","unmatch":"keep_*","mapping":{"type":"double"}}},
		{"kw":{"match":"kw_*","match_mapping_type":"string","mapping":{"type":"keyword","meta":{"n":"{name}/{dynamic_type}"}}}},
		{"in_meta":{"path_match":"meta.*","mapping":{"type":"keyword"}}},
		{"nested_ob":{"match_mapping_type":"object","match":"ob*","mapping":{"type":"nested"}}},
		{"doubles_unindexed":{"match_mapping_type":"double","mapping":{"index":false}}},
		{"rx":{"match_pattern":"regex","match":"^r[0-9]+$","mapping":{"type":"keyword"}}}]`
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_replicas":0},"mappings":{"dynamic_templates":`+templates+`}}`)
	steps := []struct{ doc, want string }{
		{`{"n":4,"keep_n":4,"m":4.3,"kw_a":"x","s":"y","thing":{"a":"b"},"ob":{"a":1},"meta":{"a":true,"b":"x"},"r12":"5"}`, ""},
		{`{"meta":{"c":{"d":1}}}`, "400 mapper_parsing_exception: failed to parse field [meta.c] of type [keyword] in document with id '1'. Preview of field's value: '{d=1}' / illegal_state_exception: Can't get text on a START_OBJECT"},
		{`{"n2":[4,4.5]}`, "400 illegal_argument_exception: mapper [n2] cannot be changed from type [double] to [float]"},
		{`{"n3":[4.5,4]}`, "400 illegal_argument_exception: mapper [n3] cannot be changed from type [float] to [double]"},
	}
	for _, s := range steps {
		tg.checkWrite(name, s.doc, s.want)
	}
	tg.mappingSettled()
	out := tg.mustDo(200, "GET", "/"+name+"/_mapping", "")
	var given any
	dec := json.NewDecoder(strings.NewReader(templates))
	dec.UseNumber()
	dec.Decode(&given)
	if got := dig(out, name, "mappings", "dynamic_templates"); !reflect.DeepEqual(got, given) {
		t.Errorf("dynamic_templates = %v, want %v", got, given)
	}
	keyword := map[string]any{"type": "keyword"}
	want := map[string]any{
		"n":      map[string]any{"type": "double"},
		"keep_n": map[string]any{"type": "long"},
		"m":      map[string]any{"type": "float", "index": false},
		"kw_a":   map[string]any{"type": "keyword", "meta": map[string]any{"n": "kw_a/text"}},
		"s":      map[string]any{"type": "text", "fields": map[string]any{"keyword": map[string]any{"type": "keyword", "ignore_above": json.Number("256")}}},
		"thing":  map[string]any{"properties": map[string]any{"a": map[string]any{"type": "text", "fields": map[string]any{"keyword": map[string]any{"type": "keyword", "ignore_above": json.Number("256")}}}}},
		"ob":     map[string]any{"type": "nested", "properties": map[string]any{"a": map[string]any{"type": "double"}}},
		"meta":   map[string]any{"properties": map[string]any{"a": keyword, "b": keyword}},
		"r12":    keyword,
	}
	if props := dig(out, name, "mappings", "properties"); !reflect.DeepEqual(props, want) {
		t.Errorf("mapping = %v\nwant      %v", props, want)
	}
	// A put mapping without templates keeps them; with templates, it
	// replaces them whole.
	tg.mustDo(200, "PUT", "/"+name+"/_mapping", `{"properties":{"z":{"type":"keyword"}}}`)
	tg.mustDo(200, "PUT", "/"+name+"/_mapping", `{"dynamic_templates":[{"b":{"match":"b*","mapping":{"type":"keyword"}}}]}`)
	if got := dig(tg.mustDo(200, "GET", "/"+name+"/_mapping", ""), name, "mappings", "dynamic_templates"); len(got.([]any)) != 1 || dig(got, 0, "b", "match") != "b*" {
		t.Errorf("dynamic_templates after put = %v, want only b", got)
	}
	if single, bulk := tg.writeBoth(name, "1", `{"b1":1}`); single[0] != '2' || bulk[0] != '2' || dig(tg.mappingProps(name), "b1", "type") != "keyword" {
		t.Errorf("b1: PUT %s, bulk %s, mapping %v; want it mapped as keyword", single, bulk, dig(tg.mappingProps(name), "b1"))
	}

	// A template whose type does not exist fails the document that uses it.
	bad := tg.name("badtype")
	tg.mustDo(200, "PUT", "/"+bad, `{"settings":{"number_of_replicas":0},"mappings":{"dynamic_templates":[{"t":{"match":"x*","mapping":{"type":"foo"}}}]}}`)
	if single, bulk := tg.writeBoth(bad, "1", `{"xa":1}`); single != "400 mapper_parsing_exception: failed to find type parsed [foo] for [xa]" || bulk != single {
		t.Errorf("unknown template type: PUT %s, bulk %s", single, bulk)
	}
	// Templates are checked when given: bare in a put mapping, wrapped in
	// "Failed to parse mapping" when an index is created.
	for _, tc := range []struct{ templates, cause string }{
		{`[{"t":{"match":"x*"}}]`, "mapper_parsing_exception: template must have mapping set"},
		{`[{"t":{"match":"x*","bogus":1,"mapping":{}}}]`, "illegal_argument_exception: Illegal dynamic template parameter: [bogus]"},
		{`[{"t":{"match_mapping_type":"number","mapping":{}}}]`, "illegal_argument_exception: No field type matched on [number], possible values are [object, string, long, double, boolean, date, binary]"},
		{`[{"t":{"match":"x*","match_pattern":"bogus","mapping":{}}}]`, "illegal_argument_exception: No matching pattern matched on [bogus]"},
		{`{"t":{"match":"x"}}`, "mapper_parsing_exception: Dynamic template syntax error. An array of named objects is expected."},
		{`[{"t":{"match":"x","mapping":{"type":"keyword"}},"u":{}}]`, "mapper_parsing_exception: A dynamic template must be defined with a name"},
	} {
		status, out := tg.do("PUT", "/"+tg.name("rejected"), `{"mappings":{"dynamic_templates":`+tc.templates+`}}`)
		msg := tc.cause[strings.Index(tc.cause, ": ")+2:]
		if want := "mapper_parsing_exception: Failed to parse mapping [_doc]: " + msg + " / " + tc.cause; status != 400 || errorChain(dig(out, "error")) != want {
			t.Errorf("create with %s = %d %s, want 400 %s", tc.templates, status, errorChain(dig(out, "error")), want)
		}
		status, out = tg.do("PUT", "/"+name+"/_mapping", `{"dynamic_templates":`+tc.templates+`}`)
		if status != 400 || errorChain(dig(out, "error")) != tc.cause {
			t.Errorf("put mapping with %s = %d %s, want 400 %s", tc.templates, status, errorChain(dig(out, "error")), tc.cause)
		}
	}
	if st, _ := tg.do("HEAD", "/"+tg.name("rejected"), ""); st != 404 {
		t.Errorf("HEAD of an index whose mapping was rejected = %d, want 404", st)
	}
}

// Two items of one shard introducing a field are applied in order, the
// second parsed against the mapping the first added: no conflict, and a
// long truncates the 4.3 that follows a 4. (Items on two shards race for
// the mapping; see the package documentation.)
func TestDynamicMappingOnOneShardFollowsItemOrder(t *testing.T) {
	tg := newTarget(t)
	for _, tc := range []struct{ first, second, typ string }{{"4.3", "4", "float"}, {"4", "4.3", "long"}} {
		name := tg.name("oneshard-" + tc.typ)
		tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":1,"number_of_replicas":0}}`)
		out := tg.mustDo(200, "POST", "/"+name+"/_bulk?refresh=true", `{"index":{"_id":"a"}}`+"\n"+`{"rating":`+tc.first+`}`+"\n"+
			`{"index":{"_id":"b"}}`+"\n"+`{"rating":`+tc.second+`}`+"\n")
		if dig(out, "errors") != false {
			t.Errorf("%s then %s: bulk = %v, want no errors", tc.first, tc.second, out)
		}
		if typ := dig(tg.mappingProps(name), "rating", "type"); typ != tc.typ {
			t.Errorf("%s then %s: rating mapped as %v, want %s", tc.first, tc.second, typ, tc.typ)
		}
		want := "1"
		if tc.typ == "long" {
			want = "2"
		}
		if got := str(dig(tg.mustDo(200, "POST", "/"+name+"/_search", `{"query":{"term":{"rating":4}}}`), "hits", "total", "value")); got != want {
			t.Errorf("%s then %s: term rating 4 hits %s, want %s", tc.first, tc.second, got, want)
		}
	}
}
