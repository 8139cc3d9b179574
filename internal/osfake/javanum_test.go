package osfake

import "testing"

// The JVM's spelling of doubles and floats, as the server writes sort
// values, bucket keys and previews.
func TestJavaNumberSpelling(t *testing.T) {
	doubles := map[float64]string{4: "4.0", 4.5: "4.5", 0.5: "0.5", 123.456: "123.456", 1000: "1000.0", 40000.5: "40000.5",
		9999999: "9999999.0", 1e7: "1.0E7", 0.001: "0.001", 0.0001: "1.0E-4", 1e19: "1.0E19", 9.3e18: "9.3E18",
		2147483647.5: "2.1474836475E9", -2147483648.5: "-2.1474836485E9", 1.5e300: "1.5E300"}
	for f, want := range doubles {
		if got := javaDouble(f); got != want {
			t.Errorf("javaDouble(%v) = %s, want %s", f, got, want)
		}
	}
	floats := map[float32]string{70000: "70000.0", 3.9: "3.9", 0.1: "0.1", 1e10: "1.0E10"}
	for f, want := range floats {
		if got := javaFloat(f); got != want {
			t.Errorf("javaFloat(%v) = %s, want %s", f, got, want)
		}
	}
}
