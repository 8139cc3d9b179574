package main

import (
	"fmt"
	"strings"
)

// problems collects what is wrong with the flags of one verb, so that
// one message names every flag given wrongly, and only those, each with
// the values it accepts.
type problems []string

func (p *problems) add(format string, args ...any) {
	*p = append(*p, fmt.Sprintf(format, args...))
}

// err is nil when nothing is wrong, else a usage error naming every
// problem.
func (p problems) err() error {
	if len(p) == 0 {
		return nil
	}
	return badInput("%s", strings.Join(p, "; "))
}
