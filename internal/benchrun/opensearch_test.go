package benchrun

import (
	"strings"
	"testing"
)

func TestParseIndexStats(t *testing.T) {
	body := `{"_shards":{"total":18,"successful":18,"failed":0},"_all":{"primaries":{
		"docs":{"count":900123,"deleted":4},
		"indexing":{"index_total":1000000,"index_time_in_millis":1,"delete_total":20000,"is_throttled":false},
		"refresh":{"total":1234,"total_time_in_millis":99,"external_total":1200,"listeners":0}},
		"total":{"docs":{"count":1}}},"indices":{}}`
	got, err := ParseIndexStats([]byte(body))
	want := IndexStats{Docs: 900123, Writes: 1020000, Refresh: RefreshStats{Total: 1234, External: 1200}}
	if err != nil || got != want {
		t.Errorf("ParseIndexStats = %+v, %v, want %+v", got, err, want)
	}
	tests := []struct{ name, body, want string }{
		{"no refresh stats", `{"_all":{"primaries":{"docs":{"count":1},"indexing":{"index_total":1,"delete_total":0}}}}`, "refresh.total"},
		{"not json", `<html>`, "index stats"},
		{"empty", `{}`, "no _all.primaries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseIndexStats([]byte(tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ParseIndexStats(%s) error = %v, want one containing %q", tt.body, err, tt.want)
			}
		})
	}
}
