// Command suites runs go test on packages and fails unless every package
// with tests ran at least one test and passed (package suites):
//
//	suites [-tags T] [-gotest 'FLAGS'] [-testargs 'FLAGS'] [-allow-skips] [-v] PACKAGES...
//
// -gotest is go test's own flags, split at spaces (-race -count=1 -run X);
// -json is added. -testargs are the test binary's own flags, put after
// the packages. The go command is $GO, or go. Exit status: 0 every suite
// ran and passed, 1 otherwise, 2 bad arguments.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/geoshard/geoshard/internal/suites"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("suites", flag.ContinueOnError)
	fs.SetOutput(stderr)
	tags := fs.String("tags", "", "build tags, as go test's -tags")
	gotest := fs.String("gotest", "", "go test's flags, split at spaces (-json is added)")
	testArgsFlag := fs.String("testargs", "", "the test binary's own flags, split at spaces, after the packages")
	allowSkips := fs.Bool("allow-skips", false, "let a test skip (otherwise a skip fails the run)")
	verbose := fs.Bool("v", false, "print every line of the tests' output as it comes")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	pkgs := fs.Args()
	if len(pkgs) == 0 {
		fmt.Fprintln(stderr, "suites: name the packages to test (for example ./...)")
		return 2
	}
	goCmd := os.Getenv("GO")
	if goCmd == "" {
		goCmd = "go"
	}
	var tagArgs []string
	if *tags != "" {
		tagArgs = []string{"-tags", *tags}
	}

	list := exec.CommandContext(ctx, goCmd, append(append([]string{"list"}, tagArgs...),
		append([]string{"-f", "{{if or .TestGoFiles .XTestGoFiles}}{{.ImportPath}}{{end}}"}, pkgs...)...)...)
	list.Stderr = stderr
	listed, err := list.Output()
	if err != nil {
		fmt.Fprintf(stderr, "suites: go list %s: %v\n", strings.Join(pkgs, " "), err)
		return 1
	}
	expect := strings.Fields(string(listed))
	if len(expect) == 0 {
		fmt.Fprintf(stderr, "suites: no package with tests in %s\n", strings.Join(pkgs, " "))
		return 1
	}

	testArgs := append(append([]string{"test", "-json"}, tagArgs...), strings.Fields(*gotest)...)
	testArgs = append(testArgs, pkgs...)
	testArgs = append(testArgs, strings.Fields(*testArgsFlag)...)
	fmt.Fprintf(stdout, "suites: %s %s (%d packages with tests)\n", goCmd, strings.Join(testArgs, " "), len(expect))
	cmd := exec.CommandContext(ctx, goCmd, testArgs...)
	cmd.Stderr = stderr
	// go test, when interrupted, ends its test binaries itself.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintf(stderr, "suites: %v\n", err)
		return 1
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(stderr, "suites: start go test: %v\n", err)
		return 1
	}
	report, judgeErr := suites.Judge(out, stdout, suites.Options{Expect: expect, AllowSkips: *allowSkips, Verbose: *verbose})
	waitErr := cmd.Wait()
	if judgeErr != nil {
		fmt.Fprintln(stderr, judgeErr)
		return 1
	}
	var exit *exec.ExitError
	if waitErr != nil && report.OK() {
		// go test failed where the stream shows nothing wrong: count it.
		if errors.As(waitErr, &exit) {
			report.Problems = append(report.Problems, fmt.Sprintf("go test exited %d", exit.ExitCode()))
		} else {
			report.Problems = append(report.Problems, fmt.Sprintf("go test: %v", waitErr))
		}
	}
	for _, p := range report.Problems {
		fmt.Fprintln(stdout, "suites: FAIL", p)
	}
	// The wall time, so that a run's log says where its time went.
	fmt.Fprintf(stdout, "%s, in %s\n", report.Summary(), time.Since(start).Round(time.Second))
	if !report.OK() {
		return 1
	}
	return 0
}
