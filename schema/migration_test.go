package schema

import (
	"os"
	"strings"
	"testing"

	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/router"
)

func TestPhasesValid(t *testing.T) {
	seen := map[Phase]bool{}
	for _, p := range Phases {
		if !p.Valid() || seen[p] {
			t.Errorf("phase %q: valid %v, listed twice %v", p, p.Valid(), seen[p])
		}
		seen[p] = true
	}
	if len(Phases) != 9 || Phase("cutover").Valid() || Phase("").Valid() {
		t.Errorf("%d phases; want 9, and no other name valid", len(Phases))
	}
}

func TestSideParseMap(t *testing.T) {
	data, err := os.ReadFile(testenv.Path(t, testenv.MapUS18))
	if err != nil {
		t.Fatal(err)
	}
	m, err := router.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	good := Side{Index: "menu-v1", MapHash: m.Hash(), Map: data}
	if got, err := good.ParseMap(); err != nil || got.Hash() != m.Hash() {
		t.Fatalf("ParseMap = %v, %v", got, err)
	}
	for _, tc := range []struct {
		s    Side
		want string
	}{
		{Side{MapHash: m.Hash(), Map: data}, "names no index"},
		{Side{Index: "menu-v1", MapHash: m.Hash()}, "no map recorded for index menu-v1"},
		{Side{Index: "menu-v1", MapHash: strings.Repeat("0", 64), Map: data}, "hashes to " + m.ShortHash()},
		{Side{Index: "menu-v1", MapHash: m.Hash(), Map: []byte(`{"version":1}`)}, "the map recorded for index menu-v1"},
	} {
		if _, err := tc.s.ParseMap(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseMap(%+v) = %v, want %q", tc.s.Index, err, tc.want)
		}
	}
}
