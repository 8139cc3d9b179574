package suites

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func judgeFile(t *testing.T, name string, opts Options) (Report, string) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	r, err := Judge(f, &out, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, out.String()
}

func TestJudge(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		opts    Options
		counts  [3]int   // passed, failed, skipped
		reasons []string // a part of each problem, in order
		printed []string // parts of what is printed
	}{
		{
			name:    "a passing package with a skip allowed",
			file:    "norun.json",
			opts:    Options{Expect: []string{"tj/a"}},
			reasons: []string{"tj/a: ran no test"},
		},
		{
			name:    "the mixed module",
			file:    "mixed.json",
			opts:    Options{Expect: []string{"tj/a", "tj/b", "tj/d"}, AllowSkips: true},
			counts:  [3]int{3, 2, 1},
			reasons: []string{"tj/b: failed: TestBad", "tj/d: failed outside any test"},
			printed: []string{"ok  \ttj/a\t0.004s\t3 passed, 1 skipped\n    \tskipped: TestSkip", "boom", "undefined: undefined", "?   \ttj/c\t[no test files]"},
		},
		{
			name:    "a skip where none is allowed",
			file:    "mixed.json",
			opts:    Options{Expect: []string{"tj/a"}},
			counts:  [3]int{3, 2, 1},
			reasons: []string{"tj/a: skipped where no skip is allowed: TestSkip", "tj/b: failed", "tj/d: failed"},
		},
		{
			name:    "a package expected and never reported",
			file:    "mixed.json",
			opts:    Options{Expect: []string{"tj/a", "tj/e"}, AllowSkips: true},
			counts:  [3]int{3, 2, 1},
			reasons: []string{"tj/b: failed", "tj/d: failed", "tj/e: has tests but was not reported"},
		},
		{
			name:    "a package expected that has no test files",
			file:    "mixed.json",
			opts:    Options{Expect: []string{"tj/c"}, AllowSkips: true},
			counts:  [3]int{3, 2, 1},
			reasons: []string{"tj/b", "tj/d", "tj/c: has tests but go test found none"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, printed := judgeFile(t, tt.file, tt.opts)
			if got := [3]int{r.Passed, r.Failed, r.Skipped}; got != tt.counts {
				t.Errorf("counts = %v, want %v", got, tt.counts)
			}
			if len(r.Problems) != len(tt.reasons) {
				t.Fatalf("problems = %q, want %d: %q", r.Problems, len(tt.reasons), tt.reasons)
			}
			for i, want := range tt.reasons {
				if !strings.Contains(r.Problems[i], want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, r.Problems[i], want)
				}
			}
			if r.OK() != (len(tt.reasons) == 0) {
				t.Errorf("OK() = %v with problems %q", r.OK(), r.Problems)
			}
			for _, want := range tt.printed {
				if !strings.Contains(printed, want) {
					t.Errorf("printed:\n%s\nwant it to contain %q", printed, want)
				}
			}
		})
	}
}

func TestJudgeAllPassed(t *testing.T) {
	stream := `{"Action":"start","Package":"p"}
{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"quiet\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"pass","Package":"p","Elapsed":0.5}
go: a line that is not an event
`
	var out strings.Builder
	r, err := Judge(strings.NewReader(stream), &out, Options{Expect: []string{"p"}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.OK() || r.Passed != 1 || r.Summary() != "suites: 1 passed, 0 failed, 0 skipped" {
		t.Errorf("report = %+v (%s), want one test passed and OK", r, r.Summary())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := []string{"ok  \tp\t0.500s\t1 passed", "go: a line that is not an event"}
	if !slices.Equal(lines, want) {
		t.Errorf("printed %q, want %q (a passing test's output is not printed)", lines, want)
	}
}
