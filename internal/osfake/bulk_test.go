package osfake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
)

// bulk sends an NDJSON body through the real client. Item failures are
// expected in many tests, so the client's PartialBulkError is not fatal.
func (tg *target) bulk(index, body string, params opensearchapi.BulkParams) *opensearchapi.BulkResp {
	tg.t.Helper()
	resp, err := tg.client.Bulk(context.Background(), opensearchapi.BulkReq{Index: index, Body: strings.NewReader(body), Params: params})
	var partial *opensearchapi.PartialBulkError
	if err != nil && !errors.As(err, &partial) {
		tg.t.Fatalf("Bulk(%q) error %v", body, err)
	}
	return resp
}

// item returns the only entry of a response item, whatever its op.
func item(resp *opensearchapi.BulkResp, i int) opensearchapi.BulkRespItem {
	for _, v := range resp.Items[i] {
		return v
	}
	return opensearchapi.BulkRespItem{}
}

// itemError is "status type: reason" of a failed item, or "status result".
func itemError(it opensearchapi.BulkRespItem) string {
	if it.Error == nil {
		return fmt.Sprintf("%d %s", it.Status, it.Result)
	}
	return fmt.Sprintf("%d %s: %s", it.Status, it.Error.Type, it.Error.Reason)
}

func TestBulkExternalGTE(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("gte")
	steps := []struct {
		version int
		want    string
	}{
		{5, "201 created"},
		{5, "200 updated"}, // equal versions overwrite with external_gte
		{6, "200 updated"},
		{4, "409 version_conflict_engine_exception: [1]: version conflict, current version [6] is higher than the one provided [4]"},
	}
	for _, st := range steps {
		resp := tg.bulk(name, fmt.Sprintf(`{"index":{"_id":"1","version":%d,"version_type":"external_gte"}}`+"\n{\"v\":%d}\n", st.version, st.version), opensearchapi.BulkParams{})
		if got := itemError(item(resp, 0)); got != st.want {
			t.Errorf("Bulk(index v%d external_gte) = %s, want %s", st.version, got, st.want)
		}
	}
	doc := tg.getDoc(name, "1", "")
	if str(dig(doc, "_version")) != "6" {
		t.Errorf("GET after external_gte writes = %v, want _version 6", doc)
	}
}

func TestBulkTombstoneAndGCDeletes(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	name := tg.name("tomb")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":2}}`)
	write := func(id string, version int) string {
		resp := tg.bulk(name, fmt.Sprintf(`{"index":{"_id":%q,"version":%d,"version_type":"external"}}`+"\n{}\n", id, version), opensearchapi.BulkParams{})
		return itemError(item(resp, 0))
	}
	del := func(id string, version int) string {
		resp := tg.bulk(name, fmt.Sprintf(`{"delete":{"_id":%q,"version":%d,"version_type":"external"}}`+"\n", id, version), opensearchapi.BulkParams{})
		return itemError(item(resp, 0))
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s = %s, want %s", what, got, want)
		}
	}
	check("index a v5", write("a", 5), "201 created")
	check("delete a v6", del("a", 6), "200 deleted")
	check("index a v3 while the tombstone lives", write("a", 3),
		"409 version_conflict_engine_exception: [a]: version conflict, current version [6] is higher or equal to the one provided [3]")
	tg.clock.Advance(59 * time.Second)
	check("index a v3 at 59s", write("a", 3), "409 version_conflict_engine_exception: [a]: version conflict, current version [6] is higher or equal to the one provided [3]")
	tg.clock.Advance(2 * time.Second)
	check("index a v3 after gc_deletes (resurrection)", write("a", 3), "201 created")
	if doc := tg.getDoc(name, "a", ""); dig(doc, "found") != true || str(dig(doc, "_version")) != "3" {
		t.Errorf("GET resurrected doc = %v, want found at _version 3", doc)
	}

	// gc_deletes is dynamic.
	tg.mustDo(200, "PUT", "/"+name+"/_settings", `{"index":{"gc_deletes":"10s"}}`)
	check("index b v1", write("b", 1), "201 created")
	check("delete b v10", del("b", 10), "200 deleted")
	tg.clock.Advance(9 * time.Second)
	check("index b v4 at 9s of 10s", write("b", 4), "409 version_conflict_engine_exception: [b]: version conflict, current version [10] is higher or equal to the one provided [4]")
	tg.clock.Advance(2 * time.Second)
	check("index b v4 at 11s of 10s", write("b", 4), "201 created")

	// A delete of a never-seen id with an external version leaves a
	// tombstone too.
	check("delete c v7 (missing)", del("c", 7), "404 not_found")
	check("index c v2 behind the tombstone", write("c", 2), "409 version_conflict_engine_exception: [c]: version conflict, current version [7] is higher or equal to the one provided [2]")
}

// A delete with an external version of an id the shard never held is
// answered not_found and leaves a tombstone at that version: an older
// write of the id under that routing is refused, a newer one taken. The
// pipeline's spreads and a restaurant delete's tombstones under every
// routing rest on it.
func TestBulkDeleteOfAMissingIDLeavesATombstone(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("tombmissing")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":2}}`)
	op := func(action string, version int64, doc bool) string {
		body := fmt.Sprintf(`{%q:{"_id":"gone","routing":"r1","version":%d,"version_type":"external"}}`, action, version) + "\n"
		if doc {
			body += "{}\n"
		}
		return itemError(item(tg.bulk(name, body, opensearchapi.BulkParams{}), 0))
	}
	for _, st := range []struct {
		what, got, want string
	}{
		{"delete v7 of a missing id", op("delete", 7, false), "404 not_found"},
		{"index v2 behind it", op("index", 2, true), "409 version_conflict_engine_exception: [gone]: version conflict, current version [7] is higher or equal to the one provided [2]"},
		{"index v7 at its version", op("index", 7, true), "409 version_conflict_engine_exception: [gone]: version conflict, current version [7] is higher or equal to the one provided [7]"},
		{"index v8 past it", op("index", 8, true), "201 created"},
	} {
		if st.got != st.want {
			t.Errorf("%s = %s, want %s", st.what, st.got, st.want)
		}
	}
}

func TestBulkPerItemErrors(t *testing.T) { eachLine(t, testBulkPerItemErrors) }

func testBulkPerItemErrors(t *testing.T, tg *target) {
	routed, joined, plain := tg.name("routed"), tg.name("joined"), tg.name("plain")
	tg.mustDo(200, "PUT", "/"+routed, `{"mappings":{"_routing":{"required":true}}}`)
	tg.mustDo(200, "PUT", "/"+joined, `{"mappings":{"properties":{"relation":{"type":"join","relations":{"restaurant":"dish"}},"price_cents":{"type":"long"}}}}`)
	tg.mustDo(200, "PUT", "/"+plain, `{"mappings":{"dynamic":"strict","properties":{"name":{"type":"keyword"}}}}`)
	cases := []struct {
		name, index, body string
		want              string
		cause             string // caused_by "type: reason", or the types of the causes, when there is one
	}{
		{"routing required", routed, `{"index":{"_id":"1"}}` + "\n{}\n",
			"400 routing_missing_exception: routing is required for [" + routed + "]/[1]", ""},
		{"routing required, delete", routed, `{"delete":{"_id":"1"}}` + "\n",
			"400 routing_missing_exception: routing is required for [" + routed + "]/[1]", ""},
		{"routing given", routed, `{"index":{"_id":"1","routing":"r"}}` + "\n{}\n", "201 created", ""},
		{"join parent as a string", joined, `{"index":{"_id":"1"}}` + "\n" + `{"relation":"restaurant"}` + "\n", "201 created", ""},
		{"join child without routing", joined, `{"index":{"_id":"2"}}` + "\n" + `{"relation":{"name":"dish","parent":"1"}}` + "\n",
			"400 mapper_parsing_exception: failed to parse", "illegal_argument_exception: [routing] is missing for join field [relation]"},
		{"join child without parent", joined, `{"index":{"_id":"2","routing":"1"}}` + "\n" + `{"relation":{"name":"dish"}}` + "\n",
			"400 mapper_parsing_exception: failed to parse", "illegal_argument_exception: [parent] is missing for join field [relation]"},
		{"join unknown name", joined, `{"index":{"_id":"2","routing":"1"}}` + "\n" + `{"relation":{"name":"menu","parent":"1"}}` + "\n",
			"400 mapper_parsing_exception: failed to parse", "illegal_argument_exception: unknown join name [menu] for field [relation]"},
		{"join child with routing", joined, `{"index":{"_id":"2","routing":"1"}}` + "\n" + `{"relation":{"name":"dish","parent":"1"}}` + "\n", "201 created", ""},
		{"long field given text", joined, `{"index":{"_id":"3"}}` + "\n" + `{"price_cents":"cheap"}` + "\n",
			"400 mapper_parsing_exception: failed to parse field [price_cents] of type [long] in document with id '3'. Preview of field's value: 'cheap'", ""},
		{"long field given a numeric string", joined, `{"index":{"_id":"3"}}` + "\n" + `{"price_cents":"1250"}` + "\n", "201 created", ""},
		// The parser's reasons are in Go's wording (doc.go); on 3.x each
		// comes wrapped in another exception.
		{"invalid JSON source", plain, `{"index":{"_id":"1"}}` + "\n" + `{"name" "x"}` + "\n", "400 mapper_parsing_exception: failed to parse",
			byLine(tg, "json_parse_exception", "json_parse_exception / stream_read_exception")},
		{"truncated JSON source", plain, `{"index":{"_id":"1"}}` + "\n" + `{"name":` + "\n", "400 mapper_parsing_exception: failed to parse",
			byLine(tg, "json_e_o_f_exception", "unexpected_end_of_input_exception / unexpected_end_of_input_exception")},
		{"source not an object", plain, `{"index":{"_id":"1"}}` + "\n" + `[1]` + "\n", "400 mapper_parsing_exception: failed to parse", "not_x_content_exception: Compressor detection can only be called on some xcontent bytes or compressed xcontent bytes"},
		{"strict mapping", plain, `{"index":{"_id":"1"}}` + "\n" + `{"other":1}` + "\n",
			"400 strict_dynamic_mapping_exception: mapping set to strict, dynamic introduction of [other] within [_doc] is not allowed", ""},
		{"empty id", plain, `{"index":{"_id":""}}` + "\n" + `{"name":"x"}` + "\n",
			"400 illegal_argument_exception: if _id is specified it must not be empty", ""},
		{"require_alias on an index", plain, `{"index":{"_id":"1","require_alias":true}}` + "\n" + `{"name":"x"}` + "\n",
			"404 index_not_found_exception: no such index [" + plain + "] and [require_alias] request flag is [true] and [" + plain + "] is not an alias", ""},
		{"delete does not create an index", "", `{"delete":{"_index":"` + tg.name("nowhere") + `","_id":"1"}}` + "\n",
			"404 index_not_found_exception: no such index [" + tg.name("nowhere") + "]", ""},
		{"update of a missing doc", plain, `{"update":{"_id":"9"}}` + "\n" + `{"doc":{"name":"x"}}` + "\n",
			"404 document_missing_exception: [9]: document missing", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := tg.bulk(tc.index, tc.body, opensearchapi.BulkParams{})
			it := item(resp, 0)
			if got := itemError(it); got != tc.want {
				t.Errorf("Bulk(%s) = %s, want %s", tc.name, got, tc.want)
			}
			if resp.Errors != (it.Error != nil) {
				t.Errorf("Bulk(%s) errors = %v with item error %v", tc.name, resp.Errors, it.Error)
			}
			if tc.cause != "" && it.Error != nil {
				cause := it.Error.Cause.Type
				if strings.Contains(tc.cause, ": ") {
					cause += ": " + it.Error.Cause.Reason
				} else if inner := it.Error.Cause.Cause; inner != nil {
					cause += " / " + inner.Type
				}
				if want := tg.failureOf(tc.index, tc.cause); cause != want {
					t.Errorf("Bulk(%s) caused_by = %+v, want %s", tc.name, it.Error, want)
				}
			}
		})
	}
	// The failed child was not stored; the routed one was.
	if doc := tg.getDoc(joined, "2", "1"); dig(doc, "found") != true || str(dig(doc, "_routing")) != "1" {
		t.Errorf("GET child = %v, want found with _routing 1", doc)
	}
	if st, _ := tg.do("HEAD", "/"+tg.name("nowhere"), ""); st != 404 {
		t.Errorf("HEAD index after a delete to it = %d, want 404 (deletes do not auto-create)", st)
	}
}

func TestBulkAliasTargets(t *testing.T) {
	tg := newTarget(t)
	a1, a2, both, routedAlias := tg.name("a1"), tg.name("a2"), tg.name("both"), tg.name("routed")
	tg.mustDo(200, "PUT", "/"+a1, `{"aliases":{"`+both+`":{},"`+routedAlias+`":{"index_routing":"r1"}}}`)
	tg.mustDo(200, "PUT", "/"+a2, `{"aliases":{"`+both+`":{}}}`)
	cases := []struct {
		name, body, want, wantIndex string
	}{
		{"no write index", `{"index":{"_index":"` + both + `","_id":"1"}}` + "\n{}\n",
			"400 illegal_argument_exception: no write index is defined for alias [" + both + "]. The write index may be explicitly disabled using is_write_index=false or the alias points to multiple indices without one being designated as a write index", both},
		{"alias routing applies", `{"index":{"_index":"` + routedAlias + `","_id":"1"}}` + "\n{}\n", "201 created", a1},
		{"same routing is fine", `{"index":{"_index":"` + routedAlias + `","_id":"2","routing":"r1"}}` + "\n{}\n", "201 created", a1},
		{"other routing rejected", `{"index":{"_index":"` + routedAlias + `","_id":"3","routing":"x"}}` + "\n{}\n",
			"400 illegal_argument_exception: Alias [" + routedAlias + "] has index routing associated with it [r1], and was provided with routing value [x], rejecting operation", a1},
		{"require_alias met", `{"index":{"_index":"` + routedAlias + `","_id":"4","require_alias":true}}` + "\n{}\n", "201 created", a1},
	}
	for _, tc := range cases {
		it := item(tg.bulk("", tc.body, opensearchapi.BulkParams{}), 0)
		if got := itemError(it); got != tc.want || it.Index != tc.wantIndex {
			t.Errorf("Bulk(%s) = %s on %q, want %s on %q", tc.name, got, it.Index, tc.want, tc.wantIndex)
		}
	}
	if doc := tg.getDoc(a1, "1", "r1"); dig(doc, "found") != true || str(dig(doc, "_routing")) != "r1" {
		t.Errorf("GET doc written through a routed alias = %v, want _routing r1", doc)
	}
	// Reads through an alias use its index routing too, and need a single index.
	if doc := tg.getDoc(routedAlias, "1", ""); dig(doc, "found") != true || dig(doc, "_index") != a1 {
		t.Errorf("GET through the routed alias = %v, want found in %s", doc, a1)
	}
	// The server lists the indices in an order of its own (a hash map's).
	st, out := tg.do("GET", "/"+both+"/_doc/1", "")
	reason := str(dig(out, "error", "reason"))
	if st != 400 || reason != "alias ["+both+"] has more than one index associated with it ["+a1+", "+a2+"], can't execute a single index op" &&
		reason != "alias ["+both+"] has more than one index associated with it ["+a2+", "+a1+"], can't execute a single index op" {
		t.Errorf("GET through a two-index alias = %d %v, want 400 naming both indices", st, out)
	}
	// require_alias from the URL applies to every item.
	resp := tg.bulk(a1, `{"index":{"_id":"5"}}`+"\n{}\n", opensearchapi.BulkParams{RequireAlias: ptr(true)})
	if it := item(resp, 0); it.Status != 404 || it.Error == nil || it.Error.Type != "index_not_found_exception" {
		t.Errorf("Bulk(?require_alias=true into an index) = %s, want 404 index_not_found_exception", itemError(it))
	}
	if st, out := tg.do("POST", "/"+a1+"/_bulk?refresh=soon", `{"index":{}}`+"\n{}\n"); st != 400 || str(dig(out, "error", "reason")) != "Unknown value for refresh: [soon]." {
		t.Errorf("Bulk(?refresh=soon) = %d %v, want 400", st, out)
	}
}

func TestBulkWholeRequestErrors(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("whole")
	long := strings.Repeat("x", 513)
	cases := []struct {
		name, body, typ, reason string
	}{
		{"unknown metadata key", `{"index":{"_id":"1"}}` + "\n{}\n" + `{"index":{"_id":"2","_type":"_doc"}}` + "\n{}\n",
			"illegal_argument_exception", "Action/metadata line [3] contains an unknown parameter [_type]"},
		{"unknown action", `{"upsert":{"_id":"1"}}` + "\n{}\n",
			"illegal_argument_exception", "Malformed action/metadata line [1], expected one of [create, delete, index, update] but found [upsert]"},
		{"empty action", `{"index":{"_id":"1"}}` + "\n{}\n{}\n",
			"illegal_argument_exception", "Malformed action/metadata line [3], expected FIELD_NAME but found [END_OBJECT]"},
		{"action not an object", `["index"]` + "\n",
			"illegal_argument_exception", "Malformed action/metadata line [1], expected START_OBJECT but found [START_ARRAY]"},
		{"metadata not an object", `{"index":"x"}` + "\n{}\n",
			"illegal_argument_exception", "Malformed action/metadata line [1], expected START_OBJECT or END_OBJECT but found [VALUE_STRING]"},
		{"metadata value an array", `{"index":{"_id":["1"]}}` + "\n{}\n",
			"illegal_argument_exception", "Malformed action/metadata line [1], expected a simple value for field [_id] but found [START_ARRAY]"},
		{"no trailing newline", `{"index":{"_id":"1"}}` + "\n{}",
			"illegal_argument_exception", `The bulk request must be terminated by a newline [\n]`},
		{"update with a version", `{"update":{"_id":"1","version":2}}` + "\n" + `{"doc":{}}` + "\n",
			"illegal_argument_exception", "Update requests do not support versioning. Please use `if_seq_no` and `if_primary_term` instead"},
		{"validation errors merged", `{"create":{"_id":"1","version":3,"version_type":"external"}}` + "\n{}\n" +
			`{"index":{"version":3,"version_type":"external"}}` + "\n{}\n" +
			`{"index":{"_id":"` + long + `"}}` + "\n{}\n" +
			`{"delete":{}}` + "\n",
			"action_request_validation_exception", "Validation Failed: 1: create operations only support internal versioning. use index instead;" +
				"2: an id must be provided if version type or value are set;" +
				"3: id [" + long + "] is too long, must be no longer than 512 bytes but was: 513;" +
				"4: id is missing;"},
		{"external without a version", `{"index":{"_id":"1","version_type":"external"}}` + "\n{}\n",
			"action_request_validation_exception", "Validation Failed: 1: illegal version value [-3] for version type [EXTERNAL];"},
		{"internal version", `{"index":{"_id":"1","version":2}}` + "\n{}\n",
			"action_request_validation_exception", "Validation Failed: 1: internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead;"},
		{"empty body of blank lines", "\n\n", "action_request_validation_exception", "Validation Failed: 1: no requests added;"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, out := tg.do("POST", "/"+name+"/_bulk", tc.body)
			if status != 400 || str(dig(out, "error", "type")) != tc.typ || str(dig(out, "error", "reason")) != tc.reason {
				t.Errorf("Bulk(%s) = %d %v, want 400 %s %q", tc.name, status, dig(out, "error"), tc.typ, tc.reason)
			}
		})
	}
	// Nothing was applied: not even the index was created.
	if st, _ := tg.do("HEAD", "/"+name, ""); st != 404 {
		t.Errorf("HEAD %s after rejected bulks = %d, want 404", name, st)
	}
}

// The JSON parser's failures in a bulk body and an update body: a
// metadata value or a mapped field that is not the number or boolean it
// must be, input that ends early and a syntax error. 2.19's parser raises
// each bare; 3.x's wraps each in another exception and words them apart
// (parserComplaints). The emulator gives Go's reasons for syntax errors
// (doc.go), so only their types are compared.
func TestParserFailuresInWrites(t *testing.T) { eachLine(t, testParserFailuresInWrites) }

func testParserFailuresInWrites(t *testing.T, tg *target) {
	name := tg.name("parser")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_replicas":0},"mappings":{"properties":{"l":{"type":"long"},"b":{"type":"boolean"}}}}`)
	tg.mustDo(201, "PUT", "/"+name+"/_doc/1?refresh=true", `{"l":1}`)
	notNumeric, notBoolean := parserComplaints(tg)
	endsEarly := byLine(tg, "json_e_o_f_exception", "unexpected_end_of_input_exception / unexpected_end_of_input_exception")
	syntax := byLine(tg, "json_parse_exception", "json_parse_exception / stream_read_exception")
	field := func(f, typ, preview string) string {
		return "mapper_parsing_exception: failed to parse field [" + f + "] of type [" + typ + "] in document with id '1'. Preview of field's value: '" + preview + "'"
	}
	cases := []struct {
		name, method, path, body string
		chain                    string // the error chain, or with types only its types
		types                    bool
	}{
		{"version not a number", "POST", "/_bulk", `{"index":{"_id":"2","version":true}}` + "\n{}\n", notNumeric("VALUE_TRUE"), false},
		{"if_seq_no not a number", "POST", "/_bulk", `{"index":{"_id":"2","if_seq_no":false,"if_primary_term":1}}` + "\n{}\n", notNumeric("VALUE_FALSE"), false},
		{"retry_on_conflict not a number", "POST", "/_bulk", `{"update":{"_id":"1","retry_on_conflict":true}}` + "\n" + `{"doc":{}}` + "\n", notNumeric("VALUE_TRUE"), false},
		{"action line ends early", "POST", "/_bulk", `{"index":{"_id":"2"` + "\n{}\n", endsEarly, true},
		{"action line syntax error", "POST", "/_bulk", `{"index":{"_id":"2",}}` + "\n{}\n", syntax, true},
		{"bulk update body ends early", "POST", "/_bulk", `{"update":{"_id":"1"}}` + "\n" + `{"doc":` + "\n", endsEarly, true},
		{"bulk update body syntax error", "POST", "/_bulk", `{"update":{"_id":"1"}}` + "\n" + `{"doc":{},}` + "\n", syntax, true},
		{"update body ends early", "POST", "/_update/1", `{"doc":`, endsEarly, true},
		{"update body syntax error", "POST", "/_update/1", `{"doc":{},}`, syntax, true},
		{"update doc boolean for a long", "POST", "/_update/1", `{"doc":{"l":true}}`, field("l", "long", "true") + " / " + notNumeric("VALUE_TRUE"), false},
		{"update doc number for a boolean", "POST", "/_update/1", `{"doc":{"b":1}}`, field("b", "boolean", "1") + " / " + notBoolean("VALUE_NUMBER_INT"), false},
	}
	for _, tc := range cases {
		status, out := tg.do(tc.method, "/"+name+tc.path, tc.body)
		got, root := errorChain(dig(out, "error")), str(dig(out, "error", "root_cause", 0, "type"))
		if tc.types {
			got = typeChain(dig(out, "error"))
		}
		// The root cause is the outermost exception: the parser's are
		// plain Java exceptions, and so is the cause of the
		// mapper_parsing_exception.
		wantRoot, _, _ := strings.Cut(tc.chain, ":")
		wantRoot, _, _ = strings.Cut(wantRoot, " / ")
		// A document the mapping refuses fails on the primary, which may
		// be on another node; the request's own parse fails where it came.
		want := tc.chain
		if strings.HasPrefix(want, "mapper_parsing_exception") {
			want = tg.failureOf(name, want)
		}
		if status != 400 || got != want || root != wantRoot {
			t.Errorf("%s: %s %s = %d %s (root %s), want 400 %s (root %s)", tc.name, tc.method, tc.path, status, got, root, want, wantRoot)
		}
	}
	// In a bulk, an update whose document the mapping refuses fails alone.
	out := tg.mustDo(200, "POST", "/"+name+"/_bulk", `{"update":{"_id":"1"}}`+"\n"+`{"doc":{"l":true}}`+"\n")
	if got, want := str(dig(out, "items", 0, "update", "status"))+" "+errorChain(dig(out, "items", 0, "update", "error")),
		"400 "+tg.failureOf(name, field("l", "long", "true")+" / "+notNumeric("VALUE_TRUE")); got != want {
		t.Errorf("bulk update of a long with true = %s, want %s", got, want)
	}
}

// typeChain is the types of an error object and its causes, joined by
// " / ".
func typeChain(e any) string {
	var types []string
	for ; e != nil; e = dig(e, "caused_by") {
		types = append(types, str(dig(e, "type")))
	}
	return strings.Join(types, " / ")
}

func TestBulkDeleteMissingAndMixedItems(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("mixed")
	resp := tg.bulk(name, `{"index":{"_id":"1"}}`+"\n"+`{"n":1}`+"\r\n"+
		`{"create":{"_id":"2"}}`+"\n"+`{"n":2}`+"\n"+
		"\n"+ // a blank line between items is skipped
		`{"delete":{"_id":"3"}}`+"\n"+
		`{"create":{"_id":"1"}}`+"\n"+`{"n":3}`+"\n"+
		`{"delete":{"_id":"2"}}`+"\n", opensearchapi.BulkParams{})
	want := []string{"201 created", "201 created", "404 not_found",
		"409 version_conflict_engine_exception: [1]: version conflict, document already exists (current version [1])", "200 deleted"}
	if len(resp.Items) != len(want) {
		t.Fatalf("Bulk = %d items, want %d", len(resp.Items), len(want))
	}
	for i, w := range want {
		if got := itemError(item(resp, i)); got != w {
			t.Errorf("item %d = %s, want %s", i, got, w)
		}
	}
	if !resp.Errors {
		t.Errorf("errors = false with a 409 item")
	}
	// A not_found delete alone is not an error.
	resp = tg.bulk(name, `{"delete":{"_id":"404"}}`+"\n", opensearchapi.BulkParams{})
	if it := item(resp, 0); resp.Errors || it.Status != 404 || it.Result != "not_found" || it.Error != nil {
		t.Errorf("delete missing = errors %v item %+v, want errors false, 404 not_found, no error", resp.Errors, it)
	}
	// The \r before the newline is not part of the stored source.
	if src := tg.mustDo(200, "GET", "/"+name+"/_source/1", ""); str(dig(src, "n")) != "1" {
		t.Errorf("_source of a CRLF item = %v", src)
	}
	// One replica: two copies, both assigned on the emulator's three nodes
	// (a one-node cluster reports successful 1).
	if it := item(resp, 0); it.Shards.Total != 2 || (tg.fake != nil && it.Shards.Successful != 2) {
		t.Errorf("_shards = %+v, want total 2", it.Shards)
	}
}

func TestBulkSameIDTwoRoutings(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("routings")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":4}}`)
	// Pick routings on three different shards (4 shards, routing_num_shards 1024).
	var routings []string
	seen := map[int]bool{}
	for i := 0; len(routings) < 3; i++ {
		r := fmt.Sprintf("r%d", i)
		if s := shardhash.ForRouting(r, 1024, 4); !seen[s] {
			seen[s] = true
			routings = append(routings, r)
		}
	}
	tg.bulk(name, `{"index":{"_id":"x","routing":"`+routings[0]+`"}}`+"\n"+`{"on":"first"}`+"\n"+
		`{"index":{"_id":"x","routing":"`+routings[1]+`"}}`+"\n"+`{"on":"second"}`+"\n", opensearchapi.BulkParams{})
	for i, want := range []string{"first", "second"} {
		doc := tg.getDoc(name, "x", routings[i])
		if str(dig(doc, "_source", "on")) != want || str(dig(doc, "_version")) != "1" {
			t.Errorf("GET x routing %s = %v, want source on=%s at version 1", routings[i], doc, want)
		}
	}
	if doc := tg.getDoc(name, "x", routings[2]); dig(doc, "found") != false {
		t.Errorf("GET x with a routing on another shard = %v, want not found", doc)
	}
}

// TestBulkRefreshVisibility checks the split between live documents
// (real-time get) and searchable ones (as of the last refresh).
func TestBulkRefreshVisibility(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	name, manual := tg.name("vis"), tg.name("manual")
	tg.mustDo(200, "PUT", "/"+name, "")
	tg.mustDo(200, "PUT", "/"+manual, `{"settings":{"refresh_interval":"-1"}}`)
	state := func(index, id string) (live, searchable bool) {
		s := tg.fake.Server
		s.mu.Lock()
		defer s.mu.Unlock()
		ixs, _ := s.resolveSearch(index, true) // a read runs due refreshes
		for _, sh := range ixs[0].shards {
			_, l := sh.live[id]
			_, r := sh.searchable[id]
			live, searchable = live || l, searchable || r
		}
		return live, searchable
	}
	expect := func(what, index, id string, live, searchable bool) {
		t.Helper()
		if l, r := state(index, id); l != live || r != searchable {
			t.Errorf("%s: live %v searchable %v, want %v %v", what, l, r, live, searchable)
		}
	}
	doc := func(id string) string { return `{"index":{"_id":"` + id + `"}}` + "\n{}\n" }

	tg.bulk(name, doc("a"), opensearchapi.BulkParams{})
	expect("after a write", name, "a", true, false)
	tg.clock.Advance(999 * time.Millisecond)
	expect("before refresh_interval", name, "a", true, false)
	tg.clock.Advance(time.Millisecond)
	expect("at refresh_interval", name, "a", true, true)

	tg.bulk(name, doc("b"), opensearchapi.BulkParams{Refresh: "true"})
	expect("refresh=true", name, "b", true, true)
	tg.bulk(name, doc("c"), opensearchapi.BulkParams{Refresh: "wait_for"})
	expect("refresh=wait_for", name, "c", true, true)

	// A refresh that fell due before a write happens before it.
	tg.bulk(name, doc("d"), opensearchapi.BulkParams{})
	tg.clock.Advance(2 * time.Second)
	tg.bulk(name, doc("e"), opensearchapi.BulkParams{})
	expect("write before the due refresh", name, "d", true, true)
	expect("write after the due refresh", name, "e", true, false)

	tg.bulk(manual, doc("m"), opensearchapi.BulkParams{})
	tg.clock.Advance(time.Hour)
	expect("refresh_interval -1", manual, "m", true, false)
	tg.mustDo(200, "POST", "/"+manual+"/_refresh", "")
	expect("after _refresh", manual, "m", true, true)

	// A real-time get sees an unrefreshed write.
	tg.bulk(manual, doc("n"), opensearchapi.BulkParams{})
	if got := tg.getDoc(manual, "n", ""); dig(got, "found") != true {
		t.Errorf("real-time GET of an unrefreshed doc = %v, want found", got)
	}
	expect("after a real-time get", manual, "n", true, false)
}

func TestBulkFaultRejections(t *testing.T) {
	const n = 200
	var body strings.Builder
	for i := range n {
		fmt.Fprintf(&body, `{"index":{"_id":"%d"}}`+"\n"+`{"i":%d}`+"\n", i, i)
	}
	run := func() []int {
		tg := newTarget(t)
		tg.needFake()
		name := tg.name("reject")
		if err := tg.fake.SetFaults(Faults{Seed: 7, RejectRate: 0.3}); err != nil {
			t.Fatal(err)
		}
		resp := tg.bulk(name, body.String(), opensearchapi.BulkParams{})
		tg.fake.ClearFaults()
		var rejected []int
		for i := range n {
			it := item(resp, i)
			if it.Error != nil {
				if it.Status != 429 || it.Error.Type != "rejected_execution_exception" {
					t.Fatalf("item %d = %s, want 429 rejected_execution_exception", i, itemError(it))
				}
				rejected = append(rejected, i)
			}
			found := dig(tg.getDoc(name, fmt.Sprint(i), ""), "found") == true
			if found == (it.Error != nil) {
				t.Errorf("item %d: error %v, stored %v; a rejected item must not be stored, others must", i, it.Error != nil, found)
			}
		}
		return rejected
	}
	first := run()
	if len(first) < n*15/100 || len(first) > n*45/100 {
		t.Errorf("rejected %d of %d items at reject_rate 0.3, want about 30%%", len(first), n)
	}
	if second := run(); fmt.Sprint(second) != fmt.Sprint(first) {
		t.Errorf("same seed rejected %v, then %v; want the same items", first, second)
	}
}

func TestBulkFaultDropAndBlock(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	name := tg.name("drop")
	if err := tg.fake.SetFaults(Faults{DropResponses: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := tg.client.Bulk(context.Background(), opensearchapi.BulkReq{Index: name,
		Body: strings.NewReader(`{"index":{"_id":"1"}}` + "\n{}\n" + `{"index":{"_id":"2"}}` + "\n{}\n")})
	if err == nil {
		t.Errorf("Bulk with a dropped response: no error, want one")
	}
	for _, id := range []string{"1", "2"} {
		if doc := tg.getDoc(name, id, ""); dig(doc, "found") != true {
			t.Errorf("GET %s after a dropped response = %v, want stored", id, doc)
		}
	}
	// The next bulk is answered normally.
	if it := item(tg.bulk(name, `{"index":{"_id":"3"}}`+"\n{}\n", opensearchapi.BulkParams{}), 0); it.Status != 201 {
		t.Errorf("bulk after the drop = %s, want 201", itemError(it))
	}

	blockWant := "403 cluster_block_exception: index [" + name + "] blocked by: [FORBIDDEN/8/index write (api)];"
	if err := tg.fake.SetFaults(Faults{WriteBlock: []string{name}}); err != nil {
		t.Fatal(err)
	}
	if got := itemError(item(tg.bulk(name, `{"index":{"_id":"4"}}`+"\n{}\n", opensearchapi.BulkParams{}), 0)); got != blockWant {
		t.Errorf("bulk under a write_block fault = %s, want %s", got, blockWant)
	}
	tg.fake.ClearFaults()
	if doc := tg.getDoc(name, "4", ""); dig(doc, "found") != false {
		t.Errorf("blocked item stored: %v", doc)
	}
}

func TestBulkWriteBlockSetting(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("blocked")
	tg.mustDo(200, "PUT", "/"+name, "")
	tg.mustDo(200, "PUT", "/"+name+"/_settings", `{"index.blocks.write":true}`)
	it := item(tg.bulk(name, `{"index":{"_id":"1"}}`+"\n{}\n", opensearchapi.BulkParams{}), 0)
	want := "403 cluster_block_exception: index [" + name + "] blocked by: [FORBIDDEN/8/index write (api)];"
	if got := itemError(it); got != want {
		t.Errorf("bulk into a write-blocked index = %s, want %s", got, want)
	}
	tg.mustDo(200, "PUT", "/"+name+"/_settings", `{"index.blocks.write":false}`)
	if it := item(tg.bulk(name, `{"index":{"_id":"1"}}`+"\n{}\n", opensearchapi.BulkParams{}), 0); it.Status != 201 {
		t.Errorf("bulk after lifting the block = %s, want 201 created", itemError(it))
	}
}

func TestBulkFaultShardLatency(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	name := tg.name("slow")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":2}}`)
	// Ids on each shard (2 shards, routing_num_shards 1024).
	ids := map[int]string{}
	for i := 0; len(ids) < 2; i++ {
		id := fmt.Sprint(i)
		if _, ok := ids[shardhash.ForRouting(id, 1024, 2)]; !ok {
			ids[shardhash.ForRouting(id, 1024, 2)] = id
		}
	}
	const delay = 400 * time.Millisecond
	if err := tg.fake.SetFaults(Faults{ShardLatency: []ShardLatency{{Index: name, Shard: 1, Delay: Duration(delay)}}}); err != nil {
		t.Fatal(err)
	}
	delayed := func() int { return tg.fake.FaultStats().DelayedRequests }
	tg.bulk(name, `{"index":{"_id":"`+ids[1]+`"}}`+"\n{}\n", opensearchapi.BulkParams{})
	if n := delayed(); n != 1 {
		t.Errorf("after a bulk to the slow shard, %d requests delayed, want 1", n)
	}
	tg.bulk(name, `{"index":{"_id":"`+ids[0]+`"}}`+"\n{}\n", opensearchapi.BulkParams{})
	if n := delayed(); n != 1 {
		t.Errorf("after a bulk to the other shard, %d requests delayed, want still 1", n)
	}
}

// BenchmarkBulk1000 measures a 1,000-item bulk through the handler:
// parsing, applying (overwrites after the first round) and rendering.
func BenchmarkBulk1000(b *testing.B) {
	s := New(Options{})
	var body strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&body, `{"index":{"_id":"r%d","routing":"cell-%d"}}`+"\n"+
			`{"name":"Restaurant %d","geo_cell":"cell-%d","location":{"lat":48.85,"lon":2.35},"price_cents":%d,"tags":["a","b"]}`+"\n", i, i%64, i, i%64, i*10)
	}
	payload := body.String()
	b.ReportAllocs()
	b.SetBytes(int64(len(payload)))
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/bench/_bulk", strings.NewReader(payload))
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code != 200 || strings.Contains(rec.Body.String()[:40], `"errors":true`) {
			b.Fatalf("bulk = %d %s", rec.Code, rec.Body.String()[:200])
		}
	}
}

// FuzzParseAction checks that the fast path for ordinary action lines
// parses exactly what the token-by-token path parses.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{
		`{"index":{"_id":"1"}}`, `{"create":{"_index":"i","_id":1,"routing":"r"}}`, `{"delete":{}}`,
		`{"update":{"_id":"x","if_seq_no":3,"if_primary_term":1,"retry_on_conflict":2}}`,
		`{"index":{"version":5,"version_type":"external","op_type":"create","require_alias":"true"}}`,
		`{ "index" : { "_id" : "é" , "pipeline":null } }`, `{"index":{"_id":"a\"b"}}`, `{"index":{"x":1}}`,
		`{"index":{"_source":{"includes":["a"]}}}`, `{"foo":{}}`, `{}`, ``, `   `, `{"index":{"version":1.5e3}}`,
		`{"index":{"_id":true}}`, `{"index":{"if_seq_no":-5}}`, `{"index":{"version":"x"}}`,
	} {
		f.Add(s)
	}
	def := bulkDefaults{index: "def", routing: "dr"}
	var dialects []*dialect
	for _, v := range testedVersions {
		d, err := dialectOf(v)
		if err != nil {
			f.Fatal(err)
		}
		dialects = append(dialects, d)
	}
	f.Fuzz(func(t *testing.T, line string) {
		for _, d := range dialects {
			fast, fskip, ok, ferr := parseActionFast(d, []byte(line), 1, def)
			if !ok {
				return
			}
			slow, sskip, serr := parseActionSlow(d, []byte(line), 1, def)
			if fskip != sskip || fmt.Sprint(ferr) != fmt.Sprint(serr) {
				t.Fatalf("%s: parseAction(%q): fast skip %v err %v, slow skip %v err %v", d.version, line, fskip, ferr, sskip, serr)
			}
			if ferr == nil && fmt.Sprintf("%+v", fast) != fmt.Sprintf("%+v", slow) {
				t.Fatalf("%s: parseAction(%q): fast %+v, slow %+v", d.version, line, fast, slow)
			}
		}
	})
}
