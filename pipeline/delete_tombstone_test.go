package pipeline

import (
	"testing"

	"github.com/geoshard/geoshard/decode"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

// TestDeletedRestaurantRefusesAReplayAnywhere: a restaurant deleted where
// it last stood refuses a replay of an older upsert of it at any other
// place, decided by a member that never saw the delete (a new owner of
// the partition, whose directory the index could not tell of it). The
// replay's place never held the restaurant (its version there came out
// of order and was stale), so only a tombstone under every routing
// refuses it; without one the replay is written there, live, for good.
func TestDeletedRestaurantRefusesAReplayAnywhere(t *testing.T) {
	e := newEnv(t, envOptions{partitions: 1})
	realenv.EmulatorOnly(t, "members driven by hand against the emulator")
	first := handMember(t, e)
	first.ix.enterGen(1)
	sf := func(p *Pipeline, off, v int64) *event {
		return fenceEvent(p, off, &decode.Change{Type: decode.TypeRestaurant, Op: decode.OpUpsert, ID: "Y", Version: v, Lat: 37.7749, Lon: -122.4194})
	}
	del := func(p *Pipeline, off, v int64) *event {
		return fenceEvent(p, off, &decode.Change{Type: decode.TypeRestaurant, Op: decode.OpDelete, ID: "Y", Version: v})
	}
	// Y at version 2 in San Francisco; version 1, in New York, comes after
	// it and is stale; then Y is deleted at version 3.
	decideAll(t, first, sf(first, 0, 2), fenceMoveToNY(first, 1, 1), del(first, 2, 3))
	if docs := e.scanIndex(t); len(docs) != 0 {
		t.Fatalf("after the delete the index holds %v, want nothing", docs)
	}

	// The partition's next owner knows nothing of Y; version 1 in New York
	// is delivered again.
	next := handMember(t, e)
	next.ix.enterGen(2)
	decideAll(t, next, fenceMoveToNY(next, 3, 1))
	if doc, ok := e.scanIndex(t)[schema.RestaurantID("Y")]; ok {
		t.Errorf("the deleted restaurant is stored again, under routing %q, by a replay of its version 1", doc.routing)
	}
	if en, known := next.ix.dir.Get("Y"); !known || !en.Deleted {
		t.Errorf("the next owner's directory holds Y as %+v (known %v), want deleted", en, known)
	}
}
