package osfake

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
)

// GET / reports the version and what goes with its line: the Lucene
// release and the oldest versions the node talks to and reads indices of.
// An index records the version that created it, as the server's version
// id: major, minor, patch and the release build 99 in pairs of decimal
// digits, with OpenSearch's bit 2^27 set.
func TestRootReportsTheVersion(t *testing.T) {
	eachLine(t, func(t *testing.T, tg *target) {
		resp, err := tg.client.Info(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		v := resp.Version
		if v.Distribution != "opensearch" || v.Number != tg.version {
			t.Errorf("Info() = %+v, want OpenSearch %s", v, tg.version)
		}
		lucene := byLine(tg, "9.12.", "10.5.")
		if wire, index := byLine(tg, "7.10.0", "2.19.0"), byLine(tg, "7.0.0", "2.0.0"); !strings.HasPrefix(v.LuceneVersion, lucene) ||
			v.MinimumWireCompatibilityVersion != wire || v.MinimumIndexCompatibilityVersion != index {
			t.Errorf("Info() = %+v, want Lucene %sx, wire compatibility from %s, index compatibility from %s", v, lucene, wire, index)
		}
		var major, minor, patch int
		if _, err := fmt.Sscanf(v.Number, "%d.%d.%d", &major, &minor, &patch); err != nil {
			t.Fatalf("version %q: %v", v.Number, err)
		}
		name := tg.name("created")
		tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_replicas":0}}`)
		want := strconv.Itoa(1<<27 + major*1_000_000 + minor*10_000 + patch*100 + 99)
		if got := str(dig(tg.mustDo(200, "GET", "/"+name+"/_settings", ""), name, "settings", "index", "version", "created")); got != want {
			t.Errorf("index.version.created = %s, want %s", got, want)
		}
	})
}

func TestCreateIndexSettingsAndDefaults(t *testing.T) {
	tg := newTarget(t)
	ctx := context.Background()
	cases := []struct {
		name     string
		settings string
		shards   string
		rns      string // routing_num_shards as stored when explicit; "" if absent
	}{
		{"default-18", `{"number_of_shards":18,"number_of_replicas":0}`, "18", ""},
		{"explicit-rns", `{"index":{"number_of_shards":18,"number_of_routing_shards":18,"number_of_replicas":0}}`, "18", "18"},
		{"flat", `{"index.number_of_shards":"5","index.refresh_interval":"-1"}`, "5", ""},
	}
	for _, tc := range cases {
		name := tg.name(tc.name)
		_, err := tg.client.Indices.Create(ctx, opensearchapi.IndicesCreateReq{Index: name,
			Body: strings.NewReader(`{"settings":` + tc.settings + `}`)})
		if err != nil {
			t.Fatalf("create %s: %v", tc.name, err)
		}
		out := tg.mustDo(200, "GET", "/"+name+"/_settings", "")
		if got := str(dig(out, name, "settings", "index", "number_of_shards")); got != tc.shards {
			t.Errorf("%s: number_of_shards = %q, want %q", tc.name, got, tc.shards)
		}
		if got := str(dig(out, name, "settings", "index", "number_of_routing_shards")); got != tc.rns {
			t.Errorf("%s: number_of_routing_shards = %q, want %q (shown only when set)", tc.name, got, tc.rns)
		}
	}
	// Creating it again fails like the server.
	_, out := tg.do("PUT", "/"+tg.name("flat"), "")
	if str(dig(out, "error", "type")) != "resource_already_exists_exception" {
		t.Errorf("second create = %v, want resource_already_exists_exception", out)
	}
	for _, bad := range []struct{ name, body, typ string }{
		{"UPPER", "", "invalid_index_name_exception"},
		{"_under", "", "invalid_index_name_exception"},
		{"bad-rns", `{"settings":{"number_of_shards":3,"number_of_routing_shards":10}}`, "illegal_argument_exception"},
		{"zero-shards", `{"settings":{"number_of_shards":0}}`, "illegal_argument_exception"},
	} {
		status, out := tg.do("PUT", "/"+strings.Replace(bad.name, bad.name, tg.prefix+bad.name, 1), bad.body)
		if bad.name == "UPPER" || bad.name == "_under" {
			status, out = tg.do("PUT", "/"+bad.name, bad.body)
		}
		if status != 400 || str(dig(out, "error", "type")) != bad.typ {
			t.Errorf("create %s = %d %v, want 400 %s", bad.name, status, out, bad.typ)
		}
	}
}

func TestSettingsDynamicAndStatic(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("settings")
	tg.mustDo(200, "PUT", "/"+name, `{"settings":{"number_of_shards":2}}`)
	tg.mustDo(200, "PUT", "/"+name+"/_settings", `{"index":{"refresh_interval":"-1","number_of_replicas":0,"gc_deletes":"10m"}}`)
	out := tg.mustDo(200, "GET", "/"+name+"/_settings?flat_settings=true", "")
	for k, want := range map[string]string{"index.refresh_interval": "-1", "index.number_of_replicas": "0", "index.gc_deletes": "10m"} {
		if got := str(dig(out, name, "settings", k)); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	status, out := tg.do("PUT", "/"+name+"/_settings", `{"index":{"number_of_shards":4}}`)
	if status != 400 || !strings.Contains(str(dig(out, "error", "reason")), "Can't update non dynamic settings [[index.number_of_shards]]") {
		t.Errorf("static setting update = %d %v, want 400 naming index.number_of_shards", status, out)
	}
}

func TestMappingMetaIsReplacedWhole(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("meta")
	tg.mustDo(200, "PUT", "/"+name, `{"mappings":{"_routing":{"required":true},"_meta":{"a":1,"b":2},
		"properties":{"relation":{"type":"join","relations":{"restaurant":"dish"}},"geo_cell":{"type":"keyword"},"location":{"type":"geo_point"}}}}`)
	tg.mustDo(200, "PUT", "/"+name+"/_mapping", `{"_meta":{"c":3}}`)
	out := tg.mustDo(200, "GET", "/"+name+"/_mapping", "")
	meta, _ := dig(out, name, "mappings", "_meta").(map[string]any)
	if len(meta) != 1 || str(meta["c"]) != "3" {
		t.Errorf("_meta after put = %v, want exactly {c:3} (replaced, not merged)", meta)
	}
	if dig(out, name, "mappings", "_routing", "required") != true {
		t.Errorf("_routing.required lost: %v", out)
	}
	// A mapping update that omits _meta keeps it.
	tg.mustDo(200, "PUT", "/"+name+"/_mapping", `{"properties":{"price_cents":{"type":"long"}}}`)
	out = tg.mustDo(200, "GET", "/"+name+"/_mapping", "")
	if str(dig(out, name, "mappings", "_meta", "c")) != "3" || str(dig(out, name, "mappings", "properties", "price_cents", "type")) != "long" {
		t.Errorf("mapping after adding a field = %v", out)
	}
	status, out := tg.do("PUT", "/"+name+"/_mapping", `{"properties":{"geo_cell":{"type":"long"}}}`)
	if status != 400 || str(dig(out, "error", "type")) != "illegal_argument_exception" {
		t.Errorf("changing a field type = %d %v, want 400 illegal_argument_exception", status, out)
	}
}

func TestDeleteAndExists(t *testing.T) {
	tg := newTarget(t)
	name := tg.name("gone")
	tg.mustDo(200, "PUT", "/"+name, "")
	if st, _ := tg.do("HEAD", "/"+name, ""); st != 200 {
		t.Errorf("HEAD existing = %d", st)
	}
	tg.mustDo(200, "DELETE", "/"+name, "")
	if st, _ := tg.do("HEAD", "/"+name, ""); st != 404 {
		t.Errorf("HEAD deleted = %d", st)
	}
	st, out := tg.do("DELETE", "/"+name, "")
	if st != 404 || str(dig(out, "error", "type")) != "index_not_found_exception" {
		t.Errorf("DELETE missing = %d %v", st, out)
	}
}

// The aliases of a create-index request are validated as the _aliases
// API validates them, with the same errors.
func TestCreateIndexAliasErrors(t *testing.T) {
	tg := newTarget(t)
	existing := tg.name("existing")
	tg.mustDo(200, "PUT", "/"+existing, "")
	uuid := str(dig(tg.mustDo(200, "GET", "/"+existing+"/_settings?flat_settings=true", ""), existing, "settings", "index.uuid"))
	a := tg.name("a")
	cases := []struct {
		name, aliases string
		typ, reason   string
		index         string // error.index; "" if absent
	}{
		{"alias named like an index", `{"` + existing + `":{}}`, "invalid_alias_name_exception",
			"Invalid alias name [" + existing + "], an index exists with the same name as the alias", existing},
		{"index routing with a comma", `{"` + a + `":{"index_routing":"1,2"}}`, "illegal_argument_exception",
			"alias [" + a + "] has several index routing values associated with it", ""},
		{"routing with a comma", `{"` + a + `":{"routing":"1,2"}}`, "illegal_argument_exception",
			"alias [" + a + "] has several index routing values associated with it", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			name := tg.name("new")
			status, out := tg.do("PUT", "/"+name, `{"aliases":`+tc.aliases+`}`)
			e := dig(out, "error")
			if status != 400 || str(dig(e, "type")) != tc.typ || str(dig(e, "reason")) != tc.reason || str(dig(e, "index")) != tc.index {
				t.Errorf("PUT %s with aliases %s = %d %v, want 400 %s: %s (index %q)", name, tc.aliases, status, out, tc.typ, tc.reason, tc.index)
			}
			if tc.index != "" && str(dig(e, "index_uuid")) != uuid {
				t.Errorf("error index_uuid = %v, want %s", dig(e, "index_uuid"), uuid)
			}
			if st, _ := tg.do("HEAD", "/"+name, ""); st != 404 {
				t.Errorf("HEAD %s after the failed create = %d, want 404", name, st)
			}
		})
	}
	// Search routing may hold several values.
	tg.mustDo(200, "PUT", "/"+tg.name("multi"), `{"aliases":{"`+a+`":{"search_routing":"1,2"}}}`)
}
