// Package cli holds what the commands share at their edge with the
// user: the OpenSearch connection flags, whether output goes to a
// terminal, and numbers as people read them.
package cli

import (
	"io"
	"os"

	"golang.org/x/term"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// IsTerminal reports whether w is a terminal, where a progress line can
// redraw itself.
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

var english = message.NewPrinter(language.English)

// Commas formats an integer with thousands separators: 55,912,345.
func Commas(v int64) string { return english.Sprintf("%d", v) }

// UsageError is bad flags or input, which the commands exit with
// status 2 for; anything else is status 1.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }
