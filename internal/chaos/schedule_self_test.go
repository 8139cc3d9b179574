package chaos

import (
	"bytes"
	"testing"
)

// TestScheduleIsItsSeed: a seed is all a replay needs — the same seed
// gives the same steps and the same stream, byte for byte.
func TestScheduleIsItsSeed(t *testing.T) {
	for _, seed := range []uint64{1, 12, 3005, 987654321} {
		a, b := newSchedule(seed), newSchedule(seed)
		if a.String() != b.String() {
			t.Errorf("seed %d: two schedules:\n%s\n%s", seed, a, b)
		}
		ea, eb := generate(t, a.gen), generate(t, b.gen)
		if len(ea) != len(eb) {
			t.Fatalf("seed %d: streams of %d and %d events", seed, len(ea), len(eb))
		}
		for i := range ea {
			if !bytes.Equal(ea[i].key, eb[i].key) || !bytes.Equal(ea[i].value, eb[i].value) {
				t.Fatalf("seed %d: event %d differs: %s, %s", seed, i, ea[i].value, eb[i].value)
			}
		}
	}
	if newSchedule(1).String() == newSchedule(2).String() {
		t.Errorf("seeds 1 and 2 give one schedule")
	}
}
