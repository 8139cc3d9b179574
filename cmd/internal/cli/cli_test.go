package cli

import (
	"bytes"
	"testing"
)

func TestCommas(t *testing.T) {
	for v, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 55912345: "55,912,345", -1234567: "-1,234,567"} {
		if got := Commas(v); got != want {
			t.Errorf("Commas(%d) = %q, want %q", v, got, want)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	if IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
}
