//go:build realcluster

package cdc

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/golang/geo/s2"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/internal/realenv"
	"github.com/geoshard/geoshard/internal/testenv"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// versions follows a source's two topics and keeps, for every row, the
// source.lsn of its last change event: the version its document must
// have (the mapping's version is source.lsn). The database says what a
// row is; only the log says at which version.
type versions struct {
	mu      sync.Mutex
	lsn     map[string]int64    // schema.RestaurantID / schema.DishID → LSN
	history map[string][]string // the same → its events, for failure messages
	rests   map[string][]string // a dish's id → the restaurants its events named
	events  int
	err     error
}

// followVersions reads the topics from their start in the background
// until the test ends.
func followVersions(t *testing.T, restaurants, dishes string) *versions {
	t.Helper()
	c, err := kgo.NewClient(
		kgo.SeedBrokers(realenv.KafkaBrokers()...),
		kgo.ConsumeTopics(restaurants, dishes),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(100*time.Millisecond),
	)
	if err != nil {
		t.Fatal(err)
	}
	v := &versions{lsn: map[string]int64{}, history: map[string][]string{}, rests: map[string][]string{}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		<-done
		c.Close()
	})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			c.PollFetches(ctx).EachRecord(func(r *kgo.Record) {
				if err := v.add(r.Topic == restaurants, r.Key, r.Value); err != nil {
					v.mu.Lock()
					v.err = fmt.Errorf("%s/%d@%d: %w", r.Topic, r.Partition, r.Offset, err)
					v.mu.Unlock()
				}
			})
		}
	}()
	return v
}

// add records one event; a tombstone changes nothing.
func (v *versions) add(restaurant bool, key, value []byte) error {
	if value == nil {
		return nil
	}
	type row struct {
		RestaurantID *int64 `json:"restaurant_id"`
		Lat          float64
		Lon          float64
	}
	var k struct{ ID *int64 }
	var e struct {
		Op     string `json:"op"`
		Before *row   `json:"before"`
		After  *row   `json:"after"`
		Source struct {
			LSN *int64 `json:"lsn"`
		} `json:"source"`
	}
	if err := json.Unmarshal(key, &k); err != nil || k.ID == nil {
		return fmt.Errorf("key %s: want {\"id\":N} (%v)", key, err)
	}
	if err := json.Unmarshal(value, &e); err != nil || e.Source.LSN == nil {
		return fmt.Errorf("value %.200s: want source.lsn (%v)", value, err)
	}
	id := schema.DishID(strconv.FormatInt(*k.ID, 10))
	if restaurant {
		id = schema.RestaurantID(strconv.FormatInt(*k.ID, 10))
	}
	what := fmt.Sprintf("%s@%d", e.Op, *e.Source.LSN)
	for _, r := range []struct {
		name string
		row  *row
	}{{"before", e.Before}, {"after", e.After}} {
		switch {
		case r.row == nil:
		case r.row.RestaurantID != nil:
			what += fmt.Sprintf(" %s.restaurant %d", r.name, *r.row.RestaurantID)
			rid := schema.RestaurantID(strconv.FormatInt(*r.row.RestaurantID, 10))
			v.mu.Lock()
			if rs := v.rests[id]; len(rs) == 0 || rs[len(rs)-1] != rid {
				v.rests[id] = append(rs, rid)
			}
			v.mu.Unlock()
		case restaurant:
			what += fmt.Sprintf(" %s %.4f,%.4f", r.name, r.row.Lat, r.row.Lon)
		}
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	v.events++
	v.history[id] = append(v.history[id], what)
	if *e.Source.LSN > v.lsn[id] {
		v.lsn[id] = *e.Source.LSN
	}
	return nil
}

// restaurantsOf returns the restaurants a dish's events named, in order.
func (v *versions) restaurantsOf(id string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.rests[id]...)
}

// of returns a document's change events, oldest first.
func (v *versions) of(id string) []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]string(nil), v.history[id]...)
}

// doc is a document as the database says it must be, or as the index
// holds it.
type doc struct {
	shard   int
	routing string
	source  map[string]any
}

// expected reads both tables and returns the documents they make under
// mp: every restaurant on the shard of its location's cell, every dish on
// its restaurant's, each at its row's last LSN, with the columns the
// chain's mapping copies.
func (c *chain) expected(ctx context.Context, mp *router.Map) (map[string]doc, error) {
	out := map[string]doc{}
	c.versions.mu.Lock()
	lsn := make(map[string]int64, len(c.versions.lsn))
	for k, v := range c.versions.lsn {
		lsn[k] = v
	}
	err := c.versions.err
	c.versions.mu.Unlock()
	if err != nil {
		return nil, err
	}
	type place struct {
		shard   int
		routing string
	}
	places := map[int]place{}
	rows, err := c.env.db.Query(ctx, "SELECT id, name, lat, lon, cuisines FROM "+c.env.schema+".restaurants")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id int
		var name string
		var lat, lon float64
		var cuisines []string
		if err := rows.Scan(&id, &name, &lat, &lon, &cuisines); err != nil {
			return nil, err
		}
		cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(lat, lon)).Parent(mp.Level())
		shard := mp.LocateCell(cell)
		places[id] = place{shard, mp.Shard(shard).Routing}
		docID := schema.RestaurantID(strconv.Itoa(id))
		out[docID] = doc{shard: shard, routing: mp.Shard(shard).Routing, source: jsonValue(map[string]any{
			"name": name, "cuisines": cuisines,
			schema.FieldLocation: map[string]any{"lat": lat, "lon": lon},
			schema.FieldVersion:  lsn[docID],
		})}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows, err = c.env.db.Query(ctx, "SELECT id, restaurant_id, name, price_cents, allergens, diets FROM "+c.env.schema+".dishes")
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var id, rid, price int
		var name string
		var allergens, diets []string
		if err := rows.Scan(&id, &rid, &name, &price, &allergens, &diets); err != nil {
			return nil, err
		}
		p, ok := places[rid]
		if !ok {
			return nil, fmt.Errorf("dish %d: its restaurant %d is not in the table (the writer deletes a restaurant with its dishes)", id, rid)
		}
		docID := schema.DishID(strconv.Itoa(id))
		out[docID] = doc{shard: p.shard, routing: p.routing, source: jsonValue(map[string]any{
			"name": name, "price_cents": price, "allergens": allergens, "diets": diets,
			schema.FieldRestaurantID: strconv.Itoa(rid),
			schema.FieldVersion:      lsn[docID],
		})}
	}
	return out, rows.Err()
}

// jsonValue gives v the shape JSON decoding gives it.
func jsonValue(v map[string]any) map[string]any {
	b, _ := json.Marshal(v)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return out
}

// indexed reads every document of index's n shards, shard by shard
// (preference=_shards:i), after a refresh. A document on two shards is a
// problem: each row must be stored once.
func (c *chain) indexed(t *testing.T, ctx context.Context, index string, n int) (map[string]doc, []problem) {
	t.Helper()
	if err := c.admin.Refresh(ctx, index); err != nil {
		t.Fatal(err)
	}
	out := map[string]doc{}
	var problems []problem
	for i := range n {
		testenv.ScanDocs(t, c.admin, index, bulk.SearchParams{Preference: testenv.ShardPreference(i)}, 2000, func(h bulk.Hit) {
			var src map[string]any
			if err := json.Unmarshal(h.Source, &src); err != nil {
				t.Fatalf("%s/%s: %v", index, h.ID, err)
			}
			if prev, dup := out[h.ID]; dup {
				problems = append(problems, problem{h.ID, fmt.Sprintf("stored twice: on shard %d (routing %q, version %v, restaurant %v) and on shard %d (routing %q, version %v, restaurant %v)",
					prev.shard, prev.routing, prev.source[schema.FieldVersion], prev.source[schema.FieldRestaurantID],
					i, h.Routing, src[schema.FieldVersion], src[schema.FieldRestaurantID])})
			}
			out[h.ID] = doc{shard: i, routing: h.Routing, source: src}
		})
	}
	return out, problems
}

// problem is one difference between the database and an index.
type problem struct {
	id   string // the document's
	what string
}

// diff compares the database with index, built with mp, and lists every
// difference: a row missing or a document extra, a document on another
// shard or under another routing than its restaurant's location gives, at
// another version, or with other values.
func (c *chain) diff(t *testing.T, ctx context.Context, index string, mp *router.Map) (problems []problem, docs int, err error) {
	t.Helper()
	want, err := c.expected(ctx, mp)
	if err != nil {
		return nil, 0, err
	}
	got, problems := c.indexed(t, ctx, index, mp.NumShards())
	for id, w := range want {
		g, ok := got[id]
		if !ok {
			problems = append(problems, problem{id, fmt.Sprintf("missing (want it on shard %d %s at version %v)", w.shard, mp.Shard(w.shard).Name, w.source[schema.FieldVersion])})
			continue
		}
		if g.shard != w.shard || g.routing != w.routing {
			problems = append(problems, problem{id, fmt.Sprintf("on shard %d with routing %q, want shard %d (%s) with routing %q",
				g.shard, g.routing, w.shard, mp.Shard(w.shard).Name, w.routing)})
		}
		for k, v := range w.source {
			if !reflect.DeepEqual(g.source[k], v) {
				problems = append(problems, problem{id, fmt.Sprintf("%s = %v, want %v (the row's; version %v, want %v)",
					k, g.source[k], v, g.source[schema.FieldVersion], w.source[schema.FieldVersion])})
			}
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			problems = append(problems, problem{id, fmt.Sprintf("should not be there (no such row): on shard %d at version %v, restaurant %v",
				g.shard, g.source[schema.FieldVersion], g.source[schema.FieldRestaurantID])})
		}
	}
	sort.Slice(problems, func(i, j int) bool {
		if problems[i].id != problems[j].id {
			return problems[i].id < problems[j].id
		}
		return problems[i].what < problems[j].what
	})
	return problems, len(want), nil
}

// waitEqual waits until index equals the database and returns the
// number of documents. When ctx ends first, or ingest exits, it reports
// the differences, with the change events of the documents concerned, as
// errors of t and returns false.
func (c *chain) waitEqual(t *testing.T, ctx context.Context, index string, mp *router.Map) (int, bool) {
	t.Helper()
	for rounds := 1; ; rounds++ {
		problems, docs, err := c.diff(t, ctx, index, mp)
		if err == nil && len(problems) == 0 {
			return docs, true
		}
		exited := c.ingest.exited()
		select {
		case <-ctx.Done():
		case <-exited:
		case <-time.After(200 * time.Millisecond):
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", index, err)
		}
		explained := map[string]bool{}
		for i, p := range problems {
			if i == 20 {
				t.Errorf("%s: … %d differences in all", index, len(problems))
				break
			}
			t.Errorf("%s: %s %s", index, p.id, p.what)
			if !explained[p.id] && len(explained) < 10 {
				explained[p.id] = true
				t.Logf("\t%s: events %v", p.id, c.versions.of(p.id))
				for _, r := range c.versions.restaurantsOf(p.id) {
					t.Logf("\t\tits restaurant %s: events %v", r, c.versions.of(r))
				}
			}
		}
		select {
		case <-exited:
			t.Errorf("%s: ingest exited (%s) before the index equalled the database, after %d comparisons", index, c.ingest.state(), rounds)
		default:
			t.Errorf("%s does not equal the database after %d comparisons: %v", index, rounds, ctx.Err())
		}
		return 0, false
	}
}
