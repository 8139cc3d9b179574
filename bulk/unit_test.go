package bulk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
)

func TestAppendActionLineMatchesEncodingJSON(t *testing.T) {
	cases := []Item{
		{Action: Index, Index: "menu", ID: "restaurant:r1", Routing: "ares-1", Version: 17, VersionType: External},
		{Action: Delete, Index: "menu", ID: "dish:d9", Routing: "bravo", Version: 3, VersionType: ExternalGTE},
		{Action: Create, Index: "menu", ID: "x"},
		{Action: Update, Index: "menu", ID: "quote\"back\\slash\nnew\tline\x01", Routing: "é中🙂"},
		{Action: Index, Index: "m", ID: "bad\xffutf8"},
		{Action: Delete, Index: "menu", ID: "dish:d9", Routing: "bravo", IfSeqNo: ptr(int64(12)), IfPrimaryTerm: ptr(int64(1))},
	}
	for _, it := range cases {
		got := appendActionLine(nil, &it)
		meta := map[string]any{"_index": it.Index, "_id": it.ID}
		if it.Routing != "" {
			meta["routing"] = it.Routing
		}
		if it.VersionType != Internal {
			meta["version"] = it.Version
			meta["version_type"] = it.VersionType.String()
		}
		if it.IfSeqNo != nil {
			meta["if_seq_no"], meta["if_primary_term"] = *it.IfSeqNo, *it.IfPrimaryTerm
		}
		var back map[string]map[string]any
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("appendActionLine(%+v) = %s: not JSON: %v", it, got, err)
		}
		want, _ := json.Marshal(map[string]any{it.Action.String(): meta})
		var wantBack map[string]map[string]any
		json.Unmarshal(want, &wantBack)
		if fmt.Sprint(back) != fmt.Sprint(wantBack) || !bytes.HasSuffix(got, []byte("\n")) || bytes.Count(got, []byte("\n")) != 1 {
			t.Errorf("appendActionLine(%+v) = %s, want %s plus one newline", it, got, want)
		}
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"b\\", "\x00\x1f\x7f", "é中🙂", "\xff\xfe", "\u2028"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("appendJSONString(%q) = %s: %v", s, got, err)
		}
		want, _ := json.Marshal(s)
		var wantBack string
		json.Unmarshal(want, &wantBack)
		if back != wantBack {
			t.Fatalf("appendJSONString(%q) decodes to %q, encoding/json's to %q", s, back, wantBack)
		}
	})
}

func TestClassify(t *testing.T) {
	cases := []struct {
		status   int
		typ      string
		action   Action
		external bool
		want     Class
	}{
		{200, "", Index, true, ClassSuccess},
		{201, "", Index, false, ClassSuccess},
		{404, "", Delete, true, ClassSuccess},
		{404, "index_not_found_exception", Index, false, ClassPermanent},
		{404, "index_not_found_exception", Delete, false, ClassPermanent},
		{409, "version_conflict_engine_exception", Index, true, ClassSuccess},
		{409, "version_conflict_engine_exception", Create, false, ClassPermanent},
		{429, "rejected_execution_exception", Index, true, ClassRetry},
		{429, "circuit_breaking_exception", Delete, true, ClassRetry},
		{503, "unavailable_shards_exception", Index, true, ClassRetry},
		{502, "", Index, true, ClassRetry},
		{504, "", Index, true, ClassRetry},
		{500, "illegal_state_exception", Index, true, ClassRetry},
		{400, "mapper_parsing_exception", Index, true, ClassPermanent},
		{400, "routing_missing_exception", Index, true, ClassPermanent},
		{403, "cluster_block_exception", Index, true, ClassPermanent},
	}
	for _, tc := range cases {
		if got := Classify(tc.status, tc.typ, tc.action, tc.external); got != tc.want {
			t.Errorf("Classify(%d, %q, %v, %v) = %v, want %v", tc.status, tc.typ, tc.action, tc.external, got, tc.want)
		}
	}
}

func TestDecodeResponse(t *testing.T) {
	full := `{"took":3,"errors":true,"items":[{"index":{"_index":"m","_id":"1","status":201,"result":"created"}},` +
		`{"delete":{"_index":"m","_id":"2","status":404,"result":"not_found"}},` +
		`{"index":{"_index":"m","_id":"3","status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse","caused_by":{"type":"illegal_argument_exception","reason":"[routing] is missing for join field [relation]"}}}}]}`
	items, err := decodeResponse([]byte(full), 3, false)
	if err != nil || len(items) != 3 {
		t.Fatalf("decodeResponse(full) = %v, %v", items, err)
	}
	if items[1].Status != 404 || items[1].Result != "not_found" || items[2].Error == nil || items[2].Error.CausedBy == nil ||
		items[2].Error.CausedBy.Reason != "[routing] is missing for join field [relation]" {
		t.Errorf("decodeResponse(full) = %+v", items)
	}
	// No errors and no deletes: the items are not decoded at all.
	if items, err := decodeResponse([]byte(`{"took":1,"errors":false,"items":[{"index":{}}]}`), 5, true); err != nil || items != nil {
		t.Errorf("decodeResponse(no errors) = %v, %v; want nil, nil", items, err)
	}
	for _, bad := range []string{
		full[:len(full)/2],                                // cut off mid-response
		full[:len(full)-1],                                // cut off at the very end
		`{"took":1,"errors":true,"items":[]}`,             // too few items
		`{"took":1}`,                                      // no items
		`<html>bad gateway</html>`,                        // not JSON
		`{"took":1,"errors":true,"items":[{"index":{}}]}`, // wrong count for n=3
	} {
		if _, err := decodeResponse([]byte(bad), 3, false); err == nil {
			t.Errorf("decodeResponse(%.40q…) succeeded, want an error", bad)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero Config: %v", err)
	}
	err := Config{Workers: -1, FlushItems: -2, RetryInitial: 2e9, RetryMax: 1e9, MaxShardItems: 10, MaxBufferedItems: 5}.Validate()
	for _, frag := range []string{"workers -1", "flush items -2", "retry max", "max shard items 10 exceeds"} {
		if err == nil || !strings.Contains(err.Error(), frag) {
			t.Errorf("Validate() = %v, want it to mention %q", err, frag)
		}
	}
	cerr := ClientConfig{Addresses: []string{"ftp://x", "127.0.0.1:9200"}, Password: NewSecret("p")}.Validate()
	for _, frag := range []string{`"ftp://x"`, `"127.0.0.1:9200"`, "without a username"} {
		if cerr == nil || !strings.Contains(cerr.Error(), frag) {
			t.Errorf("ClientConfig.Validate() = %v, want it to mention %q", cerr, frag)
		}
	}
}

func TestSecretNeverPrints(t *testing.T) {
	c := ClientConfig{Addresses: []string{"http://x:9200"}, Username: "u", Password: NewSecret("hunter2")}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("config", "client", c, "password", c.Password)
	js, _ := json.Marshal(c)
	// Behind an unexported field fmt cannot call String: the value must
	// still not show.
	hidden := struct{ c ClientConfig }{c}
	for _, s := range []string{fmt.Sprintf("%v %+v %#v %s", c, c, c, c.Password), fmt.Sprintf("%v %+v %#v", hidden, hidden, hidden), string(js), logs.String()} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("secret printed: %s", s)
		}
	}
	if c.Password.Reveal() != "hunter2" {
		t.Errorf("Reveal() lost the secret")
	}
}

func TestCheckItem(t *testing.T) {
	for _, it := range []Item{
		{Action: Index, ID: "1", Body: []byte("{}")},
		{Action: Index, Index: "m", Body: []byte("{}")},
		{Action: Index, Index: "m", ID: "1"},
		{Action: Delete, Index: "m", ID: "1", Body: []byte("{}")},
		{Action: Create, Index: "m", ID: "1", Body: []byte("{}"), VersionType: External},
		{Action: Action(9), Index: "m", ID: "1"},
		{Action: Delete, Index: "m", ID: "1", IfSeqNo: ptr(int64(3))},
		{Action: Delete, Index: "m", ID: "1", IfPrimaryTerm: ptr(int64(1))},
		{Action: Index, Index: "m", ID: "1", Body: []byte("{}"), Version: 2, VersionType: External, IfSeqNo: ptr(int64(3)), IfPrimaryTerm: ptr(int64(1))},
	} {
		if err := checkItem(&it); err == nil {
			t.Errorf("checkItem(%+v) = nil, want an error", it)
		}
	}
	if err := checkItem(&Item{Action: Delete, Index: "m", ID: "1", Version: 2, VersionType: External}); err != nil {
		t.Errorf("checkItem(valid delete) = %v", err)
	}
}

// TestScanStatuses reads the items' statuses of a response without
// errors, as OpenSearch writes it, and gives up (nil) when nothing was
// created or the items do not add up.
func TestScanStatuses(t *testing.T) {
	item := func(status int, result string) string {
		return fmt.Sprintf(`{"index":{"_index":"menu","_id":"d%d","_version":3,"result":%q,"_shards":{"total":1,"successful":1,"failed":0},"_seq_no":4,"_primary_term":1,"status":%d}}`, status, result, status)
	}
	body := `{"took":3,"errors":false,"items":[` + item(201, "created") + "," + item(200, "updated") + "," + item(201, "created") + `]}`
	if got := scanStatuses([]byte(body), 3); !reflect.DeepEqual(got, []int{201, 200, 201}) {
		t.Errorf("scanStatuses = %v, want [201 200 201]", got)
	}
	if got := scanStatuses([]byte(body), 4); got != nil {
		t.Errorf("scanStatuses with a count of 4 = %v, want nil", got)
	}
	updated := `{"took":3,"errors":false,"items":[` + item(200, "updated") + `]}`
	if got := scanStatuses([]byte(updated), 1); got != nil {
		t.Errorf("scanStatuses of updates only = %v, want nil (every item 200)", got)
	}
}

// TestStoredVersion reads the version a shard holds from the reasons of
// version conflicts, as the real node and the emulator word them.
func TestStoredVersion(t *testing.T) {
	for _, c := range []struct {
		reason string
		want   int64
	}{
		{"[dish:d1]: version conflict, current version [7] is higher or equal to the one provided [5]", 7},
		{"[1]: version conflict, current version [6] is higher than the one provided [4]", 6},
		{"[1]: version conflict, document already exists (current version [3])", 3},
		{"[1]: version conflict, required seqNo [4], primary term [1]. current document has seqNo [5] and primary term [1]", 0},
		{"", 0},
	} {
		if got := storedVersion(c.reason); got != c.want {
			t.Errorf("storedVersion(%q) = %d, want %d", c.reason, got, c.want)
		}
	}
}
