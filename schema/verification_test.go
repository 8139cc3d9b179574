package schema

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// The duplicates were added to the verification's JSON: a verification
// stored before reads as one without duplicates, and one without
// duplicates is stored with exactly the keys it had.
func TestVerificationJSONCompatible(t *testing.T) {
	old := `{"at":"2026-03-01T12:00:00Z","ok":false,"ids":true,"shards":[` +
		`{"shard":"ares","source":3,"target":2,"out_of_range":0,"missing":1,"extra":0,"ok":false,"missing_ids":["dish:a"]}]}`
	var v Verification
	if err := json.Unmarshal([]byte(old), &v); err != nil {
		t.Fatal(err)
	}
	want := Verification{At: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), IDs: true,
		Shards: []ShardReport{{Shard: "ares", Source: 3, Target: 2, Missing: 1, MissingIDs: []string{"dish:a"}}}}
	if !reflect.DeepEqual(v, want) {
		t.Errorf("an old verification reads as %+v, want %+v", v, want)
	}
	b, err := json.Marshal(v)
	if err != nil || string(b) != old {
		t.Errorf("stored again: %s (%v)\nwant %s", b, err, old)
	}
}

func TestDuplicateString(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    Duplicate
		want string
		tie  bool
	}{
		{"current and superseded", Duplicate{ID: "dish:d1", Index: "menu-v1", Copies: []Copy{
			{Shard: "ares", Version: 2, Status: CopyCurrent}, {Shard: "bravo", Version: 1, Status: CopySuperseded}}},
			"dish:d1 in menu-v1: version 2 on ares (current), version 1 on bravo", false},
		{"tie, and a routing no shard has", Duplicate{ID: "dish:d2", Index: "menu-v2", Copies: []Copy{
			{Shard: "ares", Version: 3, Status: CopyTied}, {Routing: "r7", Version: 3, Status: CopyTied}, {Version: 1, Status: CopySuperseded}}},
			"dish:d2 in menu-v2: version 3 on ares (tied), version 3 on routing r7 (tied), version 1 on no routing", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.d.String(); got != tc.want || tc.d.Tie() != tc.tie {
				t.Errorf("String() = %q, Tie() = %v; want %q, %v", got, tc.d.Tie(), tc.want, tc.tie)
			}
		})
	}
}
