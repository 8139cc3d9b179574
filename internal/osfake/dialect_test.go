package osfake

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestOptionsVersion(t *testing.T) {
	cases := []struct {
		version string
		ok      bool
	}{
		{"", true}, // DefaultVersion
		{"3.9.0", true},
		{"3.9.12", true},
		{"2.19.6", true},
		{"2.19.1", true},
		{"3.8.0", false},
		{"3.10.0", false},
		{"2.18.0", false},
		{"1.3.20", false},
		{"3.9", false},
		{"3.9.0.1", false},
		{"3.9.x", false},
		{"3.9.01", false},
		{"3.9.+1", false},
		{"3.9.100", false},
		{"v3.9.0", false},
	}
	for _, tc := range cases {
		err := Options{Version: tc.version}.Validate()
		if (err == nil) != tc.ok {
			t.Errorf("Options{Version: %q}.Validate() = %v, want ok=%v", tc.version, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), AcceptedVersions) {
			t.Errorf("Options{Version: %q}.Validate() = %v, want it to say what it takes", tc.version, err)
		}
	}
}

// A server given a version it does not know fails every request, saying
// why, rather than answer as another version.
func TestUnknownVersionFailsEveryRequest(t *testing.T) {
	s := New(Options{Version: "3.8.0"})
	for _, path := range []string{"/", "/_cluster/health", "/x/_doc/1"} {
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code != 500 || !strings.Contains(rec.Body.String(), `osfake: Version \"3.8.0\": the emulator answers as `+AcceptedVersions) {
			t.Errorf("GET %s = %d %s, want 500 naming the version", path, rec.Code, rec.Body.String())
		}
	}
}

func TestVersionID(t *testing.T) {
	for version, want := range map[string]string{
		"3.9.0":  "137307827", // as a 3.9.0 node reports index.version.created
		"2.19.6": "136408427", // as a 2.19.6 node does
		"2.19.1": "136407927",
	} {
		d, err := dialectOf(version)
		if err != nil {
			t.Fatal(err)
		}
		if got := d.versionID(); got != want {
			t.Errorf("versionID(%s) = %s, want %s", version, got, want)
		}
	}
}
