package benchrun

import (
	"reflect"
	"testing"
)

func TestChangedSources(t *testing.T) {
	status := " M bulk/batch.go\n" +
		"M  Makefile\n" +
		"?? pipeline/parking.go\n" +
		"?? notes.txt\n" +
		"R  old.go -> pipeline/new.go\n" +
		" M deploy/local/benthos/go.sum\n" +
		"\n"
	got := changedSources(status)
	want := []string{"bulk/batch.go", "pipeline/parking.go", "pipeline/new.go", "deploy/local/benthos/go.sum"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("changedSources = %q, want %q", got, want)
	}
	if got := changedSources(""); got != nil {
		t.Errorf("changedSources(clean) = %q, want none", got)
	}
}
