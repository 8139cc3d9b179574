package suites

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Event is one line of go test -json (cmd/test2json's TestEvent, and the
// build events go test adds beside them).
type Event struct {
	Time       time.Time
	Action     string
	Package    string
	Test       string
	Elapsed    float64
	Output     string
	ImportPath string // build-output and build-fail events
}

// Options say what a run must show to pass.
type Options struct {
	// Expect lists the packages whose tests must run and pass.
	Expect []string
	// AllowSkips lets a test skip; otherwise a skipped test fails the run.
	AllowSkips bool
	// Verbose prints every line of output as it comes, not only the
	// failing tests' (a suite whose logs are figures to read).
	Verbose bool
}

// pkgResult is what the stream said of one package.
type pkgResult struct {
	action  string // pass, fail or skip (no test files); "" while running
	elapsed float64
	passed  []string
	failed  []string
	skipped []string
	// output holds each test's lines ("" the package's own) until the test
	// passes; a failing test's are printed.
	output map[string][]string
	build  []string // build output, printed if the build failed
}

// Report is the verdict of a run.
type Report struct {
	Passed, Failed, Skipped int
	// Problems lists why the run failed, one line each; empty when it
	// passed.
	Problems []string
}

// OK reports whether the run passed.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Summary is the closing line.
func (r Report) Summary() string {
	return fmt.Sprintf("suites: %d passed, %d failed, %d skipped", r.Passed, r.Failed, r.Skipped)
}

// Judge reads a go test -json stream from in, prints to out what go test
// would print (and more for what failed), and returns the verdict against
// opts. A line that is not an event (go's own messages) is printed as it
// is.
func Judge(in io.Reader, out io.Writer, opts Options) (Report, error) {
	pkgs := map[string]*pkgResult{}
	get := func(name string) *pkgResult {
		p := pkgs[name]
		if p == nil {
			p = &pkgResult{output: map[string][]string{}}
			pkgs[name] = p
		}
		return p
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev Event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			fmt.Fprintf(out, "%s\n", line)
			continue
		}
		switch ev.Action {
		case "build-output":
			// "pkg [pkg.test]": the build of pkg's test binary.
			name, _, _ := strings.Cut(ev.ImportPath, " ")
			p := get(name)
			p.build = append(p.build, ev.Output)
			continue
		case "build-fail":
			continue
		}
		if ev.Package == "" {
			continue
		}
		p := get(ev.Package)
		if opts.Verbose && ev.Action == "output" {
			fmt.Fprint(out, ev.Output)
		}
		switch ev.Action {
		case "output":
			p.output[ev.Test] = append(p.output[ev.Test], ev.Output)
		case "pass", "fail", "skip":
			if ev.Test == "" {
				p.action, p.elapsed = ev.Action, ev.Elapsed
				finishPackage(out, ev.Package, p, opts.Verbose)
				continue
			}
			switch ev.Action {
			case "pass":
				p.passed = append(p.passed, ev.Test)
				delete(p.output, ev.Test)
			case "fail":
				p.failed = append(p.failed, ev.Test)
			case "skip":
				p.skipped = append(p.skipped, ev.Test)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Report{}, fmt.Errorf("suites: read go test's output: %w", err)
	}
	return verdict(pkgs, opts), nil
}

// finishPackage prints a package's closing line, and the output of its
// failing tests (and of the package itself when it failed outside any
// test, such as a panic or a build failure).
func finishPackage(out io.Writer, name string, p *pkgResult, verbose bool) {
	if p.action == "fail" && !verbose {
		for _, t := range p.failed {
			for _, l := range p.output[t] {
				fmt.Fprint(out, l)
			}
		}
		for _, l := range p.build {
			fmt.Fprint(out, l)
		}
		for _, l := range p.output[""] {
			fmt.Fprint(out, l)
		}
		return
	}
	if verbose {
		return // the package's own closing line was printed with its output
	}
	switch p.action {
	case "skip":
		fmt.Fprintf(out, "?   \t%s\t[no test files]\n", name)
	case "pass":
		fmt.Fprintf(out, "ok  \t%s\t%.3fs\t%s\n", name, p.elapsed, counts(p))
		if len(p.skipped) > 0 {
			fmt.Fprintf(out, "    \tskipped: %s\n", strings.Join(p.skipped, ", "))
		}
	}
}

func counts(p *pkgResult) string {
	s := fmt.Sprintf("%d passed", len(p.passed))
	if len(p.skipped) > 0 {
		s += fmt.Sprintf(", %d skipped", len(p.skipped))
	}
	return s
}

// verdict holds what the stream said against what was expected.
func verdict(pkgs map[string]*pkgResult, opts Options) Report {
	var r Report
	names := make([]string, 0, len(pkgs))
	for name := range pkgs {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := pkgs[name]
		r.Passed += len(p.passed)
		r.Failed += len(p.failed)
		r.Skipped += len(p.skipped)
		switch p.action {
		case "fail":
			if len(p.failed) > 0 {
				r.Problems = append(r.Problems, fmt.Sprintf("%s: failed: %s", name, strings.Join(p.failed, ", ")))
			} else {
				r.Problems = append(r.Problems, fmt.Sprintf("%s: failed outside any test (a build failure, a panic, a timeout)", name))
				r.Failed++
			}
		case "":
			if len(p.build) > 0 {
				r.Problems = append(r.Problems, fmt.Sprintf("%s: did not build", name))
				r.Failed++
			}
		}
		if len(p.skipped) > 0 {
			if opts.AllowSkips {
				continue
			}
			r.Problems = append(r.Problems, fmt.Sprintf("%s: skipped where no skip is allowed: %s", name, strings.Join(p.skipped, ", ")))
		}
	}
	for _, name := range opts.Expect {
		p := pkgs[name]
		switch {
		case p == nil || p.action == "" && len(p.build) == 0:
			r.Problems = append(r.Problems, fmt.Sprintf("%s: has tests but was not reported: its suite did not run", name))
		case p.action == "skip":
			r.Problems = append(r.Problems, fmt.Sprintf("%s: has tests but go test found none to build", name))
		case p.action == "pass" && len(p.passed) == 0:
			r.Problems = append(r.Problems, fmt.Sprintf("%s: ran no test (a -run pattern that matches nothing?)", name))
		}
	}
	return r
}
