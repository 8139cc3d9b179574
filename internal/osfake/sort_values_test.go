package osfake

import (
	"strings"
	"testing"
)

// TestSortValuesAndKeysAsTheServerSpellsThem pins the JSON text of sort
// values, bucket keys and scores: doubles and floats as Java spells them
// (4.0), a float field's bucket key as the float widened to a double, and
// the missing value of a field sorted as a Java int (integer, short, byte,
// boolean) as Integer.MAX_VALUE or MIN_VALUE, of a long or date as
// Long's.
func TestSortValuesAndKeysAsTheServerSpellsThem(t *testing.T) {
	tg := newTarget(t)
	name := seedIndex(tg, "spelling", `{"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{"properties":{
		"d":{"type":"double"},"f":{"type":"float"},"i":{"type":"integer"},"s":{"type":"short"},"b":{"type":"boolean"},
		"l":{"type":"long"},"t":{"type":"date"}}}}`,
		seedDoc{id: "1", source: `{"d":4,"f":3.9,"i":7,"s":2,"b":true,"l":5,"t":"2020-01-01"}`}, seedDoc{id: "2", source: `{}`})
	sorts := []struct{ sort, want string }{
		{`"d"`, "4.0 Infinity"},
		{`{"d":"desc"}`, "4.0 -Infinity"},
		{`"f"`, "3.9 Infinity"},
		{`"i"`, "7 2147483647"},
		{`{"i":"desc"}`, "7 -2147483648"},
		{`"s"`, "2 2147483647"},
		{`"b"`, "1 2147483647"},
		{`{"b":{"order":"asc","missing":"_first"}}`, "-2147483648 1"},
		{`"l"`, "5 9223372036854775807"},
		{`{"t":"desc"}`, "1577836800000 -9223372036854775808"},
		{`{"d":{"missing":7}}`, "4.0 7.0"},
	}
	for _, tc := range sorts {
		out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"sort":[`+tc.sort+`],"_source":false}`)
		hits, _ := dig(out, "hits", "hits").([]any)
		var got []string
		for _, h := range hits {
			got = append(got, str(dig(h, "sort", 0)))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("sort %s: values %v, want %s", tc.sort, got, tc.want)
		}
	}
	out := tg.mustDo(200, "POST", "/"+name+"/_search", `{"size":0,"aggs":{"f":{"terms":{"field":"f"}},"d":{"terms":{"field":"d"}},
		"c":{"composite":{"sources":[{"f":{"terms":{"field":"f"}}}]}}}}`)
	if got := str(dig(out, "aggregations", "f", "buckets", 0, "key")); got != "3.9000000953674316" {
		t.Errorf("terms key of float 3.9 = %s, want 3.9000000953674316", got)
	}
	if got := str(dig(out, "aggregations", "c", "buckets", 0, "key", "f")); got != "3.9000000953674316" {
		t.Errorf("composite key of float 3.9 = %s, want 3.9000000953674316", got)
	}
	if got := str(dig(out, "aggregations", "d", "buckets", 0, "key")); got != "4.0" {
		t.Errorf("terms key of double 4 = %s, want 4.0", got)
	}
	// A float sort pages after the float, not the double, 3.9.
	out = tg.mustDo(200, "POST", "/"+name+"/_search", `{"sort":["f"],"search_after":[3.9],"_source":false}`)
	if ids := hitIDs(out); len(ids) != 1 || ids[0] != "2" {
		t.Errorf("search after 3.9 on a float = %v, want only 2", ids)
	}
	out = tg.mustDo(200, "POST", "/"+name+"/_search", `{"query":{"match_all":{"boost":2.5}},"_source":false}`)
	if got := str(dig(out, "hits", "max_score")) + " " + str(dig(out, "hits", "hits", 0, "_score")); got != "2.5 2.5" {
		t.Errorf("max_score and _score = %s, want 2.5 2.5", got)
	}
	out = tg.mustDo(200, "POST", "/"+name+"/_search", `{"_source":false}`)
	if got := str(dig(out, "hits", "max_score")) + " " + str(dig(out, "hits", "hits", 0, "_score")); got != "1.0 1.0" {
		t.Errorf("max_score and _score = %s, want 1.0 1.0", got)
	}
}
