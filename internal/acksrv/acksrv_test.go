package acksrv

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func TestAcknowledgesEveryItem(t *testing.T) {
	s := Start()
	defer s.Close()
	body := "{\"index\":{\"_index\":\"m\",\"_id\":\"1\"}}\n{\"a\":1}\n{\"delete\":{\"_index\":\"m\",\"_id\":\"2\"}}\n{\"create\":{\"_index\":\"m\",\"_id\":\"3\"}}\n{}\n"
	resp, err := http.Post(s.URL+"/_bulk", "application/x-ndjson", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Errors bool
		Items  []map[string]struct{ Status int }
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatal(err)
	}
	if out.Errors || len(out.Items) != 3 || out.Items[0]["index"].Status != 201 || out.Items[1]["delete"].Status != 200 || out.Items[2]["create"].Status != 201 {
		t.Errorf("response = %+v, want index 201, delete 200, create 201", out)
	}
	if s.Items.Load() != 3 || s.Requests.Load() != 1 {
		t.Errorf("counted %d items in %d requests, want 3 in 1", s.Items.Load(), s.Requests.Load())
	}
}
