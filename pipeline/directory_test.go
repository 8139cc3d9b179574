package pipeline

import (
	"testing"

	"github.com/golang/geo/s2"
)

func TestDirectory(t *testing.T) {
	d := newDirectory()
	sf := s2.CellIDFromLatLng(s2.LatLngFromDegrees(37.77, -122.42))
	ny := s2.CellIDFromLatLng(s2.LatLngFromDegrees(40.71, -74.0))
	if _, ok := d.lookup("r1"); ok {
		t.Fatal("lookup of an unknown restaurant succeeded")
	}
	if !d.set("r1", sf, 5) || d.size() != 1 {
		t.Fatalf("set r1 v5: size %d", d.size())
	}
	if d.set("r1", ny, 5) || d.set("r1", ny, 4) {
		t.Error("set with an equal or older version changed the entry")
	}
	if c, ok := d.lookup("r1"); !ok || c != sf {
		t.Errorf("lookup(r1) = %v, %v; want the SF cell", c, ok)
	}
	if !d.set("r1", ny, 6) {
		t.Error("set with a newer version was refused")
	}
	if d.remove("r1", 6) {
		t.Error("remove with an equal version changed the entry")
	}
	if !d.remove("r1", 7) || d.size() != 0 {
		t.Fatalf("remove r1 v7: size %d, want 0", d.size())
	}
	if _, ok := d.lookup("r1"); ok {
		t.Error("lookup of a deleted restaurant succeeded")
	}
	e, ok := d.get("r1")
	if !ok || !e.deleted || e.version != 7 || e.cell != ny {
		t.Errorf("get(r1) = %+v, want deleted at v7, last cell kept", e)
	}
	if d.set("r1", sf, 7) {
		t.Error("an upsert replayed at the deleted version was accepted")
	}
	if !d.set("r1", sf, 8) || d.size() != 1 {
		t.Errorf("re-creating r1 at v8: size %d, want 1", d.size())
	}
	// Unknown deletes are remembered, live count unchanged.
	if !d.remove("r2", 3) || d.size() != 1 {
		t.Errorf("remove of unknown r2: size %d, want 1", d.size())
	}
	// Two copies seen while warming resolve to the higher version.
	d.warm("r3", ny.Parent(10), 9)
	d.warm("r3", sf.Parent(10), 4)
	if c, _ := d.lookup("r3"); c != ny.Parent(10) {
		t.Errorf("warm kept %v, want the version 9 copy's cell", c)
	}
}
