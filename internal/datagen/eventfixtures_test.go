package datagen

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestEventFixtures(t *testing.T) {
	files, err := EventFixtures(mustCities(t))
	if err != nil {
		t.Fatalf("EventFixtures() error: %v", err)
	}
	for _, f := range files {
		t.Run(f.Name, func(t *testing.T) {
			committed := readFixture(t, f.Name)
			if !bytes.Equal(f.Data, committed) {
				t.Errorf("generated %s (%d bytes) != committed (%d bytes): %s; regenerate with go generate ./internal/datagen",
					f.Name, len(f.Data), len(committed), firstDiff(f.Data, committed))
			}
		})
	}
}

func TestEventExamples(t *testing.T) {
	tests := []struct {
		name     string
		typ, op  string
		wantKeys []string
	}{
		{FixtureEventRestaurantUpsert, TypeRestaurant, OpUpsert, []string{"type", "op", "id", "version", "location", "doc"}},
		{FixtureEventRestaurantDelete, TypeRestaurant, OpDelete, []string{"type", "op", "id", "version"}},
		{FixtureEventDishUpsert, TypeDish, OpUpsert, []string{"type", "op", "id", "restaurant_id", "version", "doc"}},
		{FixtureEventDishDelete, TypeDish, OpDelete, []string{"type", "op", "id", "restaurant_id", "version"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := readFixture(t, tc.name)
			var raw map[string]json.RawMessage
			if err := json.Unmarshal(data, &raw); err != nil {
				t.Fatalf("json.Unmarshal(%s) error: %v", tc.name, err)
			}
			if len(raw) != len(tc.wantKeys) {
				t.Errorf("%s has %d fields, want %v", tc.name, len(raw), tc.wantKeys)
			}
			for _, k := range tc.wantKeys {
				if _, ok := raw[k]; !ok {
					t.Errorf("%s lacks %q", tc.name, k)
				}
			}
			var e Event
			if err := json.Unmarshal(data, &e); err != nil {
				t.Fatalf("json.Unmarshal(%s) into Event error: %v", tc.name, err)
			}
			if e.Type != tc.typ || e.Op != tc.op {
				t.Errorf("%s is a %s %s, want %s %s", tc.name, e.Type, e.Op, tc.typ, tc.op)
			}
			var compact bytes.Buffer
			if err := json.Compact(&compact, data); err != nil {
				t.Fatal(err)
			}
			if err := validateEvent(Message{Key: []byte(e.Key()), Value: compact.Bytes()}); err != nil {
				t.Errorf("%s: %v", tc.name, err)
			}
		})
	}
}

func TestEventSample(t *testing.T) {
	data := readFixture(t, FixtureEventSample)
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != SampleEvents {
		t.Fatalf("%s has %d lines, want %d", FixtureEventSample, len(lines), SampleEvents)
	}
	sample, err := SampleMessages(mustCities(t))
	if err != nil {
		t.Fatalf("SampleMessages() error: %v", err)
	}
	readme := string(readFixture(t, FixtureEventReadme))
	for i, m := range sample {
		if lines[i] != string(m.Value) {
			t.Errorf("%s line %d = %.80q, want the value of sample message %d", FixtureEventSample, i+1, lines[i], i)
		}
		if err := validateEvent(m); (err == nil) == IsPoison(m.Kind) {
			t.Errorf("%s line %d (%s): validateEvent() = %v", FixtureEventSample, i+1, m.Kind, err)
		}
	}
	for _, kind := range append(ValidKinds[:], PoisonKinds[:]...) {
		if !strings.Contains(readme, "`"+kind+"`") {
			t.Errorf("%s does not describe %s", FixtureEventReadme, kind)
		}
	}
}
