package datagen

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"text/template"
)

// Event fixture paths, slash-separated and relative to the output
// directory.
const (
	FixtureEventRestaurantUpsert = "events/restaurant-upsert.json"
	FixtureEventRestaurantDelete = "events/restaurant-delete.json"
	FixtureEventDishUpsert       = "events/dish-upsert.json"
	FixtureEventDishDelete       = "events/dish-delete.json"
	FixtureEventSample           = "events/sample.ndjson"
	FixtureEventReadme           = "events/README.md"
)

const (
	// SampleEvents is the number of lines of the sample fixture.
	SampleEvents = 60
	// SeedEventSample is the seed of SampleStreamConfig.
	SeedEventSample uint64 = 6
	// maxSampleValue leaves poison_oversized out of the sample: one line
	// of a MiB would drown the rest.
	maxSampleValue = 4 << 10
)

// SampleStreamConfig is the small stream the event fixtures are cut from:
// 8 restaurants with 3 dishes on average and rates high enough that a
// 60-message sample shows most kinds.
func SampleStreamConfig() StreamConfig {
	return StreamConfig{
		Restaurants:     8,
		MeanDishes:      3,
		UpdateRate:      0.5,
		DeleteRate:      0.25,
		MoveRate:        0.25,
		ReplayRate:      0.05,
		OutOfOrderRate:  0.1,
		EarlyDishRate:   0.25,
		OrphanRate:      0.15,
		PoisonRate:      0.05,
		Seed:            SeedEventSample,
		RestaurantTopic: DefaultRestaurantTopic,
		DishTopic:       DefaultDishTopic,
	}
}

// SampleMessages returns the messages of the sample fixture: the first
// SampleEvents messages of Stream(cities, SampleStreamConfig()) whose value
// holds no newline (one poison_json variant spans lines) and is at most
// 4 KiB (poison_oversized is 1 MiB), in stream order.
func SampleMessages(cities []City) ([]Message, error) {
	msgs, err := Stream(cities, SampleStreamConfig())
	if err != nil {
		return nil, err
	}
	return sampleOf(msgs)
}

func sampleOf(msgs []Message) ([]Message, error) {
	var sample []Message
	for _, m := range msgs {
		if len(sample) == SampleEvents {
			break
		}
		if len(m.Value) <= maxSampleValue && !bytes.ContainsRune(m.Value, '\n') {
			sample = append(sample, m)
		}
	}
	if len(sample) < SampleEvents {
		return nil, fmt.Errorf("datagen: fixture %s: stream has %d sample messages, want %d", FixtureEventSample, len(sample), SampleEvents)
	}
	return sample, nil
}

// EventFixtures renders the files under events/: one pretty-printed
// example each of a restaurant upsert and delete and a dish upsert and
// delete (the first of each kind in the sample stream), the sample
// (SampleMessages, one value per line) and the README that describes the
// schema and the sample.
func EventFixtures(cities []City) ([]Fixture, error) {
	cfg := SampleStreamConfig()
	msgs, err := Stream(cities, cfg)
	if err != nil {
		return nil, fmt.Errorf("datagen: event fixtures: %w", err)
	}
	var files []Fixture
	for _, ex := range []struct{ name, kind string }{
		{FixtureEventRestaurantUpsert, KindRestaurantUpsert},
		{FixtureEventRestaurantDelete, KindRestaurantDelete},
		{FixtureEventDishUpsert, KindDishUpsert},
		{FixtureEventDishDelete, KindDishDelete},
	} {
		f, err := exampleFixture(ex.name, ex.kind, msgs)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}

	sample, err := sampleOf(msgs)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	for _, m := range sample {
		buf.Write(m.Value)
		buf.WriteByte('\n')
	}
	files = append(files, Fixture{Name: FixtureEventSample, Data: buf.Bytes(), Rows: len(sample), Restaurants: cfg.Restaurants})

	readme, err := eventReadme(cfg, sample)
	if err != nil {
		return nil, err
	}
	return append(files, readme), nil
}

// exampleFixture pretty-prints the first message of the given kind.
func exampleFixture(name, kind string, msgs []Message) (Fixture, error) {
	for _, m := range msgs {
		if m.Kind != kind {
			continue
		}
		var buf bytes.Buffer
		if err := json.Indent(&buf, m.Value, "", "  "); err != nil {
			return Fixture{}, fmt.Errorf("datagen: fixture %s: %w", name, err)
		}
		buf.WriteByte('\n')
		return Fixture{Name: name, Data: buf.Bytes()}, nil
	}
	return Fixture{}, fmt.Errorf("datagen: fixture %s: the sample stream has no %s message", name, kind)
}

// eventReadme renders events/README.md.
func eventReadme(cfg StreamConfig, sample []Message) (Fixture, error) {
	type line struct {
		N                int
		Topic, Key, Kind string
	}
	lines := make([]line, len(sample))
	for i, m := range sample {
		lines[i] = line{i + 1, m.Topic, string(m.Key), m.Kind}
	}
	data := map[string]any{
		"Cfg":         cfg,
		"Lines":       lines,
		"MaxDocBytes": MaxDocBytes,
		"MaxIDBytes":  MaxIDBytes,
		"MinMoveKm":   MinMoveKm,
		"MaxNudgeKm":  MaxNudgeKm,
		"MaxLag":      StreamMaxLag,
		"Sample":      SampleEvents,
		"Cuisines":    Cuisines[:],
		"Allergens":   Allergens[:],
		"Diets":       Diets[:],
	}
	var buf bytes.Buffer
	if err := eventReadmeTemplate.Execute(&buf, data); err != nil {
		return Fixture{}, fmt.Errorf("datagen: fixture %s: %w", FixtureEventReadme, err)
	}
	return Fixture{Name: FixtureEventReadme, Data: buf.Bytes()}, nil
}

// eventReadmeText is the template of events/README.md.
//
//go:embed eventreadme.tmpl
var eventReadmeText string

var eventReadmeTemplate = template.Must(template.New("events").Funcs(template.FuncMap{
	"n":     groupDigits,
	"codes": codeList,
}).Parse(eventReadmeText))

// codeList renders ["a", "b"] as "`a`, `b`".
func codeList(ss []string) string {
	var b bytes.Buffer
	for i, s := range ss {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("`" + s + "`")
	}
	return b.String()
}
