package osfake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// getDoc is a raw real-time GET (found or not); routing may be "".
func (tg *target) getDoc(index, id, routing string) map[string]any {
	tg.t.Helper()
	path := "/" + index + "/_doc/" + url.PathEscape(id)
	if routing != "" {
		path += "?routing=" + url.QueryEscape(routing)
	}
	status, out := tg.do("GET", path, "")
	if status != 200 && status != 404 {
		tg.t.Fatalf("GET %s = %d %v", path, status, out)
	}
	return out
}

// apiError returns the status and error type of a client error.
func apiError(err error) string {
	var se *opensearch.StructError
	if errors.As(err, &se) {
		return fmt.Sprintf("%d %s: %s", se.Status, se.Err.Type, se.Err.Reason)
	}
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func ptr[T any](v T) *T { return &v }

// TestIndexExternalVersion replays index/35_external_version.yml.
func TestIndexExternalVersion(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("ext")
	steps := []struct {
		version int
		want    string // "ok <version>" or the error
	}{
		{0, "ok 0"},
		{5, "ok 5"},
		{5, "409 version_conflict_engine_exception: [1]: version conflict, current version [5] is higher or equal to the one provided [5]"},
		{0, "409 version_conflict_engine_exception: [1]: version conflict, current version [5] is higher or equal to the one provided [0]"},
		{6, "ok 6"},
	}
	for _, st := range steps {
		resp, err := tg.client.Index(context.Background(), opensearchapi.IndexReq{Index: name, DocumentID: "1",
			Body: strings.NewReader(`{"foo":"bar"}`), Params: opensearchapi.IndexParams{Version: ptr(st.version), VersionType: "external"}})
		got := apiError(err)
		if err == nil {
			got = fmt.Sprintf("ok %d", resp.Version)
		}
		if got != st.want {
			t.Errorf("Index(version %d external) = %s, want %s", st.version, got, st.want)
		}
	}
}

// TestDeleteExternalVersion replays delete/25_external_version.yml.
func TestDeleteExternalVersion(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("extdel")
	ctx := context.Background()
	resp, err := tg.client.Index(ctx, opensearchapi.IndexReq{Index: name, DocumentID: "1",
		Body: strings.NewReader(`{"foo":"bar"}`), Params: opensearchapi.IndexParams{Version: ptr(5), VersionType: "external"}})
	if err != nil || resp.Version != 5 {
		t.Fatalf("Index(version 5 external) = %v, %v", resp, err)
	}
	_, err = tg.client.Document.Delete(ctx, opensearchapi.DocumentDeleteReq{Index: name, DocumentID: "1",
		Params: opensearchapi.DocumentDeleteParams{Version: ptr(4), VersionType: "external"}})
	if got, want := apiError(err), "409 version_conflict_engine_exception: [1]: version conflict, current version [5] is higher or equal to the one provided [4]"; got != want {
		t.Errorf("Delete(version 4 external) = %s, want %s", got, want)
	}
	del, err := tg.client.Document.Delete(ctx, opensearchapi.DocumentDeleteReq{Index: name, DocumentID: "1",
		Params: opensearchapi.DocumentDeleteParams{Version: ptr(6), VersionType: "external"}})
	if err != nil || del.Version != 6 || del.Result != "deleted" {
		t.Errorf("Delete(version 6 external) = %+v, %v; want deleted at _version 6", del, err)
	}
}

func TestInternalVersioningAndSeqNo(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("internal")
	ctx := context.Background()
	index := func(params opensearchapi.IndexParams) string {
		resp, err := tg.client.Index(ctx, opensearchapi.IndexReq{Index: name, DocumentID: "1",
			Body: strings.NewReader(`{"n":1}`), Params: params})
		if err != nil {
			return apiError(err)
		}
		return fmt.Sprintf("%s v%d seq%d", resp.Result, resp.Version, resp.SeqNo)
	}
	steps := []struct {
		name   string
		params opensearchapi.IndexParams
		want   string
	}{
		{"if_seq_no on a missing doc", opensearchapi.IndexParams{IfSeqNo: ptr(0), IfPrimaryTerm: ptr(1)},
			"409 version_conflict_engine_exception: [1]: version conflict, required seqNo [0], primary term [1]. but no document was found"},
		{"first write", opensearchapi.IndexParams{}, "created v1 seq0"},
		{"second write", opensearchapi.IndexParams{}, "updated v2 seq1"},
		{"stale if_seq_no", opensearchapi.IndexParams{IfSeqNo: ptr(0), IfPrimaryTerm: ptr(1)},
			"409 version_conflict_engine_exception: [1]: version conflict, required seqNo [0], primary term [1]. current document has seqNo [1] and primary term [1]"},
		{"other primary term", opensearchapi.IndexParams{IfSeqNo: ptr(1), IfPrimaryTerm: ptr(2)},
			"409 version_conflict_engine_exception: [1]: version conflict, required seqNo [1], primary term [2]. current document has seqNo [1] and primary term [1]"},
		{"current if_seq_no", opensearchapi.IndexParams{IfSeqNo: ptr(1), IfPrimaryTerm: ptr(1)}, "updated v3 seq2"},
		{"create over it", opensearchapi.IndexParams{OpType: "create"},
			"409 version_conflict_engine_exception: [1]: version conflict, document already exists (current version [3])"},
		{"internal version", opensearchapi.IndexParams{Version: ptr(3)},
			"400 action_request_validation_exception: Validation Failed: 1: internal versioning can not be used for optimistic concurrency control. Please use `if_seq_no` and `if_primary_term` instead;"},
		{"if_seq_no without term", opensearchapi.IndexParams{IfSeqNo: ptr(2)},
			"400 action_request_validation_exception: Validation Failed: 1: ifSeqNo is set, but primary term is [0];"},
	}
	for _, st := range steps {
		if got := index(st.params); got != st.want {
			t.Errorf("Index(%s) = %s, want %s", st.name, got, st.want)
		}
	}
	// A delete takes the next version and a write after it the one after.
	del, err := tg.client.Document.Delete(ctx, opensearchapi.DocumentDeleteReq{Index: name, DocumentID: "1"})
	if err != nil || del.Version != 4 || del.SeqNo != 3 {
		t.Errorf("Delete = %+v, %v; want _version 4 _seq_no 3", del, err)
	}
	if got := index(opensearchapi.IndexParams{OpType: "create"}); got != "created v5 seq4" {
		t.Errorf("create after delete = %s, want created v5 seq4", got)
	}
}

func TestSingleDocumentAPIs(t *testing.T) {
	tg := newTarget(t)
	name, routed := tg.name("single"), tg.name("routed")
	ctx := context.Background()
	tg.mustDo(200, "PUT", "/"+routed, `{"mappings":{"_routing":{"required":true}}}`)

	// Create: 201, then 409 through _create.
	created, err := tg.client.Document.Create(ctx, opensearchapi.DocumentCreateReq{Index: name, DocumentID: "1", Body: strings.NewReader(`{"name":"Chez Nous","n":1}`)})
	if err != nil || created.Result != "created" || created.Version != 1 || created.Shards.Total != 2 {
		t.Fatalf("Create = %+v, %v", created, err)
	}
	if st, out := tg.do("PUT", "/"+name+"/_create/1", `{}`); st != 409 || str(dig(out, "error", "type")) != "version_conflict_engine_exception" ||
		str(dig(out, "error", "index")) != name || str(dig(out, "error", "shard")) != "0" {
		t.Errorf("second _create = %d %v, want 409 naming the index and shard", st, out)
	}
	// Overwrite: 200 updated.
	if st, out := tg.do("PUT", "/"+name+"/_doc/1?refresh=true", `{"name":"Chez Nous","n":2}`); st != 200 || str(dig(out, "result")) != "updated" || dig(out, "forced_refresh") != true {
		t.Errorf("PUT over a doc = %d %v, want 200 updated with forced_refresh", st, out)
	}

	// Real-time GET: the full shape.
	got, err := tg.client.Document.Get(ctx, opensearchapi.DocumentGetReq{Index: name, DocumentID: "1"})
	if err != nil || !got.Found || got.Version != 2 || got.SeqNo != 1 || got.PrimaryTerm != 1 || string(got.Source) != `{"name":"Chez Nous","n":2}` {
		t.Errorf("Get = %+v, %v", got, err)
	}
	missing := tg.getDoc(name, "nope", "")
	if len(missing) != 3 || missing["found"] != false || missing["_index"] != name || missing["_id"] != "nope" {
		t.Errorf("GET missing = %v, want exactly _index, _id, found:false", missing)
	}
	src, err := tg.client.Document.Source(ctx, opensearchapi.DocumentSourceReq{Index: name, DocumentID: "1"})
	if err != nil || string(src.Source) != `{"name":"Chez Nous","n":2}` {
		t.Errorf("Source = %s, %v", src.Source, err)
	}
	if st, out := tg.do("GET", "/"+name+"/_source/nope", ""); st != 404 || str(dig(out, "error", "reason")) != "Document not found ["+name+"]/[nope]" {
		t.Errorf("GET _source of a missing doc = %d %v", st, out)
	}
	for path, want := range map[string]int{"/" + name + "/_doc/1": 200, "/" + name + "/_doc/nope": 404, "/" + name + "/_source/1": 200} {
		if st, _ := tg.do("HEAD", path, ""); st != want {
			t.Errorf("HEAD %s = %d, want %d", path, st, want)
		}
	}

	// Routing: required by the mapping; selects the shard.
	if st, out := tg.do("PUT", "/"+routed+"/_doc/1", `{}`); st != 400 || str(dig(out, "error", "type")) != "routing_missing_exception" {
		t.Errorf("PUT without required routing = %d %v", st, out)
	}
	tg.mustDo(201, "PUT", "/"+routed+"/_doc/1?routing=r1", `{}`)
	if st, out := tg.do("GET", "/"+routed+"/_doc/1", ""); st != 400 || str(dig(out, "error", "reason")) != "routing is required for ["+routed+"]/[1]" {
		t.Errorf("GET without required routing = %d %v", st, out)
	}
	if doc := tg.getDoc(routed, "1", "r1"); str(dig(doc, "_routing")) != "r1" || dig(doc, "found") != true {
		t.Errorf("GET with routing = %v, want found with _routing r1", doc)
	}

	// Auto ids: POST without an id.
	out := tg.mustDo(201, "POST", "/"+name+"/_doc", `{"name":"auto"}`)
	id := str(dig(out, "_id"))
	if len(id) != 20 || str(dig(out, "result")) != "created" || str(dig(out, "_version")) != "1" {
		t.Errorf("POST _doc = %v, want a 20-character id, created, version 1", out)
	}
	if doc := tg.getDoc(name, id, ""); dig(doc, "found") != true {
		t.Errorf("GET auto id %q = %v", id, doc)
	}

	// Delete: 200, then 404 not_found with the same shape.
	del, err := tg.client.Document.Delete(ctx, opensearchapi.DocumentDeleteReq{Index: name, DocumentID: "1"})
	if err != nil || del.Result != "deleted" || del.Version != 3 {
		t.Errorf("Delete = %+v, %v", del, err)
	}
	if st, out := tg.do("DELETE", "/"+name+"/_doc/1", ""); st != 404 || str(dig(out, "result")) != "not_found" || dig(out, "error") != nil {
		t.Errorf("DELETE missing = %d %v, want 404 result not_found", st, out)
	}
	if st, out := tg.do("DELETE", "/"+tg.name("nowhere")+"/_doc/1", ""); st != 404 || str(dig(out, "error", "type")) != "index_not_found_exception" {
		t.Errorf("DELETE in a missing index = %d %v, want 404 index_not_found_exception", st, out)
	}
	if st, out := tg.do("PUT", "/"+name+"/_doc/2?refresh=sometimes", `{}`); st != 400 || str(dig(out, "error", "reason")) != "Unknown value for refresh: [sometimes]." {
		t.Errorf("PUT with a bad refresh = %d %v", st, out)
	}
}

func TestUpdateDocument(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("upd")
	ctx := context.Background()
	tg.mustDo(201, "PUT", "/"+name+"/_doc/1", `{"name":"Chez Nous","menu":{"starter":"soup","main":"fish"},"tags":["a","b"],"n":1}`)
	update := func(id, body string) (*opensearchapi.UpdateResp, string) {
		resp, err := tg.client.Update(ctx, opensearchapi.UpdateReq{Index: name, DocumentID: id, Body: strings.NewReader(body)})
		if err != nil {
			return resp, apiError(err)
		}
		return resp, fmt.Sprintf("%s v%d shards %d", resp.Result, resp.Version, resp.Shards.Total)
	}
	source := func(id string) string {
		src, err := tg.client.Document.Source(ctx, opensearchapi.DocumentSourceReq{Index: name, DocumentID: id})
		if err != nil {
			return apiError(err)
		}
		return string(src.Source)
	}
	steps := []struct {
		name, id, body, want, source string
	}{
		{"partial doc", "1", `{"doc":{"menu":{"main":"duck"},"tags":["c"],"open":true}}`, "updated v2 shards 2",
			`{"name":"Chez Nous","menu":{"starter":"soup","main":"duck"},"tags":["c"],"n":1,"open":true}`},
		{"same doc again", "1", `{"doc":{"menu":{"main":"duck"},"tags":["c"]}}`, "noop v2 shards 0",
			`{"name":"Chez Nous","menu":{"starter":"soup","main":"duck"},"tags":["c"],"n":1,"open":true}`},
		{"detect_noop off", "1", `{"doc":{"n":1},"detect_noop":false}`, "updated v3 shards 2",
			`{"name":"Chez Nous","menu":{"starter":"soup","main":"duck"},"tags":["c"],"n":1,"open":true}`},
		{"missing without upsert", "2", `{"doc":{"n":1}}`, "404 document_missing_exception: [2]: document missing", "404 resource_not_found_exception: Document not found [" + name + "]/[2]"},
		{"doc_as_upsert", "2", `{"doc":{"n":2},"doc_as_upsert":true}`, "created v1 shards 2", `{"n":2}`},
		{"upsert on a missing doc", "3", `{"doc":{"n":9},"upsert":{"n":3}}`, "created v1 shards 2", `{"n":3}`},
		{"upsert on an existing doc", "3", `{"doc":{"n":9},"upsert":{"n":3}}`, "updated v2 shards 2", `{"n":9}`},
		{"no doc", "3", `{"upsert":{"n":3}}`, "400 action_request_validation_exception: Validation Failed: 1: script or doc is missing;", `{"n":9}`},
	}
	for _, st := range steps {
		if _, got := update(st.id, st.body); got != st.want {
			t.Errorf("Update(%s) = %s, want %s", st.name, got, st.want)
		}
		if got := source(st.id); got != st.source {
			t.Errorf("after Update(%s) _source = %s, want %s", st.name, got, st.source)
		}
	}
	// if_seq_no applies to updates.
	_, err := tg.client.Update(ctx, opensearchapi.UpdateReq{Index: name, DocumentID: "3", Body: strings.NewReader(`{"doc":{"n":10}}`),
		Params: opensearchapi.UpdateParams{IfSeqNo: ptr(0), IfPrimaryTerm: ptr(1)}})
	if got := apiError(err); !strings.HasPrefix(got, "409 version_conflict_engine_exception: [3]: version conflict, required seqNo [0], primary term [1]. current document has seqNo") {
		t.Errorf("Update with a stale if_seq_no = %s, want 409", got)
	}
	// Bulk updates report per item and noop keeps the sequence number. A
	// noop in a bulk reports its shard's copies (the primary and its
	// replica; how many succeeded depends on the nodes that hold them),
	// where the update API reports none.
	resp := tg.bulk(name, `{"update":{"_id":"3"}}`+"\n"+`{"doc":{"n":9}}`+"\n", opensearchapi.BulkParams{})
	if it := item(resp, 0); it.Result != "noop" || it.Status != 200 || it.Version != 2 || it.Shards.Total != 2 || it.Shards.Failed != 0 ||
		it.Shards.Successful < 1 || it.Shards.Successful > 2 {
		t.Errorf("bulk noop update = %+v, want noop v2 on 2 copies", it)
	}
}

// TestSourceIsStoredAsGiven checks that _source comes back byte for byte
// (key order, spacing, number spelling), as the server stores it.
func TestSourceIsStoredAsGiven(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("raw")
	// (An integer beyond a long would be mapped as a long and rejected.)
	body := `{ "b": 1.50, "a": [1, 2],  "big": 12345678901234567890.0e0 }`
	tg.mustDo(201, "PUT", "/"+name+"/_doc/1", body)
	src, err := tg.client.Document.Source(context.Background(), opensearchapi.DocumentSourceReq{Index: name, DocumentID: "1"})
	if err != nil || string(src.Source) != body {
		t.Errorf("Source = %s, %v; want %s", src.Source, err, body)
	}
	var m map[string]json.RawMessage
	json.Unmarshal(tg.getRaw("/"+name+"/_doc/1"), &m)
	if string(m["_source"]) != body {
		t.Errorf("GET _source = %s, want %s", m["_source"], body)
	}
}

func (tg *target) getRaw(path string) []byte {
	tg.t.Helper()
	resp, err := http.Get(tg.url + path)
	if err != nil {
		tg.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tg.t.Fatal(err)
	}
	return b
}

// A document or update body that is not a JSON object: the server tells
// JSON by its opening brace, and the update parser names the token it
// found instead of an object.
func TestBodiesThatAreNotObjects(t *testing.T) {
	const notXContent = "Compressor detection can only be called on some xcontent bytes or compressed xcontent bytes"
	tg := newTarget(t)
	name := tg.name("notobj")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_replicas":0}}`)
	tg.mustDo(201, "PUT", "/"+name+"/_doc/1", ` {"n":1}`)
	cases := []struct{ method, path, body, want string }{
		{"PUT", "/_doc/2", `[1]`, "mapper_parsing_exception: failed to parse"},
		{"PUT", "/_doc/2", `null`, "mapper_parsing_exception: failed to parse"},
		{"POST", "/_update/1", `[1]`, "x_content_parse_exception: [UpdateRequest] Expected START_OBJECT but was: START_ARRAY"},
		{"POST", "/_update/1", `"x"`, "x_content_parse_exception: [UpdateRequest] Expected START_OBJECT but was: VALUE_STRING"},
		{"POST", "/_update/1", `null`, "x_content_parse_exception: [UpdateRequest] Expected START_OBJECT but was: VALUE_NULL"},
		{"POST", "/_update/1", `{"doc":1}`, "x_content_parse_exception: [UpdateRequest] doc doesn't support values of type: VALUE_NUMBER"},
		{"POST", "/_update/1", `{"doc":{},"upsert":"x"}`, "x_content_parse_exception: [UpdateRequest] upsert doesn't support values of type: VALUE_STRING"},
	}
	for _, tc := range cases {
		status, out := tg.do(tc.method, "/"+name+tc.path, tc.body)
		want := tc.want
		if strings.HasPrefix(want, "mapper") && tg.primaryElsewhere(name) {
			// From another node's primary the cause arrives wrapped
			// (overTransport), an OpenSearch exception, and so the root
			// cause.
			want = overTransport("not_x_content_exception: " + notXContent)
		}
		if status != 400 || firstRootCause(out) != want {
			t.Errorf("%s %s %s = %d %v, want 400 %s", tc.method, tc.path, tc.body, status, out, want)
		}
		if strings.HasPrefix(tc.want, "mapper") && str(dig(out, "error", "caused_by", "type")) != "not_x_content_exception" {
			t.Errorf("%s %s: caused_by = %v, want not_x_content_exception", tc.path, tc.body, dig(out, "error", "caused_by"))
		}
	}
}

// Numbers a numeric field rejects: out of its range, or not finite. A
// JSON number overflows in the JSON parser (input_coercion_exception,
// naming the number as written), text in the field mapper; the preview
// shows a non-integer as the double the parser read. An unmapped integer
// too big for a long is mapped as a long all the same, and rejected.
func TestNumericRangeChecks(t *testing.T) { eachLine(t, testNumericRangeChecks) }

func testNumericRangeChecks(t *testing.T, tg *target) {
	name := tg.name("ranges")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_replicas":0},"mappings":{"properties":{
		"l":{"type":"long"},"i":{"type":"integer"},"s":{"type":"short"},"b":{"type":"byte"},
		"d":{"type":"double"},"f":{"type":"float"},"h":{"type":"half_float"}}}}`)
	// The parser names the Java type it reads the number as: 3.x in
	// backticks and a short with its range, and it wraps its exception in
	// another of its kind.
	long := byLine(tg, "long (-9223372036854775808 - 9223372036854775807)", "`long` (-9223372036854775808 - 9223372036854775807)")
	int := byLine(tg, "int (-2147483648 - 2147483647)", "`int` (-2147483648 - 2147483647)")
	short := byLine(tg, "Java short", "`short` (-32768 - 32767)")
	overflow := func(n, of string) string {
		cause := "input_coercion_exception: Numeric value (" + n + ") out of range of " + of
		return byLine(tg, cause, cause+" / "+cause)
	}
	cases := []struct{ doc, field, typ, preview, cause string }{
		{`{"big":12345678901234567890}`, "big", "long", "12345678901234567890", overflow("12345678901234567890", long)},
		{`{"x":{"y":-9223372036854775809}}`, "x.y", "long", "-9223372036854775809", overflow("-9223372036854775809", long)},
		{`{"l":9223372036854775808}`, "l", "long", "9223372036854775808", overflow("9223372036854775808", long)},
		{`{"l":[1,12345678901234567890]}`, "l", "long", "12345678901234567890", overflow("12345678901234567890", long)},
		{`{"l":"9223372036854775808"}`, "l", "long", "9223372036854775808", "illegal_argument_exception: Value [9223372036854775808] is out of range for a long"},
		{`{"l":1e19}`, "l", "long", "1.0E19", overflow("1e19", long)},
		{`{"l":9.3e18}`, "l", "long", "9.3E18", overflow("9.3e18", long)},
		{`{"l":"1e19"}`, "l", "long", "1e19", "illegal_argument_exception: Value [1e19] is out of range for a long"},
		{`{"i":2147483648}`, "i", "integer", "2147483648", overflow("2147483648", int)},
		{`{"i":"2147483648"}`, "i", "integer", "2147483648", "illegal_argument_exception: Value [2147483648] is out of range for an integer"},
		{`{"i":2147483647.5}`, "i", "integer", "2.1474836475E9", overflow("2147483647.5", int)},
		{`{"i":-2147483648.5}`, "i", "integer", "-2.1474836485E9", overflow("-2147483648.5", int)},
		{`{"i":1e10}`, "i", "integer", "1.0E10", overflow("1e10", int)},
		{`{"s":32768}`, "s", "short", "32768", overflow("32768", short)},
		{`{"s":40000.5}`, "s", "short", "40000.5", overflow("40000.5", short)},
		{`{"s":"40000"}`, "s", "short", "40000", "illegal_argument_exception: Value [40000] is out of range for a short"},
		{`{"b":128}`, "b", "byte", "128", "illegal_argument_exception: Value [128] is out of range for a byte"},
		{`{"b":-129}`, "b", "byte", "-129", "illegal_argument_exception: Value [-129] is out of range for a byte"},
		{`{"b":200.5}`, "b", "byte", "200.5", "illegal_argument_exception: Value [200] is out of range for a byte"},
		{`{"b":1e3}`, "b", "byte", "1000.0", "illegal_argument_exception: Value [1000] is out of range for a byte"},
		{`{"b":"200"}`, "b", "byte", "200", "illegal_argument_exception: Value [200] is out of range for a byte"},
		{`{"d":1e400}`, "d", "double", "Infinity", "illegal_argument_exception: [double] supports only finite values, but got [Infinity]"},
		{`{"d":"1e400"}`, "d", "double", "1e400", "illegal_argument_exception: [double] supports only finite values, but got [Infinity]"},
		{`{"f":1e39}`, "f", "float", "Infinity", "illegal_argument_exception: [float] supports only finite values, but got [Infinity]"},
		{`{"h":70000}`, "h", "half_float", "70000", "illegal_argument_exception: [half_float] supports only finite values, but got [70000.0]"},
		{`{"dyn":1.5e300}`, "dyn", "float", "Infinity", "illegal_argument_exception: [float] supports only finite values, but got [Infinity]"},
	}
	for _, tc := range cases {
		status, out := tg.do("PUT", "/"+name+"/_doc/1", tc.doc)
		want := "failed to parse field [" + tc.field + "] of type [" + tc.typ + "] in document with id '1'. Preview of field's value: '" + tc.preview + "'"
		cause := errorChain(dig(out, "error", "caused_by")) // without the number's position, which the server adds
		if status != 400 || firstRootCause(out) != "mapper_parsing_exception: "+want || cause != tg.failureOf(name, tc.cause) {
			t.Errorf("PUT %s = %d %v\nwant 400 %s\ncaused by %s", tc.doc, status, out, want, tc.cause)
		}
	}
	// Values at the bounds, and fractions that truncate, are taken.
	for _, doc := range []string{`{"l":9223372036854775807}`, `{"l":-1.5}`, `{"l":"1.5"}`, `{"l":9.2e18}`, `{"i":-2147483648}`,
		`{"s":-32768}`, `{"b":127.9}`, `{"h":65504}`, `{"d":1e308}`} {
		if status, out := tg.do("PUT", "/"+name+"/_doc/ok", doc); status != 200 && status != 201 {
			t.Errorf("PUT %s = %d %v, want it taken", doc, status, out)
		}
	}
	// The rejected fields were not mapped.
	if props := dig(tg.mustDo(200, "GET", "/"+name+"/_mapping", ""), name, "mappings", "properties"); dig(props, "big") != nil || dig(props, "dyn") != nil || dig(props, "x") != nil {
		t.Errorf("mapping after rejected documents = %v, want no big, dyn or x", props)
	}
}
