package migrate

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/schema"
)

// An id comparison checks once by default: its differences are read
// again one by one rather than in whole passes.
func TestVerifyAttemptsDefault(t *testing.T) {
	if got := (VerifyConfig{}).withDefaults().Attempts; got != DefaultAttempts {
		t.Errorf("by counts: %d attempts, want %d", got, DefaultAttempts)
	}
	if got := (VerifyConfig{IDs: true}).withDefaults().Attempts; got != 1 {
		t.Errorf("by ids: %d attempts, want 1", got)
	}
	if got := (VerifyConfig{IDs: true, Attempts: 3}).withDefaults().Attempts; got != 3 {
		t.Errorf("by ids, 3 asked: %d attempts, want 3", got)
	}
}

func TestBoundAfter(t *testing.T) {
	// Ids of one shape: the window is what the last one's ids spanned,
	// scaled to the ids wanted.
	if got := boundAfter("k1000", "k1100", 100, "k1100", 400); got != "k1500" {
		t.Errorf("boundAfter(k1000, k1100, 100, k1100, 400) = %q, want k1500", got)
	}
	// Digits are not base 256: twenty times the span of 1,000 of the
	// seed's ids is 9,000 of them. A window that holds fewer ids than it
	// aims at ends early, and the next is estimated from it.
	if got := boundAfter("dish:d00100000", "dish:d00101000", 1000, "dish:d00101000", 20000); got != "dish:d0010E000" {
		t.Errorf("boundAfter(seed ids) = %q, want dish:d0010E000", got)
	}
	// An empty window: look eight times as far.
	if got := boundAfter("k10", "k11", 0, "k11", 400); got != "k19" {
		t.Errorf("boundAfter(k10, k11, 0, k11) = %q, want k19", got)
	}
	for _, c := range []struct{ a, b, s string }{
		{"k1", "k1", "k1"}, // nothing to tell the ids apart
		{"k2", "k1", "k2"}, // no span
		{"a", "z", "z"},    // past every string
	} {
		if got := boundAfter(c.a, c.b, 1, c.s, 1000); got != "" {
			t.Errorf("boundAfter(%q, %q, 1, %q) = %q, want none", c.a, c.b, c.s, got)
		}
	}
	// Whatever the ids, a bound is after where the stream stands, and
	// valid UTF-8 (it crosses JSON unchanged).
	rng := rand.New(rand.NewPCG(7, 7))
	alphabet := []rune("09az~\u007f\u00e9\u65e5\U0001F600")
	word := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		return b.String()
	}
	for range 20000 {
		ids := []string{word(), word(), word()}
		slices.Sort(ids)
		a, b, s := ids[0], ids[1], ids[2]
		got := boundAfter(a, b, rng.IntN(50), s, 1+rng.IntN(100000))
		if got != "" && (got <= s || !utf8.ValidString(got)) {
			t.Fatalf("boundAfter(%q, %q, _, %q) = %q: want a valid string after %q", a, b, s, got, s)
		}
	}
}

// windowIDs are ids of many shapes: the seed's zero-padded numbers,
// numbers of every length, ids that are prefixes of others, long shared
// prefixes, and letters of two, three and four bytes.
func windowIDs(rng *rand.Rand) []string {
	set := map[string]bool{}
	for range 250 {
		set[fmt.Sprintf("dish:d%08d", rng.IntN(100_000_000))] = true
	}
	for range 150 {
		set[fmt.Sprintf("restaurant:r%d", rng.IntN(1_000_000))] = true
	}
	for _, id := range []string{"x", "x0", "x00", "x000", "x0000", "x1", "x10", "y"} {
		set[id] = true
	}
	long := strings.Repeat("tenant-0042/region-us-east/", 3)
	for range 60 {
		set[long+fmt.Sprintf("%x", rng.Uint64())] = true
	}
	for _, p := range []string{"café-", "日本-", "\U0001F600-", "~", "\u00ff"} {
		for range 20 {
			set[p+fmt.Sprint(rng.IntN(5000))] = true
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
		for id := range set {
			if !yield(id) {
				return
			}
		}
	})
}

// recordingSearcher keeps the bodies of the searches it passes on.
type recordingSearcher struct {
	Searcher
	mu     sync.Mutex
	bodies [][]byte
}

func (r *recordingSearcher) Search(ctx context.Context, index string, body []byte, p bulk.SearchParams) (*bulk.Page, error) {
	r.mu.Lock()
	r.bodies = append(r.bodies, body)
	r.mu.Unlock()
	return r.Searcher.Search(ctx, index, body, p)
}

// pageRange is the doc_id range a recorded page read (none for none).
func pageRange(t *testing.T, body []byte) map[string]string {
	var b struct {
		Query json.RawMessage `json:"query"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		t.Fatal(err)
	}
	var q struct {
		Range map[string]map[string]string `json:"range"`
	}
	json.Unmarshal(b.Query, &q)
	return q.Range[schema.FieldDocID]
}

// An id stream reads every copy of every id once, in order, a window at
// a time, whatever the ids' shape and the page: ids at the start of a
// window, a duplicate's copies (an id on two shards) at the end of a
// page, ids that are prefixes of others, and letters of every width. And
// a page costs about a window: after the first, each has an upper bound,
// and the ids in the ranges the pages ask for are a few windows each.
func TestIDStreamReadsEveryCopyOnceAWindowAtATime(t *testing.T) {
	realenv.Parallel(t)
	e := newEnv(t, 0)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(42, 1))
	ids := windowIDs(rng)
	type copyOf struct {
		id, routing string
		version     int64
	}
	var want []copyOf
	var items []bulk.Item
	// place writes a copy of id at a random place, on a shard other than
	// avoid's.
	place := func(id string, version int64, avoid string) {
		for {
			d := &testDoc{ID: id, Relation: schema.RelationRestaurant, Rest: id, Version: version,
				Lat: 30 + 15*rng.Float64(), Lng: -120 + 45*rng.Float64()}
			if it := docItem(e.v1, e.src, d); it.Routing != avoid {
				items = append(items, it)
				want = append(want, copyOf{id, it.Routing, version})
				return
			}
		}
	}
	for k, id := range ids {
		place(id, 1, "")
		if k%13 == 0 { // a second copy, on another shard: a duplicate
			place(id, 2, want[len(want)-1].routing)
		}
	}
	if err := e.writeItems(ctx, items...); err != nil {
		t.Fatal(err)
	}
	if err := e.admin.Refresh(ctx, e.v1); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(want, func(a, b copyOf) int {
		return cmp.Or(strings.Compare(a.id, b.id), strings.Compare(a.routing, b.routing))
	})
	for _, page := range []int{3, 10, 64} {
		t.Run(fmt.Sprintf("page=%d", page), func(t *testing.T) {
			rec := &recordingSearcher{Searcher: e.admin}
			st := &idStream{s: rec, sem: make(chan struct{}, 1), index: e.v1, cells: e.src, rows: e.dst, page: page}
			st.start(ctx)
			var got []copyOf
			for st.next(ctx) {
				if n := len(got); n > 0 && st.cur.id < got[n-1].id {
					t.Fatalf("id %q read after %q", st.cur.id, got[n-1].id)
				}
				got = append(got, copyOf{st.cur.id, st.cur.routing, st.cur.version})
			}
			st.close()
			if st.err != nil {
				t.Fatal(st.err)
			}
			slices.SortFunc(got, func(a, b copyOf) int {
				return cmp.Or(strings.Compare(a.id, b.id), strings.Compare(a.routing, b.routing))
			})
			if !slices.Equal(got, want) {
				var missing, extra []copyOf
				for _, c := range want {
					if !slices.Contains(got, c) {
						missing = append(missing, c)
					}
				}
				for _, c := range got {
					if !slices.Contains(want, c) {
						extra = append(extra, c)
					}
				}
				t.Fatalf("read %d copies, want the %d written: missing %v, extra %v", len(got), len(want), missing, extra)
			}
			// What each page asked the node to sort: the ids in its range.
			// A page without an upper bound asks for every id after its
			// start: past the first, only near the end of the key space.
			var asked, unbounded, worst int
			for k, body := range rec.bodies {
				r := pageRange(t, body)
				n := 0
				for _, c := range want {
					if (r["gt"] == "" || c.id > r["gt"]) && (r["gte"] == "" || c.id >= r["gte"]) && (r["lt"] == "" || c.id < r["lt"]) {
						n++
					}
				}
				if k == 0 {
					continue
				}
				asked += n
				if r["lt"] == "" {
					unbounded++
					worst = max(worst, n)
				}
			}
			pages, window := len(rec.bodies), 4*page
			mean := float64(asked) / float64(max(pages-1, 1))
			t.Logf("page %d: %d pages; after the first, %.1f ids in a page's range (a window is %d), %d pages without an upper bound, of at most %d ids",
				page, pages, mean, window, unbounded, worst)
			if mean > float64(3*window) || worst > 2*window {
				t.Errorf("page %d: %.1f ids in a page's range, and up to %d in one without an upper bound: want at most 3 and 2 windows (%d)",
					page, mean, worst, window)
			}
		})
	}

	// A window that starts at an id holds it, every copy of it; one that
	// ends at an id does not.
	dup := ids[13]
	st := &idStream{s: e.admin, sem: make(chan struct{}, 1), index: e.v1, cells: e.src, rows: e.dst, page: 100}
	pg := st.read(ctx, idCursor{from: dup, fromIncl: true, to: ids[20]})
	if pg.err != nil {
		t.Fatal(pg.err)
	}
	var read []string
	for _, h := range pg.hits {
		read = append(read, h.id)
	}
	if wantIDs := append([]string{dup, dup}, ids[14:20]...); !slices.Equal(read, wantIDs) {
		t.Errorf("window [%q, %q) read %q, want %q", dup, ids[20], read, wantIDs)
	}
	if !pg.more || pg.next.from != ids[20] || !pg.next.fromIncl || pg.next.to <= ids[20] {
		t.Errorf("after window [%q, %q): next %+v (more %v), want the next window from %q on", dup, ids[20], pg.next, pg.more, ids[20])
	}
}
