package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/golang/geo/s2"
)

func jsonValid(b []byte) bool { return json.Valid(b) }

func TestDocMembersStripsReservedFields(t *testing.T) {
	for _, tc := range []struct{ name, doc, want string }{
		{"empty", `{}`, `{}`},
		{"plain", `{"name":"pad thai","price_cents":1250}`, `{"name":"pad thai","price_cents":1250}`},
		{"spaces", ` { "name" : "x" } `, `{"name":"x"}`},
		{"reserved", `{"name":"x","version":99,"geo_cell":"bogus","relation":"restaurant","doc_id":"d","location":{"lat":1},"restaurant_id":"r"}`, `{"name":"x"}`},
		{"escaped key", `{"\u0076ersion":99,"name":"x"}`, `{"name":"x"}`},
		{"nested kept", `{"meta":{"version":3}}`, `{"meta":{"version":3}}`},
		{"similar name kept", `{"version_note":"x","version":1}`, `{"version_note":"x"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := docMembers([]byte(tc.doc))
			if err != nil {
				t.Fatal(err)
			}
			got := "{" + string(m) + "}"
			var g, w any
			if err := json.Unmarshal([]byte(got), &g); err != nil {
				t.Fatalf("docMembers(%s) = %s, not JSON: %v", tc.doc, m, err)
			}
			_ = json.Unmarshal([]byte(tc.want), &w)
			gb, _ := json.Marshal(g)
			wb, _ := json.Marshal(w)
			if string(gb) != string(wb) {
				t.Errorf("docMembers(%s) = %s, want %s", tc.doc, got, tc.want)
			}
		})
	}
}

func TestBodies(t *testing.T) {
	cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(37.7749, -122.4194))
	members, _ := docMembers([]byte(`{"name":"Chez","version":5}`))
	var r map[string]any
	if err := json.Unmarshal(restaurantBody(members, "r1", 17, cell, 37.7749, -122.4194, 10), &r); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"name": "Chez", "relation": "restaurant", "geo_cell": "808581", "version": float64(17),
		"doc_id": "restaurant:r1", "location": map[string]any{"lat": 37.7749, "lon": -122.4194}}
	if rb, wb := mustJSON(r), mustJSON(want); rb != wb {
		t.Errorf("restaurantBody = %s, want %s", rb, wb)
	}
	var d map[string]any
	if err := json.Unmarshal(dishBody(nil, "d1", "r1", 3, cell, 10), &d); err != nil {
		t.Fatal(err)
	}
	want = map[string]any{"relation": map[string]any{"name": "dish", "parent": "restaurant:r1"}, "geo_cell": "808581",
		"version": float64(3), "doc_id": "dish:d1", "restaurant_id": "r1"}
	if db, wb := mustJSON(d), mustJSON(want); db != wb {
		t.Errorf("dishBody = %s, want %s", db, wb)
	}
	moved, err := withGeoCell(dishBody([]byte(`"name":"x"`), "d1", "r1", 3, cell, 10), "80858c")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(moved, &m); err != nil {
		t.Fatal(err)
	}
	want["geo_cell"], want["name"] = "80858c", "x"
	if mb, wb := mustJSON(m), mustJSON(want); mb != wb {
		t.Errorf("withGeoCell = %s, want %s", mb, wb)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestCellAt(t *testing.T) {
	leaf := s2.CellIDFromLatLng(s2.LatLngFromDegrees(40.7, -74))
	if got := cellAt(leaf, 10); got != leaf.Parent(10) {
		t.Errorf("cellAt(leaf, 10) = %v, want %v", got, leaf.Parent(10))
	}
	c10 := leaf.Parent(10)
	if got := cellAt(c10, 12); got != c10 {
		t.Errorf("cellAt(level 10, 12) = %v, want the cell itself", got)
	}
}
