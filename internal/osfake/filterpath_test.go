package osfake

import "testing"

// TestFilterPath checks filter_path as the server applies it: names with
// wildcards, ** for any depth, - to leave out, arrays passed through,
// empty results as {}, and error responses left whole.
func TestFilterPath(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "fpath", `{"settings":{"number_of_shards":3,"number_of_replicas":0},"mappings":{"properties":{"geo_cell":{"type":"keyword"},"price_cents":{"type":"long"}}}}`,
		seedDoc{id: "r1", source: `{"geo_cell":"c1","price_cents":1200,"tags":[{"a":1,"b":2},{"b":3}]}`},
		seedDoc{id: "r2", source: `{"geo_cell":"c2","price_cents":800}`})
	cases := []struct{ filter, want string }{
		{"hits.hits._id", `{"hits":{"hits":[{"_id":"r2"},{"_id":"r1"}]}}`},
		{"hits.total,hits.hits._source.geo_cell", `{"hits":{"hits":[{"_source":{"geo_cell":"c2"}},{"_source":{"geo_cell":"c1"}}],"total":{"relation":"eq","value":2}}}`},
		{"hits.**.a", `{"hits":{"hits":[{"_source":{"tags":[{"a":1}]}}]}}`},
		{"**.b", `{"hits":{"hits":[{"_source":{"tags":[{"b":2},{"b":3}]}}]}}`},
		{"hits.hits._source.tags.a", `{"hits":{"hits":[{"_source":{"tags":[{"a":1}]}}]}}`},
		{"hits.hits._sourc*.price_cents", `{"hits":{"hits":[{"_source":{"price_cents":800}},{"_source":{"price_cents":1200}}]}}`},
		{"nope", `{}`},
		{"took,-took", `{}`},
		{"-hits,-took", `{"_shards":{"failed":0,"skipped":0,"successful":3,"total":3},"timed_out":false}`},
		{"hits.hits._source,-hits.hits._source.tags", `{"hits":{"hits":[{"_source":{"geo_cell":"c2","price_cents":800}},{"_source":{"geo_cell":"c1","price_cents":1200}}]}}`},
	}
	for _, tc := range cases {
		out := tg.mustDo(200, "POST", "/"+name+"/_search?filter_path="+tc.filter, `{"sort":["price_cents"]}`)
		if got := mustJSON(out); got != tc.want {
			t.Errorf("filter_path=%s: %s, want %s", tc.filter, got, tc.want)
		}
	}
	status, out := tg.do("POST", "/"+name+"/_search?filter_path=error.root_cause.type", `{"sort":["nope"]}`)
	if status != 400 || dig(out, "error", "reason") == nil || dig(out, "status") == nil {
		t.Errorf("error with filter_path = %d %v, want the whole error", status, out)
	}
}
