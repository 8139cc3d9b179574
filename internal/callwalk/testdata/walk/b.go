package walk

func b1() {
	a3() // b.go → a.go: return 1
}

func b2() {}

func b3() {}

// D is the third root, called by nothing: its walk starts from M's file,
// a.go, and enters b.go again: return 6.
func D() {}
