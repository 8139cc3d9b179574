package osfake

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// aliasesOf returns GET /{index}/_alias as alias name → definition.
func aliasesOf(tg *target, index string) map[string]any {
	tg.t.Helper()
	out := tg.mustDo(200, "GET", "/"+index+"/_alias", "")
	m, _ := dig(out, index, "aliases").(map[string]any)
	return m
}

// postAliases sends POST /_aliases through the real client.
func postAliases(tg *target, body string) error {
	_, err := tg.client.Aliases(context.Background(), opensearchapi.AliasesReq{Body: strings.NewReader(body)})
	return err
}

func TestAliasesAddWithOptionsAndRemove(t *testing.T) {
	tg := newTarget(t)
	i1, i2, a := tg.name("i1"), tg.name("i2"), tg.name("a")
	tg.mustDo(200, "PUT", "/"+i1, "")
	tg.mustDo(200, "PUT", "/"+i2, "")

	err := postAliases(tg, `{"actions":[
		{"add":{"index":"`+i1+`","alias":"`+a+`","routing":7,"filter":{"term":{"city":"nyc"}},"is_write_index":true}},
		{"add":{"indices":["`+i2+`"],"aliases":["`+a+`"],"index_routing":"x","search_routing":"y,z","is_write_index":false}}]}`)
	if err != nil {
		t.Fatalf("Aliases(add) = %v", err)
	}
	got := aliasesOf(tg, i1)[a]
	want := map[string]any{"index_routing": "7", "search_routing": "7", "is_write_index": true,
		"filter": map[string]any{"term": map[string]any{"city": "nyc"}}}
	if b1, b2 := mustJSON(got), mustJSON(want); b1 != b2 {
		t.Errorf("alias on %s = %s, want %s", i1, b1, b2)
	}
	if got := aliasesOf(tg, i2)[a]; str(dig(got, "index_routing")) != "x" || str(dig(got, "search_routing")) != "y,z" || dig(got, "is_write_index") != false {
		t.Errorf("alias on %s = %v, want index_routing x, search_routing y,z, is_write_index false", i2, got)
	}

	// An add replaces the alias's definition on that index whole.
	if err := postAliases(tg, `{"actions":[{"add":{"index":"`+i1+`","alias":"`+a+`"}}]}`); err != nil {
		t.Fatalf("Aliases(re-add) = %v", err)
	}
	if got := aliasesOf(tg, i1)[a]; mustJSON(got) != "{}" {
		t.Errorf("alias after plain re-add = %v, want {} (options replaced)", got)
	}

	if err := postAliases(tg, `{"actions":[{"remove":{"index":"`+i1+`","alias":"`+a+`"}}]}`); err != nil {
		t.Fatalf("Aliases(remove) = %v", err)
	}
	if _, ok := aliasesOf(tg, i1)[a]; ok {
		t.Errorf("alias %s still on %s after remove", a, i1)
	}
	if _, ok := aliasesOf(tg, i2)[a]; !ok {
		t.Errorf("remove from %s also removed the alias from %s", i1, i2)
	}
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func TestAliasesWildcardIndicesAndRemoveWildcardAliases(t *testing.T) {
	tg := newTarget(t)
	for _, n := range []string{"w-1", "w-2", "other"} {
		tg.mustDo(200, "PUT", "/"+tg.name(n), "")
	}
	a, b := tg.name("wa"), tg.name("wb")
	tg.mustDo(200, "POST", "/_aliases", `{"actions":[{"add":{"index":"`+tg.name("w-*")+`","aliases":["`+a+`","`+b+`"]}}]}`)
	for _, n := range []string{"w-1", "w-2"} {
		if as := aliasesOf(tg, tg.name(n)); as[a] == nil || as[b] == nil {
			t.Errorf("aliases of %s = %v, want %s and %s", n, as, a, b)
		}
	}
	if as := aliasesOf(tg, tg.name("other")); len(as) != 0 {
		t.Errorf("aliases of other = %v, want none (wildcard must not match it)", as)
	}
	// remove expands alias wildcards against the aliases each index has.
	tg.mustDo(200, "POST", "/_aliases", `{"actions":[{"remove":{"index":"`+tg.name("w-1")+`","alias":"`+tg.name("w*")+`"}}]}`)
	if as := aliasesOf(tg, tg.name("w-1")); len(as) != 0 {
		t.Errorf("aliases of w-1 after wildcard remove = %v, want none", as)
	}
	if as := aliasesOf(tg, tg.name("w-2")); len(as) != 2 {
		t.Errorf("aliases of w-2 = %v, want both kept", as)
	}
}

func TestAliasesRemoveAndAddSameAliasSwapsIndex(t *testing.T) {
	tg := newTarget(t)
	old, next, a := tg.name("old"), tg.name("new"), tg.name("live")
	tg.mustDo(200, "PUT", "/"+old, `{"aliases":{"`+a+`":{}}}`)
	tg.mustDo(200, "PUT", "/"+next, "")
	tg.mustDo(200, "POST", "/_aliases", `{"actions":[
		{"remove":{"index":"`+old+`","alias":"`+a+`"}},
		{"add":{"index":"`+next+`","alias":"`+a+`"}}]}`)
	out := tg.mustDo(200, "GET", "/_alias/"+a, "")
	if len(out) != 1 || dig(out, next, "aliases", a) == nil {
		t.Errorf("GET /_alias/%s = %v, want only %s", a, out, next)
	}
	// Remove then add of the same alias on the same index is fine too.
	tg.mustDo(200, "POST", "/_aliases", `{"actions":[
		{"remove":{"index":"`+next+`","alias":"`+a+`"}},
		{"add":{"index":"`+next+`","alias":"`+a+`","is_write_index":true}}]}`)
	if got := dig(aliasesOf(tg, next), a, "is_write_index"); got != true {
		t.Errorf("is_write_index after remove+add = %v, want true", got)
	}
}

func TestAliasesRemoveIndexReplacesIndexWithAlias(t *testing.T) {
	tg := newTarget(t)
	gone, kept := tg.name("gone"), tg.name("kept")
	tg.mustDo(200, "PUT", "/"+gone, "")
	tg.mustDo(200, "PUT", "/"+kept, "")
	// remove_index runs first, so an alias may take the deleted index's
	// name in the same request.
	tg.mustDo(200, "POST", "/_aliases", `{"actions":[
		{"add":{"index":"`+kept+`","alias":"`+gone+`"}},
		{"remove_index":{"index":"`+gone+`"}}]}`)
	out := tg.mustDo(200, "GET", "/"+gone, "")
	if _, ok := out[kept]; !ok || len(out) != 1 {
		t.Errorf("GET /%s = %v, want it to resolve to %s through the alias", gone, out, kept)
	}
}

// TestAliasesAtomic checks that a request whose later action fails leaves
// the earlier actions unapplied.
func TestAliasesAtomic(t *testing.T) {
	tg := newTarget(t)
	i1, i2 := tg.name("i1"), tg.name("i2")
	tg.mustDo(200, "PUT", "/"+i1, "")
	tg.mustDo(200, "PUT", "/"+i2, `{"aliases":{"`+tg.name("w")+`":{"is_write_index":true}}}`)
	cases := []struct {
		name, body string
		status     int
		typ        string
	}{
		{"alias named like an index", `{"actions":[
			{"add":{"index":"` + i1 + `","alias":"` + tg.name("x") + `"}},
			{"remove_index":{"index":"` + i2 + `"}},
			{"add":{"index":"` + i1 + `","alias":"` + i1 + `"}}]}`, 400, "invalid_alias_name_exception"},
		{"second write index", `{"actions":[
			{"add":{"index":"` + i1 + `","alias":"` + tg.name("x") + `"}},
			{"add":{"index":"` + i1 + `","alias":"` + tg.name("w") + `","is_write_index":true}}]}`, 500, "illegal_state_exception"},
		{"action on an index removed in the same request", `{"actions":[
			{"add":{"index":"` + i1 + `","alias":"` + tg.name("x") + `"}},
			{"remove_index":{"index":"` + i2 + `"}},
			{"add":{"index":"` + i2 + `","alias":"` + tg.name("y") + `"}}]}`, 404, "index_not_found_exception"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, out := tg.do("POST", "/_aliases", tc.body)
			if status != tc.status || str(dig(out, "error", "type")) != tc.typ {
				t.Fatalf("POST /_aliases = %d %v, want %d %s", status, out, tc.status, tc.typ)
			}
			if as := aliasesOf(tg, i1); as[tg.name("x")] != nil {
				t.Errorf("aliases of %s = %v: an earlier action was applied", i1, as)
			}
			if st, _ := tg.do("HEAD", "/"+i2, ""); st != 200 {
				t.Errorf("HEAD %s = %d: remove_index was applied", i2, st)
			}
		})
	}
}

func TestAliasesErrors(t *testing.T) {
	tg := newTarget(t)
	i1, i2, a, w := tg.name("i1"), tg.name("i2"), tg.name("a"), tg.name("w")
	tg.mustDo(200, "PUT", "/"+i1, `{"aliases":{"`+a+`":{}}}`)
	tg.mustDo(200, "PUT", "/"+i2, "")
	missing, missingAlias := tg.name("nope"), tg.name("no-alias")
	add := func(fields string) string {
		return `{"actions":[{"add":{"index":"` + i1 + `",` + fields + `}}]}`
	}
	const actionsFailed = "x_content_parse_exception: [aliases] failed to parse field [actions]"
	cases := []struct {
		name, body string
		status     int
		root       string   // "type: reason" of the first root cause, without the parser's position; "" to skip
		text       string   // must appear in the response
		names      []string // must appear in the reason too, in any order
	}{
		{"two operations in one entry", `{"actions":[{"add":{"index":"` + i1 + `","alias":"x"},"remove":{"index":"` + i1 + `","alias":"x"}}]}`,
			400, "x_content_parse_exception: Failed to build [alias_action] after last required field arrived", "Too many operations declared on operation entry", nil},
		// The server lists the write indices in the order of its index
		// map, a hash map's.
		{"two write indices", `{"actions":[{"add":{"index":"` + i1 + `","alias":"` + w + `","is_write_index":true}},{"add":{"index":"` + i2 + `","alias":"` + w + `","is_write_index":true}}]}`,
			500, "illegal_state_exception: ", "alias [" + w + "] has more than one write index [", []string{i1, i2}},
		{"alias named like an index", `{"actions":[{"add":{"index":"` + i1 + `","alias":"` + i2 + `"}}]}`,
			400, "invalid_alias_name_exception: Invalid alias name [" + i2 + "], an index exists with the same name as the alias", `"index_uuid"`, nil},
		{"missing index", `{"actions":[{"add":{"index":"` + missing + `","alias":"x"}}]}`,
			404, "index_not_found_exception: no such index [" + missing + "]", "", nil},
		{"index given as an alias", `{"actions":[{"add":{"index":"` + a + `","alias":"x"}}]}`,
			400, "illegal_argument_exception: ", "matches an alias", nil},
		{"remove of a missing alias alone", `{"actions":[{"remove":{"index":"` + i1 + `","alias":"` + missingAlias + `"}}]}`,
			404, "aliases_not_found_exception: aliases [" + missingAlias + "] missing", "", nil},
		{"remove must_exist beside an effective action", `{"actions":[{"add":{"index":"` + i2 + `","alias":"` + tg.name("z") + `"}},{"remove":{"index":"` + i1 + `","alias":"` + missingAlias + `","must_exist":true}}]}`,
			404, "aliases_not_found_exception: aliases [" + missingAlias + "] missing", "", nil},
		{"no actions", `{"actions":[]}`, 400, "illegal_argument_exception: No action specified", "", nil},
		{"no actions field", `{}`, 400, "illegal_argument_exception: No action specified", "", nil},
		{"actions a number", `{"actions":1}`, 400, "x_content_parse_exception: [aliases] actions doesn't support values of type: VALUE_NUMBER", "", nil},
		{"unknown top-level field", `{"actions":[],"frob":1}`, 400, "x_content_parse_exception: [aliases] unknown field [frob]", "", nil},
		{"empty action entry", `{"actions":[{}]}`, 400, actionsFailed, "null_pointer_exception", nil},
		{"scalar action entry", `{"actions":[1]}`, 400, "x_content_parse_exception: [alias_action] Expected START_OBJECT but was: END_ARRAY", "", nil},
		{"two scalar action entries", `{"actions":[1,2]}`, 400, "x_content_parse_exception: [alias_action] Expected START_OBJECT but was: VALUE_NUMBER", "", nil},
		{"unknown action", `{"actions":[{"frob":{}}]}`, 400, "x_content_parse_exception: [alias_action] unknown field [frob]", "", nil},
		{"action not an object", `{"actions":[{"add":1}]}`, 400, "x_content_parse_exception: [alias_action] add doesn't support values of type: VALUE_NUMBER", "", nil},
		{"no alias", `{"actions":[{"add":{"index":"` + i1 + `"}}]}`, 400, actionsFailed, "One of [alias] or [aliases] is required", nil},
		{"no index", `{"actions":[{"remove":{"alias":"` + a + `"}}]}`, 400, actionsFailed, "One of [index] or [indices] is required", nil},
		{"filter on remove", `{"actions":[{"remove":{"index":"` + i1 + `","alias":"` + a + `","filter":{}}}]}`,
			400, "x_content_parse_exception: [remove] unknown field [filter]", "[alias_action] failed to parse field [remove]", nil},
		{"must_exist on add", add(`"alias":"x","must_exist":true`), 400, "x_content_parse_exception: [add] unknown field [must_exist]", "", nil},
		{"index and indices", add(`"indices":["` + i1 + `"],"alias":"x"`),
			400, "x_content_parse_exception: [add] failed to parse field [indices]", "Only one of [index] and [indices] is supported", nil},
		{"index given as an array", `{"actions":[{"add":{"index":["` + i1 + `"],"alias":"x"}}]}`,
			400, "x_content_parse_exception: [add] index doesn't support values of type: START_ARRAY", "", nil},
		{"empty aliases", add(`"aliases":[]`), 400, "x_content_parse_exception: [add] failed to parse field [aliases]", "[aliases] can't be empty", nil},
		{"empty alias", add(`"alias":""`), 400, "x_content_parse_exception: [add] failed to parse field [alias]", "[alias] can't be empty string", nil},
		{"nested array of aliases", add(`"aliases":[["x"]]`), 400, "x_content_parse_exception: [add] failed to parse field [aliases]", "expected value but got [START_ARRAY]", nil},
		{"alias on remove_index", `{"actions":[{"remove_index":{"index":"` + i1 + `","alias":"x"}}]}`,
			400, "x_content_parse_exception: [remove_index] failed to parse field [alias]", "[alias] is unsupported for [REMOVE_INDEX]", nil},
		{"boolean not a boolean", add(`"alias":"x","is_write_index":"maybe"`),
			400, "x_content_parse_exception: [add] failed to parse field [is_write_index]", "Failed to parse value [maybe] as only [true] or [false] are allowed.", nil},
		{"boolean a number", add(`"alias":"x","is_write_index":1`), 400, "x_content_parse_exception: [add] is_write_index doesn't support values of type: VALUE_NUMBER", "", nil},
		{"routing a boolean", add(`"alias":"x","routing":true`), 400, "x_content_parse_exception: [add] routing doesn't support values of type: VALUE_BOOLEAN", "", nil},
		{"filter a number", add(`"alias":"x","filter":1`), 400, "x_content_parse_exception: [add] filter doesn't support values of type: VALUE_NUMBER", "", nil},
		{"bad alias name", add(`"alias":"_bad"`), 400, "invalid_alias_name_exception: Invalid alias name [_bad]: must not start with '_', '-', or '+'", "", nil},
		{"index routing with a comma", add(`"alias":"r","index_routing":"1,2"`),
			400, "illegal_argument_exception: alias [r] has several index routing values associated with it", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, out := tg.do("POST", "/_aliases", tc.body)
			if status != tc.status {
				t.Errorf("POST /_aliases = %d %v, want %d", status, out, tc.status)
			}
			if root := firstRootCause(out); !strings.HasPrefix(root, tc.root) || (tc.root != "" && !strings.HasSuffix(tc.root, " ") && root != tc.root) {
				t.Errorf("root cause = %q, want %q (%v)", root, tc.root, out)
			}
			text := mustJSON(out)
			if !strings.Contains(text, tc.text) {
				t.Errorf("response %v does not mention %q", out, tc.text)
			}
			for _, n := range tc.names {
				if !strings.Contains(str(dig(out, "error", "reason")), n) {
					t.Errorf("reason %q does not name %s", dig(out, "error", "reason"), n)
				}
			}
		})
	}
	// Nothing above changed the aliases.
	if as := aliasesOf(tg, i1); len(as) != 1 || as[a] == nil {
		t.Errorf("aliases of %s = %v, want only %s", i1, as, a)
	}
	if as := aliasesOf(tg, i2); len(as) != 0 {
		t.Errorf("aliases of %s = %v, want none", i2, as)
	}
}

// firstRootCause is "type: reason" of the first root cause of an error
// response, without the [line:column] position the server's parser
// puts before a reason.
func firstRootCause(out map[string]any) string {
	reason := str(dig(out, "error", "root_cause", 0, "reason"))
	if strings.HasPrefix(reason, "[") {
		if i := strings.Index(reason, "] "); i > 0 && strings.Trim(reason[1:i], "0123456789:") == "" && strings.Contains(reason[1:i], ":") {
			reason = reason[i+2:]
		}
	}
	return str(dig(out, "error", "root_cause", 0, "type")) + ": " + reason
}

// The _aliases parser is lenient where its field types allow: numbers
// in an array of names are read as text, a boolean may be a string, a
// routing a number, and a scalar before an action object is stepped over.
func TestAliasesLenientValues(t *testing.T) {
	tg := newTarget(t)
	i1, a, b := tg.name("i1"), tg.name("a"), tg.name("b")
	tg.mustDo(200, "PUT", "/"+i1, "")
	tg.mustDo(200, "POST", "/_aliases", `{"actions":[1,{"add":{"indices":"`+i1+`","aliases":["`+a+`",7],"is_hidden":"false","routing":3}}]}`)
	as := aliasesOf(tg, i1)
	if as[a] == nil || as["7"] == nil || str(dig(as, a, "index_routing")) != "3" || dig(as, a, "is_hidden") != false {
		t.Errorf("aliases of %s = %v, want %s (routing 3, not hidden) and 7", i1, as, a)
	}
	tg.mustDo(200, "POST", "/_aliases", `{"actions":{"add":{"index":"`+i1+`","alias":"`+b+`"}}}`)
	if as := aliasesOf(tg, i1); as[b] == nil {
		t.Errorf("aliases of %s = %v, want %s added by a lone action object", i1, as, b)
	}
	tg.mustDo(200, "POST", "/_aliases", `{"actions":[{"remove":{"index":"`+i1+`","aliases":["7"]}}]}`)
}

// PUT /{index}/_alias/{name} reads its body by hand: its errors are not
// the _aliases parser's.
func TestPutAliasBodyErrors(t *testing.T) { eachLine(t, testPutAliasBodyErrors) }

func testPutAliasBodyErrors(t *testing.T, tg *target) {
	i1, a := tg.name("i1"), tg.name("a")
	tg.mustDo(200, "PUT", "/"+i1, "")
	cases := []struct{ body, root string }{
		{`{"frob":1}`, "illegal_argument_exception: unknown field [frob]"},
		{`{"filter":1}`, "illegal_argument_exception: unknown field [filter]"},
		{`{"is_write_index":"maybe"}`, "illegal_argument_exception: Failed to parse value [maybe] as only [true] or [false] are allowed."},
		{`{"routing":"1,2"}`, "illegal_argument_exception: alias [" + a + "] has several index routing values associated with it"},
	}
	for _, tc := range cases {
		status, out := tg.do("PUT", "/"+i1+"/_alias/"+a, tc.body)
		if status != 400 || firstRootCause(out) != tc.root {
			t.Errorf("PUT _alias %s = %d %v, want 400 %s", tc.body, status, out, tc.root)
		}
	}
	// A number where a boolean belongs is the JSON parser's complaint,
	// which 3.x wraps in another of its kind.
	want := byLine(tg, "json_parse_exception: Current token (VALUE_NUMBER_INT) not of boolean type",
		"input_coercion_exception: Current token (VALUE_NUMBER_INT) not of boolean type / input_coercion_exception: Current token (VALUE_NUMBER_INT) not of boolean type")
	if status, out := tg.do("PUT", "/"+i1+"/_alias/"+a, `{"is_write_index":1}`); status != 400 || errorChain(dig(out, "error")) != want ||
		positionSuffix.ReplaceAllString(firstRootCause(out), "") != want[:strings.Index(want+" / ", " / ")] {
		t.Errorf("PUT _alias with is_write_index 1 = %d %v, want 400 %s", status, out, want)
	}
	tg.mustDo(200, "PUT", "/"+i1+"/_alias/"+a, `{"is_write_index":"true","routing":5}`)
	if as := aliasesOf(tg, i1); dig(as, a, "is_write_index") != true || str(dig(as, a, "index_routing")) != "5" {
		t.Errorf("aliases of %s = %v, want %s a write alias routed to 5", i1, as, a)
	}
}

func TestAliasesRemoveMissingBesideOtherActionsIsTolerated(t *testing.T) {
	tg := newTarget(t)
	i1, a := tg.name("i1"), tg.name("a")
	tg.mustDo(200, "PUT", "/"+i1, "")
	tg.mustDo(200, "POST", "/_aliases", `{"actions":[
		{"remove":{"index":"`+i1+`","alias":"`+tg.name("never")+`"}},
		{"add":{"index":"`+i1+`","alias":"`+a+`"}}]}`)
	if as := aliasesOf(tg, i1); as[a] == nil {
		t.Errorf("aliases of %s = %v, want %s added", i1, as, a)
	}
}

func TestGetAliasShapes(t *testing.T) {
	tg := newTarget(t)
	ctx := context.Background()
	i1, i2, bare := tg.name("i1"), tg.name("i2"), tg.name("bare")
	a, b := tg.name("ga"), tg.name("gb")
	tg.mustDo(200, "PUT", "/"+i1, `{"aliases":{"`+a+`":{"routing":"r1"}}}`)
	tg.mustDo(200, "PUT", "/"+i2, `{"aliases":{"`+a+`":{},"`+b+`":{}}}`)
	tg.mustDo(200, "PUT", "/"+bare, "")

	// GET /_alias lists every index, with or without aliases.
	all := tg.mustDo(200, "GET", "/_alias", "")
	if _, ok := all[bare]; !ok || dig(all, i1, "aliases", a, "index_routing") != "r1" {
		t.Errorf("GET /_alias = %v, want %s listed (no aliases) and %s with %s", all, bare, i1, a)
	}

	resp, err := tg.client.Indices.Alias.Get(ctx, opensearchapi.AliasGetReq{Alias: []string{tg.name("g*")}})
	if err != nil {
		t.Fatalf("Alias.Get(wildcard) = %v", err)
	}
	got := resp.GetIndices()
	if len(got) != 2 || len(got[i1].Aliases) != 1 || len(got[i2].Aliases) != 2 {
		t.Errorf("Alias.Get(%s) = %v, want %s with 1 alias and %s with 2", tg.name("g*"), got, i1, i2)
	}

	resp, err = tg.client.Indices.Alias.Get(ctx, opensearchapi.AliasGetReq{Indices: []string{i2}, Alias: []string{b}})
	if err != nil {
		t.Fatalf("Alias.Get(index, name) = %v", err)
	}
	if got := resp.GetIndices(); len(got) != 1 || len(got[i2].Aliases) != 1 {
		t.Errorf("Alias.Get(%s, %s) = %v", i2, b, got)
	}

	out := tg.mustDo(200, "GET", "/"+bare+"/_alias", "")
	if m, ok := dig(out, bare, "aliases").(map[string]any); !ok || len(m) != 0 {
		t.Errorf("GET /%s/_alias = %v, want {%q:{aliases:{}}}", bare, out, bare)
	}

	// A named alias that does not exist: 404 with a string error, which
	// the client reports as a StringError.
	missing := tg.name("missing")
	status, out := tg.do("GET", "/_alias/"+missing, "")
	if status != 404 || str(out["error"]) != "alias ["+missing+"] missing" || str(out["status"]) != "404" {
		t.Errorf("GET /_alias/%s = %d %v, want 404 {error: alias [..] missing, status: 404}", missing, status, out)
	}
	_, err = tg.client.Indices.Alias.Get(ctx, opensearchapi.AliasGetReq{Alias: []string{missing}})
	var se *opensearch.StringError
	if !errors.As(err, &se) || se.Status != 404 {
		t.Errorf("Alias.Get(missing) error = %#v, want *opensearch.StringError with status 404", err)
	}
	// Found and missing names together: 404 that still carries what was
	// found.
	status, out = tg.do("GET", "/_alias/"+a+","+missing, "")
	if status != 404 || dig(out, i1, "aliases", a) == nil {
		t.Errorf("GET /_alias/%s,%s = %d %v, want 404 with %s on %s", a, missing, status, out, a, i1)
	}
	// A wildcard that matches nothing is not an error.
	if status, out := tg.do("GET", "/_alias/"+tg.name("zz*"), ""); status != 200 || len(out) != 0 {
		t.Errorf("GET /_alias/zz* = %d %v, want 200 {}", status, out)
	}
	if status, out := tg.do("GET", "/"+tg.name("no-index")+"/_alias", ""); status != 404 || str(dig(out, "error", "type")) != "index_not_found_exception" {
		t.Errorf("GET /no-index/_alias = %d %v, want 404 index_not_found_exception", status, out)
	}

	for _, tc := range []struct {
		req  opensearchapi.AliasExistsReq
		want int
	}{
		{opensearchapi.AliasExistsReq{Alias: []string{a}}, 200},
		{opensearchapi.AliasExistsReq{Alias: []string{missing}}, 404},
		{opensearchapi.AliasExistsReq{Indices: []string{i2}, Alias: []string{b}}, 200},
		{opensearchapi.AliasExistsReq{Indices: []string{i1}, Alias: []string{b}}, 404},
	} {
		resp, _ := tg.client.Indices.Alias.Exists(ctx, tc.req)
		if resp == nil || resp.StatusCode != tc.want {
			t.Errorf("Alias.Exists(%v, %v) = %v, want %d", tc.req.Indices, tc.req.Alias, resp, tc.want)
		}
	}
}

func TestPutAndDeleteAlias(t *testing.T) {
	tg := newTarget(t)
	ctx := context.Background()
	i1, i2, a := tg.name("i1"), tg.name("i2"), tg.name("a")
	tg.mustDo(200, "PUT", "/"+i1, "")
	tg.mustDo(200, "PUT", "/"+i2, "")

	put, err := tg.client.Indices.Alias.Put(ctx, opensearchapi.AliasPutReq{Indices: []string{i1, i2}, Alias: a})
	if err != nil || !put.Acknowledged {
		t.Fatalf("Alias.Put = %v, %v", put, err)
	}
	for _, n := range []string{i1, i2} {
		if aliasesOf(tg, n)[a] == nil {
			t.Errorf("alias %s missing on %s after Alias.Put", a, n)
		}
	}
	// With a body: the alias's options.
	tg.mustDo(200, "PUT", "/"+i1+"/_alias/"+a, `{"routing":"5","is_write_index":true}`)
	if got := aliasesOf(tg, i1)[a]; str(dig(got, "index_routing")) != "5" || dig(got, "is_write_index") != true {
		t.Errorf("alias after PUT with body = %v, want routing 5 and write index", got)
	}

	del, err := tg.client.Indices.Alias.Delete(ctx, opensearchapi.AliasDeleteReq{Indices: []string{i1}, Alias: []string{a}})
	if err != nil || !del.Acknowledged {
		t.Fatalf("Alias.Delete = %v, %v", del, err)
	}
	if aliasesOf(tg, i1)[a] != nil || aliasesOf(tg, i2)[a] == nil {
		t.Errorf("after delete from %s: %v / %v, want it gone from %s only", i1, aliasesOf(tg, i1), aliasesOf(tg, i2), i1)
	}
	status, out := tg.do("DELETE", "/"+i1+"/_alias/"+a, "")
	if status != 404 || str(dig(out, "error", "type")) != "aliases_not_found_exception" {
		t.Errorf("DELETE of a missing alias = %d %v, want 404 aliases_not_found_exception", status, out)
	}
	var se *opensearch.StructError
	_, err = tg.client.Indices.Alias.Delete(ctx, opensearchapi.AliasDeleteReq{Indices: []string{i1}, Alias: []string{a}})
	if !errors.As(err, &se) || se.Status != 404 {
		t.Errorf("Alias.Delete(missing) error = %v, want a 404 StructError", err)
	}
}

// TestWriteIndexResolution checks which index a write through an alias
// lands on: the only index when the alias has one and no flag, else the
// index flagged is_write_index.
func TestWriteIndexResolution(t *testing.T) {
	tg := newTarget(t)
	tg.needFake()
	s := tg.fake.Server
	i1, i2, a := tg.name("i1"), tg.name("i2"), tg.name("a")
	tg.mustDo(200, "PUT", "/"+i1, "")
	tg.mustDo(200, "PUT", "/"+i2, "")
	resolve := func() (string, string) {
		s.mu.Lock()
		defer s.mu.Unlock()
		ix, _, err := s.resolveWrite(a, true)
		if err != nil {
			return "", err.Reason
		}
		return ix.name, ""
	}
	steps := []struct {
		name, body string
		want       string // write index, or "" for an error
	}{
		{"one index, no flag: implicit write index", `{"actions":[{"add":{"index":"` + i1 + `","alias":"` + a + `"}}]}`, i1},
		{"two indices, no flag: none", `{"actions":[{"add":{"index":"` + i2 + `","alias":"` + a + `"}}]}`, ""},
		{"two indices, one flagged", `{"actions":[{"add":{"index":"` + i2 + `","alias":"` + a + `","is_write_index":true}}]}`, i2},
		{"flag moved atomically", `{"actions":[{"add":{"index":"` + i2 + `","alias":"` + a + `","is_write_index":false}},{"add":{"index":"` + i1 + `","alias":"` + a + `","is_write_index":true}}]}`, i1},
		{"one index flagged false: none", `{"actions":[{"remove":{"index":"` + i2 + `","alias":"` + a + `"}},{"add":{"index":"` + i1 + `","alias":"` + a + `","is_write_index":false}}]}`, ""},
	}
	for _, st := range steps {
		tg.mustDo(200, "POST", "/_aliases", st.body)
		got, reason := resolve()
		if got != st.want {
			t.Errorf("%s: write index = %q (%s), want %q", st.name, got, reason, st.want)
		}
		if st.want == "" && !strings.Contains(reason, "no write index is defined for alias ["+a+"]") {
			t.Errorf("%s: error = %q, want no write index is defined", st.name, reason)
		}
	}
}
