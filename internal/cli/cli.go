package cli

import (
	"errors"
	"flag"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/geoshard/geoshard/internal/envflag"
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

// Bar draws frac (0 to 1) of a progress bar width cells wide, as
// "[#########.....................]". The commands print their own
// figures beside it; the bar is shared so that they draw it alike.
func Bar(frac float64, width int) string {
	filled := int(min(1, max(0, frac)) * float64(width))
	return "[" + strings.Repeat("#", filled) + strings.Repeat(".", width-filled) + "]"
}

// Parse applies the GEOSHARD_* environment variables that fs's usages
// name (envflag.Apply), then args, so that a flag given on the command
// line wins over the environment. A bad value of either is a UsageError
// of one line that says where to look (the flag package's own print of
// the error and every flag is silenced); -help is flag.ErrHelp itself,
// after fs has printed its usage. Positional arguments are left to the
// caller, whose message for them differs.
func Parse(fs *flag.FlagSet, args []string, getenv func(string) string) error {
	if err := envflag.Apply(fs, getenv); err != nil {
		return Hinted(fs, err)
	}
	usage, out := fs.Usage, fs.Output()
	help := false
	fs.Usage = func() { help = true }
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	fs.Usage = usage
	fs.SetOutput(out)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) && help {
			fs.Usage()
			return err
		}
		return Hinted(fs, err)
	}
	return nil
}

// UsageError is bad flags or input, which the commands exit with
// status 2 for; anything else is status 1.
type UsageError struct{ Err error }

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }
