package migrate

import (
	"fmt"
	"testing"
)

// Messages count in words: "1 live ingest instance", "2 live ingest
// instances"; wrapped, they say "migrate:" once.
func TestLaggardsErrorWording(t *testing.T) {
	cases := []struct {
		names []string
		want  string
	}{
		{[]string{"ingest-0"}, "migrate: 1 live ingest instance did not apply dual writes in time: ingest-0"},
		{[]string{"ingest-0", "ingest-1"}, "migrate: 2 live ingest instances did not apply dual writes in time: ingest-0, ingest-1"},
	}
	for _, tc := range cases {
		err := &LaggardsError{What: "dual writes", Instances: tc.names}
		if got := err.Error(); got != tc.want {
			t.Errorf("LaggardsError(%v) = %q, want %q", tc.names, got, tc.want)
		}
	}
	wrapped := fmt.Errorf("%w (the backfill copies nothing until they do)", &LaggardsError{What: "dual writes", Instances: []string{"a"}})
	if got, want := wrapped.Error(), "migrate: 1 live ingest instance did not apply dual writes in time: a (the backfill copies nothing until they do)"; got != want {
		t.Errorf("backfill's laggards = %q, want %q", got, want)
	}
}
