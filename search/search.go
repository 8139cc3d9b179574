package search

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"

	"github.com/geoshard/geoshard/bulk"
	"github.com/geoshard/geoshard/router"
	"github.com/geoshard/geoshard/schema"
)

// Config configures a Client.
type Config struct {
	// Alias is the alias searched. Default "menu".
	Alias string
	// MapHash, if set, is the hash of the map the application expects:
	// an alias whose write index was built with another is refused
	// (*MapMismatchError). Default: accept the index's map.
	MapHash string
	// CheckInterval is how often the alias and its map are read again.
	// Default 30s.
	CheckInterval time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// DefaultCheckInterval is how often a Client reads its alias again.
const DefaultCheckInterval = 30 * time.Second

func (c Config) withDefaults() Config {
	if c.Alias == "" {
		c.Alias = "menu"
	}
	if c.CheckInterval <= 0 {
		c.CheckInterval = DefaultCheckInterval
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// MapMismatchError is the refusal of an index built with another map
// than the pinned one.
type MapMismatchError struct {
	Alias, Index   string
	Pinned, Actual string // map hashes
}

func (e *MapMismatchError) Error() string {
	return fmt.Sprintf("search: alias %s is on %s, built with map %s, not the pinned map %s", e.Alias, e.Index, e.Actual, e.Pinned)
}

// Client runs searches on an alias. It is safe for concurrent use.
type Client struct {
	admin *bulk.Admin
	cfg   Config

	mu   sync.Mutex
	view *view
}

// view is what a Client knows of its alias: the index it reads and that
// index's map.
type view struct {
	index  string
	m      *router.Map
	loaded time.Time
}

// New returns a Client; it does no I/O (the first search reads the
// alias).
func New(client *opensearch.Client, cfg Config) (*Client, error) {
	if client == nil {
		return nil, errors.New("search: nil OpenSearch client")
	}
	return &Client{admin: bulk.NewAdmin(client), cfg: cfg.withDefaults()}, nil
}

// Open returns a Client that has read its alias and map.
func Open(ctx context.Context, client *opensearch.Client, cfg Config) (*Client, error) {
	c, err := New(client, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := c.current(ctx, true); err != nil {
		return nil, err
	}
	return c, nil
}

// Index is the index the alias resolved to at the last read, and the
// hash of its map.
func (c *Client) Index(ctx context.Context) (index, mapHash string, err error) {
	v, err := c.current(ctx, false)
	if err != nil {
		return "", "", err
	}
	return v.index, v.m.Hash(), nil
}

// Map is the map searches are routed with now.
func (c *Client) Map(ctx context.Context) (*router.Map, error) {
	v, err := c.current(ctx, false)
	if err != nil {
		return nil, err
	}
	return v.m, nil
}

// current returns the view, reading the alias again if it is older than
// CheckInterval (or if force).
func (c *Client) current(ctx context.Context, force bool) (*view, error) {
	c.mu.Lock()
	v := c.view
	c.mu.Unlock()
	now := c.cfg.Now()
	if v != nil && !force && now.Sub(v.loaded) < c.cfg.CheckInterval {
		return v, nil
	}
	m, index, err := schema.LoadMap(ctx, c.admin, c.cfg.Alias)
	if err != nil {
		if v != nil && !force {
			return v, nil // keep searching with what worked; the next search asks again
		}
		if c.missing(ctx) {
			return nil, fmt.Errorf("search: alias %s does not exist: %w", c.cfg.Alias, ErrAliasNotFound)
		}
		return nil, fmt.Errorf("search: alias %s: %w", c.cfg.Alias, err)
	}
	if c.cfg.MapHash != "" && m.Hash() != c.cfg.MapHash {
		return nil, &MapMismatchError{Alias: c.cfg.Alias, Index: index, Pinned: c.cfg.MapHash, Actual: m.Hash()}
	}
	nv := &view{index: index, m: m, loaded: now}
	c.mu.Lock()
	c.view = nv
	c.mu.Unlock()
	return nv, nil
}

// missing reports whether the alias is neither an alias nor an index,
// to say so plainly when it cannot be read.
func (c *Client) missing(ctx context.Context) bool {
	_, err := c.admin.Alias(ctx, c.cfg.Alias)
	if !bulk.IsNotFound(err) {
		return false
	}
	ok, err := c.admin.IndexExists(ctx, c.cfg.Alias)
	return err == nil && !ok
}

// Area is a search area: a circle or a lat/lng rectangle. The zero Area
// is no area (every shard).
type Area struct {
	kind                     byte // 'c' circle, 'r' rectangle, 0 none
	lat, lng, radiusM        float64
	south, west, north, east float64
}

// Circle is the area within radiusM metres of a location.
func Circle(lat, lng, radiusM float64) Area {
	return Area{kind: 'c', lat: lat, lng: lng, radiusM: radiusM}
}

// Rect is the rectangle of the visible map: its south, west, north and
// east edges in degrees (west east of east crosses the antimeridian).
func Rect(south, west, north, east float64) Area {
	return Area{kind: 'r', south: south, west: west, north: north, east: east}
}

// IsZero reports whether a is no area.
func (a Area) IsZero() bool { return a.kind == 0 }

// Center is the point distances are measured from: the circle's centre,
// or the rectangle's.
func (a Area) Center() (lat, lng float64) {
	if a.kind == 'c' {
		return a.lat, a.lng
	}
	lng = (a.west + a.east) / 2
	if a.west > a.east {
		lng += 180
		if lng > 180 {
			lng -= 360
		}
	}
	return (a.south + a.north) / 2, lng
}

// cover returns the shards the area needs under m (every shard for no
// area).
func (a Area) cover(m *router.Map) ([]int, error) {
	switch a.kind {
	case 'c':
		cov, err := m.CoverCircle(a.lat, a.lng, a.radiusM)
		return cov.Shards, err
	case 'r':
		cov, err := m.CoverRect(a.south, a.west, a.north, a.east)
		return cov.Shards, err
	}
	all := make([]int, m.NumShards())
	for i := range all {
		all[i] = i
	}
	return all, nil
}

// filter is the geo filter on the restaurant's location.
func (a Area) filter() map[string]any {
	switch a.kind {
	case 'c':
		return map[string]any{"geo_distance": map[string]any{
			"distance": fmt.Sprintf("%.3fm", a.radiusM), schema.FieldLocation: map[string]any{"lat": a.lat, "lon": a.lng}}}
	case 'r':
		return map[string]any{"geo_bounding_box": map[string]any{schema.FieldLocation: map[string]any{
			"top_left": map[string]any{"lat": a.north, "lon": a.west}, "bottom_right": map[string]any{"lat": a.south, "lon": a.east}}}}
	}
	return nil
}

// Routed is which shards a search asked.
type Routed struct {
	// Shards are the names of the shards asked.
	Shards []string
	// Routing is the routing parameter sent ("" when every shard was).
	Routing string
	// AllShards is set when every shard was asked: no area, or asked for.
	AllShards bool
	// Index is the index searched; MapHash its map's.
	Index, MapHash string
}

// route picks the shards of an area, or every shard.
func (c *Client) route(ctx context.Context, a Area, all bool) (*view, Routed, error) {
	v, err := c.current(ctx, false)
	if err != nil {
		return nil, Routed{}, err
	}
	shards, err := a.cover(v.m)
	if err != nil {
		return nil, Routed{}, fmt.Errorf("search: %w", err)
	}
	r := Routed{Shards: v.m.Names(shards), Index: v.index, MapHash: v.m.Hash()}
	if all || a.IsZero() || len(shards) == v.m.NumShards() {
		r.AllShards = true
		r.Shards = v.m.Names(allShards(v.m))
		return v, r, nil
	}
	r.Routing = v.m.Routing(shards)
	return v, r, nil
}

func allShards(m *router.Map) []int {
	out := make([]int, m.NumShards())
	for i := range out {
		out[i] = i
	}
	return out
}

// post sends a search body to the view's index under the routing, and
// decodes the answer into out.
func (c *Client) post(ctx context.Context, r Routed, body []byte, out any) error {
	return c.admin.Send(ctx, bulk.SearchRequest(r.Index, body, bulk.SearchParams{Routing: r.Routing}), out)
}
