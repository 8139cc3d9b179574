package walk

import "example.com/walk/sub"

func c1() {
	func() {
		b3() // in c1's function literal: c.go → b.go, return 2
	}()
	go c1() // c1 itself, already visited
}

func c2() {
	defer sub.G() // c.go → sub/s.go: return 5
}
