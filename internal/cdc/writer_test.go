//go:build realcluster

package cdc

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang/geo/s2"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/geoshard/geoshard/router"
)

// city is where restaurants are put: far enough apart that each is on a
// geoshard of its own under the test maps, or shares one with a
// neighbour at most.
type city struct {
	name     string
	lat, lon float64
}

var cities = []city{
	{"San Francisco", 37.7749, -122.4194},
	{"Los Angeles", 34.0522, -118.2437},
	{"Seattle", 47.6062, -122.3321},
	{"Phoenix", 33.4484, -112.0740},
	{"Denver", 39.7392, -104.9903},
	{"Dallas", 32.7767, -96.7970},
	{"Minneapolis", 44.9778, -93.2650},
	{"Chicago", 41.8781, -87.6298},
	{"Atlanta", 33.7490, -84.3880},
	{"Miami", 25.7617, -80.1918},
	{"Washington", 38.9072, -77.0369},
	{"New York", 40.7128, -74.0060},
	{"Boston", 42.3601, -71.0589},
}

// ids is a set of row ids that can be drawn from at random in the order
// of a seeded generator (a map's order is not).
type ids struct {
	list []int
	pos  map[int]int
}

func (s *ids) add(id int) {
	if s.pos == nil {
		s.pos = map[int]int{}
	}
	s.pos[id] = len(s.list)
	s.list = append(s.list, id)
}

func (s *ids) remove(id int) {
	i := s.pos[id]
	last := s.list[len(s.list)-1]
	s.list[i], s.pos[last] = last, i
	s.list = s.list[:len(s.list)-1]
	delete(s.pos, id)
}

func (s *ids) pick(rng *rand.Rand) int { return s.list[rng.IntN(len(s.list))] }
func (s *ids) len() int                { return len(s.list) }

// writer changes the two tables as an application would, one statement
// (or one transaction) at a time, from one goroutine: it knows what is in
// the tables because nothing else writes them. Every move changes the
// geoshard under mp: a restaurant goes to a city on another shard, a dish
// to a restaurant on another shard.
type writer struct {
	db     *pgxpool.Pool
	schema string
	mp     *router.Map
	rng    *rand.Rand

	city               map[int]int // restaurant → index in cities
	rests              ids
	dishRest           map[int]int // dish → its restaurant
	dishes             ids
	nextRest, nextDish int
	ops                atomic.Int64
	mu                 sync.Mutex
	counts             map[string]int // statements by kind
	cancel             context.CancelFunc
	done               chan error    // the error that ended the changes, or nil
	failed             chan struct{} // closed when a change failed
	stopped            sync.Once
	err                error
}

func newWriter(db *pgxpool.Pool, schema string, mp *router.Map, seed uint64) *writer {
	return &writer{
		db: db, schema: schema, mp: mp, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		city: map[int]int{}, dishRest: map[int]int{}, nextRest: 1, nextDish: 1, counts: map[string]int{},
	}
}

// shardOf is the shard of a city under the writer's map.
func (w *writer) shardOf(c int) int {
	cell := s2.CellIDFromLatLng(s2.LatLngFromDegrees(cities[c].lat, cities[c].lon)).Parent(w.mp.Level())
	return w.mp.LocateCell(cell)
}

// seed inserts restaurants restaurants with dishes dishes each.
func (w *writer) seed(ctx context.Context, restaurants, dishes int) error {
	for range restaurants {
		rid, err := w.insertRestaurant(ctx)
		if err != nil {
			return err
		}
		for range dishes {
			if err := w.insertDish(ctx, rid); err != nil {
				return err
			}
		}
	}
	return nil
}

// start changes the tables every interval until stop.
func (w *writer) start(interval time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done, w.failed = cancel, make(chan error, 1), make(chan struct{})
	go func() {
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				w.done <- nil
				return
			case <-tick.C:
			}
			if err := w.step(ctx); err != nil && ctx.Err() == nil {
				w.done <- err
				close(w.failed)
				return
			}
			w.ops.Add(1)
		}
	}()
}

// stop ends the changes and returns the error that ended them, if one
// did. It may be called more than once.
func (w *writer) stop() error {
	w.stopped.Do(func() {
		w.cancel()
		w.err = <-w.done
	})
	return w.err
}

// waitOps waits until n more changes than at the call were made, failing
// t if the writer stopped on an error or ctx ends.
func (w *writer) waitOps(ctx context.Context, t *testing.T, n int64) {
	t.Helper()
	target := w.ops.Load() + n
	for w.ops.Load() < target {
		select {
		case <-w.failed:
			t.Fatalf("writer stopped after %d changes: %v", w.ops.Load(), w.stop())
		case <-ctx.Done():
			t.Fatalf("writer: %d changes, want %d: %v", w.ops.Load(), target, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// step makes one change, drawn at random: inserts, moves of restaurants
// and of dishes across geoshards, edits, and deletes (a restaurant with
// its dishes, in one transaction).
func (w *writer) step(ctx context.Context) error {
	r := w.rng.IntN(100)
	switch {
	case r < 12 || w.rests.len() < 10:
		_, err := w.insertRestaurant(ctx)
		return err
	case r < 35 || w.dishes.len() < 10:
		return w.insertDish(ctx, w.rests.pick(w.rng))
	case r < 50:
		return w.moveRestaurant(ctx)
	case r < 70:
		return w.moveDish(ctx)
	case r < 82:
		return w.editDish(ctx)
	case r < 94:
		return w.deleteDish(ctx)
	default:
		return w.deleteRestaurant(ctx)
	}
}

func (w *writer) count(kind string) {
	w.mu.Lock()
	w.counts[kind]++
	w.mu.Unlock()
}

// summary lists the changes made, by kind.
func (w *writer) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return fmt.Sprintf("%d restaurant inserts, %d dish inserts, %d restaurant moves, %d dish moves, %d dish edits, %d dish deletes, %d restaurant deletes (%d dishes with them)",
		w.counts["insert restaurant"], w.counts["insert dish"], w.counts["move restaurant"], w.counts["move dish"],
		w.counts["edit dish"], w.counts["delete dish"], w.counts["delete restaurant"], w.counts["dishes deleted with their restaurant"])
}

func (w *writer) exec(ctx context.Context, kind, sql string, args ...any) error {
	if _, err := w.db.Exec(ctx, sql, args...); err != nil {
		return fmt.Errorf("%s: %w", kind, err)
	}
	w.count(kind)
	return nil
}

func (w *writer) insertRestaurant(ctx context.Context) (int, error) {
	id, c := w.nextRest, w.rng.IntN(len(cities))
	// Within about 5 km of the centre: the same level-10 cells, mostly.
	lat, lon := cities[c].lat+(w.rng.Float64()-0.5)*0.05, cities[c].lon+(w.rng.Float64()-0.5)*0.05
	err := w.exec(ctx, "insert restaurant", "INSERT INTO "+w.schema+".restaurants VALUES ($1, $2, $3, $4, $5)",
		id, fmt.Sprintf("%s %d", cities[c].name, id), lat, lon, []string{"cuisine" + fmt.Sprint(w.rng.IntN(5)), "cuisine" + fmt.Sprint(5+w.rng.IntN(5))})
	if err != nil {
		return 0, err
	}
	w.nextRest++
	w.city[id] = c
	w.rests.add(id)
	return id, nil
}

func (w *writer) insertDish(ctx context.Context, rid int) error {
	id := w.nextDish
	err := w.exec(ctx, "insert dish", "INSERT INTO "+w.schema+".dishes VALUES ($1, $2, $3, $4, $5, $6)",
		id, rid, fmt.Sprintf("dish %d", id), 500+w.rng.IntN(3000), []string{"gluten"}, []string{"vegetarian"})
	if err != nil {
		return err
	}
	w.nextDish++
	w.dishRest[id] = rid
	w.dishes.add(id)
	return nil
}

// moveRestaurant moves a restaurant to a city on another shard.
func (w *writer) moveRestaurant(ctx context.Context) error {
	id := w.rests.pick(w.rng)
	from := w.shardOf(w.city[id])
	c := w.rng.IntN(len(cities))
	for w.shardOf(c) == from {
		c = w.rng.IntN(len(cities))
	}
	if err := w.exec(ctx, "move restaurant", "UPDATE "+w.schema+".restaurants SET lat = $2, lon = $3 WHERE id = $1",
		id, cities[c].lat, cities[c].lon); err != nil {
		return err
	}
	w.city[id] = c
	return nil
}

// moveDish gives a dish a restaurant on another shard, if there is one.
func (w *writer) moveDish(ctx context.Context) error {
	d := w.dishes.pick(w.rng)
	from := w.shardOf(w.city[w.dishRest[d]])
	for range 20 {
		r := w.rests.pick(w.rng)
		if w.shardOf(w.city[r]) == from {
			continue
		}
		if err := w.exec(ctx, "move dish", "UPDATE "+w.schema+".dishes SET restaurant_id = $2 WHERE id = $1", d, r); err != nil {
			return err
		}
		w.dishRest[d] = r
		return nil
	}
	return w.editDish(ctx)
}

func (w *writer) editDish(ctx context.Context) error {
	d := w.dishes.pick(w.rng)
	return w.exec(ctx, "edit dish", "UPDATE "+w.schema+".dishes SET price_cents = $2, name = $3 WHERE id = $1",
		d, 500+w.rng.IntN(3000), fmt.Sprintf("dish %d, edited", d))
}

func (w *writer) deleteDish(ctx context.Context) error {
	d := w.dishes.pick(w.rng)
	if err := w.exec(ctx, "delete dish", "DELETE FROM "+w.schema+".dishes WHERE id = $1", d); err != nil {
		return err
	}
	w.dishes.remove(d)
	delete(w.dishRest, d)
	return nil
}

// deleteRestaurant deletes a restaurant and its dishes in one
// transaction, while more than 20 restaurants are left.
func (w *writer) deleteRestaurant(ctx context.Context) error {
	if w.rests.len() <= 20 {
		return w.editDish(ctx)
	}
	id := w.rests.pick(w.rng)
	var n int64
	err := pgx.BeginFunc(ctx, w.db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM "+w.schema+".dishes WHERE restaurant_id = $1", id)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, "DELETE FROM "+w.schema+".restaurants WHERE id = $1", id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete restaurant: %w", err)
	}
	w.count("delete restaurant")
	w.mu.Lock()
	w.counts["dishes deleted with their restaurant"] += int(n)
	w.mu.Unlock()
	var gone []int
	for d, r := range w.dishRest {
		if r == id {
			gone = append(gone, d)
		}
	}
	// In id order: the set's order, and so every later draw, follows
	// from the seed alone.
	slices.Sort(gone)
	for _, d := range gone {
		w.dishes.remove(d)
		delete(w.dishRest, d)
	}
	w.rests.remove(id)
	delete(w.city, id)
	return nil
}
