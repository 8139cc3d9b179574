package benchrun

import "testing"

func offs(kv ...any) Offsets {
	o := Offsets{}
	for i := 0; i < len(kv); i += 3 {
		o.Set(kv[i].(string), int32(kv[i+1].(int)), int64(kv[i+2].(int)))
	}
	return o
}

func TestCompare(t *testing.T) {
	end := offs("r", 0, 100, "r", 1, 50, "d", 0, 200)
	tests := []struct {
		name      string
		start     Offsets
		committed Offsets
		want      Progress
	}{
		{"nothing committed", nil, Offsets{}, Progress{Behind: 350, Done: 0, Partitions: 3, Caught: 0}},
		{"part way", nil, offs("r", 0, 40, "d", 0, 200), Progress{Behind: 110, Done: 240, Partitions: 3, Caught: 1}},
		{"complete", nil, offs("r", 0, 100, "r", 1, 50, "d", 0, 200), Progress{Behind: 0, Done: 350, Partitions: 3, Caught: 3}},
		{"a commit past the end counts as caught", nil, offs("r", 0, 101, "r", 1, 50, "d", 0, 200), Progress{Behind: 0, Done: 350, Partitions: 3, Caught: 3}},
		{"another topic's commits are ignored", nil, offs("x", 0, 999, "r", 0, 100), Progress{Behind: 250, Done: 100, Partitions: 3, Caught: 1}},
		{"a missing partition is not caught", nil, offs("r", 0, 100, "d", 0, 200), Progress{Behind: 50, Done: 300, Partitions: 3, Caught: 2}},
		{"start offsets after a truncation", offs("r", 0, 60, "r", 1, 0, "d", 0, 0), offs("r", 1, 50, "d", 0, 200), Progress{Behind: 40, Done: 250, Partitions: 3, Caught: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compare(tt.start, end, tt.committed)
			if got != tt.want {
				t.Errorf("Compare = %+v, want %+v", got, tt.want)
			}
			if got.Complete() != (tt.want.Caught == 3) {
				t.Errorf("Complete() = %v with %d of 3 caught", got.Complete(), got.Caught)
			}
		})
	}
}

func TestCompareEmptyPartition(t *testing.T) {
	// A partition nothing was produced to is caught without a commit.
	got := Compare(nil, offs("r", 0, 0, "r", 1, 5), offs("r", 1, 5))
	if !got.Complete() || got.Done != 5 {
		t.Errorf("Compare = %+v, want complete with 5 done", got)
	}
}

func TestOffsetsSumEvents(t *testing.T) {
	o := offs("a", 0, 10, "a", 1, -1, "b", 3, 7)
	if got := o.Sum(); got != 17 {
		t.Errorf("Sum() = %d, want 17 (negative offsets are not offsets)", got)
	}
	if got := o.Partitions(); got != 3 {
		t.Errorf("Partitions() = %d, want 3", got)
	}
	if got := Events(offs("a", 0, 4), offs("a", 0, 10, "b", 0, 5)); got != 11 {
		t.Errorf("Events = %d, want 11", got)
	}
	if got := (Offsets{"b": nil, "a": nil}).Topics(); len(got) != 2 || got[0] != "a" {
		t.Errorf("Topics() = %v, want [a b]", got)
	}
}
