package migrate

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/golang/geo/s2"

	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// Verification counts by keyword ranges of geo_cell tokens. That is exact
// only because tokens of one level have one length and sort like their
// cells: check both, and that a token falls in shard i's token range
// exactly when LocateCell says shard i.
func TestTokenRangesAreExact(t *testing.T) {
	realenv.Parallel(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	randomCell := func(level int) s2.CellID {
		return s2.CellIDFromFace(rng.IntN(6)).ChildBeginAtLevel(30).Advance(int64(rng.Uint64N(1 << 60))).Parent(level)
	}
	for _, level := range []int{1, 7, 10, 13, 20, 30} {
		t.Run("level="+strconv.Itoa(level), func(t *testing.T) {
			length := len(randomCell(level).ToToken())
			for range 2000 {
				a, b := randomCell(level), randomCell(level)
				ta, tb := a.ToToken(), b.ToToken()
				if len(ta) != length || len(tb) != length {
					t.Fatalf("level %d: tokens %s and %s, want length %d", level, ta, tb, length)
				}
				if (a < b) != (ta < tb) || (a == b) != (ta == tb) {
					t.Fatalf("level %d: cells %v < %v is %v, tokens %s < %s is %v", level, a, b, a < b, ta, tb, ta < tb)
				}
			}
		})
	}
	m := testenv.LoadMap(t, testenv.MapUS24)
	inRange := func(tok string, i int) bool {
		return (i == 0 || tok >= m.Shard(i).Start) && (i+1 == m.NumShards() || tok < m.Shard(i+1).Start)
	}
	check := func(c s2.CellID) {
		tok := c.ToToken()
		want := m.LocateCell(c)
		for i := range m.NumShards() {
			if inRange(tok, i) != (i == want) {
				t.Fatalf("cell %s: in the token range of shard %d is %v, but LocateCell = %d", tok, i, inRange(tok, i), want)
			}
		}
	}
	for range 5000 {
		check(randomCell(m.Level()))
	}
	// The boundaries themselves, and the cells just before them.
	for i := 1; i < m.NumShards(); i++ {
		c, _ := router.ParseToken(m.Shard(i).Start)
		check(c)
		check(c.Prev())
	}
	var q map[string]map[string]map[string]string
	if err := json.Unmarshal(RangeQuery(m, 3), &q); err != nil ||
		!reflect.DeepEqual(q["range"]["geo_cell"], map[string]string{"gte": m.Shard(3).Start, "lt": m.Shard(4).Start}) {
		t.Errorf("RangeQuery(3) = %s", RangeQuery(m, 3))
	}
}

// pickOn returns a live document whose cell is on target shard i and not
// in skip.
func (e *env) pickOn(i int, skip map[string]bool) *testDoc {
	for _, d := range e.docs.all() {
		if !d.Deleted && !skip[d.ID] && e.dst.LocateCell(d.cell(e.dst.Level())) == i {
			skip[d.ID] = true
			return d
		}
	}
	e.t.Fatalf("no document on shard %d", i)
	return nil
}

func TestVerifyFindsDifferences(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 400)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	used := map[string]bool{}
	shardOf := func(d *testDoc) int { return e.dst.LocateCell(d.cell(e.dst.Level())) }

	// missing: deleted from the target only.
	missing := e.pickOn(2, used)
	gone := *missing
	gone.Deleted, gone.Version = true, gone.Version+1
	// extra: in the target only.
	model := e.pickOn(5, used)
	extra := &testDoc{ID: "dish:phantom", Relation: schema.RelationDish, Rest: model.Rest, Lat: model.Lat, Lng: model.Lng, Version: 1}
	// misrouted: on shard 9 though its cell belongs to shard 7.
	mis := e.pickOn(7, used)
	misGone := *mis
	misGone.Deleted, misGone.Version = true, mis.Version+1
	if err := e.docs.write(ctx, e.client, e.v2, e.dst, []*testDoc{&gone, extra, &misGone}); err != nil {
		t.Fatal(err)
	}
	it := docItem(e.v2, e.dst, mis)
	it.Routing, it.Version = e.dst.Shard(9).Routing, mis.Version+2
	if err := e.writeItems(ctx, it); err != nil {
		t.Fatal(err)
	}

	for _, ids := range []bool{false, true} {
		mode := "by counts"
		if ids {
			mode = "by ids"
		}
		t.Run(mode, func(t *testing.T) {
			ver, err := e.m.Verify(ctx, VerifyConfig{IDs: ids, Attempts: 2, Pause: time.Millisecond})
			if !errors.Is(err, ErrMismatch) || ver == nil || ver.OK {
				t.Fatalf("Verify(ids %v) = %v, want ErrMismatch", ids, err)
			}
			bad := map[string]schema.ShardReport{}
			for _, r := range ver.Shards {
				if !r.OK {
					bad[r.Shard] = r
				}
			}
			name := func(i int) string { return e.dst.Shard(i).Name }
			if len(bad) != 4 {
				t.Errorf("ids %v: %d shards differ (%v), want 4: %s %s %s %s", ids, len(bad), bad, name(2), name(5), name(7), name(9))
			}
			if r := bad[name(shardOf(missing))]; r.Target != r.Source-1 || r.Missing != 1 || r.Extra != 0 || r.OutOfRange != 0 {
				t.Errorf("ids %v: shard with the missing document: %+v", ids, r)
			}
			if r := bad[name(5)]; r.Target != r.Source+1 || r.Extra != 1 || r.Missing != 0 {
				t.Errorf("ids %v: shard with the extra document: %+v", ids, r)
			}
			if r := bad[name(7)]; r.Target != r.Source-1 || r.Missing != 1 {
				t.Errorf("ids %v: shard the misrouted document belongs to: %+v", ids, r)
			}
			// By counts the misrouted document is only out of range; by ids it
			// is also extra here (and missing where it belongs).
			if r := bad[name(9)]; r.OutOfRange != 1 || r.Target != r.Source+1 || (r.Extra == 1) != ids {
				t.Errorf("ids %v: shard holding the misrouted document: %+v", ids, r)
			}
			if ids {
				for _, c := range []struct {
					name  string
					shard int
					got   []string
					want  string
				}{
					{"missing", 2, bad[name(2)].MissingIDs, missing.ID},
					{"extra", 5, bad[name(5)].ExtraIDs, extra.ID},
					{"misrouted, missing where it belongs", 7, bad[name(7)].MissingIDs, mis.ID},
					{"misrouted, extra where it is", 9, bad[name(9)].ExtraIDs, mis.ID},
				} {
					t.Run(c.name, func(t *testing.T) {
						if !reflect.DeepEqual(c.got, []string{c.want}) {
							t.Errorf("shard %s: ids %v, want [%s]", name(c.shard), c.got, c.want)
						}
					})
				}
			}
			mig, _ := e.m.Load(ctx)
			if mig.Phase != schema.PhaseBackfilled || mig.Verification.OK || mig.Verification.IDs != ids {
				t.Errorf("after a failed verification: phase %s, stored %+v", mig.Phase, mig.Verification)
			}
		})
	}
	// Cutover needs a passed verification.
	var pe *PhaseError
	if err := e.m.Cutover(ctx, SwitchConfig{}); !errors.As(err, &pe) {
		t.Errorf("Cutover after a failed verification = %v, want a refusal", err)
	}
}

// The id lists are capped; the counts stay exact.
func TestVerifyCapsIDLists(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 200)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	var gone []*testDoc
	used := map[string]bool{}
	for range 5 {
		d := *e.pickOn(4, used)
		d.Deleted, d.Version = true, d.Version+1
		gone = append(gone, &d)
	}
	if err := e.docs.write(ctx, e.client, e.v2, e.dst, gone); err != nil {
		t.Fatal(err)
	}
	ver, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1, MaxIDs: 2})
	if !errors.Is(err, ErrMismatch) {
		t.Fatal(err)
	}
	r := ver.Shards[4]
	if r.Missing != 5 || len(r.MissingIDs) != 2 {
		t.Errorf("shard %s: missing %d, ids %v; want 5 missing, 2 ids listed", r.Shard, r.Missing, r.MissingIDs)
	}
}
