// Package suites runs go test and proves that every suite it was meant to
// run ran: a package whose tests did not pass, that did not build, that
// ran no test at all (a -run pattern matching nothing, a make rule that
// lost its packages), or that was never reported (absent from the output),
// fails the run just as a failing test does. Skipped tests are listed by
// name, and fail the run where no skip is allowed (the real-engine suites,
// where a skip means an engine was not there).
//
// It reads the event stream of go test -json (cmd/test2json), prints the
// package lines go test would print, the whole output of each failing
// test, and closes with one line:
//
//	suites: 1234 passed, 0 failed, 5 skipped
//
// The packages expected are those go list finds with test files under the
// same patterns and build tags.
//
// It imports only the standard library.
package suites
