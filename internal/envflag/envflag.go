package envflag

import (
	"flag"
	"fmt"
	"regexp"
	"sort"
)

var varName = regexp.MustCompile(`\((GEOSHARD_[A-Z0-9_]+)\)`)

// Var returns the environment variable a flag's usage names, or "".
func Var(f *flag.Flag) string {
	m := varName.FindAllStringSubmatch(f.Usage, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

// Error is a variable whose value its flag refuses.
type Error struct {
	Var, Value, Flag string
	Err              error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s=%q: not a valid value for --%s: %v", e.Var, e.Value, e.Flag, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Apply sets each flag of fs from its variable, read with getenv
// (os.Getenv outside tests). It reports the first variable refused, in
// the order of the flags' names.
func Apply(fs *flag.FlagSet, getenv func(string) string) error {
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	for _, f := range flags {
		name := Var(f)
		if name == "" {
			continue
		}
		v := getenv(name)
		if v == "" {
			continue
		}
		if err := fs.Set(f.Name, v); err != nil {
			return &Error{Var: name, Value: v, Flag: f.Name, Err: err}
		}
	}
	return nil
}
