package deadletter

import (
	"log/slog"
	"testing"

	"github.com/geoshard/geoshard/decode"
)

// event stands for the owner's event: Once compares it by identity.
type event struct{ offset int64 }

func newOnce(t testing.TB) *Once[*event] {
	t.Helper()
	o, err := New[*event](Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func letterAt(ev *event) *Letter[*event] {
	p := Place{Topic: "menu", Partition: 0, Offset: ev.offset}
	return &Letter[*event]{Event: ev, Own: p, Source: p, Reason: decode.ReasonInvalidJSON}
}

// TestOnceRecord walks the record of places through one partition's
// life: a dead letter queued, a second decision of its place joining it,
// its acknowledgement, a third decision finding it, a commit passing it,
// a waiting dish pinning its place past the commit, and a dead letter
// whose every event was superseded, skipped.
func TestOnceRecord(t *testing.T) {
	o := newOnce(t)
	at := func(off int64) *event { return &event{offset: off} }
	dl := letterAt
	commit := func(off int64) []Place { return []Place{{Topic: "menu", Partition: 0, Offset: off}} }
	dropped := map[*event]bool{}
	isDropped := func(ev *event) bool { return dropped[ev] }

	first, second, third := dl(at(5)), dl(at(5)), dl(at(5))
	if c := o.Claim(first); c != ClaimSend {
		t.Fatalf("claim of a new place = %v, want send", c)
	}
	if c := o.Claim(second); c != ClaimJoined {
		t.Fatalf("claim of a place in the outbox = %v, want joined", c)
	}
	dropped[first.Event] = true // a redelivery superseded it; second is its copy
	if o.Skip(first, isDropped) {
		t.Fatal("skip of a dead letter a live event joined = true")
	}
	if all := o.Written(first); len(all) != 2 || all[1] != second {
		t.Fatalf("written = %d dead letters, want the first and the one that joined it", len(all))
	}
	if c := o.Claim(third); c != ClaimKnown {
		t.Fatalf("claim of a written place = %v, want known", c)
	}

	o.Passed(commit(6))
	if c := o.Claim(dl(at(5))); c != ClaimSend {
		t.Fatalf("claim of a place the commit passed = %v, want send (it is not fetched again)", c)
	}

	waiting := at(7)
	o.Written(dl(at(7)))
	o.Pin(waiting, 0, dl(waiting).Source)
	o.Passed(commit(8))
	if c := o.Claim(dl(at(7))); c != ClaimKnown {
		t.Fatalf("claim of a pinned place the commit passed = %v, want known", c)
	}
	o.Unpin(waiting, dl(waiting).Source)
	o.Passed(commit(8))
	if c := o.Claim(dl(at(7))); c != ClaimSend {
		t.Fatalf("claim of an unpinned place the commit passed = %v, want send", c)
	}

	gone := dl(at(9))
	o.Claim(gone)
	dropped[gone.Event] = true
	if !o.Skip(gone, isDropped) {
		t.Fatal("skip of a dead letter whose every event was superseded = false")
	}
	if c := o.Claim(dl(at(9))); c != ClaimSend {
		t.Fatalf("claim after its dead letter was skipped = %v, want send", c)
	}
}

// TestMessageNamesTheSource: a dead letter's headers name its source
// place (a repartitioned event's origin, not where it was read), which
// SourceOf reads back; its Partition is the partition it was read from.
func TestMessageNamesTheSource(t *testing.T) {
	d := &Letter[*event]{
		Own:    Place{Topic: "dishes-by-restaurant", Partition: 3, Offset: 40},
		Source: Place{Topic: "dishes", Partition: 1, Offset: 7},
		Key:    []byte("d1"), Value: []byte("{"), Reason: decode.ReasonInvalidJSON, Detail: "bad",
	}
	m := d.Message()
	if got, ok := SourceOf(m.Headers); !ok || got != d.Source {
		t.Errorf("SourceOf(Message().Headers) = %v, %v, want %v, true", got, ok, d.Source)
	}
	if m.Partition != 3 || string(m.Key) != "d1" || string(m.Value) != "{" {
		t.Errorf("Message() = partition %d, key %q, value %q, want 3, d1, {", m.Partition, m.Key, m.Value)
	}
	for _, tc := range []struct {
		name string
		drop string
	}{{"no topic", HeaderSourceTopic}, {"no partition", HeaderSourcePartition}, {"no offset", HeaderSourceOffset}} {
		t.Run(tc.name, func(t *testing.T) {
			var hs = m.Headers[:0:0]
			for _, h := range m.Headers {
				if h.Key != tc.drop {
					hs = append(hs, h)
				}
			}
			if _, ok := SourceOf(hs); ok {
				t.Errorf("SourceOf without %s = ok, want not", tc.drop)
			}
		})
	}
}

// TestConfigValidate: a client needs a topic to read; a negative margin
// is refused.
func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("Config{}.Validate() = %v, want nil", err)
	}
	if _, err := New[*event](Config{ClockMargin: -1}); err == nil {
		t.Error("New with a negative clock margin = nil error, want one")
	}
}

// BenchmarkOnce measures what the record costs a dead letter on the hot
// path: its claim, its acknowledgement, a repeat's claim, and the commit
// that passes it.
func BenchmarkOnce(b *testing.B) {
	b.ReportAllocs()
	o := newOnce(b)
	var off int64
	for b.Loop() {
		ev := &event{offset: off}
		d := letterAt(ev)
		o.Claim(d)
		o.Written(d)
		o.Claim(letterAt(ev))
		off++
		if off%64 == 0 {
			o.Passed([]Place{{Topic: "menu", Partition: 0, Offset: off}})
		}
	}
}
