package migrate

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

// A duplicate is planted as ingest left one before it learned to delete
// the superseded copy: a dish of restaurant from, at version 1, moves to
// restaurant to at version 2; the version-2 copy is written under to's
// routing and the version-1 copy stays under from's.

// restaurantPair finds two restaurants with dishes whose shards under
// the source map differ and whose shards under the target map are equal
// (same) or differ, and whose target shards are not in avoid.
func (e *env) restaurantPair(same bool, avoid ...int) (to, from *testDoc) {
	e.t.Helper()
	var rests []*testDoc
	for _, d := range e.docs.all() {
		if d.Relation == schema.RelationRestaurant && !d.Deleted && len(e.docs.dishes[d.Rest]) > 0 {
			rests = append(rests, d)
		}
	}
	src := func(d *testDoc) int { return e.src.LocateCell(d.cell(e.src.Level())) }
	dst := func(d *testDoc) int { return e.dst.LocateCell(d.cell(e.dst.Level())) }
	for _, a := range rests {
		for _, b := range rests {
			ok := src(a) != src(b) && (dst(a) == dst(b)) == same
			for _, s := range avoid {
				ok = ok && dst(a) != s && dst(b) != s
			}
			if ok {
				return a, b
			}
		}
	}
	e.t.Fatalf("no two restaurants on different source shards and on the same target shard: %v", same)
	return nil, nil
}

// moved is the first dish of to, moved from from: its current copy (to's
// routing, version 2) and its superseded one (from's, version 1).
func (e *env) moved(to, from *testDoc) (cur, old *testDoc) {
	e.t.Helper()
	d := *e.docs.byID[e.docs.dishes[to.Rest][0]]
	cur = &d
	cur.Version = 2
	old = &testDoc{ID: d.ID, Relation: schema.RelationDish, Rest: from.Rest, Lat: from.Lat, Lng: from.Lng, Version: 1}
	return cur, old
}

// planted is a duplicate a test planted: a dish moved from one
// restaurant to another, with its superseded copy left in the source, the
// target or both.
type planted struct {
	name     string
	cur, old *testDoc
	// inSource and inTarget: the superseded copy is in that index.
	inSource, inTarget bool
	// rows are the target shards of the current and the superseded copy.
	rows [2]int
}

// plantDuplicates plants, after a backfill, a duplicate of each kind,
// each on target shards of its own.
func (e *env) plantDuplicates(ctx context.Context) []planted {
	e.t.Helper()
	ps := []planted{
		// Twice in each index, as a backfill copies a duplicate.
		{name: "in both indexes", inSource: true, inTarget: true},
		// Twice in the source, once in the target: the backfill's copy of
		// the older one was stale on the shard of the newer.
		{name: "in the source, in one range", inSource: true},
		// Twice in the source, once in the target: the copy under the
		// former restaurant never reached the target.
		{name: "in the source, across ranges", inSource: true},
		// Twice in the target only.
		{name: "in the target", inTarget: true},
	}
	var used []int
	var items []bulk.Item
	for k := range ps {
		p := &ps[k]
		to, from := e.restaurantPair(k == 1, used...)
		p.cur, p.old = e.moved(to, from)
		p.rows = [2]int{e.dst.LocateCell(to.cell(e.dst.Level())), e.dst.LocateCell(from.cell(e.dst.Level()))}
		used = append(used, p.rows[:]...)
		items = append(items, docItem(e.v1, e.src, p.cur), docItem(e.v2, e.dst, p.cur))
		if p.inSource {
			items = append(items, docItem(e.v1, e.src, p.old))
		}
		if p.inTarget {
			items = append(items, docItem(e.v2, e.dst, p.old))
		}
	}
	if err := e.writeItems(ctx, items...); err != nil {
		e.t.Fatal(err)
	}
	return ps
}

// dups are the duplicates a verification lists for p.
func (e *env) dups(p planted) []schema.Duplicate {
	var out []schema.Duplicate
	if p.inSource {
		out = append(out, schema.Duplicate{Side: schema.DuplicateInSource, Index: e.v1, ID: p.cur.ID,
			Copies: []schema.Copy{e.copyOf(p.cur, false, schema.CopyCurrent), e.copyOf(p.old, false, schema.CopySuperseded)}})
	}
	if p.inTarget {
		out = append(out, schema.Duplicate{Side: schema.DuplicateInTarget, Index: e.v2, ID: p.cur.ID,
			Copies: []schema.Copy{e.copyOf(p.cur, true, schema.CopyCurrent), e.copyOf(p.old, true, schema.CopySuperseded)}})
	}
	return out
}

// copyOf is a copy as a verification or a repair describes it.
func (e *env) copyOf(d *testDoc, onTarget bool, status schema.CopyStatus) schema.Copy {
	mp := e.src
	if onTarget {
		mp = e.dst
	}
	s := mp.Shard(mp.LocateCell(d.cell(mp.Level())))
	return schema.Copy{Shard: s.Name, Routing: s.Routing, Version: d.Version, Status: status}
}

func TestVerifyFindsDuplicates(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 300)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	ps := e.plantDuplicates(ctx)

	// By counts, a superseded copy is a document too many: in the source
	// it is missing from the target, in the target extra.
	ver, err := e.m.Verify(ctx, VerifyConfig{Attempts: 1})
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("Verify by counts = %v, want ErrMismatch", err)
	}
	for _, c := range []struct {
		p              planted
		missing, extra int64
	}{{ps[1], 1, 0}, {ps[2], 1, 0}, {ps[3], 0, 1}} {
		if r := ver.Shards[c.p.rows[1]]; r.Missing != c.missing || r.Extra != c.extra {
			t.Errorf("by counts, duplicate %s: shard %s %+v, want %d missing and %d extra", c.p.name, r.Shard, r, c.missing, c.extra)
		}
	}

	ver, err = e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 2, Pause: -1})
	if !errors.Is(err, ErrMismatch) || !strings.Contains(err.Error(), "reshard repair deletes every copy older than its id's newest") {
		t.Fatalf("Verify by ids = %v, want ErrMismatch saying repair deletes the superseded copies", err)
	}
	if ver.SourceDuplicates != 3 || ver.TargetDuplicates != 2 {
		t.Errorf("duplicates: %d in the source, %d in the target; want 3 and 2", ver.SourceDuplicates, ver.TargetDuplicates)
	}
	differ := map[int]bool{}
	for _, p := range ps {
		for k, row := range p.rows {
			differ[row] = true
			t.Run(p.name+"/"+[]string{"current copy", "superseded copy"}[k], func(t *testing.T) {
				r := ver.Shards[row]
				// Each index lists the duplicate in the rows of its copies.
				var src, tgt int64
				if p.inSource {
					src = 1
				}
				if p.inTarget {
					tgt = 1
				}
				if r.OK || r.SourceDuplicates != src || r.TargetDuplicates != tgt {
					t.Errorf("shard %s: ok %v, duplicates %d in the source and %d in the target; want %d and %d", r.Shard, r.OK, r.SourceDuplicates, r.TargetDuplicates, src, tgt)
				}
				// A duplicate counts once, at its current copy: nothing
				// missing or extra, as many distinct ids in the range as
				// on the shard.
				if r.Missing != 0 || r.Extra != 0 || r.OutOfRange != 0 || r.Source != r.Target {
					t.Errorf("shard %s: %+v, want no missing, extra or misrouted document and source = target", r.Shard, r)
				}
				want := e.dups(p)
				if !reflect.DeepEqual(r.Duplicates, want) {
					t.Errorf("shard %s lists duplicates\n%+v\nwant\n%+v", r.Shard, r.Duplicates, want)
				}
			})
		}
	}
	for i, r := range ver.Shards {
		if !differ[i] && (!r.OK || len(r.Duplicates) > 0) {
			t.Errorf("shard %s: %+v, want it to match", r.Shard, r)
		}
	}
	if mig, _ := e.m.Load(ctx); mig.Phase != schema.PhaseBackfilled || !reflect.DeepEqual(mig.Verification, ver) {
		t.Errorf("after the verification: phase %s, stored %+v; want backfilled and the report", mig.Phase, mig.Verification)
	}
	// Read three ids a page, a window of twelve at a time, the streams
	// cross hundreds of pages and windows, the duplicates' copies among
	// their ends: the same report.
	small, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 2, Pause: -1, idPage: 3})
	if !errors.Is(err, ErrMismatch) {
		t.Fatalf("Verify by ids, three a page = %v, want ErrMismatch", err)
	}
	small.At = ver.At
	if !reflect.DeepEqual(small, ver) {
		t.Errorf("Verify by ids, three a page:\n%+v\nwant the report of whole pages\n%+v", small, ver)
	}
}

// Repair deletes the superseded copies, in the source and the target,
// each under its own routing at the newest copy's version; its dry run
// prints those requests and changes nothing; the next verify passes.
func TestRepairDeletesSuperseded(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 300)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	ps := e.plantDuplicates(ctx)
	if _, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1}); !errors.Is(err, ErrMismatch) {
		t.Fatalf("verify --ids with duplicates = %v, want ErrMismatch", err)
	}
	rec := &recorder{next: http.DefaultTransport}
	m := e.recorded(rec)
	before := e.everyCopy(ctx)

	var dry strings.Builder
	rep, err := m.Repair(ctx, RepairConfig{DryRun: &dry})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Superseded != 5 || rep.Copied+rep.Deleted != 0 || len(rep.Ties) != 0 {
		t.Errorf("dry run %+v, want 5 superseded copies deleted and nothing else", rep)
	}
	for _, p := range ps {
		for _, c := range []struct {
			in     bool
			index  string
			target bool
		}{{p.inSource, e.v1, false}, {p.inTarget, e.v2, true}} {
			if !c.in {
				continue
			}
			old := e.copyOf(p.old, c.target, "")
			note := "delete superseded " + p.old.ID + " from " + c.index + " shard " + old.Shard + " (version 1; the newest is version 2)"
			line := `{"delete":{"_index":"` + c.index + `","_id":"` + p.old.ID + `","routing":"` + old.Routing + `","version":2,"version_type":"external"}}`
			if !strings.Contains(dry.String(), note) || !strings.Contains(dry.String(), line) {
				t.Errorf("duplicate %s: the dry run does not say %q, or send %s:\n%s", p.name, note, line, dry.String())
			}
		}
	}
	for _, r := range rec.take() {
		if !isRead(r) {
			t.Errorf("the dry run sent %s %s", r.Method, r.Path)
		}
	}
	if after := e.everyCopy(ctx); !reflect.DeepEqual(after, before) {
		t.Error("the dry run changed an index")
	}
	printed := regexp.MustCompile(`\n# \d+\n`).Split(dry.String(), -1)[1:]
	if len(printed) != 1 {
		t.Fatalf("the dry run prints %d requests, want 1 (the five deletes):\n%s", len(printed), dry.String())
	}

	rep, err = m.Repair(ctx, RepairConfig{})
	if err != nil || rep.Superseded != 5 || rep.Kept != 0 || rep.Copied+rep.Deleted+rep.Stale != 0 || rep.Unlisted != 0 {
		t.Fatalf("repair = %+v, %v; want 5 superseded copies deleted", rep, err)
	}
	var sent []string
	for _, r := range rec.take() {
		if r.Method == http.MethodPost && r.Path == "/_bulk" {
			sent = append(sent, r.String())
		}
	}
	if !reflect.DeepEqual(sent, printed) {
		t.Errorf("the repair sent\n%q\nits dry run printed\n%q", sent, printed)
	}
	if _, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1}); err != nil {
		t.Errorf("verify --ids after repair = %v", err)
	}
	// Of each duplicate, the current copy is left, in either index.
	after := e.everyCopy(ctx)
	for _, p := range ps {
		for _, c := range []struct {
			index  string
			target bool
		}{{e.v1, false}, {e.v2, true}} {
			want := []copyAt{{Index: c.index, Routing: e.copyOf(p.cur, c.target, "").Routing, Version: 2}}
			if got := after[p.cur.ID+" "+c.index]; !reflect.DeepEqual(got, want) {
				t.Errorf("duplicate %s after repair: %+v, want only the version-2 copy %+v", p.name, got, want)
			}
		}
	}
}

// copyAt is a copy of a document as everyCopy finds it.
type copyAt struct {
	Index, Routing string
	Version        int64
}

// everyCopy reads every copy of every document of the source and the
// target, by "<id> <index>", in the order of their routings.
func (e *env) everyCopy(ctx context.Context) map[string][]copyAt {
	e.t.Helper()
	out := map[string][]copyAt{}
	for _, index := range []string{e.v1, e.v2} {
		if err := e.admin.Refresh(ctx, index); err != nil {
			e.t.Fatal(err)
		}
		pg, err := e.admin.Search(ctx, index, []byte(`{"size":10000,"version":true,"_source":false}`), bulk.SearchParams{})
		if err != nil || len(pg.Hits) == 10000 {
			e.t.Fatalf("read %s: %v, %d hits (want fewer than 10,000)", index, err, len(pg.Hits))
		}
		for _, h := range pg.Hits {
			k := h.ID + " " + index
			out[k] = append(out[k], copyAt{index, h.Routing, h.Version})
		}
	}
	for _, cs := range out {
		slices.SortFunc(cs, func(a, b copyAt) int { return strings.Compare(a.Routing, b.Routing) })
	}
	return out
}

// recorded is a Migrator whose requests rec records.
func (e *env) recorded(rec http.RoundTripper) *Migrator {
	e.t.Helper()
	client, err := opensearch.NewClient(opensearch.Config{Addresses: []string{e.url}, Transport: rec, DisableRetry: true})
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := New(client, Config{Alias: e.alias})
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// Copies tied at the newest version: the verification says so, and
// repair leaves both and reports the tie.
func TestRepairLeavesTies(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 300)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	to, from := e.restaurantPair(false)
	cur, old := e.moved(to, from)
	old.Version = 2 // as new as the current copy
	if err := e.writeItems(ctx, docItem(e.v2, e.dst, cur), docItem(e.v2, e.dst, old), docItem(e.v1, e.src, cur)); err != nil {
		t.Fatal(err)
	}
	ver, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1})
	if !errors.Is(err, ErrMismatch) || ver.TargetDuplicates != 1 || ver.SourceDuplicates != 0 {
		t.Fatalf("Verify = %v, %+v; want one duplicate in the target", err, ver)
	}
	tie := schema.Duplicate{Side: schema.DuplicateInTarget, Index: e.v2, ID: cur.ID,
		Copies: []schema.Copy{e.copyOf(cur, true, schema.CopyTied), e.copyOf(old, true, schema.CopyTied)}}
	sortCopies(tie.Copies)
	a := e.dst.LocateCell(to.cell(e.dst.Level()))
	if r := ver.Shards[a]; !reflect.DeepEqual(r.Duplicates, []schema.Duplicate{tie}) || !r.Duplicates[0].Tie() {
		t.Errorf("shard %s lists %+v, want the tie %+v", r.Shard, r.Duplicates, tie)
	}
	var dry strings.Builder
	rep, err := e.m.Repair(ctx, RepairConfig{DryRun: &dry})
	if err != nil || rep.Superseded != 0 || !reflect.DeepEqual(rep.Ties, []schema.Duplicate{tie}) {
		t.Errorf("dry run %+v, %v; want nothing deleted and the tie reported", rep, err)
	}
	if want := "leave " + cur.ID + " in " + e.v2 + ": version 2 on "; !strings.Contains(dry.String(), want) {
		t.Errorf("the dry run does not say %q:\n%s", want, dry.String())
	}
	rep, err = e.m.Repair(ctx, RepairConfig{})
	if err != nil || rep.Superseded+rep.Deleted != 0 || !reflect.DeepEqual(rep.Ties, []schema.Duplicate{tie}) {
		t.Errorf("repair %+v, %v; want nothing deleted and the tie reported", rep, err)
	}
	tgt := e.stored(ctx, e.v2, e.dst.NumShards())
	if got := tgt[cur.ID]; got.Version != 2 {
		t.Errorf("after repair: %+v", got)
	}
	if _, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1}); !errors.Is(err, ErrMismatch) {
		t.Errorf("verify --ids after a repair that left a tie = %v, want ErrMismatch", err)
	}
}

// A superseded copy written again, between the repair's read and its
// delete, at the newest version refuses the delete: it is kept.
func TestRepairKeepsACopyWrittenSince(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 300)
	ctx := context.Background()
	e.migrateTo(ctx, BackfillConfig{})
	to, from := e.restaurantPair(false)
	cur, old := e.moved(to, from)
	if err := e.writeItems(ctx, docItem(e.v2, e.dst, cur), docItem(e.v2, e.dst, old), docItem(e.v1, e.src, cur)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.m.Verify(ctx, VerifyConfig{IDs: true, Attempts: 1}); !errors.Is(err, ErrMismatch) {
		t.Fatal(err)
	}
	// The write lands when the repair sends its deletes.
	newer := *old
	newer.Version = 3
	gate := &beforeBulk{next: http.DefaultTransport, do: func() error { return e.writeItems(ctx, docItem(e.v2, e.dst, &newer)) }}
	rep, err := e.recorded(gate).Repair(ctx, RepairConfig{})
	if err != nil || rep.Superseded != 0 || rep.Kept != 1 {
		t.Fatalf("repair = %+v, %v; want the delete refused and the copy kept", rep, err)
	}
	if err := gate.err; err != nil {
		t.Fatal(err)
	}
	doc, err := e.admin.GetDocRouted(ctx, e.v2, old.ID, e.copyOf(old, true, "").Routing)
	if err != nil || !doc.Found || doc.Version != 3 {
		t.Errorf("the copy written since: %+v, %v; want it kept at version 3", doc, err)
	}
}

// beforeBulk runs do once, before it passes on the first _bulk request.
type beforeBulk struct {
	next http.RoundTripper
	do   func() error
	once sync.Once
	err  error
}

func (b *beforeBulk) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.URL.Path == "/_bulk" {
		b.once.Do(func() { b.err = b.do() })
	}
	return b.next.RoundTrip(req)
}
