package router

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/golang/geo/s2"
)

func mapJSON(t testing.TB, m *Map) []byte {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestMapRoundTrip(t *testing.T) {
	for _, rns := range []int{0, DefaultRoutingNumShards(18)} {
		m := worldMap(t, 18, rns)
		b := mapJSON(t, m)
		back, err := Parse(b)
		if err != nil {
			t.Fatalf("Parse(Marshal(m)) error = %v\n%s", err, b)
		}
		if back.Hash() != m.Hash() || string(mapJSON(t, back)) != string(b) {
			t.Errorf("round trip changed the map: hash %s → %s", m.Hash(), back.Hash())
		}
		if len(m.Hash()) != 64 || len(m.ShortHash()) != 12 {
			t.Errorf("Hash() = %q, ShortHash() = %q; want 64 and 12 hex digits", m.Hash(), m.ShortHash())
		}
	}
}

func TestHashIgnoresDocsOnly(t *testing.T) {
	m := worldMap(t, 12, 0)
	f := m.File()
	f.Shards[3].Docs = 12345
	same, err := FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if same.Hash() != m.Hash() {
		t.Errorf("changing docs changed the hash")
	}
	f = m.File()
	f.Shards[1].Start = posCell(cellPos(mustToken(t, f.Shards[1].Start), 10)+1, 10).ToToken()
	moved, err := FromFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if moved.Hash() == m.Hash() {
		t.Errorf("moving a boundary kept the hash")
	}
}

// The canonical form is documented so tools outside the project can
// recompute the hash; pin it.
func TestHashCanonicalForm(t *testing.T) {
	m, err := New(10, 0, []Shard{{Name: "ares", Start: "000001", Routing: RoutingKey("ares", 0, 1, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	// sha256("geoshard-map\nversion=1\nlevel=10\nnumber_of_shards=1\nrouting_num_shards=1\nshard=ares,000001,ares\n")
	const want = "413ece8b45d6fbec79658940662bbc34b5dd80dd3835ebf4d85e72a224858338"
	if got := m.Hash(); got != want {
		t.Errorf("Hash() = %s, want %s", got, want)
	}
}

func mustToken(t testing.TB, tok string) s2.CellID {
	t.Helper()
	c, err := ParseToken(tok)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestParseRejects(t *testing.T) {
	good := worldMap(t, 12, 0)
	edit := func(f func(*File)) []byte {
		ff := good.File()
		f(&ff)
		b, err := json.Marshal(ff)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name string
		data []byte
		want string // a fragment of the message naming the offender
	}{
		{"not json", []byte("{"), "not valid JSON"},
		{"unknown field", []byte(`{"version":1,"levle":10}`), `unknown field "levle"`},
		{"trailing data", append(mapJSON(t, good), []byte(" {}")...), "data after"},
		{"version", edit(func(f *File) { f.Version = 2 }), "version: 2"},
		{"level", edit(func(f *File) { f.Level = 31 }), "level: 31"},
		{"level zero", edit(func(f *File) { f.Level = 0 }), "level: 0"},
		{"count", edit(func(f *File) { f.NumberOfShards = 13 }), "number_of_shards: 13"},
		{"rns not multiple", edit(func(f *File) { f.RoutingNumShards = 30 }), "routing_num_shards: 30"},
		{"no shards", edit(func(f *File) { f.Shards = nil; f.NumberOfShards = 0 }), "at least one shard"},
		{"upper-case name", edit(func(f *File) { f.Shards[2].Name = "Cosmo" }), `shard 2 "Cosmo": name`},
		{"empty name", edit(func(f *File) { f.Shards[2].Name = "" }), "name is empty"},
		{"duplicate name", edit(func(f *File) { f.Shards[4].Name = f.Shards[1].Name }), "already used by shard 1"},
		{"bad token", edit(func(f *File) { f.Shards[3].Start = "zz" }), `start "zz": not a valid S2 cell token`},
		{"non-canonical token", edit(func(f *File) { f.Shards[3].Start += "0" }), "write it as"},
		{"wrong level", edit(func(f *File) { f.Shards[3].Start = "808584" }), "level-9 cell"},
		{"first not at start", edit(func(f *File) { f.Shards[0].Start = "000003" }), "first shard must start"},
		{"not increasing", edit(func(f *File) { f.Shards[5].Start = f.Shards[4].Start }), "not after the previous"},
		{"empty routing", edit(func(f *File) { f.Shards[6].Routing = "" }), "routing is empty"},
		{"comma routing", edit(func(f *File) { f.Shards[6].Routing = "a,b" }), "contains a comma"},
		{"duplicate routing", edit(func(f *File) { f.Shards[7].Routing = f.Shards[6].Routing }), "already used by shard 6"},
		{"routing lands elsewhere", edit(func(f *File) { f.Shards[8].Routing = f.Shards[8].Name + "-x" }), "lands on physical shard"},
		{"negative docs", edit(func(f *File) { f.Shards[1].Docs = -1 }), "docs -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Parse(tc.data)
			if err == nil {
				t.Fatalf("Parse() = %v, want an error containing %q", m, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse() error = %q, want it to contain %q", err, tc.want)
			}
		})
	}
	// Every problem is reported at once.
	_, err := Parse(edit(func(f *File) { f.Level = 40; f.Shards[2].Name = "X"; f.Shards[6].Routing = "" }))
	var me *MapError
	if !errors.As(err, &me) || len(me.Problems) < 3 {
		t.Errorf("Parse(three problems) = %v, want a MapError listing at least 3", err)
	}
}

// A wrong routing key's message names the key that would be right.
func TestParseSuggestsRoutingKey(t *testing.T) {
	f := worldMap(t, 18, 576).File()
	f.Shards[9].Routing = "wrong"
	_, err := FromFile(f)
	want := RoutingKey(f.Shards[9].Name, 9, 576, 18)
	if err == nil || !strings.Contains(err.Error(), `use "`+want+`"`) {
		t.Errorf("FromFile() error = %v, want it to suggest %q", err, want)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(mapJSON(f, worldMap(f, 12, 0)))
	f.Add(mapJSON(f, worldMap(f, 18, 576)))
	f.Add([]byte(`{"version":1,"level":10,"number_of_shards":1,"routing_num_shards":1,"shards":[{"name":"ares","start":"000001","routing":"ares","docs":1}]}`))
	f.Add([]byte(`{"version":1,"level":10,"shards":[{"start":"zz"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data)
		if err != nil {
			if m != nil {
				t.Fatalf("Parse returned a map and an error")
			}
			return
		}
		// A map that parses is whole: it round-trips to the same hash, its
		// routing keys land right and every shard owns a non-empty range.
		back, err := Parse(mapJSON(t, m))
		if err != nil || back.Hash() != m.Hash() {
			t.Fatalf("round trip of a valid map failed: %v", err)
		}
		for i := 0; i < m.NumShards(); i++ {
			first, last := m.Range(i)
			if m.LocateCell(first) != i || m.LocateCell(last) != i || first > last {
				t.Fatalf("shard %d range %s..%s does not locate to itself", i, first.ToToken(), last.ToToken())
			}
		}
	})
}

func FuzzParseToken(f *testing.F) {
	for _, s := range []string{"808581", "000001", "X", "", "0", "1", "ffffffffffffffff", "80858", "808581000", "b", "c00001"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, tok string) {
		id, err := ParseToken(tok)
		if err != nil {
			return
		}
		if !id.IsValid() || id.ToToken() != tok {
			t.Fatalf("ParseToken(%q) = %v, which is not a valid cell spelled the same", tok, id)
		}
	})
}

// A map file that is valid JSON with a field the format does not have is
// refused naming the field, not as invalid JSON.
func TestParseNamesAnUnknownField(t *testing.T) {
	_, err := Parse([]byte(`{"version":1,"levle":10}`))
	if err == nil || !strings.Contains(err.Error(), `unknown field "levle"`) || strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("Parse with a misspelt field = %v, want the field named", err)
	}
}
