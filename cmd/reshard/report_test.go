package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/geoshard/geoshard/schema"
)

// verificationWithIDs is a failed verification --ids of two shards: ares
// misses three ids of which two are listed (--max-ids 2), bravo holds one
// extra.
func verificationWithIDs() *schema.Verification {
	return &schema.Verification{
		At: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), OK: false, IDs: true,
		Shards: []schema.ShardReport{
			{Shard: "ares", Source: 10, Target: 7, Missing: 3, MissingIDs: []string{"dish:a", "dish:b"}},
			{Shard: "bravo", Source: 5, Target: 6, Extra: 1, ExtraIDs: []string{"restaurant:x"}},
		},
	}
}

// verify --json carries the ids the text lists, bounded alike.
func TestVerifyJSONCarriesTheIDs(t *testing.T) {
	v := verificationWithIDs()
	var text, js bytes.Buffer
	if err := writeVerification(&text, v); err != nil {
		t.Fatal(err)
	}
	if err := writeVerificationJSON(&js, v); err != nil {
		t.Fatal(err)
	}
	golden(t, "verify-ids.txt", text.String())
	golden(t, "verify-ids.json", js.String())
	var rows []struct {
		Shard      string   `json:"shard"`
		Missing    int64    `json:"missing"`
		Extra      int64    `json:"extra"`
		MissingIDs []string `json:"missing_ids"`
		ExtraIDs   []string `json:"extra_ids"`
	}
	if err := json.Unmarshal(js.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || !reflect.DeepEqual(rows[0].MissingIDs, []string{"dish:a", "dish:b"}) || rows[0].Missing != 3 ||
		!reflect.DeepEqual(rows[1].ExtraIDs, []string{"restaurant:x"}) || rows[1].MissingIDs != nil {
		t.Errorf("verify --json = %s\nwant ares's 2 listed missing ids of 3 and bravo's extra id", js.String())
	}
}

// A verification whose suspects resolved themselves says how many, in
// the text and, by shard, in the JSON.
func TestVerifySaysWhatResolvedInFlight(t *testing.T) {
	v := verificationWithIDs()
	v.Shards[0].ResolvedInFlight = 2
	v.ResolvedInFlight = 3
	var text, js bytes.Buffer
	if err := writeVerification(&text, v); err != nil {
		t.Fatal(err)
	}
	if err := writeVerificationJSON(&js, v); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(text.Bytes(), []byte("resolved in flight: 3 differences")) {
		t.Errorf("verify's text does not say 3 differences resolved in flight:\n%s", text.String())
	}
	var rows []struct {
		Resolved int64 `json:"resolved_in_flight"`
	}
	if err := json.Unmarshal(js.Bytes(), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].Resolved != 2 || rows[1].Resolved != 0 {
		t.Errorf("verify --json = %s\nwant ares resolved_in_flight 2", js.String())
	}
}
