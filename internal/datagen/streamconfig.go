package datagen

import (
	"errors"
	"fmt"
	"math"
)

// Defaults and bounds of StreamConfig.
const (
	// DefaultStreamRestaurants is the number of restaurants when
	// StreamConfig.Restaurants is 0: about 13,000 messages at the default
	// rates, small enough for the embedded demo.
	DefaultStreamRestaurants = 1_000
	// DefaultStreamMeanDishes is the mean number of dishes per restaurant
	// when StreamConfig.MeanDishes is 0. The planning workload has ≈ 85;
	// a stream keeps volumes small.
	DefaultStreamMeanDishes = 8
	// DefaultRestaurantTopic and DefaultDishTopic are the topics used when
	// StreamConfig leaves them empty.
	DefaultRestaurantTopic = "restaurants"
	DefaultDishTopic       = "dishes"

	// MaxStreamRestaurants bounds StreamConfig.Restaurants: the reference
	// deployment's 650,000 restaurants, about 8 million messages at the
	// default rates.
	MaxStreamRestaurants = 650_000
	// MaxStreamMeanDishes bounds StreamConfig.MeanDishes.
	MaxStreamMeanDishes = 100
	// MaxStreamDocs bounds Restaurants·(1+MeanDishes), the expected number
	// of documents, which keeps a stream (held in memory whole) below a
	// few GB.
	MaxStreamDocs = 10_000_000
	// MaxUpdateRate bounds StreamConfig.UpdateRate.
	MaxUpdateRate = 10
	// maxTopicLen is Kafka's limit on topic names.
	maxTopicLen = 249

	// SeedStream is the seed of DefaultStreamConfig.
	SeedStream uint64 = 5
)

// StreamConfig controls Stream. Sizes and topics left zero take the
// defaults named on each field; rates are used as given, so the zero value
// is a valid stream of DefaultStreamRestaurants restaurants without any
// anomaly. DefaultStreamConfig returns the demo's rates.
type StreamConfig struct {
	// Restaurants is the number of restaurants placed by Generate, in
	// [1, MaxStreamRestaurants]; 0 means DefaultStreamRestaurants (1,000).
	Restaurants int
	// MeanDishes is the mean number of dishes per restaurant, in
	// (0, MaxStreamMeanDishes]; 0 means DefaultStreamMeanDishes (8). Every
	// restaurant has at least one dish, so the realised mean is at least 1.
	MeanDishes float64

	// UpdateRate is the mean number of updates of each document
	// (restaurants and dishes, Poisson distributed), in [0, MaxUpdateRate].
	UpdateRate float64
	// DeleteRate is the probability, in [0, 1], that a restaurant is
	// deleted, and independently that each dish is deleted while its
	// restaurant lives. Half of the deleted restaurants are re-created.
	DeleteRate float64
	// MoveRate is the probability, in [0, 1], that a restaurant moves once
	// to another city (see MinMoveKm).
	MoveRate float64
	// ReplayRate is the probability, in [0, 1], that a message produced by
	// the source is sent a second time (KindReplay).
	ReplayRate float64
	// OutOfOrderRate is the probability, in [0, 1], that a change other
	// than a creation is overtaken: an intermediate version produced just
	// before it is sent after it (KindOutOfOrder).
	OutOfOrderRate float64
	// EarlyDishRate is the probability, in [0, 1], that a restaurant's
	// first dish is sent before the restaurant (KindEarlyDish).
	EarlyDishRate float64
	// OrphanRate is the number, in [0, 1], of dishes of never-existing
	// restaurants per restaurant (KindOrphanDish).
	OrphanRate float64
	// PoisonRate is the number, in [0, 1], of poison messages per valid
	// message. When it is positive there are at least len(PoisonKinds)
	// poison messages, one of each kind.
	PoisonRate float64

	// Seed selects the pseudo-random sequence; it also seeds Generate.
	Seed uint64
	// RestaurantTopic and DishTopic name the topics of restaurant and dish
	// events; empty means DefaultRestaurantTopic ("restaurants") and
	// DefaultDishTopic ("dishes"). They may be equal.
	RestaurantTopic, DishTopic string
}

// DefaultStreamConfig is the embedded demo's stream: 1,000 restaurants
// with 8 dishes on average, 0.3 updates per document, 2 % deleted, 1 %
// moved, 1 % replayed and overtaken messages, 1 % early and 0.5 % orphan
// dishes, one poison message per thousand (at least one of each kind),
// seed SeedStream and the default topics.
func DefaultStreamConfig() StreamConfig {
	return StreamConfig{
		Restaurants:     DefaultStreamRestaurants,
		MeanDishes:      DefaultStreamMeanDishes,
		UpdateRate:      0.3,
		DeleteRate:      0.02,
		MoveRate:        0.01,
		ReplayRate:      0.01,
		OutOfOrderRate:  0.01,
		EarlyDishRate:   0.01,
		OrphanRate:      0.005,
		PoisonRate:      0.001,
		Seed:            SeedStream,
		RestaurantTopic: DefaultRestaurantTopic,
		DishTopic:       DefaultDishTopic,
	}
}

// withDefaults fills the zero sizes and topics.
func (c StreamConfig) withDefaults() StreamConfig {
	if c.Restaurants == 0 {
		c.Restaurants = DefaultStreamRestaurants
	}
	if c.MeanDishes == 0 {
		c.MeanDishes = DefaultStreamMeanDishes
	}
	if c.RestaurantTopic == "" {
		c.RestaurantTopic = DefaultRestaurantTopic
	}
	if c.DishTopic == "" {
		c.DishTopic = DefaultDishTopic
	}
	return c
}

// Validate reports every field of c that is out of range, joined into one
// error.
func (c StreamConfig) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("datagen: StreamConfig."+format, args...))
	}
	if c.Restaurants < 0 || c.Restaurants > MaxStreamRestaurants {
		bad("Restaurants = %d, want in [1, %d] or 0 for %d", c.Restaurants, MaxStreamRestaurants, DefaultStreamRestaurants)
	}
	if !(c.MeanDishes >= 0 && c.MeanDishes <= MaxStreamMeanDishes) { // also rejects NaN
		bad("MeanDishes = %g, want in (0, %d] or 0 for %d", c.MeanDishes, MaxStreamMeanDishes, DefaultStreamMeanDishes)
	}
	if !(c.UpdateRate >= 0 && c.UpdateRate <= MaxUpdateRate) {
		bad("UpdateRate = %g, want in [0, %d]", c.UpdateRate, MaxUpdateRate)
	}
	for _, r := range []struct {
		name string
		v    float64
	}{
		{"DeleteRate", c.DeleteRate}, {"MoveRate", c.MoveRate}, {"ReplayRate", c.ReplayRate},
		{"OutOfOrderRate", c.OutOfOrderRate}, {"EarlyDishRate", c.EarlyDishRate},
		{"OrphanRate", c.OrphanRate}, {"PoisonRate", c.PoisonRate},
	} {
		if !(r.v >= 0 && r.v <= 1) {
			bad("%s = %g, want in [0, 1]", r.name, r.v)
		}
	}
	for _, t := range []struct{ name, v string }{{"RestaurantTopic", c.RestaurantTopic}, {"DishTopic", c.DishTopic}} {
		if t.v != "" && !validTopic(t.v) {
			bad("%s = %q, want 1 to %d of [a-zA-Z0-9._-], not \".\" or \"..\"", t.name, t.v, maxTopicLen)
		}
	}
	if len(errs) == 0 {
		d := c.withDefaults()
		if docs := float64(d.Restaurants) * (1 + d.MeanDishes); docs > MaxStreamDocs {
			bad("Restaurants·(1+MeanDishes) = %d·(1+%g) = %.0f documents, want <= %d", d.Restaurants, d.MeanDishes, docs, MaxStreamDocs)
		}
	}
	return errors.Join(errs...)
}

// validTopic reports whether s is a legal Kafka topic name.
func validTopic(s string) bool {
	if len(s) == 0 || len(s) > maxTopicLen || s == "." || s == ".." {
		return false
	}
	for i := range len(s) {
		switch c := s[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '.', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// streamDishSigma is the log-normal sigma of dishes per restaurant, as in
// DefaultUS.
const streamDishSigma = 0.5

// placement is the Generate config that places c's restaurants: the US
// cities, log-normal dishes whose mean (before rounding and the floor of
// one) is c.MeanDishes.
func (c StreamConfig) placement() Config {
	return Config{
		Countries:    []string{"US"},
		Restaurants:  c.Restaurants,
		MedianDishes: c.MeanDishes / math.Exp(streamDishSigma*streamDishSigma/2),
		DishSigma:    streamDishSigma,
		Seed:         c.Seed,
	}
}

// messagesPerRestaurant is about how many messages a restaurant brings at
// DefaultStreamConfig's rates: its own events and its dishes'.
const messagesPerRestaurant = 12.6

// SizeFor sets Restaurants so that the stream holds about events messages
// at DefaultStreamConfig's rates. The stream is sized, not cut, so no
// restaurant loses its first upsert.
func (c *StreamConfig) SizeFor(events int) {
	c.Restaurants = min(MaxStreamRestaurants, max(1, int(float64(events)/messagesPerRestaurant)))
}
