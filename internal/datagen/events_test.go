package datagen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// testStreamConfig has rates high enough that every kind occurs often.
func testStreamConfig() StreamConfig {
	return StreamConfig{
		Restaurants:    2_000,
		MeanDishes:     4,
		UpdateRate:     0.5,
		DeleteRate:     0.1,
		MoveRate:       0.1,
		ReplayRate:     0.05,
		OutOfOrderRate: 0.05,
		EarlyDishRate:  0.1,
		OrphanRate:     0.05,
		PoisonRate:     0.002,
		Seed:           42,
	}
}

// testStream generates testStreamConfig once per test binary; tests must
// not modify the result.
var testStream = sync.OnceValues(func() ([]Message, error) {
	cities, err := embeddedCities()
	if err != nil {
		return nil, err
	}
	return Stream(cities, testStreamConfig())
})

func mustTestStream(tb testing.TB) []Message {
	tb.Helper()
	msgs, err := testStream()
	if err != nil {
		tb.Fatalf("Stream(testStreamConfig()) error: %v", err)
	}
	return msgs
}

func countKinds(msgs []Message) map[string]int {
	kinds := map[string]int{}
	for _, m := range msgs {
		kinds[m.Kind]++
	}
	return kinds
}

// mustEvent decodes the value of a valid message.
func mustEvent(t *testing.T, i int, m Message) Event {
	t.Helper()
	var e Event
	if err := json.Unmarshal(m.Value, &e); err != nil {
		t.Fatalf("message %d (%s): json.Unmarshal error: %v", i, m.Kind, err)
	}
	return e
}

func TestStreamDeterministic(t *testing.T) {
	cities := mustCities(t)
	cfg := testStreamConfig()
	a := mustTestStream(t)
	b, err := Stream(cities, cfg)
	if err != nil {
		t.Fatalf("Stream() error: %v", err)
	}
	if !slices.EqualFunc(a, b, equalMessage) {
		t.Errorf("Stream(seed %d) differs between two calls", cfg.Seed)
	}
	cfg.Seed++
	c, err := Stream(cities, cfg)
	if err != nil {
		t.Fatalf("Stream() error: %v", err)
	}
	if slices.EqualFunc(a, c, equalMessage) {
		t.Errorf("Stream(seed %d) = Stream(seed %d), want different streams", cfg.Seed-1, cfg.Seed)
	}
}

func equalMessage(a, b Message) bool {
	return a.Topic == b.Topic && a.Kind == b.Kind && bytes.Equal(a.Key, b.Key) && bytes.Equal(a.Value, b.Value)
}

// checkCount fails unless got is within 4 standard deviations (plus 3) of
// the binomial expectation n·p; for a Poisson count pass p as the mean and
// poisson true.
func checkCount(t *testing.T, what string, got, n int, p float64, poisson bool) {
	t.Helper()
	want := float64(n) * p
	variance := want * (1 - p)
	if poisson {
		variance = want
	}
	if tol := 4*math.Sqrt(variance) + 3; math.Abs(float64(got)-want) > tol {
		t.Errorf("%s = %d, want %.0f ± %.0f (%d × %g)", what, got, want, tol, n, p)
	}
}

func TestStreamRates(t *testing.T) {
	cfg := testStreamConfig()
	msgs := mustTestStream(t)
	k := countKinds(msgs)
	t.Logf("%d messages: %v", len(msgs), k)

	lives := k[KindRestaurantUpsert]
	dishes := k[KindDishUpsert] + k[KindEarlyDish]
	docs := lives + dishes
	changes := k[KindRestaurantUpdate] + k[KindRestaurantMove] + k[KindRestaurantDelete] + k[KindDishUpdate] + k[KindDishDelete]
	poison := 0
	for _, kind := range PoisonKinds {
		poison += k[kind]
	}
	source := len(msgs) - poison - k[KindReplay] - k[KindOutOfOrder]

	checkCount(t, "restaurant_delete", k[KindRestaurantDelete], cfg.Restaurants, cfg.DeleteRate, false)
	checkCount(t, "re-created restaurants", lives-cfg.Restaurants, k[KindRestaurantDelete], recreateFraction, false)
	checkCount(t, "restaurant_move", k[KindRestaurantMove], lives, cfg.MoveRate, false)
	checkCount(t, "restaurant_update + dish_update", k[KindRestaurantUpdate]+k[KindDishUpdate], docs, cfg.UpdateRate, true)
	checkCount(t, "replay", k[KindReplay], source, cfg.ReplayRate, false)
	checkCount(t, "out_of_order", k[KindOutOfOrder], changes, cfg.OutOfOrderRate, false)
	checkCount(t, "early_dish", k[KindEarlyDish], cfg.Restaurants, cfg.EarlyDishRate, false)
	checkCount(t, "orphan_dish", k[KindOrphanDish], cfg.Restaurants, cfg.OrphanRate, false)
	if want := max(len(PoisonKinds), int(math.Round(cfg.PoisonRate*float64(len(msgs)-poison)))); poison != want {
		t.Errorf("poison messages = %d, want round(%g × %d valid) = %d", poison, cfg.PoisonRate, len(msgs)-poison, want)
	}
	if mean := float64(dishes) / float64(lives); math.Abs(mean-cfg.MeanDishes) > 0.1*cfg.MeanDishes {
		t.Errorf("dishes per restaurant = %.2f, want %g ± 10%%", mean, cfg.MeanDishes)
	}
	for _, kind := range append(ValidKinds[:], PoisonKinds[:]...) {
		if k[kind] == 0 {
			t.Errorf("Stream(testStreamConfig()) has no %s message", kind)
		}
	}
	if len(k) != len(ValidKinds)+len(PoisonKinds) {
		t.Errorf("Stream(testStreamConfig()) kinds = %v, want only ValidKinds and PoisonKinds", k)
	}
}

// validateEvent checks a message against the schema of
// testdata/events/README.md, independently of Event: it reads the raw JSON.
func validateEvent(m Message) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(m.Value, &raw); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	for f := range raw {
		if !slices.Contains([]string{"type", "op", "id", "restaurant_id", "version", "location", "doc"}, f) {
			return fmt.Errorf("unknown field %q", f)
		}
	}
	str := func(f string) (string, error) {
		v, ok := raw[f]
		if !ok {
			return "", fmt.Errorf("%s missing", f)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil || v[0] != '"' {
			return "", fmt.Errorf("%s = %s, want a string", f, v)
		}
		if s == "" || len(s) > MaxIDBytes {
			return "", fmt.Errorf("%s = %q, want 1 to %d bytes", f, s, MaxIDBytes)
		}
		return s, nil
	}
	typ, err := str("type")
	if err != nil {
		return err
	}
	op, err := str("op")
	if err != nil {
		return err
	}
	if typ != TypeRestaurant && typ != TypeDish {
		return fmt.Errorf("type = %q", typ)
	}
	if op != OpUpsert && op != OpDelete {
		return fmt.Errorf("op = %q", op)
	}
	id, err := str("id")
	if err != nil {
		return err
	}
	key := id
	if typ == TypeDish {
		if key, err = str("restaurant_id"); err != nil {
			return err
		}
	} else if _, ok := raw["restaurant_id"]; ok {
		return errors.New("restaurant_id on a restaurant")
	}
	if string(m.Key) != key {
		return fmt.Errorf("key %q, want %q", m.Key, key)
	}
	if !regexp.MustCompile(`^[0-9]+$`).Match(raw["version"]) {
		return fmt.Errorf("version = %s, want a non-negative JSON integer", raw["version"])
	}
	if _, err := strconv.ParseInt(string(raw["version"]), 10, 64); err != nil {
		return fmt.Errorf("version = %s: %w", raw["version"], err)
	}

	loc, hasLoc := raw["location"]
	if want := typ == TypeRestaurant && op == OpUpsert; hasLoc != want {
		return fmt.Errorf("%s %s has location %t, want %t", typ, op, hasLoc, want)
	}
	if hasLoc {
		var ll map[string]json.RawMessage
		if err := json.Unmarshal(loc, &ll); err != nil || len(ll) != 2 {
			return fmt.Errorf("location = %s, want {lat, lon}", loc)
		}
		for _, c := range []struct {
			name  string
			limit float64
		}{{"lat", 90}, {"lon", 180}} {
			v, err := strconv.ParseFloat(string(ll[c.name]), 64) // rejects strings and absence
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < -c.limit || v > c.limit {
				return fmt.Errorf("location.%s = %s, want a number in [-%g, %g]", c.name, ll[c.name], c.limit, c.limit)
			}
		}
	}
	doc, hasDoc := raw["doc"]
	if hasDoc != (op == OpUpsert) {
		return fmt.Errorf("%s %s has doc %t", typ, op, hasDoc)
	}
	if hasDoc && (doc[0] != '{' || len(doc) > MaxDocBytes) {
		return fmt.Errorf("doc of %d bytes starting %q, want an object of at most %d bytes", len(doc), doc[:1], MaxDocBytes)
	}
	return nil
}

func TestStreamSchema(t *testing.T) {
	cfg := testStreamConfig().withDefaults()
	msgs := mustTestStream(t)
	created := map[string]bool{} // restaurants with an upsert
	for _, m := range msgs {
		if m.Kind == KindRestaurantUpsert {
			created[string(m.Key)] = true
		}
	}
	for i, m := range msgs {
		err := validateEvent(m)
		if IsPoison(m.Kind) {
			if err == nil {
				t.Errorf("message %d (%s) %.200s passes validation, want rejected", i, m.Kind, m.Value)
			}
			if !created[string(m.Key)] {
				t.Errorf("message %d (%s) has key %q, want a restaurant of the stream", i, m.Kind, m.Key)
			}
			continue
		}
		if err != nil {
			t.Fatalf("message %d (%s) %s: %v", i, m.Kind, m.Value, err)
		}
		e := mustEvent(t, i, m)
		if string(m.Key) != e.Key() {
			t.Errorf("message %d: key %q, want Event.Key() = %q", i, m.Key, e.Key())
		}
		wantTopic := map[string]string{TypeRestaurant: cfg.RestaurantTopic, TypeDish: cfg.DishTopic}[e.Type]
		if m.Topic != wantTopic {
			t.Errorf("message %d (%s): topic %q, want %q", i, e.Type, m.Topic, wantTopic)
		}
		// Event must encode what it decodes, so its tags match the wire.
		if again, err := json.Marshal(e); err != nil || !bytes.Equal(again, m.Value) {
			t.Fatalf("message %d: json.Marshal(Event) = %s, %v; want %s", i, again, err, m.Value)
		}
		if e.Op == OpUpsert {
			checkDoc(t, i, e)
		}
	}
}

// checkDoc checks the content Stream promises for docs.
func checkDoc(t *testing.T, i int, e Event) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(e.Doc))
	dec.DisallowUnknownFields()
	subset := func(what string, got []string, of []string) {
		for _, s := range got {
			if !slices.Contains(of, s) {
				t.Errorf("message %d: %s %q, want one of %v", i, what, s, of)
			}
		}
	}
	switch e.Type {
	case TypeRestaurant:
		var d RestaurantDoc
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("message %d: restaurant doc %s: %v", i, e.Doc, err)
		}
		subset("cuisine", d.Cuisines, Cuisines[:])
		if d.Name == "" || d.City == "" || len(d.Cuisines) < 1 || len(d.Cuisines) > 3 ||
			d.PriceLevel < 1 || d.PriceLevel > 4 || d.Rating < 1 || d.Rating > 5 {
			t.Errorf("message %d: restaurant doc %s out of range", i, e.Doc)
		}
	case TypeDish:
		var d DishDoc
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("message %d: dish doc %s: %v", i, e.Doc, err)
		}
		subset("allergen", d.Allergens, Allergens[:])
		subset("diet", d.Diets, Diets[:])
		if d.Name == "" || d.Description == "" || d.PriceCents < 100 || d.Allergens == nil || d.Diets == nil {
			t.Errorf("message %d: dish doc %s out of range", i, e.Doc)
		}
	}
}

type docKey struct{ typ, id string }

// docState is a document as the messages up to some point leave it.
type docState struct {
	version      int64
	live         bool
	restaurantID string
	loc          Location
	doc          string
}

func apply(states map[docKey]docState, e Event) {
	s := docState{version: e.Version, live: e.Op == OpUpsert, restaurantID: e.RestaurantID, doc: string(e.Doc)}
	if e.Location != nil {
		s.loc = *e.Location
	}
	states[docKey{e.Type, e.ID}] = s
}

func TestStreamOrder(t *testing.T) {
	msgs := mustTestStream(t)
	source := map[docKey]docState{}  // after the source messages only
	lww := map[docKey]docState{}     // highest version wins, over all valid messages
	sent := map[string][]int{}       // value → indexes, for replays
	firstUpsert := map[string]int{}  // restaurant id → index of its first upsert
	lastLoc := map[string]Location{} // restaurant id → location of its last upsert
	var early []int
	orphanOf := map[string]bool{}
	maxEarlyGap := 0

	for i, m := range msgs {
		if IsPoison(m.Kind) {
			continue
		}
		e := mustEvent(t, i, m)
		k := docKey{e.Type, e.ID}
		prev, exists := source[k]
		restaurant := source[docKey{TypeRestaurant, e.RestaurantID}]

		switch m.Kind {
		case KindReplay:
			if len(sent[string(m.Value)]) == 0 {
				t.Errorf("message %d: replay of a value never sent before", i)
			}
			if exists && e.Version > prev.version {
				t.Errorf("message %d: replay of %v version %d, newer than the current %d", i, k, e.Version, prev.version)
			}
		case KindOutOfOrder:
			if !exists || e.Version >= prev.version {
				t.Errorf("message %d: out_of_order %v version %d, want below the current %d", i, k, e.Version, prev.version)
			}
		default:
			if exists && e.Version <= prev.version {
				t.Errorf("message %d (%s): %v version %d after %d, want increasing", i, m.Kind, k, e.Version, prev.version)
			}
			if created := m.Kind == KindRestaurantUpsert || m.Kind == KindDishUpsert || m.Kind == KindEarlyDish || m.Kind == KindOrphanDish; created == (exists && prev.live) {
				t.Errorf("message %d (%s): %v live before = %t", i, m.Kind, k, exists && prev.live)
			}
			if !exists && e.Version != 1 {
				t.Errorf("message %d (%s): first version of %v = %d, want 1", i, m.Kind, k, e.Version)
			}
			switch m.Kind {
			case KindRestaurantUpsert:
				if _, ok := firstUpsert[e.ID]; !ok {
					firstUpsert[e.ID] = i
				} else if *e.Location != lastLoc[e.ID] {
					t.Errorf("message %d: %s re-created at %v, was at %v", i, e.ID, *e.Location, lastLoc[e.ID])
				}
			case KindRestaurantMove:
				if d := greatCircleKm(prev.loc, *e.Location); d <= 50 || d < MinMoveKm {
					t.Errorf("message %d: restaurant_move of %s by %.1f km, want >= %d km", i, e.ID, d, MinMoveKm)
				}
			case KindRestaurantUpdate:
				if d := greatCircleKm(prev.loc, *e.Location); d > MaxNudgeKm+0.001 {
					t.Errorf("message %d: restaurant_update moves %s by %.3f km, want <= %g", i, e.ID, d, MaxNudgeKm)
				}
			case KindRestaurantDelete:
				for dk, d := range source {
					if dk.typ == TypeDish && d.live && d.restaurantID == e.ID {
						t.Errorf("message %d: restaurant_delete of %s while dish %s is live", i, e.ID, dk.id)
					}
				}
			case KindDishUpsert, KindDishUpdate, KindDishDelete:
				if !restaurant.live {
					t.Errorf("message %d (%s): dish %s of %s, which is not live", i, m.Kind, e.ID, e.RestaurantID)
				}
			case KindEarlyDish:
				if _, ok := firstUpsert[e.RestaurantID]; ok {
					t.Errorf("message %d: early_dish %s after its restaurant %s", i, e.ID, e.RestaurantID)
				}
				early = append(early, i)
			case KindOrphanDish:
				orphanOf[e.RestaurantID] = true
			}
			apply(source, e)
			if e.Location != nil {
				lastLoc[e.ID] = *e.Location
			}
		}
		if cur, ok := lww[k]; !ok || e.Version > cur.version {
			apply(lww, e)
		}
		sent[string(m.Value)] = append(sent[string(m.Value)], i)
	}

	for _, i := range early {
		e := mustEvent(t, i, msgs[i])
		j, ok := firstUpsert[e.RestaurantID]
		if !ok || j < i {
			t.Errorf("message %d: early_dish %s, restaurant %s first upserted at %d", i, e.ID, e.RestaurantID, j)
			continue
		}
		maxEarlyGap = max(maxEarlyGap, j-i)
	}
	t.Logf("%d early dishes, their restaurants follow within %d messages", len(early), maxEarlyGap)
	if maxEarlyGap > 200 {
		t.Errorf("an early dish precedes its restaurant by %d messages, want at most 200", maxEarlyGap)
	}
	for id := range orphanOf {
		if _, ok := firstUpsert[id]; ok {
			t.Errorf("orphan restaurant %s has an upsert", id)
		}
		for i, m := range msgs {
			if string(m.Key) == id && m.Kind != KindOrphanDish && m.Kind != KindReplay {
				t.Errorf("message %d (%s) has the key %s of an orphan dish", i, m.Kind, id)
			}
		}
	}

	// The final state: highest version wins, and ignoring replays and
	// out_of_order messages gives the same result.
	if len(lww) != len(source) {
		t.Errorf("final state has %d documents, the source messages %d", len(lww), len(source))
	}
	live := map[string]int{}
	for k, s := range lww {
		if s != source[k] {
			t.Errorf("final %v = %+v, the source messages leave %+v", k, s, source[k])
		}
		if k.typ == TypeDish && s.live {
			live[TypeDish]++
			if !lww[docKey{TypeRestaurant, s.restaurantID}].live && !orphanOf[s.restaurantID] {
				t.Errorf("final dish %s belongs to %s, which is not live", k.id, s.restaurantID)
			}
		} else if s.live {
			live[TypeRestaurant]++
		}
	}
	t.Logf("final state: %d live restaurants, %d live dishes, %d documents in all", live[TypeRestaurant], live[TypeDish], len(lww))
}

func TestStreamPoisonKinds(t *testing.T) {
	cities := mustCities(t)
	tests := []struct {
		name string
		rate float64
		want int // poison messages
	}{
		{"none", 0, 0},
		{"tiny rate gives one of each", 1e-9, len(PoisonKinds)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			msgs, err := Stream(cities, StreamConfig{Restaurants: 20, PoisonRate: tc.rate, Seed: 9})
			if err != nil {
				t.Fatalf("Stream() error: %v", err)
			}
			k := countKinds(msgs)
			got := 0
			for _, kind := range PoisonKinds {
				got += k[kind]
				if tc.want > 0 && k[kind] != 1 {
					t.Errorf("Stream(PoisonRate %g) has %d %s messages, want 1", tc.rate, k[kind], kind)
				}
			}
			if got != tc.want {
				t.Errorf("Stream(PoisonRate %g) has %d poison messages, want %d", tc.rate, got, tc.want)
			}
			for i, m := range msgs {
				if m.Kind == KindPoisonOversized && len(m.Value) <= MaxDocBytes {
					t.Errorf("message %d: poison_oversized of %d bytes, want > %d", i, len(m.Value), MaxDocBytes)
				}
			}
		})
	}
}

func TestStreamZeroConfig(t *testing.T) {
	msgs, err := Stream(mustCities(t), StreamConfig{})
	if err != nil {
		t.Fatalf("Stream(StreamConfig{}) error: %v", err)
	}
	k := countKinds(msgs)
	if k[KindRestaurantUpsert] != DefaultStreamRestaurants {
		t.Errorf("Stream(StreamConfig{}) has %d restaurant_upsert, want %d", k[KindRestaurantUpsert], DefaultStreamRestaurants)
	}
	if mean := float64(k[KindDishUpsert]) / DefaultStreamRestaurants; math.Abs(mean-DefaultStreamMeanDishes) > 0.1*DefaultStreamMeanDishes {
		t.Errorf("Stream(StreamConfig{}) has %.2f dishes per restaurant, want %d ± 10%%", mean, DefaultStreamMeanDishes)
	}
	if len(k) != 2 {
		t.Errorf("Stream(StreamConfig{}) kinds = %v, want only restaurant_upsert and dish_upsert", k)
	}
	for i, m := range msgs {
		if want := map[string]string{KindRestaurantUpsert: DefaultRestaurantTopic, KindDishUpsert: DefaultDishTopic}[m.Kind]; m.Topic != want {
			t.Fatalf("message %d (%s): topic %q, want %q", i, m.Kind, m.Topic, want)
		}
	}
}

func TestStreamConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		edit func(*StreamConfig)
		want []string // substrings of the error; none means valid
	}{
		{"zero value", func(c *StreamConfig) { *c = StreamConfig{} }, nil},
		{"default", func(*StreamConfig) {}, nil},
		{"one topic", func(c *StreamConfig) { c.RestaurantTopic, c.DishTopic = "changes", "changes" }, nil},
		{"all rates 1", func(c *StreamConfig) {
			c.DeleteRate, c.MoveRate, c.ReplayRate, c.OutOfOrderRate, c.EarlyDishRate, c.OrphanRate, c.PoisonRate = 1, 1, 1, 1, 1, 1, 1
		}, nil},
		{"negative restaurants", func(c *StreamConfig) { c.Restaurants = -1 }, []string{"Restaurants = -1"}},
		{"too many restaurants", func(c *StreamConfig) { c.Restaurants = MaxStreamRestaurants + 1 }, []string{fmt.Sprintf("Restaurants = %d", MaxStreamRestaurants+1)}},
		{"NaN dishes", func(c *StreamConfig) { c.MeanDishes = math.NaN() }, []string{"MeanDishes = NaN"}},
		{"too many dishes", func(c *StreamConfig) { c.MeanDishes = 101 }, []string{"MeanDishes = 101"}},
		{"update rate", func(c *StreamConfig) { c.UpdateRate = 11 }, []string{"UpdateRate = 11, want in [0, 10]"}},
		{"delete rate", func(c *StreamConfig) { c.DeleteRate = 1.5 }, []string{"DeleteRate = 1.5, want in [0, 1]"}},
		{"negative poison", func(c *StreamConfig) { c.PoisonRate = -0.1 }, []string{"PoisonRate = -0.1"}},
		{"NaN replay", func(c *StreamConfig) { c.ReplayRate = math.NaN() }, []string{"ReplayRate = NaN"}},
		{"topic with space", func(c *StreamConfig) { c.DishTopic = "my dishes" }, []string{`DishTopic = "my dishes"`}},
		{"topic dot", func(c *StreamConfig) { c.RestaurantTopic = "." }, []string{`RestaurantTopic = "."`}},
		{"long topic", func(c *StreamConfig) { c.DishTopic = strings.Repeat("d", 250) }, []string{"DishTopic"}},
		{"too many documents", func(c *StreamConfig) { c.Restaurants, c.MeanDishes = 200_000, 100 }, []string{fmt.Sprintf("20200000 documents, want <= %d", MaxStreamDocs)}},
		{"every bad field", func(c *StreamConfig) { c.Restaurants, c.OrphanRate, c.MoveRate = -5, 2, -1 },
			[]string{"Restaurants = -5", "OrphanRate = 2", "MoveRate = -1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultStreamConfig()
			tc.edit(&cfg)
			err := cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error containing %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate() = %q, want it to contain %q", err, w)
				}
			}
			if _, serr := Stream(mustCities(t), cfg); serr == nil || serr.Error() != err.Error() {
				t.Errorf("Stream() error = %v, want %v", serr, err)
			}
		})
	}
}

func TestStreamErrors(t *testing.T) {
	cities := []City{{Name: "Toronto", Country: "CA", Lat: 43.7, Lng: -79.4, Population: 2_600_000}}
	if _, err := Stream(cities, StreamConfig{}); err == nil || !strings.Contains(err.Error(), "matches none") {
		t.Errorf("Stream(no US cities) error = %v, want one about Countries matching none", err)
	}
	// A single US city leaves nowhere to move to: moves become updates.
	one := []City{{Name: "Springfield", Country: "US", Lat: 39.8, Lng: -89.6, Population: 114_000}}
	msgs, err := Stream(one, StreamConfig{Restaurants: 50, MoveRate: 1, Seed: 3})
	if err != nil {
		t.Fatalf("Stream(one city) error: %v", err)
	}
	if k := countKinds(msgs); k[KindRestaurantMove] != 0 || k[KindRestaurantUpdate] != 50 {
		t.Errorf("Stream(one city, MoveRate 1) kinds = %v, want 50 restaurant_update and no move", k)
	}
}

func TestEventKey(t *testing.T) {
	tests := []struct {
		name string
		e    Event
		want string
	}{
		{"restaurant", Event{Type: TypeRestaurant, ID: "r1", RestaurantID: "x"}, "r1"},
		{"dish", Event{Type: TypeDish, ID: "d1", RestaurantID: "r1"}, "r1"},
		{"unknown type", Event{Type: "menu", ID: "m1"}, ""},
	}
	for _, tc := range tests {
		if got := tc.e.Key(); got != tc.want {
			t.Errorf("%s: Event%+v.Key() = %q, want %q", tc.name, tc.e, got, tc.want)
		}
	}
}

func TestIsPoison(t *testing.T) {
	for _, k := range PoisonKinds {
		if !IsPoison(k) {
			t.Errorf("IsPoison(%q) = false, want true", k)
		}
	}
	for _, k := range ValidKinds {
		if IsPoison(k) {
			t.Errorf("IsPoison(%q) = true, want false", k)
		}
	}
}

func BenchmarkStream(b *testing.B) {
	cities := mustCities(b)
	cfg := DefaultStreamConfig()
	var n, size int
	b.ReportAllocs()
	for b.Loop() {
		msgs, err := Stream(cities, cfg)
		if err != nil {
			b.Fatal(err)
		}
		n, size = len(msgs), 0
		for _, m := range msgs {
			size += len(m.Value)
		}
	}
	b.ReportMetric(float64(n), "msgs/op")
	b.ReportMetric(float64(size), "value-bytes/op")
}
