// Package walk is callwalk's test module; the comments on each call give
// the walk's move and whether it counts.
package walk

import (
	"strings"

	"example.com/walk/sub"
)

// Root is the first root.
func Root(s string) string {
	b1()                   // a.go → b.go: first time in b.go
	a2()                   // a.go → a.go: same file
	c1()                   // a.go → c.go: first time in c.go
	b2()                   // a.go → b.go: return 3
	_ = strings.ToUpper(s) // outside the module: not followed
	var st stringer = T{}  // an interface call: not static
	_ = st.String()        //
	return sub.F()         // a.go → sub/s.go: first time there
}

type stringer interface{ String() string }

func a2() {}

func a3() {}

// T has a method, a root of its own.
type T struct{}

func (T) String() string { return "" }

// M is the second root; its walk starts from Root's file, a.go.
func (*T) M() {
	b1() // already visited: no move
	c2() // a.go → c.go: return 4
	a3() // already visited
}
