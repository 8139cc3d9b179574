package migrate

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
)

// The routed _reindex of BenchmarkBackfillVsReindex compares tokens
// padded to 16 digits: padded tokens of any levels sort as their cell ids.
func TestPaddedTokensSortAsCells(t *testing.T) {
	realenv.Parallel(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 3))
	cell := func() s2.CellID {
		return s2.CellIDFromFace(rng.IntN(6)).ChildBeginAtLevel(30).Advance(int64(rng.Uint64N(1 << 60))).Parent(rng.IntN(31))
	}
	for range 20000 {
		a, b := cell(), cell()
		pa, pb := padToken(a.ToToken()), padToken(b.ToToken())
		if len(pa) != 16 || len(pb) != 16 || (a < b) != (pa < pb) || (a == b) != (pa == pb) {
			t.Fatalf("cells %v (level %d) and %v (level %d): padded tokens %s, %s do not sort as the cells", a, a.Level(), b, b.Level(), pa, pb)
		}
	}
}

// A _reindex whose painless script routes each copy by its geo_cell under
// the new map puts every document exactly where the backfill would: on
// its shard, with its routing key and version.
func TestRoutedReindex(t *testing.T) {
	realenv.RealOnly(t)
	e := newEnv(t, 300)
	ctx := context.Background()
	if err := e.admin.Refresh(ctx, e.v1); err != nil {
		t.Fatal(err)
	}
	r := &reindexer{e: e, admin: e.admin, want: int64(e.docs.live())}
	for _, slices := range []int{1, 4} {
		target := e.alias + "-routed-" + strconv.Itoa(slices)
		if err := r.createTarget(ctx, target); err != nil {
			t.Fatal(err)
		}
		if err := r.reindex(ctx, target, slices, true); err != nil {
			t.Fatal(err)
		}
		if n, err := r.misplaced(ctx, target); err != nil || n != 0 {
			t.Errorf("slices %d: %d documents out of their shard's range (%v)", slices, n, err)
		}
		e.checkTarget(ctx, target)
		if err := e.admin.DeleteIndex(ctx, target); err != nil && !bulk.IsNotFound(err) {
			t.Fatal(err)
		}
	}
}
